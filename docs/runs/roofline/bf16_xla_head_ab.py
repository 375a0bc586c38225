"""BERT+MatchLSTM's bfloat16 XLA export, before and after its BERT left XLA (issue 51, item 2:
the SavedModel against OpenVINO bf16 at 8 x 20 and 512 x 20).

Before, ``re2-export --precision=bf16`` (XLA, the default) of BERT+MatchLSTM served the Keras
model's bfloat16 copy compiled whole by XLA; after, the ``bert_folded`` backend runs BERT as
the bfloat16 pass of ``re2_tf/serving/folded_bert.py`` on TensorFlow's oneDNN kernels and
compiles only the float32 head with XLA (``FoldedBertBackend``'s ``jit_compile``;
``docs/performance.md``, "BERT in bfloat16, its head under XLA"). The ``bf16 xla=False``
export, the same on both sides, and OpenVINO bf16 are the controls. The protocol is
:func:`re2_lab.revisions.export_ab`'s (exports by both revisions, timed alternately in fresh
processes at 8 x 20 and 512 x 20, agreement, profiles). Writes ``bf16_xla_head_ab.json``
beside this file, after each variant.

    python docs/runs/roofline/bf16_xla_head_ab.py --before=<git revision> [--rounds=3]
        [--variants="BERT+MatchLSTM,BERT (h_0)"]
        [--paths="bf16 XLA,bf16 xla=False,openvino bf16"] [--json_out=bf16_xla_head_ab.json]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [
    ("bert_matchlstm", "BERT+MatchLSTM"),
    ("bert_matchlstm", "BERT (h_0)"),
]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, bf16=True, bf16_xla=True, openvino=True)
