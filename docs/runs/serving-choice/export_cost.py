"""What the serving choice costs ``re2-export`` on a core install (``pip install -e .``: no
OpenVINO, no ONNX Runtime), before and after its rounds time both shapes in one process per
candidate: ``re2-export --run_dir=<run_dir> --export_dir=<tmp>`` with no flags, as a user runs
it, at two revisions of ``re2_tf`` in turn, round by round (``--before``, a worktree of that
commit put first on ``PYTHONPATH``; and this checkout, whose ``re2_tf/`` must be committed).

For each ``<run_dir>=<record dir>`` (a trained run whose ``results.json`` this script checks
against the committed record) and each round: both revisions' wall seconds, the 1-minute load
average before and after, and from each export's ``serving_choice`` the timing processes it
started (a round's process per candidate and shape before, per candidate after; a close
call's per candidate and shape in both), every candidate's least medians and the routes.
Refuses to run where OpenVINO or ONNX Runtime is installed. Writes ``export_cost.json``
beside this file (or ``--json_out``) after every export (a killed run continues with the
exports left; a record of other revisions is refused).

    python docs/runs/serving-choice/export_cost.py --before=<commit> --rounds=2 \\
        <run_dir>=<record dir> ...
"""

import argparse
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from re2_tf import runs
from re2_tf.machine import machine
from re2_tf.serving import runtimes
from re2_tf.serving.files import EXPORT_CONFIG_FILE
from re2_tf.serving.predictor import installed

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "export_cost.json"
EXTRAS = ("openvino", "onnxruntime")


def git(*args):
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def revisions(before):
    """``(before, after)``: the full hashes of ``before`` and of this checkout's HEAD, which
    must have ``re2_tf/`` committed (the revision measured as "after")."""
    if git("status", "--porcelain", "re2_tf"):
        raise SystemExit("re2_tf/ has uncommitted changes: commit the revision to measure")
    return git("rev-parse", before), git("rev-parse", "HEAD")


@contextlib.contextmanager
def worktree(commit):
    """A detached worktree of ``commit`` in a temporary directory, removed on exit."""
    with tempfile.TemporaryDirectory() as path:
        git("worktree", "add", "--detach", path, commit)
        try:
            yield path
        finally:
            git("worktree", "remove", "--force", path)


def processes(choice, per_shape):
    """Timing processes a ``serving_choice`` started: each candidate's first ``rounds`` rounds
    one per shape (``per_shape``) or one for all shapes, and one per close-call round."""
    rounds, total = choice["rounds"], 0
    for row in choice["candidates"]:
        timed = row.get("rounds_ms", {})
        if not timed:
            continue
        first = max(min(len(v), rounds) for v in timed.values())
        total += first * (len(timed) if per_shape else 1)
        total += sum(max(len(v) - rounds, 0) for v in timed.values())
    return total


def export(run_dir, tmp, pythonpath):
    export_dir = Path(tmp) / "export"
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # cwd: not this checkout, whose re2_tf/ python -c and -m would import first
    imported = subprocess.run(
        [sys.executable, "-c", "import re2_tf; print(re2_tf.__file__)"],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp,
    ).stdout.strip()
    if not Path(imported).is_relative_to(Path(pythonpath or ROOT)):
        raise SystemExit(f"re2_tf imported from {imported}, not {pythonpath or ROOT}")
    before = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.export", f"--run_dir={Path(run_dir).resolve()}",
         f"--export_dir={export_dir}"],
        check=True, env=env, cwd=tmp,
    )  # fmt: skip
    seconds = round(time.perf_counter() - start, 1)
    after = os.getloadavg()[0]
    choice = json.loads((export_dir / "assets" / EXPORT_CONFIG_FILE).read_text())["serving_choice"]
    return {
        "seconds": seconds,
        "loadavg": [round(before, 2), round(after, 2)],
        "candidates": {
            f"{r['backend']} {r['precision']}": r.get("median_ms", r.get("error"))
            for r in choice["candidates"]
        },
        "routes": choice["routes"],
        "choice": choice,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json_out", default=str(OUT), help="the record to write or continue")
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    out = Path(args.json_out)
    found = [name for name in EXTRAS if installed(name)]
    if found:
        raise SystemExit(f"{', '.join(found)} installed: run this in a core install")
    before, after = revisions(args.before)
    record = json.loads(out.read_text()) if out.exists() else {
        "command": None,
        **machine(),
        "versions": {
            k: v for k, v in runtimes.versions().items() if k in ("tensorflow", "ai-edge-litert")
        },
        "revisions": {"before": before, "after": after},
        "runs": {},
    }  # fmt: skip
    if record["revisions"] != {"before": before, "after": after}:
        raise SystemExit(f"{out.name} measured {record['revisions']}: move it aside first")
    with worktree(before) as tree:
        for pair in args.runs:
            run_dir, record_dir = pair.split("=", 1)
            results = json.loads((Path(run_dir) / "results.json").read_text())
            if results != json.loads((ROOT / record_dir / "results.json").read_text()):
                raise SystemExit(f"{run_dir}: results.json is not {record_dir}'s")
            entry = record["runs"].setdefault(
                record_dir,
                {"run_dir": run_dir, "model": runs.load_config(run_dir).model, "rounds": []},
            )
            while len(entry["rounds"]) < args.rounds:
                if not entry["rounds"] or len(entry["rounds"][-1]) == 2:
                    entry["rounds"].append({})
                current = entry["rounds"][-1]
                for name, path in (("before", tree), ("after", "")):
                    if name in current:
                        continue
                    with tempfile.TemporaryDirectory() as tmp:
                        timed = export(run_dir, tmp, path)
                    timed["processes"] = processes(timed.pop("choice"), name == "before")
                    timed["date"] = datetime.datetime.now(datetime.timezone.utc).strftime(
                        "%Y-%m-%d %H:%M UTC"
                    )
                    current[name] = timed
                    record["command"] = (
                        "python docs/runs/serving-choice/export_cost.py "
                        f"--before={before[:7]} --rounds={args.rounds} "
                        + (f"--json_out={args.json_out} " if out != OUT else "")
                        + " ".join(f"{v['run_dir']}={k}" for k, v in record["runs"].items())
                    )
                    out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
