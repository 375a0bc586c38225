"""The runtimes report: every model's default export beside the same network in TFLite, ONNX
Runtime and OpenVINO, timed with the Table 5 protocol, with the agreement of the outputs.

``python -m re2_lab.cli.runtimes`` writes ``docs/runs/runtimes/runtimes.json``; the docs'
tables are generated from it (:mod:`re2_lab.doc_tables`). The library half -- converting an
export and loading it in another runtime -- is :mod:`re2_tf.serving.runtimes`.
"""

from __future__ import annotations

import datetime
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from re2_tf import benchmarking
from re2_tf.machine import describe_machine, machine
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

__all__ = ["markdown", "order", "report", "summary"]


def _model_rows(spec, variant, *, threads, batch, length, batches, warmup, bf16, tmp, log):
    """The rows of :func:`report` of one benchmark variant of a model."""
    entry = spec.benchmark[variant]
    tmp = Path(tmp)

    def export(name, **kwargs):
        path, _, featurizers = benchmarking.export_benchmark_model(
            spec, entry["hparams"], tmp / name, **kwargs
        )
        return path, featurizers

    xla_path, featurizers = export("xla")
    plain_path, _ = export("noxla", xla=False)
    # the Table 5 inputs every latency is timed on, its first 4 batches as serving_ids, fixed:
    # every runtime times (and its probabilities are compared on) the same ones
    inputs = benchmarking.table5_inputs(featurizers, batch, length)
    inputs_file = tmp / "inputs.npz"
    input_spec = benchmarking.write_batches(inputs.id_batches(), inputs_file)
    targets = [("savedmodel (XLA)", "f32", xla_path, "—", None)]
    targets.append(("savedmodel (xla=False)", "f32", plain_path, "—", None))
    start = time.perf_counter()
    try:
        path, _ = export("tflite", fmt="tflite")
        targets.append(("tflite", "f32", path, "ok", time.perf_counter() - start))
    except ValueError as error:  # the TFLite converter names the op it cannot convert
        found = re.search(r"'(tf\.\w+)' op", str(error))
        targets.append(
            (
                "tflite",
                "f32",
                None,
                "failed: " + (found.group(1) if found else runtimes.first_line(error)),
                None,
            )
        )
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
        xla_status = "ok"
    except runtimes.ConversionError as error:
        xla_status = runtimes.failure(error)
    rows, reference = [], None
    for runtime, precision, path, status, seconds in targets:
        row = {"model": variant, "runtime": runtime, "precision": precision, "conversion": status}
        row["convert_s"] = seconds
        if path is not None:
            outputs = tmp / f"out_{len(rows)}.npz"
            try:
                timed = benchmarking.time_export(
                    path, runtimes.SIGNATURE, input_spec, batches=batches, warmup=warmup,
                    intra_op_threads=threads, inter_op_threads=1, throughput_batch=0,
                    options={"inputs_file": str(inputs_file), "outputs_file": str(outputs),
                             "precision": precision},
                )  # fmt: skip
                row.update({k: timed[k] for k in ("median_ms", "p99_ms", "first_call_s")})
                row.update(interpreter=timed["interpreter"], loadavg=os.getloadavg()[0])
                row["inputs_sha256"] = timed["inputs_sha256"]
                probabilities = np.load(outputs)["probabilities"]
                if reference is None:
                    reference = probabilities
                row.update(runtimes.agreement(reference, probabilities))
                row["agrees"] = runtimes.agrees(row, precision)
            except RuntimeError as error:  # the runtime refused the converted model
                row["conversion"] = runtimes.failure(error)
        log(f"{variant}: {runtime}: {row.get('median_ms', row['conversion'])}")
        rows.append(row)
    return rows, {"model": variant, "xla_export_openvino": xla_status}


def report(
    models,
    *,
    threads=2,
    batch=8,
    length=20,
    batches=100,
    warmup=10,
    all_variants=False,
    argv=(),
    log=print,
):
    """Time each model's first benchmark variant (every one with ``all_variants``; random
    weights, as ``re2-bench``) through
    every runtime with the Table 5 protocol (:func:`re2_tf.benchmarking.time_export`: a fresh
    process each, ``batches`` timed batches of ``batch x length`` after ``warmup``; median
    ms), all on the same 4 batches of ``serving_ids`` inputs (the first 4 of
    :func:`re2_tf.benchmarking.table5_inputs`, as
    :meth:`~re2_tf.benchmarking.Table5Inputs.id_batches` gives them: texts of ``length`` ±
    :data:`~re2_tf.benchmarking.TABLE5_LENGTH_SPREAD` positions), and check each runtime's
    probabilities on them against the default SavedModel's
    (:func:`agreement`, :data:`TOLERANCE`).

    Runtimes: the SavedModel (default XLA export, and ``xla=False``), TFLite, ONNX Runtime
    and OpenVINO ``f32`` (plus ``bf16`` where :func:`cpu_has_bf16`), the last two converted
    from the ``xla=False`` export; a conversion that fails is a row naming the ops.

    Returns:
        the record (JSON-serialisable; :func:`markdown` prints it): ``command``, ``date``,
        the CPU (:func:`re2_tf.machine.machine`), ``threads``, ``batch``, ``length``,
        ``batches``, ``warmup``, ``versions``, ``bf16_units``, ``loadavg`` (1-minute load
        average at the start and the end), ``tolerance``, ``models`` (per model: the default
        export's OpenVINO conversion) and ``rows``.

    Raises:
        KeyError: an unknown model. MissingPackageError: OpenVINO, ONNX Runtime or tf2onnx
        is not installed.
    """
    specs = [get_spec(m) for m in models]
    for package in ("openvino", "onnxruntime", "tf2onnx", "onnx"):
        runtimes.require(package)
    bf16 = runtimes.cpu_has_bf16()
    record = {
        "command": " ".join(["python -m re2_lab.cli.runtimes", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "threads": threads, "batch": batch, "length": length, "batches": batches,
        "warmup": warmup, "versions": runtimes.versions(), "bf16_units": bf16,
        "loadavg": [os.getloadavg()[0]],
        "tolerance": {k: list(v) for k, v in runtimes.TOLERANCE.items()},
        "models": [], "rows": [],
    }  # fmt: skip
    for spec in specs:
        for variant in list(spec.benchmark)[: None if all_variants else 1]:
            with tempfile.TemporaryDirectory() as tmp:
                rows, model = _model_rows(
                    spec, variant, threads=threads, batch=batch, length=length,
                    batches=batches, warmup=warmup, bf16=bf16, tmp=tmp, log=log,
                )  # fmt: skip
            record["rows"] += rows
            record["models"].append(model)
    record["loadavg"].append(os.getloadavg()[0])
    return record


_AGREEMENT = ("max_abs_dp", "dp_over_spread", "argmax_agreement")


def _number(value, fmt):
    return "—" if value is None else format(value, fmt)


def markdown(record):
    """A :func:`report` record as Markdown: the machine, versions and load, then one row per
    model and runtime, then the default XLA export's conversion."""
    versions_text = ", ".join(f"{k} {v}" for k, v in record["versions"].items() if v)
    load = " → ".join(f"{x:.1f}" for x in record["loadavg"])
    lines = [
        f"{describe_machine(record)}; {record['threads']} thread(s); batch "
        f"{record['batch']}×{record['length']}, median of {record['batches']} batches, each "
        f"runtime in a fresh process; 1-minute load average {load}. Versions: {versions_text}.",
        "",
        "| model | runtime | conversion | median ms | × SavedModel (XLA) | max abs Δp | "
        "Δp / spread | argmax agree | agrees |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    base = {}
    for row in record["rows"]:
        first = row["model"] not in base  # each model's first row is the reference
        base.setdefault(row["model"], row.get("median_ms"))
        ratio = (
            row["median_ms"] / base[row["model"]]
            if row.get("median_ms") and base[row["model"]]
            else None
        )
        agrees = {True: "yes", False: "**no**", None: "—"}[row.get("agrees")]
        if first:
            agrees, row = "reference", {k: v for k, v in row.items() if k not in _AGREEMENT}
        lines.append(
            f"| {row['model']} | {row['runtime']} | {row['conversion']} | "
            f"{_number(row.get('median_ms'), '.2f')} | {_number(ratio, '.2f')} | "
            f"{_number(row.get('max_abs_dp'), '.1e')} | "
            f"{_number(row.get('dp_over_spread'), '.3g')} | "
            f"{_number(row.get('argmax_agreement'), '.3f')} | {agrees} |"
        )
    xla = "; ".join(f"{m['model']}: {m['xla_export_openvino']}" for m in record["models"])
    lines += ["", f"The default (XLA) export through OpenVINO's converter: {xla}."]
    return "\n".join(lines)


def summary(record):
    """A :func:`report` record in one paragraph (the README's): per model, the default
    SavedModel's median ms beside ONNX Runtime's and OpenVINO f32's -- or the ops a
    conversion failed on, or that the outputs disagree -- and the versions."""
    v = record["versions"]
    parts = []
    for model in dict.fromkeys(row["model"] for row in record["rows"]):
        rows = {r["runtime"]: r for r in record["rows"] if r["model"] == model}
        cells = []
        for runtime, name in (("onnxruntime", "ONNX Runtime"), ("openvino f32", "OpenVINO")):
            row = rows.get(runtime, {"conversion": "not run"})
            if row.get("median_ms") is None:
                cells.append(f"{name} {row['conversion']}")
            elif row.get("agrees") is False:
                cells.append(
                    f"{name} **wrong** (max |Δp| {row['max_abs_dp']:.0e}, argmax agreement "
                    f"{row['argmax_agreement']:.3f})"
                )
            else:
                cells.append(f"{name} {row['median_ms']:.1f}")
        base = next(iter(rows.values()))
        parts.append(f"{model} {_number(base.get('median_ms'), '.1f')}, {', '.join(cells)}")
    return (
        f"Other CPU runtimes on the id-level signature (ONNX Runtime {v.get('onnxruntime')} via "
        f"tf2onnx {v.get('tf2onnx')}, OpenVINO {v.get('openvino')}; both converted from the "
        f"`--xla=false` export), median ms at batch {record['batch']}×{record['length']} beside "
        f"the default SavedModel's (1-minute load average "
        f"{' → '.join(f'{x:.1f}' for x in record['loadavg'])}): {'; '.join(parts)}."
    )


def order(record):
    """A :func:`report` record's paths per model, fastest first, as a Markdown list: each
    model's timed paths whose outputs agree with the reference (median ms at the record's batch;
    the first row, the default SavedModel, in bold with its place), then the paths that computed
    wrong and those that did not convert.

    Returns:
        str, one ``- <model>: ...`` line per model, in the record's order.
    """
    lines = []
    for model in dict.fromkeys(row["model"] for row in record["rows"]):
        rows = [r for r in record["rows"] if r["model"] == model]
        default = rows[0]
        timed = sorted(
            (r for r in rows if r.get("median_ms") is not None and r.get("agrees") is not False),
            key=lambda r: r["median_ms"],
        )
        cells = [
            f"**{r['runtime']} {r['median_ms']:.2f}**" if r is default
            else f"{r['runtime']} {r['median_ms']:.2f}"
            for r in timed
        ]  # fmt: skip
        line = f"- {model}: {' < '.join(cells)} ms"
        if default in timed:
            line += f" (default: place {timed.index(default) + 1} of {len(timed)})"
        wrong = [r["runtime"] for r in rows if r.get("agrees") is False]
        failed = [f"{r['runtime']} ({r['conversion']})" for r in rows if r.get("median_ms") is None]
        if wrong:
            line += f"; wrong outputs: {', '.join(wrong)}"
        if failed:
            line += f"; not converted: {', '.join(failed)}"
        lines.append(line + ".")
    return "\n".join(lines)
