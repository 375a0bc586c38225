"""One trace of the model function for every signature, before and after (issue 51: the cost
of the constant kernels of ``--xla=false`` exports on disk).

Before, each signature of an export (``serving_default``, ``serving_ids``) and the saved
model-function attributes held a trace of their own of the model function, and an
``--xla=false`` export of RE2's or BERT's folded forward pass, whose products' kernels are
constants of the traced graph (``re2_tf.serving.backends._FoldedWeights``), wrote them into
``saved_model.pb`` once per trace; after, the export traces each model function once, over the
features' general shapes, and every signature calls that trace
(``re2_tf.serving.export.ServingModule``). The benchmark variants (random weights) are
exported by the ``--before`` git revision and by this checkout, as the default export (XLA),
``--xla=false`` and ``--xla=false --precision=bf16``; each SavedModel's size on disk is
recorded, and the paths are timed alternately in fresh processes at batch 8 x 20 and
512 x 20 on the same batches, with their probabilities against the "before" default
export's (``re2_lab.revisions.export_ab``). Writes ``shared_trace_ab.json`` beside this file,
after each variant.

    python docs/runs/roofline/shared_trace_ab.py --before=<git revision> [--rounds=2]
        [--variants="RE2 1 block,BERT (h_0)"] [--paths="xla=False,bf16 xla=False"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [
    ("re2", "RE2 1 block"),
    ("bert_matchlstm", "BERT (h_0)"),
]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, bf16=True)
