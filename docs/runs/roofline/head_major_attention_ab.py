"""BERT's attention head-major in the bfloat16 SavedModel, before and after (issue 51, item
2: the bfloat16 SavedModel against OpenVINO bf16 at 8 x 20).

Before, the bfloat16 pass of ``re2_tf/serving/folded_bert.py`` computes query, key and value
as one 2-D product and moves each into heads with a reshape and a transpose, and masks the
padded keys with a select per layer; e63d653 computed them head-major from one batched
product and masked with one additive bias (run at e63d653 against its parent; the change was
slower and 168cd9d reverted it: ``docs/performance.md``, "BERT's attention head-major: tried
and reverted"). The protocol is :func:`re2_lab.revisions.export_ab`'s (exports by both
revisions, timed alternately in fresh processes at 8 x 20 and 512 x 20, agreement, profiles).
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
