"""DRCN and FITN training before and after a change, timed and profiled alternately in fresh
processes, so that a slow spell of a shared CPU hits both alike.

Each measurement trains the model from ``configs/<model>/snli_learning_check.flags`` on an SNLI
learning-check directory (batch 128, 2 intra-op threads) for ``3 + 10 + 3`` updates: 3 not
timed, 10 timed (``seconds_per_update``: their wall time / 10), 3 under ``tf.profiler``
(``kinds``: exclusive thread-ms per update by TensorFlow kernel type, as
``re2_lab/profile_worker.py`` counts them; ``in_loops``: the share inside
``while`` loops, the recurrences). ``--before`` is a git revision, checked out into a
temporary worktree and imported from there; the "after" side is this checkout. Writes
``bilstm_ab.json`` beside this file and prints a table.

    python docs/runs/training-profile/bilstm_ab.py --data_dir=<SNLI learning-check dir> \
        --before=<git revision> [--rounds=3] [--models=drcn,fitn]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from re2_lab.revisions import checkout

REPO = Path(__file__).resolve().parents[3]
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
ROUNDS = int(ARGS.get("rounds", 3))
MODELS = ARGS.get("models", "drcn,fitn").split(",")
WARMUP, TIMED, PROFILED = 3, 10, 3

WORKER = r"""
import glob, json, sys, tempfile, time
from pathlib import Path
import keras, tensorflow as tf
sys.path.insert(0, str(Path(sys.argv[1]) / "re2_tf" / "serving"))
from profile_worker import exclusive_op_times
from tensorflow.tsl.profiler.protobuf import xplane_pb2
from re2_tf import api
from re2_tf.cli.train import config_from_args
repo, model, data_dir = sys.argv[1:4]
warmup, timed, profiled = map(int, sys.argv[4:7])
logdir = tempfile.mkdtemp()

class Clock(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == warmup - 1:
            self.start = time.perf_counter()
        if batch == warmup + timed - 1:
            self.seconds = (time.perf_counter() - self.start) / timed
            tf.profiler.experimental.start(logdir)
        if batch == warmup + timed + profiled - 1:
            tf.profiler.experimental.stop()

clock = Clock()
with tempfile.TemporaryDirectory() as run:
    config = config_from_args([
        f"--flagfile={repo}/configs/{model}/snli_learning_check.flags", f"--data_dir={data_dir}",
        f"--run_dir={run}/run", "--progress=false", "--threads=2", "--noeval_epoch",
        f"--max_samples={(warmup + timed + profiled) * 128}", f"--eval_per_samples={10**9}",
    ])
    api.fit(config, callbacks=[clock])
space = xplane_pb2.XSpace()
space.ParseFromString(Path(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0]).read_bytes())
ops, _ = exclusive_op_times(space)
kinds = {}
for name, ps in ops.items():
    kind = name.rsplit(":", 1)[-1]
    kinds[kind] = kinds.get(kind, 0) + ps / 1e9 / profiled
loops = sum(ps for name, ps in ops.items() if "/while" in name) / 1e9 / profiled
print("RESULT " + json.dumps({"seconds_per_update": clock.seconds, "kinds": kinds,
                              "in_loops_ms": loops, "op_ms": sum(kinds.values())}))
"""


def measure(source, model):
    env = dict(os.environ, PYTHONPATH=str(source))
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(source), model, ARGS["data_dir"],
         str(WARMUP), str(TIMED), str(PROFILED)],
        capture_output=True, text=True, env=env, cwd=source, timeout=3600,
    )  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{source} {model}: {proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def main():
    from re2_lab import throughput

    before = ARGS["before"]
    record = {
        "command": "python docs/runs/training-profile/bilstm_ab.py "
        + " ".join(f"--{k}={v}" for k, v in ARGS.items() if k != "data_dir")
        + " --data_dir=<SNLI learning-check dir>",
        "before": subprocess.check_output(
            ["git", "rev-parse", before], cwd=REPO, text=True
        ).strip(),
        "after": subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=REPO, text=True).strip()
        + (" + working tree" if subprocess.check_output(
            ["git", "status", "--porcelain", "re2_tf"], cwd=REPO, text=True) else ""),
        **throughput.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "batch_size": 128, "threads": 2, "rounds": ROUNDS,
        "models": {},
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, checkout(before, Path(tmp) / "before", REPO) as old:
        for model in MODELS:
            runs = {"before": [], "after": []}
            for _ in range(ROUNDS):
                for side, source in (("before", old), ("after", REPO)):
                    runs[side].append(measure(source, model))
            record["models"][model] = runs
            row = {s: statistics.median(r["seconds_per_update"] for r in v)
                   for s, v in runs.items()}  # fmt: skip
            print(f"| {model} | before {128 / row['before']:.1f} pairs/s | after "
                  f"{128 / row['after']:.1f} pairs/s | x{row['before'] / row['after']:.2f} |",
                  flush=True)  # fmt: skip
    out = Path(__file__).with_name("bilstm_ab.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
