"""RE2's ``--xla=false`` export with a signature of its own for the converters
(``serving_ids_portable``: the encoder's convolutions as one matrix product per kernel tap,
``re2_tf.serving.export``), which OpenVINO and ONNX Runtime convert while TensorFlow serves
``serving_ids`` (its convolutions as ``tf.nn.conv1d``), against the revision ``--before`` it,
which had no such signature (issue 51, items 1-3; ``docs/performance.md``, "RE2's
convolutions as products").

The benchmark variants (random weights) are exported by the ``--before`` git revision and by
this checkout: the default export (XLA), ``--xla=false``, and ONNX Runtime and OpenVINO
(float32, and bfloat16 on a CPU with bfloat16 units) converted from the latter; timed
alternately in fresh processes at batch 8 x 20 and 512 x 20 on the same batches, with every
path's probabilities against the "before" default export's and a ``tf.profiler`` profile of
each SavedModel per shape (``re2_lab.revisions.export_ab``). Writes ``portable_ab.json``
beside this file.

    python docs/runs/roofline/portable_ab.py --before=<git revision> [--rounds=3] \
        [--variants="RE2 3 blocks"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("re2", "RE2 1 block"), ("re2", "RE2 3 blocks")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, openvino=True)
