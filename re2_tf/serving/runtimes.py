r"""Other CPU runtimes for an export's id-level signature: OpenVINO and ONNX Runtime, beside
TensorFlow (the SavedModel) and LiteRT (the TFLite export).

An export's ``serving_ids`` signature (:mod:`re2_tf.serving.export`; int32 ids ``[batch,
length]`` per text, or the model's other features) is converted from the SavedModel:

- ``openvino``: ``openvino.convert_model`` of the loaded ``serving_ids`` function, saved as
  OpenVINO IR (``serving_ids.xml`` + ``.bin``, weights kept in float32) and compiled for the
  CPU with ``INFERENCE_PRECISION_HINT`` ``f32`` (``bf16``: OpenVINO's own default on a CPU
  with bfloat16 units; :func:`cpu_has_bf16`);
- ``onnxruntime``: ``tf2onnx.convert.from_function`` of the same function (ONNX opset
  :data:`OPSET`, ``serving_ids.onnx``), run by an ``onnxruntime.InferenceSession`` on the
  CPU execution provider.

Both are optional (``pip install -e '.[openvino]'``, ``pip install -e '.[onnx]'``; without
them :class:`MissingPackageError` says which). The converted files are kept in
``<export>/runtimes/`` (a temporary folder when the export is read-only) and made again when
the SavedModel is newer. Raw text is never fed to them: tokenisation stays in re2_tf's Python
pre-processing (:class:`re2_tf.serving.predictor.Predictor`, as for TFLite).

Only exports made with ``xla=False`` (``re2-export --xla=false``) convert: the default XLA
export pads to length buckets with ``tf.searchsorted`` (op ``LowerBound``, which neither
converter handles) and keeps its ``jit_compile`` function as an opaque call.
:class:`ConversionError` names the ops a converter could not convert.

Library: :func:`load` (a :class:`Runtime`: features in, outputs out), :func:`convert` (the
converted file), :func:`report` / :func:`markdown` / :func:`summary` (``re2-bench
--runtimes``: every model through every runtime with the Table 5 protocol, with the agreement
of the outputs; the docs' tables are generated from its record, :mod:`re2_tf.doc_tables`).
"""

from __future__ import annotations

import ast
import json
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from re2_tf.serving.files import TFLITE_FILE

__all__ = [
    "BACKENDS",
    "CONVERTED",
    "ConversionError",
    "MissingPackageError",
    "OPSET",
    "Runtime",
    "agreement",
    "agrees",
    "convert",
    "cpu_has_bf16",
    "id_batches",
    "load",
    "markdown",
    "report",
    "require",
    "summary",
    "timing_inputs",
    "unsupported_ops",
    "versions",
]

#: Every ``--backend``; the last two are converted from the SavedModel (:data:`CONVERTED`).
BACKENDS = ("savedmodel", "tflite", "openvino", "onnxruntime")
#: Backend -> name of the converted file in ``<export>/runtimes/``.
CONVERTED = {"openvino": "serving_ids.xml", "onnxruntime": "serving_ids.onnx"}
#: ONNX opset tf2onnx writes.
OPSET = 17
SIGNATURE = "serving_ids"
#: Python package -> the ``pip install -e '.[extra]'`` that brings it.
EXTRAS = {"openvino": "openvino", "onnxruntime": "onnx", "tf2onnx": "onnx", "onnx": "onnx"}
#: Packages whose versions a record states.
PACKAGES = ("tensorflow", "ai-edge-litert", "openvino", "onnxruntime", "tf2onnx", "onnx")


class MissingPackageError(ImportError):
    """An optional runtime package is not installed; the message names the extra."""


class ConversionError(ValueError):
    """A converter cannot convert an export (a ``ValueError``, as the TFLite converter's
    failure in :func:`re2_tf.serving.export.export_model`): ``converter`` (``openvino``,
    ``tf2onnx``), ``ops`` (the op types it named, possibly empty) and ``detail`` (its first
    error line)."""

    def __init__(self, converter, ops, detail, hint=""):
        self.converter, self.ops, self.detail = converter, list(ops), detail
        what = f"unsupported op(s) {', '.join(self.ops)}" if self.ops else detail
        super().__init__(f"{converter} cannot convert the model: {what}{hint}")


def require(package):
    """Import an optional runtime package (``openvino``, ``onnxruntime``, ``tf2onnx``,
    ``onnx``) and return the module.

    Raises:
        MissingPackageError: it is not installed (the message names the extra to install).
    """
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError as error:
        extra = EXTRAS.get(package, package)
        raise MissingPackageError(
            f"{package} cannot be imported ({error}): pip install -e '.[{extra}]' (re2_tf's "
            f"optional extra '{extra}')"
        ) from error


def unsupported_ops(text):
    """The op types a converter's or runtime's message names as unsupported (list of str, in
    order, without repeats): tf2onnx's ``Unsupported ops: Counter({'Erfc': 6})``, OpenVINO's
    ``No conversion rule found for operations: A, B`` / ``Conversion is failed for: C``, ONNX
    Runtime's ``No Op registered for D``. ``[]`` when it names none."""
    ops = []
    for found in re.finditer(r"Unsupported ops: Counter\((\{[^}]*\})\)", text):
        ops += list(ast.literal_eval(found.group(1)))
    for found in re.finditer(
        r"(?:No conversion rule found for operations|Conversion is failed for): ([^\n]+)", text
    ):
        ops += [op.strip() for op in found.group(1).split(",") if op.strip()]
    ops += re.findall(r"No Op registered for (\w+)", text)
    return list(dict.fromkeys(ops))


def _first_line(text):
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return (lines or ["unknown error"])[0][:300]


def _export_config(export_dir):
    path = Path(export_dir) / "assets" / "export_config.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _hint(export_dir):
    if _export_config(export_dir).get("xla"):
        return (
            " (an XLA export: re-export with --xla=false; its length bucketing "
            "(tf.searchsorted -> LowerBound) and jit_compile function do not convert)"
        )
    return ""


def _signature(export_dir):
    """``(loaded SavedModel, its serving_ids function)``; keep the first alive while the
    function is used (it reads the model's variables)."""
    from re2_tf.serving.predictor import load_saved_model

    loaded = load_saved_model(export_dir)
    return loaded, loaded.signatures[SIGNATURE]


def _onnx_unknown_ops(graph, onnx):
    """Op types of ``graph`` (and its sub-graphs) that no ONNX schema defines."""
    unknown = []
    for node in graph.node:
        if not onnx.defs.has(node.op_type, node.domain):
            unknown.append(node.op_type)
        for attribute in node.attribute:
            for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                unknown += _onnx_unknown_ops(sub, onnx)
    return list(dict.fromkeys(unknown))


def _to_onnx(export_dir, path, opset=OPSET):
    import logging

    import tensorflow as tf

    tf2onnx, onnx = require("tf2onnx"), require("onnx")
    loaded, fn = _signature(export_dir)
    inputs = fn.structured_input_signature[1]
    names = sorted(inputs)
    specs = [tf.TensorSpec(inputs[n].shape, inputs[n].dtype, name=n) for n in names]
    # tf2onnx wants a tf.function over positional tensors; the signature takes keywords.
    function = tf.function(lambda *args: fn(**dict(zip(names, args))), input_signature=specs)
    messages = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: messages.append(record.getMessage())
    logger = logging.getLogger("tf2onnx")
    logger.addHandler(handler)
    try:
        proto, _ = tf2onnx.convert.from_function(function, input_signature=specs, opset=opset)
    except Exception as error:  # tf2onnx and TensorFlow's freezer raise their own errors
        text = "\n".join([*messages, str(error)])
        raise ConversionError(
            "tf2onnx", unsupported_ops(text), _first_line(error), _hint(export_dir)
        ) from error
    finally:
        logger.removeHandler(handler)
    del loaded
    ops = list(
        dict.fromkeys(unsupported_ops("\n".join(messages)) + _onnx_unknown_ops(proto.graph, onnx))
    )
    if ops:
        raise ConversionError("tf2onnx", ops, "", _hint(export_dir))
    onnx.save(proto, str(path))


def _to_openvino(export_dir, path):
    ov = require("openvino")
    loaded, fn = _signature(export_dir)
    try:
        model = ov.convert_model(fn)
    except Exception as error:  # OpenVINO's OpConversionFailure and others
        raise ConversionError(
            "openvino", unsupported_ops(str(error)), _first_line(error), _hint(export_dir)
        ) from error
    ov.save_model(model, str(path), compress_to_fp16=False)
    del loaded


def convert(export_dir, backend, cache_dir=None):
    """The ``backend``'s file converted from the SavedModel ``export_dir`` (made when absent
    or older than the SavedModel).

    Args:
        export_dir: a SavedModel export (``re2-export``; convertible when made with
            ``--xla=false``).
        backend: ``openvino`` (IR ``.xml``) or ``onnxruntime`` (``.onnx``).
        cache_dir: where the file is written; default ``<export_dir>/runtimes`` (a temporary
            folder when that cannot be written).

    Returns:
        ``Path`` of the converted file.

    Raises:
        ValueError: an unknown backend or not a SavedModel export. ConversionError: the
        converter's unsupported ops. MissingPackageError: the converter is not installed.
    """
    if backend not in CONVERTED:
        raise ValueError(f"backend must be one of {list(CONVERTED)}, got {backend!r}")
    export_dir = Path(export_dir)
    saved = export_dir / "saved_model.pb"
    if not saved.exists():
        raise ValueError(f"{export_dir} is not a SavedModel export (no saved_model.pb)")
    cache = Path(cache_dir) if cache_dir else export_dir / "runtimes"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        if not os.access(cache, os.W_OK):
            raise OSError(cache)
    except OSError:
        cache = Path(tempfile.mkdtemp(prefix="re2_tf_runtimes_"))
    path = cache / CONVERTED[backend]
    if path.exists() and path.stat().st_mtime >= saved.stat().st_mtime:
        return path
    (_to_openvino if backend == "openvino" else _to_onnx)(export_dir, path)
    return path


def cpu_has_bf16():
    """Whether OpenVINO's CPU plugin reports bfloat16 support (``BF16`` among the device's
    ``OPTIMIZATION_CAPABILITIES``; ``avx512_bf16`` or AMX), where its default precision is
    bf16.

    Raises:
        MissingPackageError: OpenVINO is not installed.
    """
    ov = require("openvino")
    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class Runtime:
    """One backend's ``serving_ids``: ``runtime(features) -> outputs``.

    ``features``: ``{name: np.ndarray}``, the export's ``serving_ids`` inputs (int32 ids
    ``[batch, length]``, ``[batch, length, chars]``, float32 flags, ...); outputs:
    ``{"probabilities": float32 [batch, num_classes], "truncated": int32 [batch], ...}`` as
    numpy arrays (``score`` float32 ``[batch]`` for score models; ``label`` is dropped).
    Attributes: ``backend``, ``path`` (the file or export run), ``precision`` (the
    runtime's effective precision: ``f32`` unless asked otherwise).
    """

    def __init__(self, backend, path, call, precision="f32"):
        self.backend, self.path, self._call, self.precision = backend, Path(path), call, precision

    def __call__(self, features):
        outputs = self._call({k: np.asarray(v) for k, v in features.items()})
        return {k: np.asarray(v) for k, v in outputs.items() if k != "label"}

    def __repr__(self):
        return f"Runtime({self.backend!r}, {str(self.path)!r}, precision={self.precision!r})"


def load(export_dir, backend, *, threads=0, precision="f32", cache_dir=None):
    """A :class:`Runtime` over ``export_dir``'s ``serving_ids`` in ``backend``.

    Args:
        export_dir: an export (``re2-export``): a SavedModel for ``savedmodel``,
            ``openvino``, ``onnxruntime`` (the last two converted by :func:`convert`), a
            TFLite export for ``tflite``.
        backend: one of :data:`BACKENDS`.
        threads: intra-op threads (0 = the runtime's default).
        precision: OpenVINO's ``INFERENCE_PRECISION_HINT`` (``f32``, ``bf16``); the others
            run the export's own precision.
        cache_dir: see :func:`convert`.

    Raises:
        ValueError: an unknown backend, or an export of the other format.
        ConversionError, MissingPackageError: see :func:`convert`.
    """

    export_dir = Path(export_dir)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if backend == "tflite":
        if not (export_dir / TFLITE_FILE).exists():
            raise ValueError(f"{export_dir} has no {TFLITE_FILE}: export with --format=tflite")
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError:
            import tensorflow as tf

            Interpreter = tf.lite.Interpreter
        interpreter = Interpreter(
            model_path=str(export_dir / TFLITE_FILE), num_threads=threads or None
        )
        return Runtime(
            backend,
            export_dir / TFLITE_FILE,
            lambda x: interpreter.get_signature_runner(SIGNATURE)(**x),
        )
    if not (export_dir / "saved_model.pb").exists():
        raise ValueError(f"{export_dir} is not a SavedModel export: --backend=tflite serves it")
    if backend == "savedmodel":
        import tensorflow as tf

        loaded, fn = _signature(export_dir)

        def call(features, loaded=loaded):  # loaded: kept alive with the function
            return {
                k: v.numpy()
                for k, v in fn(**{k: tf.constant(v) for k, v in features.items()}).items()
            }

        return Runtime(backend, export_dir, call)
    path = convert(export_dir, backend, cache_dir)
    if backend == "onnxruntime":
        ort = require("onnxruntime")
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return Runtime(backend, path, lambda x: dict(zip(names, session.run(None, x))))
    ov = require("openvino")
    config = {"INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY"}
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = ov.Core().compile_model(str(path), "CPU", config)
    request = compiled.create_infer_request()

    def infer(features):
        result = request.infer(features)
        return {o.get_any_name(): result[o] for o in compiled.outputs}

    effective = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    return Runtime(backend, path, infer, precision=effective)


def versions():
    """``{package: version or None}`` of :data:`PACKAGES` (``None``: not installed)."""
    from importlib import metadata

    found = {}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def id_batches(featurizers, batch, length, *, count=4, seed=0):
    """``count`` batches of ``serving_ids`` inputs (``[{name: np.ndarray}]``) for a model with
    these featurisers: the random ids :mod:`re2_tf.benchmarking` times (its
    ``benchmark_inputs``, drawn as ``serving/timing_worker.py`` draws them), or -- for a model
    whose input packs both texts (BERT's ``[CLS] a [SEP] b [SEP]``), which random ids cannot
    form -- pairs of ``length`` random words of the bundled sample that each featuriser
    encodes as one position, packed by the model's own featurisers in Python."""
    from re2_tf import benchmarking
    from re2_tf.serving.timing_worker import make_inputs

    signature, spec = benchmarking.benchmark_inputs(featurizers, batch, length, words=["w"])
    if signature == SIGNATURE:
        rng = np.random.default_rng(seed)
        return [make_inputs(spec, batch, rng) for _ in range(count)]
    from re2_tf.roofline import pair_batch, single_position_words

    words = single_position_words(featurizers, benchmarking.sample_words())
    return [
        {
            k: np.asarray(v)
            for k, v in pair_batch(featurizers, batch, length, words, seed=seed + i).items()
        }
        for i in range(count)
    ]


def timing_inputs(featurizers, batch, length, path):
    """``(input spec, time_export options)`` timing a converted ``serving_ids`` the way
    :mod:`re2_tf.benchmarking` times the SavedModel: its random-id spec (the worker draws the
    batches), or for a packed-pair model the :func:`id_batches` written to ``path`` (``.npz``,
    options ``{"inputs_file": path}``; no throughput batch can be drawn then)."""
    from re2_tf import benchmarking

    signature, spec = benchmarking.benchmark_inputs(featurizers, batch, length, words=["w"])
    if signature == SIGNATURE:
        return spec, {}
    return _write_batches(id_batches(featurizers, batch, length), path), {"inputs_file": str(path)}


def _write_batches(batches, path):
    """Write batches as the worker's ``inputs_file``; return their input spec."""
    np.savez(path, **{f"{i}/{k}": v for i, b in enumerate(batches) for k, v in b.items()})
    return {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in batches[0].items()}


def agreement(reference, probabilities):
    """How far ``probabilities`` are from ``reference`` (float ``[n, num_classes]`` each):
    ``max_abs_dp`` (max |Δp|), ``dp_over_spread`` (that over the reference's spread, the std
    of its probabilities over the ``n`` pairs averaged over classes: random-weight models give
    nearly uniform probabilities, so an absolute Δp alone says little) and
    ``argmax_agreement`` (share of pairs with the same most probable class)."""
    reference = np.asarray(reference, np.float64).reshape(-1, np.shape(reference)[-1])
    got = np.asarray(probabilities, np.float64).reshape(reference.shape)
    diff = float(np.abs(reference - got).max())
    spread = float(reference.std(axis=0).mean())
    return {
        "max_abs_dp": diff,
        "dp_over_spread": diff / spread if spread else None,
        "argmax_agreement": float((reference.argmax(-1) == got.argmax(-1)).mean()),
    }


#: When a runtime's probabilities agree with the SavedModel's: float32 within 1e-5 (max
#: |Δp|); bfloat16 within a quarter of the reference's spread over the pairs.
TOLERANCE = {"f32": ("max_abs_dp", 1e-5), "bf16": ("dp_over_spread", 0.25)}


def agrees(measured, precision="f32"):
    """Whether an :func:`agreement` result is within :data:`TOLERANCE` for ``precision``
    (``f32``, ``bf16``); ``False`` when the measure is undefined."""
    key, limit = TOLERANCE[precision]
    return measured.get(key) is not None and measured[key] <= limit


def _failure(error):
    if isinstance(error, ConversionError):
        return "failed: " + (", ".join(error.ops) if error.ops else error.detail)
    text = str(error)
    ops = unsupported_ops(text)
    return "failed: " + (
        ", ".join(ops) if ops else _first_line(text.splitlines()[-1] if text else "")
    )


def _model_rows(spec, variant, *, threads, batch, length, batches, warmup, bf16, tmp, log):
    """The rows of :func:`report` of one benchmark variant of a model."""
    from re2_tf import benchmarking

    entry = spec.benchmark[variant]
    tmp = Path(tmp)

    def export(name, **kwargs):
        path, _, featurizers = benchmarking.export_benchmark_model(
            spec, entry["hparams"], tmp / name, **kwargs
        )
        return path, featurizers

    xla_path, featurizers = export("xla")
    plain_path, _ = export("noxla", xla=False)
    inputs_file = tmp / "inputs.npz"
    input_spec = _write_batches(id_batches(featurizers, batch, length), inputs_file)
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
                "failed: " + (found.group(1) if found else _first_line(error)),
                None,
            )
        )
    for backend in ("onnxruntime", "openvino"):
        start = time.perf_counter()
        try:
            path = convert(plain_path, backend, tmp / backend)
            status, seconds = "ok", time.perf_counter() - start
        except ConversionError as error:
            path, status, seconds = None, _failure(error), None
        log(f"{variant}: {backend} conversion {status}")
        for precision in ("f32", "bf16") if backend == "openvino" and bf16 else ("f32",):
            name = backend if backend == "onnxruntime" else f"openvino {precision}"
            targets.append((name, precision, path, status, seconds))
    try:  # the default (XLA) export: which op stops the conversion
        convert(xla_path, "openvino", tmp / "openvino_xla")
        xla_status = "ok"
    except ConversionError as error:
        xla_status = _failure(error)
    rows, reference = [], None
    for runtime, precision, path, status, seconds in targets:
        row = {"model": variant, "runtime": runtime, "precision": precision, "conversion": status}
        row["convert_s"] = seconds
        if path is not None:
            outputs = tmp / f"out_{len(rows)}.npz"
            try:
                timed = benchmarking.time_export(
                    path, SIGNATURE, input_spec, batches=batches, warmup=warmup,
                    intra_op_threads=threads, inter_op_threads=1, throughput_batch=0,
                    options={"inputs_file": str(inputs_file), "outputs_file": str(outputs),
                             "precision": precision},
                )  # fmt: skip
                row.update({k: timed[k] for k in ("median_ms", "p99_ms", "first_call_s")})
                row.update(interpreter=timed["interpreter"], loadavg=os.getloadavg()[0])
                probabilities = np.load(outputs)["probabilities"]
                if reference is None:
                    reference = probabilities
                row.update(agreement(reference, probabilities))
                row["agrees"] = agrees(row, precision)
            except RuntimeError as error:  # the runtime refused the converted model
                row["conversion"] = _failure(error)
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
    ms), all on the same 4 batches of ``serving_ids`` inputs (:func:`id_batches`), and check
    each runtime's probabilities on them against the default SavedModel's
    (:func:`agreement`, :data:`TOLERANCE`).

    Runtimes: the SavedModel (default XLA export, and ``xla=False``), TFLite, ONNX Runtime
    and OpenVINO ``f32`` (plus ``bf16`` where :func:`cpu_has_bf16`), the last two converted
    from the ``xla=False`` export; a conversion that fails is a row naming the ops.

    Returns:
        the record (JSON-serialisable; :func:`markdown` prints it): ``command``, ``date``,
        the CPU (``re2_tf.training.throughput.machine``), ``threads``, ``batch``, ``length``,
        ``batches``, ``warmup``, ``versions``, ``bf16_units``, ``loadavg`` (1-minute load
        average at the start and the end), ``tolerance``, ``models`` (per model: the default
        export's OpenVINO conversion) and ``rows``.

    Raises:
        KeyError: an unknown model. MissingPackageError: OpenVINO, ONNX Runtime or tf2onnx
        is not installed.
    """
    import datetime

    from re2_tf.models import get_spec
    from re2_tf.training import throughput

    specs = [get_spec(m) for m in models]
    for package in ("openvino", "onnxruntime", "tf2onnx", "onnx"):
        require(package)
    bf16 = cpu_has_bf16()
    record = {
        "command": " ".join(["re2-bench", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **throughput.machine(),
        "threads": threads, "batch": batch, "length": length, "batches": batches,
        "warmup": warmup, "versions": versions(), "bf16_units": bf16,
        "loadavg": [os.getloadavg()[0]], "tolerance": {k: list(v) for k, v in TOLERANCE.items()},
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
    from re2_tf.training.throughput import describe_machine

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
