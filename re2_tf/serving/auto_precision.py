"""``re2-export --precision=auto`` (the default): the export precision chosen by this CPU.

:func:`choose_precision` asks the CPU which matrix units it has
(:func:`re2_tf.roofline.cpu_units`). Without bfloat16 units (``avx512_bf16``, ``amx_bf16``),
bfloat16 arithmetic is emulated and slower than float32, so the answer is ``fp32`` without
measuring anything. With them, the model is exported in both precisions, each export is timed
in a fresh process at every serving shape (:func:`re2_tf.benchmarking.time_export`: batch x
length of random inputs, median of ``batches`` batches), and both exports score the same
held-out pairs (:class:`re2_tf.serving.predictor.Predictor`); ``bf16`` is chosen when it agrees
with ``fp32`` on at least ``min_agreement`` of the labels (our threshold: 99 %) *and* is faster
at every shape, ``fp32`` otherwise. The measurements and the reason go into the export's
``export_config.json`` (``precision_choice``), so a served model says why it runs in the
precision it does.

A TFLite export under ``auto`` is ``fp32``: its int8 variant changes weights, not just
arithmetic, and stays a choice the user makes (``--precision=int8``;
:mod:`re2_tf.serving.precision` measures what it costs on real dev files).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

__all__ = ["SHAPES", "choose_precision"]

#: Serving shapes timed (batch, tokens per text): Table 5's and a batch of 128.
SHAPES = ((8, 20), (128, 20))


def choose_precision(
    model,
    export_kwargs,
    pairs,
    *,
    probe=None,
    shapes=SHAPES,
    batches=30,
    threads=0,
    min_agreement=0.99,
    workdir=None,
    log=print,
):
    """Pick ``fp32`` or ``bf16`` for a SavedModel export of ``model`` on this CPU.

    Args:
        model: the trained Keras model.
        export_kwargs: keyword arguments of :func:`re2_tf.serving.export.export_model` other
            than ``precision`` (``featurizers``, ``label_names``, ``backend``, ...).
        pairs: held-out ``(text1, text2)`` pairs both exports score (e.g. the run's dev
            split); with none, bf16 cannot be checked and ``fp32`` is chosen.
        probe: ``() -> {"float32", "bfloat16", "int8": bool}`` (default
            :func:`re2_tf.roofline.cpu_units`).
        shapes: ``(batch, length)`` serving shapes to time.
        batches: timed batches per shape (after ``min(10, batches)`` warm-up ones).
        threads: intra-op threads of the timing processes (0: TensorFlow's default).
        min_agreement: least share of held-out labels bf16 must share with fp32.

    Returns:
        ``(precision, choice)``: ``"fp32"`` or ``"bf16"``, and the JSON-serialisable record of
        the decision: ``chosen``, ``reason``, ``units``, and where measured ``median_ms``
        (``{precision: {"<batch>x<length>": ms}}``), ``label_agreement``, ``max_abs_dp``,
        ``pairs``, ``min_agreement``.
    """
    from re2_tf import benchmarking, roofline
    from re2_tf.serving.export import export_model
    from re2_tf.serving.predictor import Predictor

    units = (probe or roofline.cpu_units)()
    choice = {"units": units}
    if not units.get("bfloat16"):
        reason = "no bfloat16 units (avx512_bf16, amx_bf16): bf16 would be emulated"
        return "fp32", dict(choice, chosen="fp32", reason=reason)
    pairs = list(pairs or [])
    if not pairs:
        reason = "no held-out pairs to check bf16 against fp32"
        return "fp32", dict(choice, chosen="fp32", reason=reason)
    featurizers = export_kwargs["featurizers"]
    medians, probabilities = {}, {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for precision in ("fp32", "bf16"):
            path = export_model(model, Path(tmp) / precision, precision=precision, **export_kwargs)
            medians[precision] = {}
            for batch, length in shapes:
                signature, spec = benchmarking.benchmark_inputs(featurizers, batch, length)
                timed = benchmarking.time_export(
                    path,
                    signature,
                    spec,
                    batches=batches,
                    warmup=min(10, batches),
                    intra_op_threads=threads,
                    inter_op_threads=1 if threads else 0,
                )
                medians[precision][f"{batch}x{length}"] = round(timed["median_ms"], 3)
            predictor = Predictor(path, tokenize="python")
            probabilities[precision] = predictor.probabilities(
                [a for a, _ in pairs], [b for _, b in pairs]
            )
    fp32, bf16 = probabilities["fp32"], probabilities["bf16"]
    agreement = float((fp32.argmax(-1) == bf16.argmax(-1)).mean())
    faster = all(medians["bf16"][s] < medians["fp32"][s] for s in medians["fp32"])
    if agreement < min_agreement:
        chosen, reason = "fp32", f"bf16 agrees on {agreement:.2%} of the labels only"
    elif not faster:
        chosen, reason = "fp32", "bf16 is not faster at every serving shape"
    else:
        chosen, reason = "bf16", "bf16 agrees and is faster at every serving shape"
    choice.update(
        chosen=chosen,
        reason=reason,
        median_ms=medians,
        label_agreement=round(agreement, 4),
        max_abs_dp=float(np.abs(fp32 - bf16).max()),
        pairs=len(pairs),
        min_agreement=min_agreement,
    )
    log(f"precision=auto: {chosen} ({reason}; median ms {medians})")
    return chosen, choice
