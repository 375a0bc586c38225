"""RE2's ``serving_ids_portable`` with no concatenation along the features
(``re2_tf.serving.folded.re2_forward(..., concatenations="split")``: each product of a
concatenation computed as the sum of its parts' products with the kernel split by rows)
against the revision ``--before`` it, whose portable form formed every concatenation (issue
51, items 1 and 3; ``docs/performance.md``, "RE2's concatenations as split products: tried
and reverted"). The change was reverted after this record; the record was made at f369049,
which has both the change and this script: check it out (``git worktree add <dir> f369049``)
and run the command there.

The profiles of OpenVINO's bfloat16 RE2 (``runtime_profiles.json``,
``runtime_profiles-amx.json``) put ``Concat`` on a reference kernel among the largest nodes
outside the products. The benchmark variants (random weights) are exported by the
``--before`` git revision and by this checkout: the default export (XLA), ``--xla=false``,
and ONNX Runtime and OpenVINO (float32, and bfloat16 on a CPU with bfloat16 units) converted
from the latter's ``serving_ids_portable``; timed alternately in fresh processes at batch
8 x 20 and 512 x 20 on the same batches, with every path's probabilities against the
"before" default export's and a ``tf.profiler`` profile of each SavedModel per shape
(``re2_lab.revisions.export_ab``). Writes ``concat_split_ab.json`` beside this file.

    python docs/runs/roofline/concat_split_ab.py --before=<git revision> [--rounds=3] \
        [--variants="RE2 3 blocks"] [--paths=onnxruntime,"openvino bf16"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("re2", "RE2 1 block"), ("re2", "RE2 3 blocks")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, openvino=True)
