"""Export a run directory: its best checkpoint, featurisers and labels as a SavedModel or TFLite
file (:func:`export_run`, what ``re2-export`` and :meth:`re2_tf.Matcher.export` do), the
precision chosen for this CPU where asked (:mod:`re2_tf.serving.auto_precision`), and the
runtime it is served by, chosen by timing the candidates on the exporting CPU
(:mod:`re2_tf.serving.serving_choice`). The export itself is
:func:`re2_tf.serving.export.export_model`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from absl import logging

from re2_tf import runs
from re2_tf.machine import cpu_units
from re2_tf.models import get_spec
from re2_tf.serving import serving_choice
from re2_tf.serving.auto_precision import choose_precision, known_precision
from re2_tf.serving.backends import compiles_part
from re2_tf.serving.export import CHOICES, export_model

__all__ = ["export_run", "twin_exports"]


def export_run(run_dir, export_dir, *, precision="fp32", serving="auto", max_pairs=1000, **kwargs):
    """Export a run directory (``re2_tf.runs`` layout). ``kwargs`` go to
    :func:`re2_tf.serving.export.export_model`.

    The model's spec (``config.json``'s ``model``) gives the serving backend and output kind;
    ``tokenizer`` defaults to the run's; the Python tokeniser recorded for
    :class:`~re2_tf.serving.predictor.Predictor` is always the run's.

    ``precision`` is ``fp32``, ``bf16``, ``int8``
    (:func:`~re2_tf.serving.export.export_model`) or one of two choices between ``fp32`` and
    ``bf16`` (:mod:`re2_tf.serving.auto_precision`), recorded
    in ``export_config.json`` (``precision_choice``): ``"auto"`` (``re2-export``'s default)
    decides from the CPU's units without building anything else
    (:func:`~re2_tf.serving.auto_precision.known_precision`); ``"measure"`` exports and times
    both, checked on the first ``max_pairs`` pairs of the run's dev split
    (:func:`~re2_tf.serving.auto_precision.choose_precision`). A TFLite export is ``fp32``
    under either.

    ``serving`` (a SavedModel export): ``"auto"`` (the default) times the SavedModel against
    TensorFlow's and LiteRT's alternatives (below; no extra needed) and every other installed
    CPU runtime and checks their labels on the same dev pairs, keeping
    the fastest that agrees (:func:`~re2_tf.serving.serving_choice.choose_serving`; the
    runtimes are converted from an ``xla=False`` SavedModel of the same weights, made in a
    temporary directory when the export itself uses XLA; on a CPU with bfloat16 units an
    ``fp32`` export's candidates include an ``xla=False`` ``bf16`` SavedModel of the same
    weights, made likewise, and, where the model's ``bf16`` XLA export compiles only a part
    with XLA (:func:`~re2_tf.serving.backends.compiles_part`), that export too; an ``fp32``
    export's candidates include a ``--format=tflite`` export of the same model, for LiteRT);
    ``"savedmodel"`` measures nothing.
    The decision is ``export_config.json``'s ``serving_choice``, which
    :class:`~re2_tf.serving.predictor.Predictor` follows.

    Raises:
        ValueError: an unknown ``serving`` (before anything is written).
    """
    if serving not in serving_choice.CHOICES:
        raise ValueError(f"serving must be one of {list(serving_choice.CHOICES)}, got {serving!r}")
    config = runs.load_config(run_dir)
    spec = get_spec(config.model)
    flags_path = Path(run_dir) / runs.RUN_FLAGFILE  # the run's recorded flagfile, a text asset
    flags_text = flags_path.read_text() if flags_path.exists() else ""
    kwargs.setdefault("tokenizer", config.tokenizer)
    model = runs.load_best_model(run_dir)
    kwargs.update(
        featurizers=runs.load_featurizers(run_dir),
        label_names=config.label_names,
        backend=spec.export_backend,
        output=config.output,
        lower=config.lower,
        flags_text=flags_text,
        python_tokenizer=config.tokenizer,
    )
    extra = {
        "dataset": config.dataset,
        "model": config.model,
        "model_kwargs": config.model_kwargs,
        "run_dir": os.fspath(run_dir),
    }
    if precision in CHOICES:
        precision, extra["precision_choice"] = _chosen_precision(
            precision, run_dir, model, kwargs, max_pairs
        )
    export_dir = export_model(model, export_dir, precision=precision, extra_config=extra, **kwargs)
    if kwargs.get("fmt", "savedmodel") == "savedmodel":
        choice = {
            "backend": "savedmodel",
            "precision": "f32",
            "measured": False,
            "reason": "--serving=savedmodel",
        }
        if serving == "auto":
            choice = _chosen_serving(
                run_dir, model, export_dir, precision, extra, kwargs, max_pairs
            )
        serving_choice.record_choice(export_dir, choice)
        logging.info(
            "serving: %s %s (%s)", choice["backend"], choice["precision"], choice["reason"]
        )
    return export_dir


def _dev_pairs(run_dir, max_pairs):
    try:
        _, examples = runs.load_examples(run_dir, "dev")
    except FileNotFoundError:
        examples = []
    return [(ex.text1, ex.text2) for ex in examples[:max_pairs]]


def twin_exports(precision, xla, backend, bf16_units):
    """The SavedModels of the same weights :func:`export_run`'s serving choice exports beside
    an export in ``precision`` (with ``xla``; ``backend``: the model's serving backend;
    ``bf16_units``: whether the CPU has bfloat16 units): ``{name: (precision, xla)}``.

    ``plain``: the ``xla=False`` export the other runtimes are converted from (for an XLA
    export; ``savedmodel_noxla``). With bfloat16 units, for an ``fp32`` export: ``bf16``, the
    ``xla=False`` bfloat16 export (``savedmodel_bf16``), and, where the backend's bfloat16
    XLA export compiles only a part with XLA (:func:`~re2_tf.serving.backends.compiles_part`;
    XLA's CPU compiler runs no bfloat16 product on the units, so a wholly compiled one is no
    candidate), ``bf16_xla`` (``savedmodel_bf16_xla``).
    """
    bf16 = precision == "fp32" and bool(bf16_units)
    needed = {
        "plain": (bool(xla), (precision, False)),
        "bf16": (bf16, ("bf16", False)),
        "bf16_xla": (bf16 and bool(xla) and compiles_part(backend, "bf16"), ("bf16", True)),
    }
    return {name: twin for name, (wanted, twin) in needed.items() if wanted}


def _chosen_serving(run_dir, model, export_dir, precision, extra, kwargs, max_pairs):
    pairs = _dev_pairs(run_dir, max_pairs)
    if not pairs:
        return serving_choice.choose_serving(export_dir, pairs)  # nothing to check: no twin
    needed = twin_exports(
        precision, kwargs.get("xla", True), kwargs["backend"], cpu_units()["bfloat16"]
    )
    with tempfile.TemporaryDirectory() as tmp:
        twins = {
            name: export_model(
                model,
                Path(tmp) / name,
                precision=twin_precision,
                extra_config=extra,
                **dict(kwargs, xla=twin_xla),
            )
            for name, (twin_precision, twin_xla) in needed.items()
        }
        litert = None
        if precision == "fp32":  # LiteRT: the same model through the TFLite converter
            try:
                litert = export_model(
                    model,
                    Path(tmp) / "tflite",
                    precision="fp32",
                    extra_config=extra,
                    **dict(kwargs, xla=False, fmt="tflite"),
                )
            except ValueError as error:  # the converter's refusal: the candidate's error
                litert = error
        return serving_choice.choose_serving(
            export_dir,
            pairs,
            convertible=twins.get("plain"),
            bf16_export=twins.get("bf16"),
            bf16_xla_export=twins.get("bf16_xla"),
            tflite_export=litert,
            log=logging.info,
        )


def _chosen_precision(how, run_dir, model, kwargs, max_pairs):
    if kwargs.get("fmt", "savedmodel") != "savedmodel":
        reason = "a TFLite export is fp32 unless asked"
        return "fp32", {"chosen": "fp32", "reason": reason, "measured": False}
    if how == "auto":
        return known_precision()
    return choose_precision(model, kwargs, _dev_pairs(run_dir, max_pairs), log=logging.info)
