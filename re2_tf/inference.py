"""Loading labelled data for a run, and two one-call shorthands of :class:`re2_tf.Matcher`.

    from re2_tf.inference import evaluate_run, predict

    metrics = evaluate_run("checkpoints/sample-re2", "test")   # a split of the run's data
    metrics = evaluate_run("checkpoints/wikiqa-re2", "WikiQA-test.txt", fmt="wikiqa_txt")
    records = predict("exports/snli", [("A man sleeps.", "A person rests.")])

:func:`evaluate_run` (``re2_tf.evaluate``) is ``Matcher.from_run(run).evaluate(split)``, what
``re2-evaluate`` does for each split; :func:`predict` (``re2_tf.predict``) is
``Matcher.from_export(export).predict(pairs)`` with the probabilities rounded to 6 decimals as
``re2-predict`` writes them. Both load the model on every call: keep a
:class:`re2_tf.Matcher` to reuse it. :func:`load_examples` reads the labelled pairs of a split
or file the way evaluation does.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["evaluate_run", "examples_for", "load_examples", "predict", "run_data_dir"]


def run_data_dir(run_dir):
    """The ``--data_dir`` a run was trained with (its ``flags.txt``), or ``None`` when the
    run does not record one."""
    from re2_tf import runs

    flags_file = Path(run_dir) / runs.RUN_FLAGFILE
    if flags_file.exists():
        for line in flags_file.read_text().splitlines():
            if line.startswith("--data_dir="):
                return line.split("=", 1)[1]
    return None


def _is_split_name(split_file):
    return isinstance(split_file, str) and not any(c in split_file for c in "./" + os.sep)


def load_examples(run_dir, split_file, *, fmt="processed", data_dir=None):
    """The run's dataset spec (with the run's label names) and the labelled pairs to score.

    Args:
        run_dir: a run directory (``config.json``).
        split_file: a split name of the run's prepared data (``"dev"``, ``"test"``,
            ``"raw_test"``: a ``str`` without ``.`` or ``/``), read from ``data_dir``, else
            the run's own ``--data_dir``, else ``data/<dataset>``; or a file path (a
            ``str`` with ``.`` or ``/``, or any ``os.PathLike``) in format ``fmt``.
        fmt: format of a file (``re2_tf.data.datasets.FORMAT_TOKENIZERS``); a ranking
            dataset's file without question ids (any format but ``wikiqa_txt``) takes them
            from its sibling ``.ids`` file.
        data_dir: prepared data directory for a split name.

    Returns:
        ``(spec, examples)``: ``re2_tf.data.datasets.DatasetSpec`` and ``PairExample`` list.

    Raises:
        FileNotFoundError: no run directory, data file or ``.ids`` file. ValueError: a
            malformed line or a label that is not one of the run's (message
            ``<file>:<line>: ...``), or an unknown ``fmt``.
    """
    from re2_tf import runs

    config = runs.load_config(run_dir)
    return examples_for(
        runs.dataset_spec(config),
        split_file,
        fmt=fmt,
        data_dir=data_dir,
        lower=config.lower,
        run_dir=run_dir,
    )


def examples_for(spec, split_file, *, fmt="processed", data_dir=None, lower=True, run_dir=None):
    """``(spec, examples)``: the labelled pairs of a split or file scored as dataset ``spec``
    (see :func:`load_examples`; ``run_dir``, when given, supplies the default ``data_dir``,
    ``lower`` lower-cases a custom dataset's raw text)."""
    from re2_tf.data import datasets

    if _is_split_name(split_file):
        data_dir = (
            data_dir
            or (run_data_dir(run_dir) if run_dir is not None else None)
            or datasets.default_data_dir(spec.name)
        )
        return spec, datasets.load_split(spec, data_dir, split_file, lower=lower)
    if fmt not in datasets.FORMAT_TOKENIZERS:
        raise ValueError(f"unknown format {fmt!r}; known: {sorted(datasets.FORMAT_TOKENIZERS)}")
    return spec, datasets.load_file(os.fspath(split_file), fmt, spec, lower=lower)


def evaluate_run(
    run_dir_or_model, split_file, *, fmt="processed", run_dir=None, data_dir=None, batch_size=256
) -> dict:
    """Every metric of a run's dataset on a split or a labelled file.

    Args:
        run_dir_or_model: a run directory (its best checkpoint is scored), or a Keras model
            of a run (then ``run_dir`` names the run: its featurisers and labels).
        split_file: a split name or a file (see :func:`load_examples`).
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
            :func:`load_examples`). FileNotFoundError: a missing run or data file.
    """
    from re2_tf.matcher import Matcher

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
    spec, examples = load_examples(run_dir, split_file, fmt=fmt, data_dir=data_dir)
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
    from re2_tf.matcher import Matcher, _pair_dicts
    from re2_tf.serving.predictor import Predictor

    records = _pair_dicts(pairs)
    if isinstance(model_or_export, (Predictor, Matcher)):
        if kwargs:
            raise ValueError(
                f"{sorted(kwargs)} apply when loading an export; this "
                f"{type(model_or_export).__name__} is already loaded"
            )
        matcher = model_or_export
        if isinstance(matcher, Predictor):
            matcher = Matcher._of(matcher)
    else:
        matcher = Matcher.from_export(model_or_export, **kwargs)
    return matcher._records(records, digits=6)[0]
