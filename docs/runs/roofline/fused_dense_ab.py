"""RE2's dense layers as fused products, before and after (issue 51, items 1-2: the
SavedModel's own time on a CPU with bfloat16 units).

Before, RE2's folded forward pass (``re2_tf/serving/folded.py``) computed a dense layer as a
product over the last axis of a ``[batch, length, d]`` tensor, an added bias and the
activation, each a TensorFlow kernel of its own without XLA; after, it computes it on 2-D rows
(``MatMul``, ``BiasAdd``, then ReLU or the tanh-approximated GeLU), the form in which
Grappler's remapper fuses the bias and the activation into oneDNN's product kernel, and the
fusion's GeLU is applied to each of its two products instead of to their concatenation (the
same function). RE2 1 block and RE2 3 blocks (the benchmark variants, random weights) are
exported by the ``--before`` git revision and by this checkout, as the default export (XLA),
``--xla=false``, ``--xla=false --precision=bf16``, and ONNX Runtime and OpenVINO (float32 and,
where the CPU has bfloat16 units, bfloat16) converted from the ``--xla=false`` export as the
serving choice converts it; timed alternately in fresh processes at batch 8 x 20 and
512 x 20 on the same batches, with their probabilities against the "before" default export's
and a ``tf.profiler`` profile of each SavedModel per shape (``re2_lab.revisions.export_ab``).
Writes ``fused_dense_ab.json`` beside this file.

    python docs/runs/roofline/fused_dense_ab.py --before=<git revision> [--rounds=3]
        [--variants="RE2 3 blocks"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("re2", "RE2 1 block"), ("re2", "RE2 3 blocks")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, openvino=True, bf16=True)
