"""BERT's attention head-major in the bfloat16 SavedModel, before and after (issue 51, item
2: the bfloat16 SavedModel against OpenVINO bf16 at 8 x 20).

Before, the bfloat16 pass of ``re2_tf/serving/folded_bert.py`` computed query, key and value
as one 2-D product and moved each into heads with a reshape and a transpose, and masked the
padded keys with a select per layer; after (rewrite 5 of its docstring), they come out of one
batched product head-major and the mask is one additive bias. The benchmark variants (random
weights) are exported by the ``--before`` git revision and by this checkout, as the default
export (XLA), ``--xla=false``, ``--xla=false --precision=bf16`` and OpenVINO (float32 and, on
a CPU with bfloat16 units, bfloat16) converted from the ``--xla=false`` export, whose graph
the change leaves as it was; the paths are timed alternately in fresh processes at batch
8 x 20 and 512 x 20 on the same batches, with their probabilities against the "before" default
export's, and each SavedModel is profiled once per shape (``re2_lab.revisions.export_ab``).
Writes ``head_major_attention_ab.json`` beside this file, after each variant.

    python docs/runs/roofline/head_major_attention_ab.py --before=<git revision> [--rounds=3]
        [--variants="BERT (h_0),BERT+MatchLSTM"] [--paths="bf16 xla=False,openvino bf16"]
        [--json_out=head_major_attention_ab.json]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [
    ("bert_matchlstm", "BERT (h_0)"),
    ("bert_matchlstm", "BERT+MatchLSTM"),
]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, bf16=True, openvino=True)
