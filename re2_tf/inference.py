"""Two one-call shorthands of :class:`re2_tf.Matcher`.

    from re2_tf.inference import evaluate_run, predict

    metrics = evaluate_run("checkpoints/sample-re2", "test")   # a split of the run's data
    metrics = evaluate_run("checkpoints/wikiqa-re2", "WikiQA-test.txt", fmt="wikiqa_txt")
    records = predict("exports/snli", [("A man sleeps.", "A person rests.")])

:func:`evaluate_run` (``re2_tf.evaluate``) is ``Matcher.from_run(run).evaluate(split)``, what
``re2-evaluate`` does for each split; :func:`predict` (``re2_tf.predict``) is
``Matcher.from_export(export).predict(pairs)`` with the probabilities rounded to 6 decimals as
``re2-predict`` writes them. Both load the model on every call: keep a
:class:`re2_tf.Matcher` to reuse it.
"""

from __future__ import annotations

import os
from pathlib import Path

from re2_tf import runs
from re2_tf.matcher import Matcher, _pair_dicts
from re2_tf.serving.predictor import Predictor

__all__ = ["evaluate_run", "predict"]


def evaluate_run(
    run_dir_or_model, split_file, *, fmt="processed", run_dir=None, data_dir=None, batch_size=256
) -> dict:
    """Every metric of a run's dataset on a split or a labelled file.

    Args:
        run_dir_or_model: a run directory (its best checkpoint is scored), or a Keras model
            of a run (then ``run_dir`` names the run: its featurisers and labels).
        split_file: a split name or a file (see :func:`re2_tf.runs.load_examples`).
        fmt: format of a file.
        run_dir: the run of a model given as ``run_dir_or_model``.
        data_dir: prepared data directory for a split name.
        batch_size: pairs per prediction batch (>= 1).

    Returns:
        ``{"acc": float, ...}``: accuracy; F1 and ROC-AUC for two classes; MAP, MRR and
        ``questions`` (int) over the filtered question set for ranking datasets (WikiQA,
        TrecQA) -- :func:`re2_tf.evaluation.score`.

    Raises:
        ValueError: a model without ``run_dir``, ``batch_size`` < 1, or bad data (see
            :func:`re2_tf.runs.load_examples`). FileNotFoundError: a missing run or data file.
    """
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if isinstance(run_dir_or_model, (str, os.PathLike)):
        if run_dir is not None and Path(run_dir) != Path(run_dir_or_model):
            raise ValueError(f"two runs given: {run_dir_or_model} and run_dir={run_dir}")
        run_dir, network = run_dir_or_model, None
    elif run_dir is None:
        raise ValueError("a model needs run_dir=<its run directory> (featurisers, labels)")
    else:
        network = run_dir_or_model
    # Bad data stops the call before the model is loaded.
    spec, examples = runs.load_examples(run_dir, split_file, fmt=fmt, data_dir=data_dir)
    return Matcher.from_run(run_dir, model=network, batch_size=batch_size)._evaluate(spec, examples)


def predict(model_or_export, pairs, **kwargs) -> list[dict]:
    """Predict text pairs with an export.

    Args:
        model_or_export: an export directory (``re2-export`` /
            :func:`re2_tf.serving.export.export_model`), or a loaded
            :class:`~re2_tf.Matcher` or :class:`~re2_tf.serving.predictor.Predictor`
            (reuse it across calls: loading an export takes seconds).
        pairs: list of ``(text1, text2)`` tuples of ``str``, or of dicts with ``str``
            ``text1`` and ``text2`` (their other fields are copied to the output).
        **kwargs: ``tokenize`` (``auto``, ``graph``, ``python``) and ``batch_size`` for the
            :class:`~re2_tf.serving.predictor.Predictor` of an export directory.

    Returns:
        one dict per pair, in order: ``label`` (``str``), ``probabilities`` (``{label:
        float}``, rounded to 6 decimals) and a dict pair's other fields (see
        :meth:`re2_tf.Matcher.predict`).

    Raises:
        ValueError: a malformed pair, or ``kwargs`` given with a loaded Matcher/Predictor.
        FileNotFoundError: not an export directory.
    """
    records = _pair_dicts(pairs)
    if isinstance(model_or_export, (Predictor, Matcher)):
        if kwargs:
            raise ValueError(
                f"{sorted(kwargs)} apply when loading an export; this "
                f"{type(model_or_export).__name__} is already loaded"
            )
        matcher = model_or_export
        if isinstance(matcher, Predictor):
            matcher = Matcher.from_predictor(matcher)
    else:
        matcher = Matcher.from_export(model_or_export, **kwargs)
    return matcher._records(records, digits=6)[0]
