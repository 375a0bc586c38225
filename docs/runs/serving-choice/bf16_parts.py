"""Which part of BERT+MatchLSTM OpenVINO cannot run in bfloat16: the trained quick-start run's
dev pairs scored by the two parts of its OpenVINO IR (``re2_tf.serving.runtimes.OPENVINO_PARTS``:
the MatchLSTM and what follows it, and the rest, the BERT encoder) with each part compiled in
f32 or bf16, and by the whole IR under a bf16 hint, against the SavedModel.

The run's ``results.json`` must be the committed record's (retrain it with ``re2-train
--flagfile=docs/runs/quick-start/bert_matchlstm-sample/flags.txt``). The export and its
``xla=False`` twin are made as ``re2-export`` makes them; every combination is fed the same
Python tokenisation in batches of 64 pairs; each combination is compiled and run 3 times on
the same features. Records each one's share of labels equal
to the SavedModel's (a pair whose probabilities are not finite counts as unequal), its max
|Δp| over the finite pairs and how many pairs are not finite. Nothing is timed. Writes
``bf16_parts.json`` beside this file.

    python docs/runs/serving-choice/bf16_parts.py [<run_dir>]
"""

import datetime
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import openvino as ov

from re2_tf import runs
from re2_tf.machine import machine
from re2_tf.serving import runtimes
from re2_tf.serving.predictor import Predictor
from re2_tf.serving.run_export import export_run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RECORD = "docs/runs/quick-start/bert_matchlstm-sample"
OUT = HERE / "bf16_parts.json"
MAX_PAIRS = 1000
BATCH = 64
COMPILES = 3  # the same IR compiled and run this many times per combination


def main():
    run_dir = Path(
        sys.argv[1] if len(sys.argv) > 1 else "checkpoints/quick-start/bert_matchlstm-sample"
    )
    results = json.loads((run_dir / "results.json").read_text())
    if results != json.loads((ROOT / RECORD / "results.json").read_text()):
        raise SystemExit(f"{run_dir}: results.json is not {RECORD}'s")
    _, examples = runs.load_examples(run_dir, "dev")
    texts1 = [ex.text1 for ex in examples[:MAX_PAIRS]]
    texts2 = [ex.text2 for ex in examples[:MAX_PAIRS]]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        export = export_run(run_dir, Path(tmp) / "export", serving="savedmodel")
        plain = export_run(run_dir, Path(tmp) / "plain", serving="savedmodel", xla=False)
        xml = runtimes.convert(plain, "openvino", Path(export) / "runtimes")
        want = Predictor(export, tokenize="python", backend="savedmodel").probabilities(
            texts1, texts2
        )
        predictor = Predictor(export, tokenize="python", backend="openvino", precision="f32")
        features = [
            predictor.features(texts1[i : i + BATCH], texts2[i : i + BATCH])
            for i in range(0, len(texts1), BATCH)
        ]
        core = ov.Core()
        parts = [xml.with_name(xml.name[: -len(".xml")] + s) for s in runtimes.OPENVINO_PARTS]
        combinations = [("f32", "f32"), ("bf16", "f32"), ("f32", "bf16"), ("bf16", "bf16")]
        for first, second in [*combinations, ("bf16", None)]:
            for compile_ in range(1, COMPILES + 1):  # each a fresh compile of the same IR
                # second None: the whole IR under one hint, as served before the IR had parts
                files = parts if second else [xml]
                compiled = [
                    core.compile_model(str(part), "CPU", {"INFERENCE_PRECISION_HINT": precision})
                    for part, precision in zip(files, (first, second))
                ]
                got = [runtimes.run_openvino(compiled, b)["probabilities"] for b in features]
                got = np.concatenate(got)
                finite = np.isfinite(got).all(axis=-1)  # a pair with NaN or inf never agrees
                row = {
                    "parts": len(files),
                    "encoder": first,
                    "match_lstm": second or first,
                    "compile": compile_,
                    "label_agreement": float((finite & (got.argmax(-1) == want.argmax(-1))).mean()),
                    "max_abs_dp": float(np.abs(got[finite] - want[finite]).max()),
                    "non_finite_pairs": int((~finite).sum()),
                }
                print(row, flush=True)
                rows.append(row)
                del compiled
    record = {
        "command": "python docs/runs/serving-choice/bf16_parts.py",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "versions": runtimes.versions(),
        "run": RECORD,
        "pairs": len(texts1),
        "batch": BATCH,
        "compiles": COMPILES,
        "rows": rows,
    }
    OUT.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
