"""The probabilities and the most probable label computed inside the export's compiled model
function, before and after (issue 51, item 1: the time of the default export outside XLA).

Before, the export's model function (``jit_compile`` in the default export) returned the
logits, and the softmax (oneDNN's ``_MklSoftmax``) and the argmax ran after it as TensorFlow
kernels, each dispatched on every call; after, ``re2_tf.serving.export._model_function``
returns the probabilities and the label id too, so both are part of the compiled function.
RE2 1 block and Match-SRNN (the benchmark variants, random weights) are exported by the
``--before`` git revision and by this checkout, as the default export (XLA), ``--xla=false``
and ONNX Runtime converted from the latter, and timed alternately in fresh processes at
batch 8 x 20 and 512 x 20 on the same batches, with their probabilities against the "before"
default export's and a ``tf.profiler`` profile of each SavedModel per shape
(``re2_lab.revisions.export_ab``). Writes ``compiled_outputs_ab.json`` beside this file.

    python docs/runs/roofline/compiled_outputs_ab.py --before=<git revision> [--rounds=3]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("re2", "RE2 1 block"), ("match_srnn", "Match-SRNN")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS)
