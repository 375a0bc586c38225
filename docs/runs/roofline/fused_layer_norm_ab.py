"""BERT's LayerNorms as oneDNN's fused kernel in the bfloat16 SavedModel, before and after
(issue 51, item 2: the bfloat16 SavedModel against OpenVINO bf16 at 8 x 20).

Before, the bfloat16 pass of ``re2_tf/serving/folded_bert.py`` computed each LayerNorm in
about ten kernels (casts to float32, two means, the normalisation and the affine part); after,
where TensorFlow registers ``_MklLayerNorm`` for bfloat16 on the CPU, each is that one oneDNN
kernel (float32 statistics, bfloat16 scale and offset). The benchmark variants (random
weights) are exported by the ``--before`` git revision and by this checkout, as the default
export (XLA), ``--xla=false``, ``--xla=false --precision=bf16`` and OpenVINO (float32 and, on
a CPU with bfloat16 units, bfloat16) converted from the ``--xla=false`` export, whose graph
the change leaves as it was; the paths are timed alternately in fresh processes at batch
8 x 20 and 512 x 20 on the same batches, with their probabilities against the "before" default
export's, and each SavedModel is profiled once per shape (``re2_lab.revisions.export_ab``).
Writes ``fused_layer_norm_ab.json`` beside this file, after each variant.

    python docs/runs/roofline/fused_layer_norm_ab.py --before=<git revision> [--rounds=3]
        [--variants="BERT (h_0),BERT+MatchLSTM"] [--paths="bf16 xla=False,openvino bf16"]
        [--json_out=fused_layer_norm_ab.json]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [
    ("bert_matchlstm", "BERT (h_0)"),
    ("bert_matchlstm", "BERT+MatchLSTM"),
]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, bf16=True, openvino=True)
