r"""Accuracy change of reduced-precision exports on real dev files (a measurement, not a test).

:func:`compare_precisions` takes a trained run directory (e.g. ``re2-train
--flagfile=configs/re2/sample.flags``), exports it as fp32 SavedModel (the reference, checked
against Keras to 1e-5), bf16 SavedModel, fp32 TFLite and int8 dynamic-range TFLite, and
reports accuracy and label agreement with the Keras model on labelled prepared files
(:func:`default_files`: ``data/sample/dev.txt`` and, when present,
``../shared/data/snli/re2_processed/dev.txt``). Command line
(:mod:`re2_lab.cli.precision_check`)::

    python -m re2_lab.cli.precision_check --run_dir=checkpoints/sample-re2 --out=/tmp/precision
    python -m re2_lab.cli.precision_check --run_dir=<BERT+MatchLSTM run on WikiQA> \
        --files=wikiqa_dev=<prepared wikiqa>/dev.txt --exports=savedmodel_fp32,savedmodel_bf16
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

__all__ = ["EXPORTS", "compare_precisions", "default_files", "parse_files"]

REPO = Path(__file__).resolve().parents[1]
#: Export name -> (format, precision) of :func:`re2_tf.serving.export.export_model`.
EXPORTS = {
    "savedmodel_fp32": ("savedmodel", "fp32"),
    "savedmodel_bf16": ("savedmodel", "bf16"),
    "tflite_fp32": ("tflite", "fp32"),
    "tflite_int8": ("tflite", "int8"),
}


def default_files():
    """``{name: path}`` of the default dev files (the second may be absent: it is skipped)."""
    return {
        "sample dev": REPO / "data/sample/dev.txt",
        "SNLI dev": REPO.parent / "shared/data/snli/re2_processed/dev.txt",
    }


def parse_files(entries):
    """``{name: Path}`` of ``name=path`` entries.

    Raises:
        ValueError: an entry without ``=``, name or path. FileNotFoundError: a missing file.
    """
    files = {}
    for entry in entries:
        name, sep, path = entry.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--files: expected name=path, got {entry!r}")
        if not Path(path).exists():
            raise FileNotFoundError(f"--files: no such file {path}")
        files[name] = Path(path)
    return files


def _ranking_scores(dataset, examples, probabilities, prefix=""):
    """MAP and MRR (``re2_tf.evaluation.score``) of answers ranked by p(correct)."""
    from re2_tf.evaluation import score

    logits = np.log(np.clip(probabilities, 1e-30, None))  # softmax(log p) = p: same ranking
    result = score(dataset, examples, logits)
    return {
        f"{prefix}map": round(float(result["map"]), 4),
        f"{prefix}mrr": round(float(result["mrr"]), 4),
    }


def compare_precisions(run_dir, files=None, exports=tuple(EXPORTS), out=None):
    """Export ``run_dir`` once per entry of ``exports`` and compare each with Keras.

    Args:
        run_dir: a trained run directory.
        files: ``{name: path}`` of labelled prepared files (default :func:`default_files`);
            missing ones are skipped. A file of a ranking dataset with its ``.ids`` beside it
            is also scored with MAP / MRR, ranking each question's answers by p(correct).
        exports: names from :data:`EXPORTS`.
        out: directory for the exports (default: a new temporary one).

    Returns:
        ``{file name: {"pairs", "keras acc", <export name>: {"acc", "same label as keras",
        "max |p - p_keras|", "finite"[, "map", "mrr"]}}}``.

    Raises:
        ValueError: an unknown export name (checked before anything is loaded).
    """
    from re2_tf import runs
    from re2_tf.data.datasets import get_dataset, load_file, load_split
    from re2_tf.data.pipeline import encode_examples
    from re2_tf.evaluation import inference_dataset, predict_probabilities
    from re2_tf.models import get_spec
    from re2_tf.serving.export import export_model
    from re2_tf.serving.predictor import Predictor

    unknown = sorted(set(exports) - set(EXPORTS))
    if unknown:
        raise ValueError(f"--exports: unknown {unknown}; choose from {list(EXPORTS)}")
    files = default_files() if files is None else files
    model = runs.load_best_model(run_dir)
    featurizers = runs.load_featurizers(run_dir)
    config = runs.load_config(run_dir)
    out = Path(out or tempfile.mkdtemp())
    # The processed files are whitespace-tokenised, so the exports use the whitespace
    # tokeniser and the Predictor feeds them features (serving_ids), as the pipeline does.
    common = dict(
        featurizers=featurizers,
        label_names=config.label_names,
        tokenizer="whitespace",
        backend=get_spec(config.model).export_backend,
        output=config.output,
    )
    written = {
        name.replace("_", " "): export_model(
            model, out / name, fmt=EXPORTS[name][0], precision=EXPORTS[name][1], **common
        )
        for name in exports
    }
    predictors = {k: Predictor(p, tokenize="python") for k, p in written.items()}
    dataset = get_dataset(config.dataset)
    report = {}
    for fname, path in files.items():
        path = Path(path)
        if not path.exists():
            continue
        ranking = dataset.ranking and path.with_suffix(".ids").exists()
        examples = load_split(dataset.name, path.parent, path.stem) if ranking else load_file(path)
        encoded = encode_examples(examples, featurizers)
        dy = encoded.labels
        ref = predict_probabilities(model, inference_dataset(encoded))
        report[fname] = {"pairs": len(dy), "keras acc": float((ref.argmax(1) == dy).mean())}
        if ranking:
            report[fname].update(_ranking_scores(dataset, examples, ref, "keras "))
        for k, predictor in predictors.items():
            p = predictor.probabilities(
                [ex.text1 for ex in examples], [ex.text2 for ex in examples]
            )
            report[fname][k] = {
                "acc": round(float((p.argmax(1) == dy).mean()), 4),
                "same label as keras": round(float((p.argmax(1) == ref.argmax(1)).mean()), 4),
                "max |p - p_keras|": float(np.abs(p - ref).max()),
                "finite": bool(np.isfinite(p).all()),
            }
            if ranking:
                report[fname][k].update(_ranking_scores(dataset, examples, p))
    return report
