"""What ``re2-export`` with no flags chooses on a core install (``pip install -e .``: no
OpenVINO, no ONNX Runtime), per trained run: the serving choice of TensorFlow's own paths
(the XLA SavedModel, TensorFlow without XLA, its oneDNN bfloat16 rewrite, the bfloat16
SavedModel of the same weights) and LiteRT, timed and checked on the run's dev pairs by the
library (``re2_tf.serving.serving_choice``).

For each ``<run_dir>=<record dir>`` (a trained run whose ``results.json`` this script checks
against the committed record): runs ``re2-export --run_dir=<run_dir> --export_dir=<tmp>`` as a
user would, and keeps the export's ``serving_choice`` with the 1-minute load average before
and after, and the command's wall seconds beside those of the same command with
``--serving=savedmodel`` (run first: the export alone, nothing measured). Refuses to run
where OpenVINO or ONNX Runtime is installed (their candidates would be measured: that is
``docs/runs/runtimes/``'s record). Writes ``core_install.json`` beside
this file (``--json_out=<path>``: that file instead, e.g. another CPU's record), adding runs not
in it yet (a killed run continues with the runs left); a record of another CPU is refused.

    python docs/runs/serving-choice/core_install.py [--json_out=<path>] <run_dir>=<record dir> ...
"""

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
OUT = HERE / "core_install.json"
EXTRAS = ("openvino", "onnxruntime")


def measure(run_dir, record_dir, tmp):
    results = json.loads((Path(run_dir) / "results.json").read_text())
    recorded = json.loads((ROOT / record_dir / "results.json").read_text())
    if results != recorded:
        raise SystemExit(f"{run_dir}: results.json is not {record_dir}'s")
    export_dir = Path(tmp) / "export"
    command = [sys.executable, "-m", "re2_tf.cli.export", f"--run_dir={run_dir}"]
    seconds = {}
    before = os.getloadavg()[0]
    for name, flags in (("--serving=savedmodel", ["--serving=savedmodel"]), ("default", [])):
        start = time.perf_counter()
        subprocess.run(command + [f"--export_dir={export_dir}", *flags], check=True)
        seconds[name] = round(time.perf_counter() - start, 1)
    after = os.getloadavg()[0]
    config = json.loads((export_dir / "assets" / EXPORT_CONFIG_FILE).read_text())
    return {
        "run_dir": str(run_dir),
        "run": record_dir,
        "model": runs.load_config(run_dir).model,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "loadavg": [round(before, 2), round(after, 2)],
        "export_seconds": seconds,
        "serving_choice": config["serving_choice"],
    }


def main():
    found = [name for name in EXTRAS if installed(name)]
    if found:
        raise SystemExit(f"{', '.join(found)} installed: run this in a core install")
    args = sys.argv[1:]
    out = OUT
    if args and args[0].startswith("--json_out="):
        out = Path(args.pop(0).split("=", 1)[1]).resolve()
    here = machine()
    record = json.loads(out.read_text()) if out.exists() else {
        "command": None,
        **here,
        "versions": {
            k: v for k, v in runtimes.versions().items() if k in ("tensorflow", "ai-edge-litert")
        },
        "runs": [],
    }  # fmt: skip
    if (record["cpu"], record["cpu_features"]) != (here["cpu"], here["cpu_features"]):
        raise SystemExit(f"{out} was measured on {record['cpu']}: give this CPU its own file")
    done = {r["run"] for r in record["runs"]}
    for pair in args:
        run_dir, record_dir = pair.split("=", 1)
        if record_dir in done:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            record["runs"].append(measure(run_dir, record_dir, tmp))
        record["command"] = " ".join(
            ["python docs/runs/serving-choice/core_install.py"]
            + ([f"--json_out={out.relative_to(ROOT)}"] if out != OUT else [])
            + [f"{r['run_dir']}={r['run']}" for r in record["runs"]]
        )
        out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
