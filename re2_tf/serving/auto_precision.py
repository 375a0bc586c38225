"""How ``re2-export`` chooses between fp32 and bf16: ``--precision=auto`` (the default)
decides from what is known, ``--precision=measure`` measures.

The rule (ours): a SavedModel is exported in bf16 only where the CPU has bfloat16 units
(``avx512_bf16``, ``amx_bf16``; without them bf16 arithmetic is emulated and slower than
float32) *and* a bf16 export of this run agrees with the fp32 one on at least 99 % of the
labels of its held-out pairs *and* serves faster at every serving shape. fp32 otherwise.

- :func:`known_precision` (``auto``) reads the CPU's units (:func:`re2_tf.machine.cpu_units`,
  from ``/proc/cpuinfo``) and builds nothing: without bfloat16 units the rule's answer is
  fp32; with them, the agreement and the speed are properties of this run's model that only
  a measurement shows, so the unmeasured answer is still fp32, and the reason says how to
  measure. Building, loading and timing a second export in fresh processes is the slow part
  of an export, so the default leaves it to those who ask for it.
- :func:`choose_precision` (``measure``) applies the whole rule: with bfloat16 units, the
  model is exported in both precisions, each export is timed in one fresh process at every
  serving shape in turn (:func:`re2_tf.benchmarking.time_export` with ``then``: batch x
  length of random inputs, median of ``batches`` batches), and both exports score the same
  held-out pairs (:class:`re2_tf.serving.predictor.Predictor`).

Either way the decision and its reason go into the export's ``export_config.json``
(``precision_choice``; ``measured`` says which of the two made it), and ``re2-export``
prints them on stderr, so a served model says why it runs in the precision it does.

A TFLite export under ``auto`` or ``measure`` is ``fp32``: its int8 variant changes weights,
not just arithmetic, and stays a choice the user makes (``--precision=int8``;
:mod:`re2_lab.precision` measures what it costs on real dev files).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from re2_tf import benchmarking
from re2_tf.machine import cpu_units
from re2_tf.serving import runtimes
from re2_tf.serving.export import export_model
from re2_tf.serving.predictor import Predictor

__all__ = ["MIN_AGREEMENT", "SHAPES", "choose_precision", "known_precision"]

#: Serving shapes timed (batch, tokens per text): Table 5's and a batch of 128.
SHAPES = ((8, 20), (128, 20))
#: Least share of held-out labels a bf16 export must share with the fp32 one: the one rule's
#: (:data:`re2_tf.serving.runtimes.MIN_AGREEMENT`).
MIN_AGREEMENT = runtimes.MIN_AGREEMENT
#: The reason of a CPU without bfloat16 units.
NO_UNITS = "no bfloat16 units (avx512_bf16, amx_bf16): bf16 would be emulated"


def known_precision(*, probe=None):
    """``re2-export --precision=auto``: the precision the rule gives without a measurement
    (fp32), with the reason this CPU's units give; builds and times nothing.

    Args:
        probe: ``() -> {"float32", "bfloat16", "int8": bool}`` (default
            :func:`re2_tf.machine.cpu_units`, which reads ``/proc/cpuinfo``).

    Returns:
        ``("fp32", choice)``: the JSON-serialisable record ``chosen``, ``reason``, ``units``,
        ``measured`` (False). Without bfloat16 units the reason is :data:`NO_UNITS`; with
        them it says that bf16 needs a measurement and names ``--precision=measure``
        (:func:`choose_precision`).
    """
    units = (probe or cpu_units)()
    if not units.get("bfloat16"):
        reason = NO_UNITS
    else:
        reason = (
            "this CPU has bfloat16 units, but bf16 is kept only where it agrees with fp32 on "
            "the run's dev labels and serves faster, which takes a measurement: "
            "--precision=measure exports both and times them"
        )
    return "fp32", {"units": units, "chosen": "fp32", "reason": reason, "measured": False}


def choose_precision(
    model,
    export_kwargs,
    pairs,
    *,
    probe=None,
    shapes=SHAPES,
    batches=30,
    threads=0,
    min_agreement=MIN_AGREEMENT,
    workdir=None,
    log=print,
):
    """``re2-export --precision=measure``: ``fp32`` or ``bf16`` for a SavedModel export of
    ``model`` on this CPU, measured (see the module docstring).

    Args:
        model: the trained Keras model.
        export_kwargs: keyword arguments of :func:`re2_tf.serving.export.export_model` other
            than ``precision`` (``featurizers``, ``label_names``, ``backend``, ...).
        pairs: held-out ``(text1, text2)`` pairs both exports score (e.g. the run's dev
            split); with none, bf16 cannot be checked and ``fp32`` is chosen.
        probe: ``() -> {"float32", "bfloat16", "int8": bool}`` (default
            :func:`re2_tf.machine.cpu_units`).
        shapes: ``(batch, length)`` serving shapes to time.
        batches: timed batches per shape (after ``min(10, batches)`` warm-up ones).
        threads: intra-op threads of the timing processes (0: TensorFlow's default).
        min_agreement: least share of held-out labels bf16 must share with fp32.
        workdir: where the two candidate exports are written (a temporary directory in it,
            removed afterwards; default: the system's temporary directory).
        log: ``(message) -> None`` told the measured choice.

    Returns:
        ``(precision, choice)``: ``"fp32"`` or ``"bf16"``, and the JSON-serialisable record of
        the decision: ``chosen``, ``reason``, ``units``, ``measured`` (True once both exports
        were timed), and where measured ``median_ms``
        (``{precision: {"<batch>x<length>": ms}}``), ``label_agreement``, ``max_abs_dp``,
        ``pairs``, ``min_agreement``.
    """

    units = (probe or cpu_units)()
    choice = {"units": units, "measured": False}
    if not units.get("bfloat16"):
        return "fp32", dict(choice, chosen="fp32", reason=NO_UNITS)
    pairs = list(pairs or [])
    if not pairs:
        reason = "no held-out pairs to check bf16 against fp32"
        return "fp32", dict(choice, chosen="fp32", reason=reason)
    featurizers = export_kwargs["featurizers"]
    medians, probabilities = {}, {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for precision in ("fp32", "bf16"):
            path = export_model(model, Path(tmp) / precision, precision=precision, **export_kwargs)
            # one fresh process times this export at every shape in turn
            inputs = [benchmarking.benchmark_inputs(featurizers, b, n) for b, n in shapes]
            (signature,) = {signature for signature, _ in inputs}
            timed = benchmarking.time_export(
                path,
                signature,
                inputs[0][1],
                batches=batches,
                warmup=min(10, batches),
                intra_op_threads=threads,
                inter_op_threads=1 if threads else 0,
                then=[{"input_spec": spec, "batches": batches} for _, spec in inputs[1:]],
            )
            medians[precision] = {
                f"{batch}x{length}": round(t["median_ms"], 3)
                for (batch, length), t in zip(shapes, [timed, *timed.get("then", [])])
            }
            predictor = Predictor(path, tokenize="python")
            probabilities[precision] = predictor.probabilities(
                [a for a, _ in pairs], [b for _, b in pairs]
            )
    fp32, bf16 = probabilities["fp32"], probabilities["bf16"]
    measured = runtimes.agreement(fp32, bf16)
    agreement = measured["argmax_agreement"]
    faster = all(medians["bf16"][s] < medians["fp32"][s] for s in medians["fp32"])
    if not runtimes.agrees(agreement, min_agreement):
        chosen, reason = "fp32", f"bf16 agrees on {agreement:.2%} of the labels only"
    elif not faster:
        chosen, reason = "fp32", "bf16 is not faster at every serving shape"
    else:
        chosen, reason = "bf16", "bf16 agrees and is faster at every serving shape"
    choice.update(
        chosen=chosen,
        reason=reason,
        measured=True,
        median_ms=medians,
        label_agreement=round(agreement, 4),
        max_abs_dp=measured["max_abs_dp"],
        pairs=len(pairs),
        min_agreement=min_agreement,
    )
    log(f"precision=measure: {chosen} ({reason}; median ms {medians})")
    return chosen, choice
