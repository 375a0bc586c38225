"""Match-SRNN's spatial GRU before and after a change to the library (issue 51, item 1):
Match-SRNN and Bi-Match-SRNN (the benchmark variants, random weights) exported by the
``--before`` git revision (checked out into a temporary worktree and imported from there) and
by this checkout, each as the default export (XLA), ``--xla=false`` and ONNX Runtime
(converted from the ``--xla=false`` export, as the serving choice converts), timed
alternately in fresh processes (2 intra-op threads, median of each process's batches) at
batch 8 x 20 and 512 x 20 on the same batches
(``benchmarking.table5_inputs(..., length_spread=0)``).

Each path's probabilities on those batches are compared with the "before" default export's
(max |dp|, share of equal argmax), and each SavedModel is profiled once per shape with
``tf.profiler`` (``re2_lab.roofline.profile_export``): thread-ms per call in each op kind.
Writes ``spatial_gru_ab.json`` beside this file.

    python docs/runs/roofline/spatial_gru_ab.py --before=<git revision> [--rounds=3] \
        [--variants="Match-SRNN,Bi-Match-SRNN"]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from re2_lab.revisions import checkout
from re2_lab.roofline import ab_agreement, ab_profiles, ab_record, alternate_paths
from re2_tf import benchmarking
from re2_tf.models import get_spec

REPO = Path(__file__).resolve().parents[3]
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 3))
SHAPES = ((8, 20, 100), (512, 20, 5))  # batch, length, timed batches
REFERENCE = "before XLA"

#: Run in the checkout being measured (its own re2_tf): export the variant, XLA and not,
#: and convert the latter for ONNX Runtime.
EXPORT = r"""
import sys
from pathlib import Path
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes
out, variant = Path(sys.argv[1]), sys.argv[2]
spec = get_spec("match_srnn")
hparams = spec.benchmark[variant]["hparams"]
benchmarking.export_benchmark_model(spec, hparams, out / "xla")
benchmarking.export_benchmark_model(spec, hparams, out / "noxla", xla=False)
print(runtimes.convert(out / "noxla", "onnxruntime", out / "onnxruntime"))
"""


def export(source, out, variant):
    """``{path name suffix: (path, None)}`` of the exports of ``variant`` by the checkout
    ``source``."""
    proc = subprocess.run(
        [sys.executable, "-c", EXPORT, str(out), variant],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(source)),
        cwd=source, timeout=3600,
    )  # fmt: skip
    if proc.returncode:
        raise RuntimeError(f"{source} {variant}: {proc.stderr[-3000:]}")
    converted = proc.stdout.strip().splitlines()[-1]
    return {"XLA": (out / "xla", None), "xla=False": (out / "noxla", None),
            "onnxruntime": (Path(converted), None)}  # fmt: skip


def git(*args):
    return subprocess.check_output(["git", *args], cwd=REPO, text=True).strip()


def main():
    spec = get_spec("match_srnn")
    before = ARGS["before"]
    record = ab_record(
        "docs/runs/roofline/spatial_gru_ab.py", ARGS, ROUNDS,
        before=git("rev-parse", before),
        after=git("rev-parse", "HEAD")
        + (" + working tree" if git("status", "--porcelain", "re2_tf") else ""),
        variants={}, agreement={}, profiles={},
    )  # fmt: skip
    chosen = ARGS.get("variants", "Match-SRNN,Bi-Match-SRNN").split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with checkout(before, tmp / "before_checkout", REPO) as old:
            for variant in chosen:
                hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
                featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
                work = tmp / variant.replace(" ", "_")
                paths = {}
                for side, source in (("before", old), ("after", REPO)):
                    for name, path in export(source, work / side, variant).items():
                        paths[f"{side} {name}"] = path
                medians, outputs = alternate_paths(
                    paths, featurizers, SHAPES, ROUNDS, work, outputs=True
                )
                record["agreement"][variant] = ab_agreement(outputs, REFERENCE)
                record["variants"][variant] = medians
                record["profiles"][variant] = ab_profiles(paths, featurizers, SHAPES, work)
                print(f"| {variant} | " + " | ".join(
                    f"{key} {statistics.median(v):.2f} ms" for key, v in medians.items()
                ) + " |", flush=True)  # fmt: skip
    out = Path(__file__).with_name("spatial_gru_ab.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
