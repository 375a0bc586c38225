"""RE2's encoder convolutions computed as a sum of matrix products, one per kernel tap
(``re2_tf.serving.folded._conv_as_products``, commit dc90e5c), against ``tf.nn.conv1d``
before (issue 51, items 1 and 3: OpenVINO's layout transposes around the convolutions,
``docs/performance.md``, "Where the default's time goes"). The change was reverted after this
record (82485fa); the record was made at ed62537, which has both the change and this script:
check it out (``git worktree add <dir> ed62537``) and run the command there.

A converter that runs convolutions channels-first wraps each ``Conv2D`` of a channels-last
graph in transposes, and OpenVINO moves them through the concatenations and element-wise
nodes to the dense layers' inputs. The benchmark variants (random weights) are exported by
the ``--before`` git revision and by this checkout: the default export (XLA), ``--xla=false``,
and ONNX Runtime and OpenVINO (float32, and bfloat16 on a CPU with bfloat16 units) converted
from the latter; timed alternately in fresh processes at batch 8 x 20 and 512 x 20 on the same
batches, with every path's probabilities against the "before" default export's and a
``tf.profiler`` profile of each SavedModel per shape (``re2_lab.revisions.export_ab``).
Writes ``conv_products_ab.json`` beside this file.

    python docs/runs/roofline/conv_products_ab.py --before=<git revision> [--rounds=3] \
        [--variants="RE2 3 blocks"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("re2", "RE2 1 block"), ("re2", "RE2 3 blocks")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, openvino=True)
