r"""Accuracy change of reduced-precision exports on real dev files (a measurement, not a test).

Takes a trained run directory (e.g. ``python -m re2_tf.train --flagfile=configs/re2/sample.flags``),
exports it as fp32 SavedModel (the reference, checked against Keras to 1e-5), bf16
SavedModel, fp32 TFLite and int8 dynamic-range TFLite, and reports accuracy and label
agreement with the Keras model on ``data/sample/dev.txt`` and, when present,
``../shared/data/snli/re2_processed/dev.txt`` -- or on the labelled prepared files named by
``--files`` -- for the exports named by ``--exports``::

    python -m re2_tf.serving.precision_check --run_dir=checkpoints/sample-re2 --out=/tmp/precision
    python -m re2_tf.serving.precision_check --run_dir=<BERT+MatchLSTM run on WikiQA> \
        --files=wikiqa_dev=<prepared wikiqa>/dev.txt --exports=savedmodel_fp32,savedmodel_bf16
"""

import json
import tempfile
from pathlib import Path

import numpy as np
from absl import app, flags

from re2_tf import runs
from re2_tf.data.datasets import get_dataset, load_file, load_split
from re2_tf.data.pipeline import encode_examples
from re2_tf.evaluation import inference_dataset, predict_probabilities, score
from re2_tf.export import export_model
from re2_tf.models import get_spec
from re2_tf.predict import Predictor

REPO = Path(__file__).resolve().parents[2]

flags.DEFINE_string("run_dir", "checkpoints/sample-re2", "A trained run directory.")
flags.DEFINE_string("out", None, "Directory for the exports (default: a temporary one).")
flags.DEFINE_list("files", None, "name=path of labelled prepared files to score (default: "
                  "data/sample/dev.txt and, when present, ../shared's SNLI dev file).")
EXPORTS = {"savedmodel_fp32": ("savedmodel", "fp32"), "savedmodel_bf16": ("savedmodel", "bf16"),
           "tflite_fp32": ("tflite", "fp32"), "tflite_int8": ("tflite", "int8")}
flags.DEFINE_list("exports", list(EXPORTS), f"Exports to compare with Keras: {list(EXPORTS)}.")
FLAGS = flags.FLAGS


def _ranking_scores(dataset, examples, probabilities, prefix=""):
    """MAP and MRR (``re2_tf.evaluation.score``) of answers ranked by p(correct)."""
    logits = np.log(np.clip(probabilities, 1e-30, None))  # softmax(log p) = p: same ranking
    result = score(dataset, examples, logits)
    return {f"{prefix}map": round(float(result["map"]), 4),
            f"{prefix}mrr": round(float(result["mrr"]), 4)}


def _files():
    """``{name: path}`` from ``--files`` (``name=path`` entries), or the default dev files.
    Raises ``app.UsageError`` for an entry without ``=`` or a missing file."""
    if not FLAGS.files:
        return {"sample dev": REPO / "data/sample/dev.txt",
                "SNLI dev": REPO.parent / "shared/data/snli/re2_processed/dev.txt"}
    files = {}
    for entry in FLAGS.files:
        name, sep, path = entry.partition("=")
        if not sep or not name or not path:
            raise app.UsageError(f"--files: expected name=path, got {entry!r}")
        if not Path(path).exists():
            raise app.UsageError(f"--files: no such file {path}")
        files[name] = Path(path)
    return files


def main(argv):
    del argv
    # Flag errors first, before the model is loaded and exported.
    unknown = sorted(set(FLAGS.exports) - set(EXPORTS))
    if unknown:
        raise app.UsageError(f"--exports: unknown {unknown}; choose from {list(EXPORTS)}")
    files = _files()
    model = runs.load_best_model(FLAGS.run_dir)
    featurizers = runs.load_featurizers(FLAGS.run_dir)
    config = runs.load_config(FLAGS.run_dir)
    out = Path(FLAGS.out or tempfile.mkdtemp())
    # The processed files are whitespace-tokenised, so the exports use the whitespace
    # tokeniser and re2_tf.predict feeds them features (serving_ids), as the pipeline does.
    common = dict(featurizers=featurizers, label_names=config.label_names, tokenizer="whitespace",
                  backend=get_spec(config.model).export_backend, output=config.output)
    exports = {name.replace("_", " "): export_model(model, out / name, fmt=EXPORTS[name][0],
                                                    precision=EXPORTS[name][1], **common)
               for name in FLAGS.exports}
    predictors = {k: Predictor(p, tokenize="python") for k, p in exports.items()}
    dataset = get_dataset(config.dataset)
    report = {}
    for fname, path in files.items():
        if not path.exists():
            continue
        # A prepared split of a ranking dataset (its .ids file beside it) is also scored with
        # MAP / MRR, ranking each question's answers by p(correct).
        ranking = dataset.ranking and path.with_suffix(".ids").exists()
        examples = (load_split(dataset.name, path.parent, path.stem) if ranking
                    else load_file(path))
        encoded = encode_examples(examples, featurizers)
        dy = encoded.labels
        ref = predict_probabilities(model, inference_dataset(encoded))
        report[fname] = {"pairs": len(dy), "keras acc": float((ref.argmax(1) == dy).mean())}
        if ranking:
            report[fname].update(_ranking_scores(dataset, examples, ref, "keras "))
        for k, predictor in predictors.items():
            p = predictor.probabilities([ex.text1 for ex in examples],
                                        [ex.text2 for ex in examples])
            report[fname][k] = {
                "acc": round(float((p.argmax(1) == dy).mean()), 4),
                "same label as keras": round(float((p.argmax(1) == ref.argmax(1)).mean()), 4),
                "max |p - p_keras|": float(np.abs(p - ref).max()),
                "finite": bool(np.isfinite(p).all())}
            if ranking:
                report[fname][k].update(_ranking_scores(dataset, examples, p))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    app.run(main)
