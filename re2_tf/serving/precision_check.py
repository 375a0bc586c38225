r"""Accuracy change of reduced-precision exports on real dev files (a measurement, not a test).

Takes a trained run directory (e.g. ``python -m re2_tf.train --flagfile=configs/sample.flags``),
exports it as fp32 SavedModel (the reference, checked against Keras to 1e-5), bf16
SavedModel, fp32 TFLite and int8 dynamic-range TFLite, and reports accuracy and label
agreement with the fp32 model on ``data/sample/dev.txt`` and, when present,
``../shared/data/snli/re2_processed/dev.txt``::

    python -m re2_tf.serving.precision_check --run_dir=checkpoints/sample-re2 --out=/tmp/precision
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf
from absl import app, flags

from re2_tf.export import export_model

REPO = Path(__file__).resolve().parents[2]
flags.DEFINE_string("run_dir", "checkpoints/sample-re2", "A trained run directory.")
flags.DEFINE_string("out", None, "Directory for the exports (default: a temporary one).")
FLAGS = flags.FLAGS
LABELS = ["entailment", "neutral", "contradiction"]


def _read(path):
    rows = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8")]
    return [r[0] for r in rows], [r[1] for r in rows], np.asarray([int(r[2]) for r in rows])


def _pad(rows):
    out = np.zeros((len(rows), max(1, max(map(len, rows)))), np.int32)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r or [1]
    return out


def main(argv):
    del argv
    from re2_tf import runs

    model = runs.load_best_model(FLAGS.run_dir)
    vocab = runs.load_vocab(FLAGS.run_dir)
    enc = lambda texts: [vocab.encode(s.split()) for s in texts]  # noqa: E731
    out = Path(FLAGS.out or tempfile.mkdtemp())
    common = dict(vocab_tokens=vocab.tokens, label_names=LABELS, tokenizer="whitespace")
    # Pairs are fed as ids (the pipeline's whitespace split of the processed files).
    exports = {
        "savedmodel fp32": export_model(model, out / "fp32", **common),
        "savedmodel bf16": export_model(model, out / "bf16", precision="bf16", **common),
        "tflite fp32": export_model(model, out / "tflite_fp32", fmt="tflite", **common),
        "tflite int8": export_model(model, out / "tflite_int8", fmt="tflite", precision="int8",
                                    **common),
    }
    files = {"sample dev": REPO / "data/sample/dev.txt",
             "SNLI dev": REPO.parent / "shared/data/snli/re2_processed/dev.txt"}
    from ai_edge_litert.interpreter import Interpreter
    report = {}
    for fname, path in files.items():
        if not path.exists():
            continue
        d1, d2, dy = _read(path)
        ea, eb = enc(d1), enc(d2)
        keras_probs, probs = [], {k: [] for k in exports}
        runners = {k: Interpreter(model_path=str(p / "model.tflite")).get_signature_runner(
            "serving_ids") for k, p in exports.items() if k.startswith("tflite")}
        loaded = {k: tf.saved_model.load(str(p)).signatures["serving_ids"]
                  for k, p in exports.items() if k.startswith("savedmodel")}
        for start in range(0, len(dy), 64):
            ia, ib = _pad(ea[start:start + 64]), _pad(eb[start:start + 64])
            keras_probs.append(tf.nn.softmax(model({"text1": ia, "text2": ib})).numpy())
            for k, fn in loaded.items():
                probs[k].append(fn(text1=tf.constant(ia), text2=tf.constant(ib))["probabilities"].numpy())
            for k, fn in runners.items():
                probs[k].append(fn(text1=ia, text2=ib)["probabilities"])
        ref = np.concatenate(keras_probs)
        report[fname] = {"pairs": len(dy), "keras acc": float((ref.argmax(1) == dy).mean())}
        for k in exports:
            p = np.concatenate(probs[k])
            report[fname][k] = {
                "acc": round(float((p.argmax(1) == dy).mean()), 4),
                "same label as keras": round(float((p.argmax(1) == ref.argmax(1)).mean()), 4),
                "max |p - p_keras|": float(np.abs(p - ref).max()),
                "finite": bool(np.isfinite(p).all())}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    app.run(main)
