"""The products' kernels as graph constants, before and after (issue 51, item 2: the
SavedModel's own time without XLA, where TensorFlow's oneDNN kernels compute).

Before, an ``--xla=false`` export of RE2's folded forward pass (``re2_tf/serving/folded.py``)
or BERT's (``re2_tf/serving/folded_bert.py``) held every folded array as a variable; after,
it writes the products' kernels into the traced graph as constants and keeps the embeddings,
biases and temperatures as variables (``re2_tf.serving.backends._FoldedWeights``). With a
constant kernel, TensorFlow's oneDNN product kernels reorder it once into a blocked layout and
keep it, and run on oneDNN's blocked (``brgemm``) kernels. The benchmark variants (random
weights) are exported by the ``--before`` git revision and by this checkout, as the default
export (XLA, unchanged: a control), ``--xla=false``, ``--xla=false --precision=bf16`` and,
for the target the SavedModel is measured against, OpenVINO bf16 converted from the
``--xla=false`` export as the serving choice converts it; timed alternately in fresh
processes at batch 8 x 20 and 512 x 20 on the same batches, with their probabilities against
the "before" default export's and a ``tf.profiler`` profile of each SavedModel per shape
(``re2_lab.revisions.export_ab``). Writes ``constant_kernels_ab.json`` beside this file,
after each variant.

    python docs/runs/roofline/constant_kernels_ab.py --before=<git revision> [--rounds=2]
        [--variants="RE2 1 block,RE2 3 blocks,BERT (h_0)"]
        [--paths="xla=False,bf16 xla=False,openvino bf16"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [
    ("re2", "RE2 1 block"),
    ("re2", "RE2 3 blocks"),
    ("bert_matchlstm", "BERT (h_0)"),
]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, openvino=True, bf16=True)
