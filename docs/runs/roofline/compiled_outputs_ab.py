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

import json
import sys
from pathlib import Path

from re2_lab.revisions import export_ab

REPO = Path(__file__).resolve().parents[3]
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
VARIANTS = [("re2", "RE2 1 block"), ("match_srnn", "Match-SRNN")]


def main():
    record = export_ab(
        "docs/runs/roofline/compiled_outputs_ab.py", ARGS, VARIANTS,
        before=ARGS["before"], rounds=int(ARGS.get("rounds", 3)), repo=REPO,
    )  # fmt: skip
    out = Path(__file__).with_name("compiled_outputs_ab.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
