"""The runtimes report: every model's default path -- what ``re2-export`` with no flags and then
``re2-predict`` serve, the runtime :mod:`re2_tf.serving.serving_choice` measures and records
-- beside the same network as a SavedModel with and without XLA, in TFLite, ONNX Runtime and
OpenVINO, timed with the Table 5 protocol at Table 5's shape and at batch 512, beside the
model's floors (:mod:`re2_lab.roofline`), with the agreement of the outputs.

``python -m re2_lab.cli.runtimes`` writes ``docs/runs/runtimes/runtimes.json``; the README's
latency table and the docs' tables are generated from it (:mod:`re2_lab.doc_tables`). The
library half -- converting an export, loading it in another runtime, choosing the default --
is :mod:`re2_tf.serving.runtimes` and :mod:`re2_tf.serving.serving_choice`.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.stats

from re2_lab import roofline
from re2_tf import benchmarking
from re2_tf.machine import cpu_units, describe_machine, machine
from re2_tf.models import get_spec
from re2_tf.serving import runtimes, serving_choice
from re2_tf.serving.run_export import twin_exports

__all__ = [
    "SHAPES",
    "choice_pairs",
    "choices",
    "floor_ms",
    "judge",
    "load",
    "markdown",
    "order",
    "paired_rounds",
    "report",
    "shape_summary",
    "standing",
    "table",
]

#: Shapes timed (batch, words per text): Table 5's and a batch of 512.
SHAPES = ((8, 20), (512, 20))
#: A close call, as the serving choice's (:data:`re2_tf.serving.serving_choice.CLOSE`): the
#: agreeing paths within this share of a shape's fastest get :data:`CLOSE_ROUNDS` more rounds.
CLOSE = serving_choice.CLOSE
CLOSE_ROUNDS = serving_choice.CLOSE_ROUNDS
#: serving_choice's (backend, precision) -> this report's runtime name.
CHOICE_NAMES = {
    ("savedmodel", "f32"): "savedmodel (XLA)",
    ("savedmodel_noxla", "f32"): "savedmodel (xla=False)",
    ("savedmodel_noxla", "bf16"): "savedmodel bf16 (xla=False)",
    ("savedmodel_bf16", "bf16"): "savedmodel bf16 export (xla=False)",
    ("savedmodel_bf16_xla", "bf16"): "savedmodel bf16 export (XLA)",
    ("tflite", "f32"): "tflite",
    ("onnxruntime", "f32"): "onnxruntime",
    ("openvino", "f32"): "openvino f32",
    ("openvino", "bf16"): "openvino bf16",
}
#: Columns of :func:`table`, in order after the default.
RUNTIMES = tuple(
    ["savedmodel (XLA)", "savedmodel (xla=False)", "savedmodel bf16 (xla=False)"]
    + ["savedmodel bf16 export (xla=False)", "savedmodel bf16 export (XLA)"]
    + ["tflite", "onnxruntime", "openvino f32", "openvino bf16"]
)
#: The runtimes that are the SavedModel itself (TensorFlow serving the export, no conversion).
SAVEDMODEL = RUNTIMES[:5]
#: This report's runtime name -> serving_choice's backend.
BACKEND_OF = {name: backend for (backend, _), name in CHOICE_NAMES.items()}
#: How far the best SavedModel may be from the fastest path (issue 51's target).
SAVEDMODEL_TARGET = 1.2
#: How far (relative) a resumed run's measured peaks may be from the record's: a host of the
#: same CPU name and features but another speed is another CPU for the record.
PEAK_TOLERANCE = 0.15
#: How many times a run measures the CPU's peaks (:func:`re2_lab.roofline.peaks`); it keeps
#: the best per precision (another process on the host slows a measurement, never speeds it).
PEAK_MEASUREMENTS = 3
#: What each timing process is fed (``--inputs``): ``drawn``, fresh draws of
#: :func:`re2_tf.benchmarking.table5_inputs` as ``re2-bench`` and the serving choice time them
#: (the same seed, so every path meets the same draws; a packed-pair model, whose ids the
#: worker cannot draw, its first 4 batches cycled, as in the choice); ``fixed``, the first 4
#: batches cycled for every model (the records made before ``drawn``, which lack the key).
INPUTS = ("drawn", "fixed")
#: How a path's ``median_ms`` is made from its ``round_medians_ms`` (``--figure``): the median
#: of its rounds, as the serving choice makes a candidate's
#: (:data:`re2_tf.serving.serving_choice.FIGURE`; a host's speed drifts both ways between
#: processes: ``docs/performance.md``), or the least of them (the records made before the
#: setting, which lack the key).
FIGURES = (serving_choice.FIGURE, "least of rounds")


def record_figure(record):
    """How ``record`` made each path's figure from its rounds (:data:`FIGURES`): its
    ``figure``, or ``least of rounds`` for a record made before the setting."""
    return record.get("figure", "least of rounds")


def figure_of(rounds_ms, figure):
    """A path's figure from its rounds' medians by ``figure`` (one of :data:`FIGURES`): their
    median (:func:`re2_tf.serving.serving_choice.median_of_rounds`) or their least.

    Raises:
        ValueError: ``rounds_ms`` is empty, or ``figure`` is not one of :data:`FIGURES`.
    """
    if figure not in FIGURES:
        raise ValueError(f"figure: one of {FIGURES}, got {figure!r}")
    if figure == "least of rounds":
        if len(rounds_ms) == 0:
            raise ValueError("a path's figure needs at least one round")
        return min(rounds_ms)
    return serving_choice.median_of_rounds(rounds_ms)


def record_inputs(record):
    """What ``record``'s timing processes were fed (:data:`INPUTS`): its ``inputs``, or
    ``fixed`` for a record made before the setting."""
    return record.get("inputs", "fixed")


def _protocol_threads(threads):
    """The protocol's ``(intra-op, inter-op)`` threads: ``threads`` and one inter-op thread
    (the other runtimes' setting, and TensorFlow's where no choice measured its own)."""
    return threads, 1


def _key(batch, length):
    return f"{batch}x{length}"


def choice_pairs(featurizers, count=2048, length=20, seed=0):
    """``count`` ``(text1, text2)`` pairs of ``length`` words the serving choice checks the
    runtimes' agreement on (as many as the record compares a path on at 512 × 20: 4 batches
    of 512, so the two judge a path on samples of one size): words of the model's word
    vocabulary (a synthetic one for a benchmark model), or for a model without one (BERT) the
    bundled sample's words that its featuriser encodes as one position."""
    first = featurizers[0]
    if first.kind == "word_ids":
        words = first.vocab.tokens[2:]  # after <PAD> and <UNK>
    else:
        words = benchmarking.single_position_words(featurizers, benchmarking.sample_words())
    rng = np.random.default_rng(seed)
    return [
        (" ".join(rng.choice(words, length)), " ".join(rng.choice(words, length)))
        for _ in range(count)
    ]


def _floors(spec, hparams, featurizers, shapes, peak, step_seconds):
    """Per shape key: FLOPs per batch, the FLOP floor ms per precision with a measured peak,
    the sequential steps and the dependency floor ms (:func:`re2_lab.roofline.floors`)."""
    model = spec.build(3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
    words = benchmarking.single_position_words(featurizers, benchmarking.sample_words())
    found = {}
    for batch, length in shapes:
        inputs = benchmarking.pair_batch(featurizers, batch, length, words)
        flops, steps, dependency, _ = roofline.floors(model, inputs, None, step_seconds)
        found[_key(batch, length)] = {
            "flops": flops,
            "flop_floor_ms": {k: flops / v * 1e3 for k, v in peak.items() if v},
            "sequential_steps": steps,
            "dependency_floor_ms": dependency * 1e3,
        }
    return found


def _model_rows(
    spec, variant, *, threads, shapes, batches, rounds, bf16, peak, step_seconds, tmp, log,
    inputs_kind, figure,
):  # fmt: skip
    """The rows and the model entry of :func:`report` of one benchmark variant of a model."""
    entry = spec.benchmark[variant]
    hparams = dict(spec.defaults(), **entry["hparams"])
    tmp = Path(tmp)

    def export(name, **kwargs):
        path, _, featurizers = benchmarking.export_benchmark_model(
            spec, entry["hparams"], tmp / name, **kwargs
        )
        return path, featurizers

    xla_path, featurizers = export("xla")
    units = cpu_units()["bfloat16"]
    # the SavedModels of the same weights re2-export's serving choice makes beside the
    # default: xla=False, and with bfloat16 units its bfloat16 exports
    twins = {
        name: export(name, xla=xla, precision=precision)[0]
        for name, (precision, xla) in twin_exports("fp32", True, spec.export_backend, units).items()
    }
    plain_path, bf16_path = twins["plain"], twins.get("bf16")
    bf16_xla_path = twins.get("bf16_xla")
    start = time.perf_counter()
    try:  # LiteRT: the TFLite converter reads the Keras model
        tflite_path, tflite_error = export("tflite", fmt="tflite")[0], None
        tflite_target = ("tflite", "f32", tflite_path, "ok", time.perf_counter() - start)
    except ValueError as error:  # the TFLite converter names the op it cannot convert
        tflite_path, tflite_error = None, error
        found = re.search(r"'(tf\.\w+)' op", str(error))
        status = "failed: " + (found.group(1) if found else runtimes.first_line(error))
        tflite_target = ("tflite", "f32", None, status, None)
    model = {"model": variant}
    model["floors"] = _floors(spec, hparams, featurizers, shapes, peak, step_seconds)
    # the default: what re2-export (serving=auto) records for this export, measured by the
    # library on this CPU, checked on pairs of the model's own words
    pairs = choice_pairs(featurizers)
    choice = serving_choice.choose_serving(
        xla_path,
        pairs,
        convertible=plain_path,
        bf16_export=bf16_path,
        bf16_xla_export=bf16_xla_path,
        tflite_export=tflite_path or tflite_error,
        shapes=shapes,
        threads=threads,
        log=log,
    )  # with its default rounds, as re2-export
    model["serving_choice"] = choice
    # TensorFlow's paths are timed on the threads a served process sets for them (the
    # choice's tf_threads; an unmeasured choice leaves TensorFlow on the protocol's)
    tf_threads = list(choice.get("tf_threads") or _protocol_threads(threads))
    model["tf_threads"] = tf_threads
    model["default"] = {  # per timed shape: the route a call of that many pairs takes
        _key(batch, length): CHOICE_NAMES[(r["backend"], r["precision"])]
        for (batch, length), r in zip(shapes, choice.get("routes") or [choice] * len(shapes))
    }
    log(f"{variant}: default {model['default']} ({choice['reason']})")
    targets = [("savedmodel (XLA)", "f32", xla_path, "—", None)]
    targets.append(("savedmodel (xla=False)", "f32", plain_path, "—", None))
    if units:  # TensorFlow's oneDNN bfloat16 rewrite of the same SavedModel, and the bf16 one
        targets.append(("savedmodel bf16 (xla=False)", "bf16", plain_path, "—", None))
        targets.append(("savedmodel bf16 export (xla=False)", "bf16", bf16_path, "—", None))
    if bf16_xla_path:  # a model whose bfloat16 XLA export compiles only a part with XLA
        targets.append(("savedmodel bf16 export (XLA)", "bf16", bf16_xla_path, "—", None))
    targets.append(tflite_target)
    for backend in ("onnxruntime", "openvino"):
        start = time.perf_counter()
        try:
            path = runtimes.convert(plain_path, backend, tmp / backend)
            status, seconds = "ok", time.perf_counter() - start
        except runtimes.ConversionError as error:
            path, status, seconds = None, runtimes.failure(error), None
        log(f"{variant}: {backend} conversion {status}")
        for precision in ("f32", "bf16") if backend == "openvino" and bf16 else ("f32",):
            name = backend if backend == "onnxruntime" else f"openvino {precision}"
            targets.append((name, precision, path, status, seconds))
    try:  # the default (XLA) export: which op stops the conversion
        runtimes.convert(xla_path, "openvino", tmp / "openvino_xla")
        model["xla_export_openvino"] = "ok"
    except runtimes.ConversionError as error:
        model["xla_export_openvino"] = runtimes.failure(error)
    # per shape, the Table 5 inputs every runtime is timed on: drawn afresh by the worker
    # from one seed, or their first 4 batches as serving_ids, fixed (INPUTS); either way
    # every runtime times the same ones and is compared on the first 4
    found, inputs, references = {}, {}, {}
    for batch, length in shapes:
        drawn = benchmarking.table5_inputs(featurizers, batch, length)
        inputs_file = tmp / f"inputs_{batch}x{length}.npz"
        if inputs_kind == "drawn":
            request = drawn.request(ids=True, inputs_file=inputs_file)
        else:
            spec_ = benchmarking.write_batches(drawn.id_batches(), inputs_file)
            request = {"input_spec": spec_, "options": {"inputs_file": str(inputs_file)}}
        inputs[(batch, length)] = (request, benchmarking.timed_batches(batch, batches))
        for runtime, precision, _path, status, seconds in targets:
            row = {"model": variant, "runtime": runtime, "precision": precision}
            row.update(batch=batch, length=length, conversion=status, convert_s=seconds)
            row.update(batches=inputs[(batch, length)][1], round_medians_ms=[])
            if runtime in SAVEDMODEL:
                row["threads"] = tf_threads
            found[(runtime, (batch, length))] = row
    paths = {runtime: path for runtime, _, path, _, _ in targets}

    def time_one(runtime, shape, round_):
        row, (request, count) = found[(runtime, shape)], inputs[shape]
        outputs = tmp / f"out_{shape[0]}_{runtime}.npz"
        intra, inter = row.get("threads") or _protocol_threads(threads)
        try:
            timed = benchmarking.time_export(
                paths[runtime], runtimes.SIGNATURE, request["input_spec"], batches=count,
                warmup=min(10, count), intra_op_threads=intra, inter_op_threads=inter,
                throughput_batch=0, seed=request.get("seed", 0),
                length_spread=request.get("length_spread", 0),
                options={**request["options"],
                         "precision": runtimes.asked_precision(
                             BACKEND_OF.get(runtime, runtime), row["precision"]),
                         **({} if round_ else {"outputs_file": str(outputs)})},
            )  # fmt: skip
        except RuntimeError as error:  # the runtime refused the converted model
            row["conversion"] = runtimes.failure(error)
            raise
        row["round_medians_ms"].append(timed["median_ms"])
        row["median_ms"] = figure_of(row["round_medians_ms"], figure)
        row["loadavg"] = row.get("loadavg", []) + [os.getloadavg()[0]]
        row["peak_hwm_mib"] = max(row.get("peak_hwm_mib") or 0, timed["peak_hwm_mib"] or 0)
        if "tf_threads" in timed:  # the pools the worker's TensorFlow reports it ran on
            row["threads_reported"] = row.get("threads_reported", []) + [timed["tf_threads"]]
        if round_ == 0:
            row.update({k: timed[k] for k in ("p99_ms", "first_call_s", "interpreter")})
            row["inputs_sha256"] = timed["inputs_sha256"]
            probabilities = np.load(outputs)["probabilities"]
            reference = references.setdefault(shape, probabilities)
            row.update(runtimes.agreement(reference, probabilities))
        log(f"{variant} {shape[0]}x{shape[1]} round {round_ + 1}: {runtime}: "
            f"{timed['median_ms']:.2f}")  # fmt: skip

    # the paths in turn, each round in fresh processes; a path that failed at a shape is not
    # timed there again
    benchmarking.time_in_turn(
        [runtime for runtime, path in paths.items() if path is not None],
        list(inputs),
        rounds,
        time_one,
    )
    judge(list(found.values()))
    # a close call timed again, as the serving choice times its own
    model.update(close=CLOSE, close_rounds=CLOSE_ROUNDS)
    for shape in inputs:
        close = close_paths([found[(runtime, shape)] for runtime in paths], CLOSE)
        if close:
            benchmarking.time_in_turn(
                close, [shape], CLOSE_ROUNDS, lambda r, s, i: time_one(r, s, rounds + i)
            )
    rows = [found[(runtime, shape)] for shape in inputs for runtime in paths]
    return rows, model


def judge(rows, min_agreement=runtimes.MIN_AGREEMENT):
    """Set each row's ``agrees`` by the one agreement rule
    (:func:`re2_tf.serving.runtimes.agrees`, as the serving choice's), once per path: a
    path's verdict is the rule on its ``argmax_agreement`` at the shape where it was compared
    on the most pairs (the largest batch: every shape compares the same number of batches,
    so at 8 × 20 one changed label of 32 pairs is 0.969, at 512 × 20 one of 2048 is 0.9995),
    and every row of the path that ran gets it, as the serving choice judges a candidate once
    on its pairs whatever the batch. A row without an agreement (it did not run) gets
    ``None``.

    Args:
        rows: a record's rows (``model``, ``runtime``, ``batch``, ``argmax_agreement`` or
            absent), changed in place.
        min_agreement: the rule's least label agreement.
    """
    largest = {}
    for row in rows:
        if row.get("argmax_agreement") is None:
            continue
        key = (row["model"], row["runtime"])
        if key not in largest or row["batch"] > largest[key]["batch"]:
            largest[key] = row
    for row in rows:
        found = largest.get((row["model"], row["runtime"]))
        measured = found is not None and row.get("argmax_agreement") is not None
        row["agrees"] = (
            runtimes.agrees(found["argmax_agreement"], min_agreement) if measured else None
        )


def close_paths(rows, close=CLOSE):
    """The runtimes of one shape's ``rows`` that agree with the reference (``agrees``; the
    first row is the reference) and whose least round (of ``round_medians_ms``, or
    ``median_ms`` for a row given without rounds) is at most ``(1 + close)`` times the least
    such ``median_ms``; ``[]`` where fewer than two are (not a close call), as
    :func:`re2_tf.serving.serving_choice.close_candidates` reads the choice's candidates (a
    path whose rounds disagree is in where its fastest round is). In a record whose figure is
    the least of the rounds (:func:`record_figure`) a row's least round is its figure."""
    timed = [
        r
        for i, r in enumerate(rows)
        if r.get("median_ms") is not None and (i == 0 or r.get("agrees"))
    ]
    if not timed:
        return []
    best = min(r["median_ms"] for r in timed)
    found = [
        r["runtime"]
        for r in timed
        if min(r.get("round_medians_ms") or [r["median_ms"]]) <= best * (1 + close)
    ]
    return found if len(found) > 1 else []


def report(
    models,
    *,
    threads=2,
    shapes=SHAPES,
    batches=100,
    rounds=2,
    all_variants=False,
    resume=None,
    redo=(),
    redo_reason=None,
    inputs="drawn",
    figure=FIGURES[0],
    argv=(),
    log=print,
    save=None,
):
    """Time each model's first benchmark variant (every one with ``all_variants``; random
    weights, as ``re2-bench``) on every path, at each of ``shapes``, beside its floors.

    Per variant: the default path is chosen as ``re2-export`` chooses it
    (:func:`re2_tf.serving.serving_choice.choose_serving` on the XLA export, converting from
    its ``xla=False`` twin, checked on :func:`choice_pairs`). Then every path -- the SavedModel
    with and without XLA (and without XLA under TensorFlow's oneDNN bfloat16 rewrite where
    the CPU has bfloat16 units, :data:`re2_tf.serving.runtimes.TF_BF16_REWRITE`), TFLite,
    ONNX Runtime, OpenVINO ``f32`` (and ``bf16`` where
    :func:`~re2_tf.serving.runtimes.cpu_has_bf16`) -- is timed again here, in ``rounds``
    rounds of a fresh process per path in turn (:func:`re2_tf.benchmarking.time_export`:
    :func:`re2_tf.benchmarking.timed_batches` of ``batches`` timed batches, after up to 10
    untimed; each process's median ms; the SavedModel paths on TensorFlow's threads as the
    served default sets them, the choice's ``tf_threads``, kept as the variant's
    ``tf_threads`` and each such row's ``threads``, with the pools the timing process's
    TensorFlow reports per round as the row's ``threads_reported``; the other runtimes on
    ``threads``), and
    a path's figure is made from its rounds' medians by ``figure`` (their median, as the
    serving choice's, by default; at a shape, the
    paths in a close call, :func:`close_paths`, get :data:`CLOSE_ROUNDS` more rounds), on the
    same ``serving_ids`` inputs per shape for every path (``inputs``: :data:`INPUTS`), and
    each path's probabilities on their first 4 batches (the first 4 of
    :func:`re2_tf.benchmarking.table5_inputs`) are compared with the XLA SavedModel's
    (:func:`~re2_tf.serving.runtimes.agreement`). The floors per shape are
    :func:`re2_lab.roofline.floors` over the CPU's peaks measured in the run that times the
    variant (the best of :data:`PEAK_MEASUREMENTS` :func:`re2_lab.roofline.peaks`,
    :func:`best_peaks`, kept as the variant's ``peaks``): the FLOP
    floor per precision and the dependency floor.

    Args:
        resume: a record this command wrote before with the same settings on the same CPU
            (:func:`re2_tf.machine.machine` and ``bf16_units``); its variants are kept and not
            measured again (a killed run continues).
        redo: variants of ``resume`` measured again, each replacing its own entry, rows and
            load average in place (:func:`replace_variant`; for a variant whose timing another
            process disturbed).
        redo_reason: why ``redo``'s variants are measured again, kept with each in the
            record's ``redone`` list (the header shows it).
        save: ``(record) -> None`` called after each variant (the command writes the JSON).
        inputs: what each timing process is fed, one of :data:`INPUTS` (a setting of the
            record, so a record is continued only with its own).
        figure: how a path's figure is made from its rounds, one of :data:`FIGURES` (a
            setting of the record, as ``inputs``).

    Returns:
        the record (JSON-serialisable; :func:`markdown` and :func:`table` print it):
        ``command``, ``date``, the CPU (:func:`re2_tf.machine.machine`), ``threads``,
        ``shapes``, ``batches``, ``rounds``, ``inputs``, ``figure``, ``versions``,
        ``bf16_units``,
        ``peaks``, ``loadavg`` (1-minute load average at the start and after each variant),
        ``min_agreement`` (the agreement rule's: :func:`judge`), ``models`` (per
        variant: ``default``, ``serving_choice``, ``tf_threads``, ``floors``, ``peaks``,
        ``xla_export_openvino``) and
        ``rows`` (per variant, shape and path).

    Raises:
        KeyError: an unknown model. MissingPackageError: OpenVINO, ONNX Runtime or tf2onnx
        is not installed. ValueError: ``inputs`` is not one of :data:`INPUTS` or ``figure``
        of :data:`FIGURES`; ``resume`` was
        made with other settings or on another
        CPU, or this run's measured peaks are more than :data:`PEAK_TOLERANCE` from the record's
        (nothing but the peaks is measured).
    """
    import tensorflow as tf

    specs = [get_spec(m) for m in models]
    for package in ("openvino", "onnxruntime", "tf2onnx", "onnx"):
        runtimes.require(package)
    if inputs not in INPUTS:
        raise ValueError(f"inputs: one of {INPUTS}, got {inputs!r}")
    if figure not in FIGURES:
        raise ValueError(f"figure: one of {FIGURES}, got {figure!r}")
    settings = {
        "threads": threads,
        "shapes": [list(s) for s in shapes],
        "batches": batches,
        "rounds": rounds,
        "inputs": inputs,
        "figure": figure,
    }
    if resume:
        record = resume
        here = {**machine(), "bf16_units": runtimes.cpu_has_bf16()}
        made = {**record, "inputs": record_inputs(record), "figure": record_figure(record)}
        changed = {k: (made.get(k), v) for k, v in {**settings, **here}.items() if made.get(k) != v}
        if changed:
            raise ValueError(
                "the record to resume was made with other settings or on another CPU (its "
                f"rows are compared with this run's, so one record is one CPU): {changed}"
            )
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        log("TensorFlow is already initialised in this process: its thread settings stay")
    # this run's peaks, measured here: the floors of the variants it times are over them
    peak = best_peaks([roofline.peaks(cpu_units()) for _ in range(PEAK_MEASUREMENTS)])
    if resume:
        apart = peaks_apart(record["peaks"], peak)
        if apart:
            raise ValueError(
                "the record to resume was made on another CPU: a CPU of the same name and "
                f"features whose measured peaks differ by more than {PEAK_TOLERANCE:.0%} "
                f"(FLOP/s, the record's and this run's): {apart}"
            )
    else:
        record = {
            "command": " ".join(["python -m re2_lab.cli.runtimes", *argv]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            **machine(), **settings,
            "versions": runtimes.versions(), "bf16_units": runtimes.cpu_has_bf16(),
            "peaks": peak,
            "loadavg": [os.getloadavg()[0]],
            "min_agreement": runtimes.MIN_AGREEMENT,
            "models": [], "rows": [],
        }  # fmt: skip
    unknown = [v for v in redo if v not in {m["model"] for m in record["models"]}]
    if unknown:
        raise ValueError(f"--redo: not in the record to resume: {unknown}")
    done = {m["model"] for m in record["models"]} - set(redo)
    step_seconds = functools.lru_cache(maxsize=None)(roofline.loop_step_seconds)
    for spec in specs:
        for variant in list(spec.benchmark)[: None if all_variants else 1]:
            if variant in done:
                log(f"{variant}: in the record already")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                rows, model = _model_rows(
                    spec, variant, threads=threads, shapes=shapes, batches=batches,
                    rounds=rounds, bf16=record["bf16_units"], peak=peak,
                    step_seconds=step_seconds, tmp=tmp, log=log,
                    inputs_kind=record_inputs(record), figure=record_figure(record),
                )  # fmt: skip
            model["peaks"] = peak
            replace_variant(record, model, rows, os.getloadavg()[0])
            if variant in redo:
                when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
                redone = {"model": variant, "date": when, "peaks": peak}
                if redo_reason:
                    redone["reason"] = redo_reason
                record.setdefault("redone", []).append(redone)
            if save:
                save(record)
    return record


def peaks_apart(recorded, measured):
    """The precisions in which ``measured`` peaks are more than :data:`PEAK_TOLERANCE` from a
    record's ``recorded`` ones (both ``{precision: FLOP/s or None}``; a precision either lacks
    is not compared): ``{precision: (recorded, measured)}``, empty where a run may continue
    the record."""
    return {
        k: (recorded.get(k), v)
        for k, v in measured.items()
        if v and recorded.get(k) and abs(v / recorded[k] - 1) > PEAK_TOLERANCE
    }


def best_peaks(measured):
    """The best of several :func:`re2_lab.roofline.peaks` measurements, per precision
    (``None`` where every measurement is ``None``): a measurement another process slowed is
    lower, never higher, so the best is the CPU's.

    Args:
        measured: a non-empty list of ``{precision: FLOP/s or None}``.

    Raises:
        ValueError: ``measured`` is empty.
    """
    if not measured:
        raise ValueError("best_peaks: no measurement")
    keys = list(dict.fromkeys(k for m in measured for k in m))
    return {k: max((m[k] for m in measured if m.get(k)), default=None) for k in keys}


def replace_variant(record, model, rows, load):
    """Put a variant's ``model`` entry, its ``rows`` and the ``load`` average after it into
    ``record``: in place of the variant's own (entry, rows, and its ``loadavg`` item, the one
    after the start's) when the record has it, else at the end."""
    names = [m["model"] for m in record["models"]]
    if model["model"] not in names:
        record["models"].append(model)
        record["rows"] += rows
        record["loadavg"].append(load)
        return
    index = names.index(model["model"])
    record["models"][index] = model
    kept = [r for r in record["rows"] if r["model"] != model["model"]]
    first = next(
        (i for i, r in enumerate(record["rows"]) if r["model"] == model["model"]), len(kept)
    )
    record["rows"] = kept[:first] + rows + kept[first:]
    record["loadavg"][index + 1] = load


def load(path):
    """A record :func:`report` wrote as JSON (``None`` when ``path`` does not exist), its
    rows judged by the agreement rule of this code (:func:`judge`): a record made under an
    earlier rule reads, and is continued, under this one."""
    path = Path(path)
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    judge(record["rows"])
    # in place of the rule before the one rule (max |Δp| per precision), where it stood
    record = {("min_agreement" if k == "tolerance" else k): v for k, v in record.items()}
    record["min_agreement"] = runtimes.MIN_AGREEMENT
    return record


_AGREEMENT = ("max_abs_dp", "dp_over_spread", "argmax_agreement")


def _number(value, fmt):
    return "—" if value is None else format(value, fmt)


def _header(record, history=True):
    versions_text = ", ".join(f"{k} {v}" for k, v in record["versions"].items() if v)
    load = " → ".join(f"{x:.1f}" for x in record["loadavg"])
    shapes = " and ".join(f"{b}×{n}" for b, n in record["shapes"])
    return (
        f"{describe_machine(record)}; {record['threads']} thread(s); batches {shapes}; per "
        f"path the {record_figure(record).split()[0]} of {record.get('rounds', 1)} round(s)' "
        "medians (each round a fresh "
        f"process per path, in turn; {record['batches']} batches at batch ≤ 64 and "
        f"{benchmarking.timed_batches(512, record['batches'])} above, "
        + _inputs_text(record)
        + f"); 1-minute load average {load} (at the start and after each model)"
        + (f"; measured peaks {_peaks_text(record['peaks'])}" if record.get("peaks") else "")
        + _close_text(record)
        + _tf_threads_text(record)
        + (_history_text(record) if history else _latest_text(record))
        + f". Versions: {versions_text}."
    )


def _inputs_text(record):
    if record_inputs(record) == "drawn":
        return (
            "each a fresh draw of the Table 5 inputs, the same draws for every path (a "
            "packed-pair model's first 4 batches cycled)"
        )
    return "cycling the first 4 batches of the Table 5 inputs"


def _history_text(record):
    return "".join(
        f"; {r['model']} measured again on {r['date']} (`--redo`"
        + (f": {r['reason']}" if r.get("reason") else "")
        + (f"; peaks {_peaks_text(r['peaks'])}" if r.get("peaks") else "")
        + ")"
        for r in record.get("redone", [])
    )


def _latest_text(record):
    """Each variant's rows dated by the run that made them (its last ``--redo``, else the
    record's own date): the variants of one date together, the latest date first, each
    date's in the record's order; nothing when every variant has one date."""
    latest = {m["model"]: record["date"] for m in record["models"]}
    for entry in record.get("redone", []):
        latest[entry["model"]] = max(latest.get(entry["model"], entry["date"]), entry["date"])
    dates = {}
    for model, date in latest.items():
        dates.setdefault(date, []).append(model)
    if len(dates) == 1:
        return ""
    return "; each variant's rows from one run: " + "; ".join(
        f"{', '.join(models)} on {date}" for date, models in sorted(dates.items(), reverse=True)
    )


def _tf_threads_text(record):
    """TensorFlow's threads (intra-op + inter-op) each variant's SavedModel paths ran on: the
    serving choice's ``tf_threads``, as a served process sets them ("as served"), or, for a
    variant measured before they were kept, ``threads`` + 1."""
    settings = {}
    for entry in record["models"]:
        intra, inter = entry.get("tf_threads") or _protocol_threads(record["threads"])
        served = ", as served" if entry.get("tf_threads") else ""
        settings.setdefault(f"{intra} + {inter}{served}", []).append(entry["model"])
    if not settings:
        return ""
    return "; the SavedModel paths on TensorFlow's intra-op + inter-op threads " + "; ".join(
        f"{setting} ({', '.join(models)})" for setting, models in settings.items()
    )


def _peaks_text(peaks):
    return ", ".join(f"{k} {v / 1e9:,.0f}" for k, v in peaks.items() if v) + " GFLOP/s"


def _close_text(record):
    timed = [m for m in record["models"] if m.get("close_rounds")]
    if not timed:
        return ""
    first = timed[0]
    return (
        f"; a close call timed again for {', '.join(m['model'] for m in timed)}: at a shape, "
        f"the agreeing paths within {first['close']:.0%} of the fastest, "
        f"{first['close_rounds']} more rounds in turn"
    )


def markdown(record):
    """A :func:`report` record as Markdown: the machine, versions and load, then one row per
    model, shape and runtime, then the default XLA export's conversion."""
    lines = [
        _header(record),
        "",
        "| model | batch | runtime | conversion | median ms | × SavedModel (XLA) | "
        "max abs Δp | Δp / spread | argmax agree | agrees |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    base = {}
    for row in record["rows"]:
        where = (row["model"], row["batch"], row["length"])
        first = where not in base  # each model's first row at a shape is the reference
        base.setdefault(where, row.get("median_ms"))
        ratio = row["median_ms"] / base[where] if row.get("median_ms") and base[where] else None
        agrees = {True: "yes", False: "**no**", None: "—"}[row.get("agrees")]
        if first:
            agrees, row = "reference", {k: v for k, v in row.items() if k not in _AGREEMENT}
        lines.append(
            f"| {row['model']} | {row['batch']}×{row['length']} | {row['runtime']} | "
            f"{row['conversion']} | {_number(row.get('median_ms'), '.2f')} | "
            f"{_number(ratio, '.2f')} | {_number(row.get('max_abs_dp'), '.1e')} | "
            f"{_number(row.get('dp_over_spread'), '.3g')} | "
            f"{_number(row.get('argmax_agreement'), '.4f')} | {agrees} |"
        )
    xla = "; ".join(f"{m['model']}: {m['xla_export_openvino']}" for m in record["models"])
    lines += ["", f"The default (XLA) export through OpenVINO's converter: {xla}."]
    return "\n".join(lines)


def _rows(record, model, batch, length):
    return {
        r["runtime"]: r
        for r in record["rows"]
        if (r["model"], r["batch"], r["length"]) == (model, batch, length)
    }


def _timed(row):
    """A row's median when it ran and agrees with the reference, else ``None``."""
    if row is None or row.get("median_ms") is None or row.get("agrees") is False:
        return None
    return row["median_ms"]


def floor_ms(model_entry, batch, length):
    """``(floor ms, bound)`` of a variant at a shape: the larger of its FLOP floor at the
    CPU's best measured precision (the least FLOP floor) and its dependency floor."""
    floors = model_entry["floors"][_key(batch, length)]
    flop = min(floors["flop_floor_ms"].values())
    dependency = floors["dependency_floor_ms"]
    best = min(floors["flop_floor_ms"], key=floors["flop_floor_ms"].get)
    if dependency > flop:
        return dependency, "dependency"
    return flop, f"{best} FLOPs"


def shape_summary(record, model_entry, batch, length):
    """The default path's standing at one shape: ``default_ms``, ``fastest`` (runtime),
    ``fastest_ms``, ``over_fastest`` (default / fastest), ``savedmodel`` (the fastest of the
    :data:`SAVEDMODEL` runtimes the variant's run timed), ``savedmodel_ms``,
    ``savedmodel_over_fastest``, ``floor_ms``, ``bound``, ``over_floor``; ``None`` for values
    that were not measured."""
    rows = _rows(record, model_entry["model"], batch, length)
    timed = {name: _timed(row) for name, row in rows.items() if _timed(row) is not None}
    default = timed.get(model_entry["default"][_key(batch, length)])
    fastest = min(timed, key=timed.get) if timed else None
    saved = [name for name in SAVEDMODEL if name in timed]
    saved = min(saved, key=timed.get) if saved else None
    floor, bound = floor_ms(model_entry, batch, length)
    return {
        "default_ms": default,
        "fastest": fastest,
        "fastest_ms": timed.get(fastest),
        "over_fastest": default / timed[fastest] if default and fastest else None,
        "savedmodel": saved,
        "savedmodel_ms": timed.get(saved),
        "savedmodel_over_fastest": timed[saved] / timed[fastest] if saved and fastest else None,
        "floor_ms": floor,
        "bound": bound,
        "over_floor": default / floor if default and floor else None,
    }


def table(record, history=True):
    """The README's latency table: per model and shape, the default path's median ms first
    (the runtime ``re2-export`` chose), every path's (``—``: a path the variant's run did not
    time, as it was measured before the path was added), the default over the fastest, the
    fastest SavedModel over the fastest, and the floor with the default's ratio to it; the
    machine and load average above, with every ``--redo`` and its reason (``history``) or,
    without, only the date of each variant's rows."""
    names = {
        "savedmodel (XLA)": "SavedModel XLA",
        "savedmodel (xla=False)": "SavedModel no XLA",
        "savedmodel bf16 (xla=False)": "SavedModel bf16 rewrite no XLA",
        "savedmodel bf16 export (xla=False)": "SavedModel bf16 export no XLA",
        "savedmodel bf16 export (XLA)": "SavedModel bf16 export XLA",
        "tflite": "TFLite",
        "onnxruntime": "ONNX Runtime",
        "openvino f32": "OpenVINO f32",
        "openvino bf16": "OpenVINO bf16",
    }
    present = [r for r in RUNTIMES if any(row["runtime"] == r for row in record["rows"])]
    lines = [
        _header(record, history),
        "",
        "| model | batch | **default** (path) | "
        + " | ".join(names[r] for r in present)
        + " | default ÷ fastest | SavedModel ÷ fastest | floor ms (bound) | default × floor |",
        "|---|---|---:|" + "---:|" * len(present) + "---:|---:|---:|---:|",
    ]
    for entry in record["models"]:
        for batch, length in record["shapes"]:
            rows = _rows(record, entry["model"], batch, length)
            standing = shape_summary(record, entry, batch, length)
            cells = []
            for runtime in present:
                row = rows.get(runtime)
                if row is None:  # the variant was measured before this path was
                    cells.append("—")
                elif row.get("median_ms") is None:
                    cells.append("fails")
                elif row.get("agrees") is False:
                    cells.append(f"wrong ({row['argmax_agreement']:.4f})")
                else:
                    cells.append(f"{row['median_ms']:.1f}")
            path = names[entry["default"][_key(batch, length)]]
            default = f"**{_number(standing['default_ms'], '.1f')}** ({path})"
            lines.append(
                f"| {entry['model']} | {batch}×{length} | {default} | "
                + " | ".join(cells)
                + f" | {_number(standing['over_fastest'], '.2f')} | "
                f"{_number(standing['savedmodel_over_fastest'], '.2f')} | "
                f"{standing['floor_ms']:.2f} ({standing['bound']}) | "
                f"{_number(standing['over_floor'], '.1f')} |"
            )
    return "\n".join(lines)


def order(record):
    """A :func:`report` record's paths per model and shape, fastest first, as a Markdown list:
    the timed paths whose outputs agree with the reference (median ms; the default path in
    bold with its place), then the paths that computed wrong and those that did not convert.

    Returns:
        str, one ``- <model>, <batch>: ...`` line per model and shape, in the record's order.
    """
    lines = []
    for entry in record["models"]:
        for batch, length in record["shapes"]:
            rows = list(_rows(record, entry["model"], batch, length).values())
            chosen = entry["default"][_key(batch, length)]
            default = next((r for r in rows if r["runtime"] == chosen), None)
            timed = sorted((r for r in rows if _timed(r) is not None), key=lambda r: r["median_ms"])
            cells = [
                f"**{r['runtime']} {r['median_ms']:.2f}**" if r is default
                else f"{r['runtime']} {r['median_ms']:.2f}"
                for r in timed
            ]  # fmt: skip
            line = f"- {entry['model']}, {batch}×{length}: {' < '.join(cells)} ms"
            if default in timed:
                line += f" (default: place {timed.index(default) + 1} of {len(timed)})"
            wrong = [r["runtime"] for r in rows if r.get("agrees") is False]
            failed = [
                f"{r['runtime']} ({r['conversion']})" for r in rows if r.get("median_ms") is None
            ]
            if wrong:
                line += f"; wrong outputs: {', '.join(wrong)}"
            if failed:
                line += f"; not converted: {', '.join(failed)}"
            lines.append(line + ".")
    return "\n".join(lines)


def _untimed(row):
    """Why a path has no time in the comparison (:func:`_timed` gave ``None``), in words."""
    if row is None:
        return "a path the record's run did not time"
    if row.get("median_ms") is None:
        return f"which did not run in the record's run ({row.get('conversion', 'failed')})"
    return (
        f"whose labels equal the reference's on {row['argmax_agreement']:.4f} of the record's "
        f"pairs only (the rule: {runtimes.MIN_AGREEMENT})"
    )


def paired_rounds(default_row, fastest_row):
    """The default's round medians less the fastest path's, round by round: the rounds of a
    record run every path in turn, so round ``i`` of two paths met the same spell of the
    machine. ``(mean ms, 95 % low, 95 % high, n)`` from Student's t with ``n - 1`` degrees
    of freedom, or ``None`` when the two rows do not have the same two or more rounds."""
    a = default_row.get("round_medians_ms") or []
    b = fastest_row.get("round_medians_ms") or []
    if len(a) != len(b) or len(a) < 2:
        return None
    differences = np.subtract(a, b)
    n = len(differences)
    mean = float(differences.mean())
    half = float(scipy.stats.t.ppf(0.975, n - 1) * differences.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half, n


def _paired_text(default_row, fastest_row):
    paired = paired_rounds(default_row, fastest_row)
    if paired is None:
        return ""
    mean, low, high, n = paired
    # all below 0 only where the figure is not the least round (the median of 4 rounds of a
    # close call need not order as their mean)
    verdict = (
        "the default is slower"
        if low > 0
        else "the default is faster"
        if high < 0
        else "no difference detected"
    )
    return (
        f"; round by round, default − fastest {mean:+.2f} ms, 95 % interval {low:+.2f} to "
        f"{high:+.2f} ms at n = {n} rounds: {verdict}"
    )


def standing(record, tolerance=0.05):
    """Where the default path stands, as Markdown: at how many of the record's model-shapes it
    is the fastest path that agrees (or within ``tolerance`` of it), and each other one with
    its default, the fastest and the ratio (and, where the two paths have the same rounds, the
    difference round by round with its interval, :func:`paired_rounds`); then each model's
    default over its floor at the first shape, with the floor's bound."""
    near, far, close, slow = 0, [], 0, []
    for entry in record["models"]:
        for batch, length in record["shapes"]:
            found = shape_summary(record, entry, batch, length)
            ratio = found["savedmodel_over_fastest"]
            if ratio is not None and ratio <= SAVEDMODEL_TARGET:
                close += 1
            else:
                slow.append(
                    f"{entry['model']} {batch}×{length} {_number(ratio, '.2f')}× "
                    f"({found['savedmodel']} against {found['fastest']})"
                )
            if found["over_fastest"] is not None and found["over_fastest"] <= 1 + tolerance:
                near += 1
                continue
            chosen = entry["default"][_key(batch, length)]
            rows = _rows(record, entry["model"], batch, length)
            if found["default_ms"] is None:  # no time to compare: say why, in words
                why = _untimed(rows.get(chosen))
                far.append(
                    f"{entry['model']} at {batch}×{length}: default {chosen}, {why}; fastest "
                    f"{found['fastest']} {_number(found['fastest_ms'], '.2f')} ms"
                )
                continue
            far.append(
                f"{entry['model']} at {batch}×{length}: default {chosen} "
                f"{found['default_ms']:.2f} ms, fastest {found['fastest']} "
                f"{_number(found['fastest_ms'], '.2f')} ms "
                f"({_number(found['over_fastest'], '.2f')}×)"
                + _paired_text(rows[chosen], rows[found["fastest"]])
            )
    total = len(record["models"]) * len(record["shapes"])
    lines = [
        f"- The default is the fastest path that agrees, or within {tolerance:.0%} of it, at "
        f"{near} of {total} model-shapes" + (f"; not at {'; '.join(far)}." if far else ".")
    ]
    lines.append(
        f"- The fastest SavedModel runtime the variant's run timed is within "
        f"{SAVEDMODEL_TARGET}× of the fastest path at {close} of {total} model-shapes"
        + (f"; not at {'; '.join(slow)}." if slow else ".")
    )
    batch, length = record["shapes"][0]
    parts = []
    for entry in record["models"]:
        found = shape_summary(record, entry, batch, length)
        parts.append(
            f"{entry['model']} {_number(found['over_floor'], '.1f')}× ({found['bound']}, "
            f"{found['floor_ms']:.2f} ms)"
        )
    lines.append(f"- The default over its floor at {batch}×{length}: {'; '.join(parts)}.")
    spread = [
        (max(r["round_medians_ms"]) / min(r["round_medians_ms"]), r)
        for r in record["rows"]
        if len(r.get("round_medians_ms") or []) > 1
    ]
    if spread:
        ratio, row = max(spread, key=lambda x: x[0])
        lines.append(
            f"- Between rounds, a path's median moved by up to {ratio:.2f}× ({row['model']}, "
            f"{row['batch']}×{row['length']}, {row['runtime']}: "
            f"{', '.join(f'{m:.2f}' for m in row['round_medians_ms'])} ms)."
        )
    return "\n".join(lines)


def choices(record):
    """Each variant's serving choice as a Markdown list: the path chosen, why, and every
    candidate's agreement with the SavedModel on the choice's pairs."""
    lines = []
    for entry in record["models"]:
        choice = entry["serving_choice"]
        parts = []
        for c in choice.get("candidates", []):
            name = CHOICE_NAMES[(c["backend"], c["precision"])]
            if "error" in c:
                parts.append(f"{name} {c['error']}")
            else:
                parts.append(f"{name} {c['label_agreement']:.4f} (max |Δp| {c['max_abs_dp']:.1e})")
        lines.append(
            f"- {entry['model']}: {choice['reason']}. Labels the same "
            f"as the SavedModel's on {choice.get('pairs', 0)} pairs: {'; '.join(parts)}."
        )
    return "\n".join(lines)
