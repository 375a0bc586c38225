"""Whether the serving choice's figure rule of 2026-12-07 (a candidate's figure the median of
its rounds, and a close call taking in every candidate with a round within the margin of the
least figure) picks the same routes from one export to the next more often than the rule
before it (the least of the rounds, and a close call only among the least), and what it costs
``re2-export``: ``re2-export --run_dir=<run_dir> --export_dir=<tmp>`` with no flags, as a user
runs it, at two revisions of ``re2_tf`` in turn (``--before``, a worktree of that commit put
first on ``PYTHONPATH``; and this checkout, whose ``re2_tf/`` must be committed), each
``--repeats`` times, the two revisions alternating.

Per export: its revision, its wall seconds, the 1-minute load average before and after, the
CPU's peak FLOP/s measured just before (:func:`re2_lab.roofline.peaks`, how far the machine
had drifted), the TensorFlow threads and routes chosen, the timing processes started (one per
candidate and round, and one per close-call round) and every candidate's rounds and figure.
Runs in whatever install it is started from (every runtime installed is a candidate). Writes
``figure_rule.json`` beside this file (or ``--json_out``) after every export (a killed run
continues with the exports left; a record of other revisions is refused).

    python docs/runs/serving-choice/figure_rule.py --before=<commit> --repeats=3 <run_dir>

``<run_dir>`` is a trained run (the record keeps its ``results.json``; the quick start's,
``re2-train --flagfile=configs/re2/sample.flags --run_dir=checkpoints/quick-start/re2-sample``,
trains one in about two minutes).
"""

import argparse
import datetime
import json
import sys
import tempfile
from pathlib import Path

from re2_lab import roofline
from re2_tf import runs
from re2_tf.machine import machine
from re2_tf.serving import runtimes

HERE = Path(__file__).resolve().parent
OUT = HERE / "figure_rule.json"
#: What the record keeps of each candidate of an export's choice.
CANDIDATE = ("backend", "precision", "threads", "rounds_ms", "median_ms", "label_agreement",
             "error")  # fmt: skip
sys.path.insert(0, str(HERE))  # export_cost.py: the same export, as a user runs it
from export_cost import export, processes, revisions, worktree  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json_out", default=str(OUT), help="the record to write or continue")
    parser.add_argument("run_dir", help="a trained run")
    args = parser.parse_args()
    out = Path(args.json_out)
    before, after = revisions(args.before)
    run_dir = args.run_dir
    results = json.loads((Path(run_dir) / "results.json").read_text())
    record = json.loads(out.read_text()) if out.exists() else {
        "command": None,
        **machine(),
        "versions": runtimes.versions(),
        "revisions": {"before": before, "after": after},
        "run": {"run_dir": run_dir, "model": runs.load_config(run_dir).model,
                "results": results},
        "exports": [],
    }  # fmt: skip
    if record["revisions"] != {"before": before, "after": after}:
        raise SystemExit(f"{out.name} measured {record['revisions']}: move it aside first")
    if record["run"]["results"] != results:
        raise SystemExit(f"{out.name} measured another run than {run_dir}: move it aside first")
    record["command"] = (
        f"python docs/runs/serving-choice/figure_rule.py --before={before[:7]} "
        f"--repeats={args.repeats} " + (f"--json_out={args.json_out} " if out != OUT else "")
        + run_dir
    )  # fmt: skip
    order = ["before", "after"] * args.repeats
    with worktree(before) as tree:
        for name in order[len(record["exports"]) :]:
            peaks = roofline.peaks()
            with tempfile.TemporaryDirectory() as tmp:
                timed = export(run_dir, tmp, tree if name == "before" else "")
            choice = timed.pop("choice")
            del timed["candidates"]  # keyed by runtime alone: below, by thread setting too
            record["exports"].append(
                {
                    "revision": name,
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime(
                        "%Y-%m-%d %H:%M UTC"
                    ),
                    "peaks_before": peaks,
                    **timed,
                    "tf_threads": choice["tf_threads"],
                    "processes": processes(choice, per_shape=False),
                    "candidates": [
                        {k: r[k] for k in CANDIDATE if k in r} for r in choice["candidates"]
                    ],
                }
            )
            out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
