"""Whether every runtime ``re2-export --serving=auto`` may choose agrees with the SavedModel on a
trained run's dev pairs (issue 51: a non-SavedModel default must agree on the run's dev pairs).

For each run (trained runs of ``docs/runs/compare/`` and ``docs/runs/drcn-ablations/``, whose
``results.json`` this script checks against the committed record): export it as ``re2-export``
does (XLA SavedModel), convert an ``xla=False`` export of the same weights for ONNX Runtime and
OpenVINO into the export's ``runtimes/`` as the serving choice does, and score up to 1,000 of
the run's dev pairs (``serving_choice``'s number) with the SavedModel and with every candidate
(TensorFlow without XLA, ``savedmodel_noxla``, in f32 and, where the CPU has bfloat16 units,
under TensorFlow's oneDNN bfloat16 rewrite, and the bfloat16 SavedModel of the same weights,
``savedmodel_bf16``; LiteRT on a ``--format=tflite`` export of the same model, ``tflite``; then
``re2_tf.serving.serving_choice.installed_candidates``), all fed the same Python tokenisation.
Records each candidate's share of labels equal to the SavedModel's and its max |dp|. Nothing is
timed. Writes ``agreement.json`` beside this file, adding runs not in it yet; ``--redo=<record
dir>,...`` measures those runs again, each in place of its own entry.

    python docs/runs/serving-choice/agreement.py [--redo=<dirs>] <run_dir>=<record dir> ...
"""

import datetime
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from re2_tf import runs
from re2_tf.machine import cpu_units, machine
from re2_tf.serving import runtimes, serving_choice
from re2_tf.serving.predictor import Predictor
from re2_tf.serving.run_export import export_run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "agreement.json"
MAX_PAIRS = 1000


def measure(run_dir, record_dir, tmp):
    results = json.loads((Path(run_dir) / "results.json").read_text())
    recorded = json.loads((ROOT / record_dir / "results.json").read_text())
    if results != recorded:
        raise SystemExit(f"{run_dir}: results.json is not {record_dir}'s")
    config = runs.load_config(run_dir)
    _, examples = runs.load_examples(run_dir, "dev")
    pairs = [(ex.text1, ex.text2) for ex in examples[:MAX_PAIRS]]
    texts1, texts2 = [a for a, _ in pairs], [b for _, b in pairs]
    export = export_run(run_dir, Path(tmp) / "export", serving="savedmodel")
    plain = export_run(run_dir, Path(tmp) / "plain", serving="savedmodel", xla=False)
    # the twins the serving choice makes of an fp32 export: a bfloat16 SavedModel of the same
    # weights (where the CPU has bfloat16 units) and the same model for LiteRT
    bf16 = None
    if cpu_units()["bfloat16"]:
        bf16 = export_run(
            run_dir, Path(tmp) / "bf16", serving="savedmodel", xla=False, precision="bf16"
        )
    try:
        litert = export_run(run_dir, Path(tmp) / "tflite", xla=False, fmt="tflite")
    except ValueError as error:  # the TFLite converter's refusal: the candidate's error
        litert = error
    reference = Predictor(export, tokenize="python", backend="savedmodel")
    want = reference.probabilities(texts1, texts2)
    rows = []
    candidates = [
        *serving_choice.tensorflow_candidates(bf16_export=bf16 is not None),
        ("tflite", "f32"),
        *serving_choice.installed_candidates()[1:],
    ]
    for backend, precision in candidates:
        row = {"backend": backend, "precision": precision}
        try:
            if backend == "tflite":
                if isinstance(litert, Exception):
                    raise litert
                runtimes.keep_tflite(litert, export)
            else:
                source = bf16 if backend == "savedmodel_bf16" else plain
                runtimes.convert(source, backend, Path(export) / "runtimes")
            served = Predictor(export, tokenize="python", backend=backend, precision=precision)
            got = served.probabilities(texts1, texts2)
        except (runtimes.ConversionError, RuntimeError, ValueError) as error:
            row["error"] = runtimes.failure(error)
        else:
            row["finite"] = bool(np.isfinite(got).all())
            row["label_agreement"] = float((got.argmax(-1) == want.argmax(-1)).mean())
            row["max_abs_dp"] = float(np.abs(got - want).max())
        print(record_dir, row, flush=True)
        rows.append(row)
    return {
        "run_dir": str(run_dir),
        "run": record_dir,
        "model": config.model,
        "dataset": config.dataset,
        "pairs": len(pairs),
        "labels": len(config.label_names),
        "candidates": rows,
    }


def main():
    record = json.loads(OUT.read_text()) if OUT.exists() else {
        "command": None,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "versions": runtimes.versions(),
        "min_agreement": serving_choice.MIN_AGREEMENT,
        "runs": [],
    }  # fmt: skip
    args = [a for a in sys.argv[1:] if not a.startswith("--redo=")]
    redo = {d for a in sys.argv[1:] if a.startswith("--redo=") for d in a[7:].split(",") if d}
    done = {r["run"] for r in record["runs"]} - redo
    for pair in args:
        run_dir, record_dir = pair.split("=", 1)
        if record_dir in done:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            measured = measure(run_dir, record_dir, tmp)
        names = [r["run"] for r in record["runs"]]
        if record_dir in names:  # measured again: in place, dated
            measured["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
            record["runs"][names.index(record_dir)] = measured
        else:
            record["runs"].append(measured)
        # the command that makes this record: the runs in it
        record["command"] = " ".join(
            ["python docs/runs/serving-choice/agreement.py"]
            + [f"{r['run_dir']}={r['run']}" for r in record["runs"]]
        )
        OUT.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
