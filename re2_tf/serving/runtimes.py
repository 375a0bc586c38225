r"""Other CPU runtimes for an export's id-level signature: OpenVINO and ONNX Runtime, beside
TensorFlow (the SavedModel) and LiteRT (the TFLite export).

An export's ``serving_ids`` signature (:mod:`re2_tf.serving.export`; int32 ids ``[batch,
length]`` per text, or the model's other features) is converted from the SavedModel, in the
form the export keeps for converters where it has one (``serving_ids_portable``: RE2's
convolutions as matrix products):

- ``openvino``: ``openvino.convert_model`` of the loaded ``serving_ids`` function, saved as
  OpenVINO IR (``serving_ids.xml`` + ``.bin``, weights kept in float32) and compiled for the
  CPU with ``INFERENCE_PRECISION_HINT`` ``f32`` (``bf16``: OpenVINO's own default on a CPU
  with bfloat16 units; :func:`cpu_has_bf16`); loop states passed on unchanged are made
  computed values first, which OpenVINO's CPU plugin otherwise runs wrong
  (:func:`_copy_passed_states`). An export whose ``export_config.json`` names
  ``float32_layers`` (:func:`re2_tf.serving.export.float32_layers`: BERT+MatchLSTM's
  MatchLSTM) is also saved in two parts beside it, :data:`OPENVINO_PARTS`: the ops of those
  layers and everything computed from them (the float32 part), and the rest; ``bf16`` then
  compiles the rest in bf16 and the float32 part in f32, one after the other
  (:func:`split_openvino`);
- ``onnxruntime``: ``tf2onnx.convert.from_function`` of the same function (ONNX opset
  :data:`OPSET`, ``serving_ids.onnx``; TensorFlow's ``Erfc``, which tf2onnx lacks, as
  ``1 - Erf``: :data:`ONNX_HANDLERS`), run by an ``onnxruntime.InferenceSession`` on the
  CPU execution provider;
- ``savedmodel_noxla`` in ``bf16``: that ``--xla=false`` SavedModel run by TensorFlow with
  oneDNN's bfloat16 graph rewrite (Grappler's ``auto_mixed_precision_onednn_bfloat16``,
  :data:`TF_BF16_REWRITE`): float32 MatMuls, convolutions and their neighbours compute in
  bfloat16, with casts at the edges; the weights stay float32. GELU's ``Erfc`` stays
  float32 (:data:`TF_BF16_REWRITE_LISTS`: TensorFlow's bfloat16 ``Erfc`` is slower than its
  float32 one; the profile is in ``docs/performance.md``). It is a process-wide TensorFlow
  setting, so :func:`load`'s runtime turns it on for each of its calls only
  (:func:`tf_bf16_rewrite`) and restores it after (a call from another thread meanwhile
  would be rewritten too);
- ``savedmodel_bf16``: TensorFlow without XLA on an ``--xla=false --precision=bf16``
  SavedModel of the same weights, kept beside the export (``re2-export``'s serving choice
  makes it where the CPU has bfloat16 units). Its graph is bfloat16 as exported (RE2: the
  folded pass with bfloat16 weights, whose dense layers fuse bias and activation into
  oneDNN's product, :mod:`re2_tf.serving.folded`; BERT+MatchLSTM: BERT's pass over
  bfloat16 weights, :mod:`re2_tf.serving.folded_bert`; the other models: their Keras
  ``mixed_bfloat16`` copy), so nothing is rewritten: its precision is its own, ``bf16``
  (:data:`OWN_PRECISION`);
- ``savedmodel_bf16_xla``: TensorFlow on a ``--precision=bf16`` XLA export of the same
  weights, kept beside the export likewise, made only for a model whose bfloat16 XLA export
  compiles just a part with XLA (:func:`re2_tf.serving.backends.compiles_part`;
  BERT+MatchLSTM: BERT's bfloat16 pass on oneDNN, the float32 head under XLA). XLA's CPU
  compiler runs no bfloat16 product on the CPU's bfloat16 units, so a wholly compiled
  bfloat16 export is no candidate (``docs/performance.md``). Its precision is ``bf16``, its
  own;
- ``tflite`` beside a SavedModel: the LiteRT model of a ``--format=tflite`` export of the
  same model (:func:`keep_tflite`; the TFLite converter reads the Keras model, not the
  SavedModel, so it is exported, not converted), kept as ``<export>/runtimes/model.tflite``
  where ``re2-export``'s serving choice measured it (:func:`tflite_path`).

OpenVINO and ONNX Runtime are optional (``pip install -e '.[openvino]'``,
``pip install -e '.[onnx]'``; without
them :class:`MissingPackageError` says which). The converted files are kept in
``<export>/runtimes/`` (a temporary folder when the export is read-only) and made again when
the SavedModel is newer. Raw text is never fed to them: tokenisation stays in re2_tf's Python
pre-processing (:class:`re2_tf.serving.predictor.Predictor`, as for TFLite).

Only exports made with ``xla=False`` (``re2-export --xla=false``) convert: the default XLA
export pads to length buckets with ``tf.searchsorted`` (op ``LowerBound``, which neither
converter handles) and keeps its ``jit_compile`` function as an opaque call.
:class:`ConversionError` names the ops a converter could not convert.

Library: :func:`load` (a :class:`Runtime`: features in, outputs out), :func:`convert` (the
converted file), :func:`load_saved_model` (a SavedModel, with TensorFlow Text's ops when it
needs them), :func:`agreement` / :func:`agrees` (how far two runtimes' outputs are apart).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import json
import logging
import os
import re
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np

from re2_tf.serving.files import PORTABLE_SIGNATURE, TFLITE_FILE

__all__ = [
    "failure",
    "first_line",
    "BACKENDS",
    "CONVERTED",
    "ConversionError",
    "HANDED",
    "KEPT_TFLITE",
    "MIN_AGREEMENT",
    "TF_BF16_REWRITE",
    "TF_BF16_REWRITE_LISTS",
    "KEPT",
    "MissingOpError",
    "MissingPackageError",
    "ONNX_HANDLERS",
    "OPENVINO_PARTS",
    "OPSET",
    "OWN_PRECISION",
    "Runtime",
    "agreement",
    "agrees",
    "asked_precision",
    "convert",
    "cpu_has_bf16",
    "keep_tflite",
    "load",
    "load_saved_model",
    "tflite_path",
    "require",
    "run_openvino",
    "served_precision",
    "split_openvino",
    "tf_bf16_rewrite",
    "unsupported_ops",
    "versions",
]

#: Every ``--backend``; the last five are made from another SavedModel of the same weights
#: (:data:`CONVERTED`): an ``--xla=false`` one, or for ``savedmodel_bf16_xla`` a bfloat16 XLA
#: export.
BACKENDS = (
    "savedmodel",
    "tflite",
    "openvino",
    "onnxruntime",
    "savedmodel_noxla",
    "savedmodel_bf16",
    "savedmodel_bf16_xla",
)
#: Backend -> name of its file (or folder) in ``<export>/runtimes/``: OpenVINO's IR and ONNX
#: converted from an ``--xla=false`` SavedModel; ``savedmodel_noxla``: that SavedModel
#: itself, kept beside an XLA export (TensorFlow without XLA, a :mod:`serving_choice
#: <re2_tf.serving.serving_choice>` candidate); ``savedmodel_bf16``: an ``--xla=false
#: --precision=bf16`` SavedModel of the same weights, kept beside the export (:data:`KEPT`);
#: ``savedmodel_bf16_xla``: a ``--precision=bf16`` XLA export of them, kept likewise.
CONVERTED = {
    "openvino": "serving_ids.xml",
    "onnxruntime": "serving_ids.onnx",
    "savedmodel_noxla": "savedmodel_noxla",
    "savedmodel_bf16": "savedmodel_bf16",
    "savedmodel_bf16_xla": "savedmodel_bf16_xla",
}
#: The backends that are a SavedModel kept as it is (copied, not converted) -> how it must
#: have been made, as its ``export_config.json`` says (no such file: a float32 function
#: without XLA): ``xla`` and, where it matters, ``precision``.
KEPT = {
    "savedmodel_noxla": {"xla": False},
    "savedmodel_bf16": {"xla": False, "precision": "bf16"},
    "savedmodel_bf16_xla": {"xla": True, "precision": "bf16"},
}
#: Where a SavedModel export keeps the LiteRT model of the same weights (:func:`keep_tflite`).
KEPT_TFLITE = Path("runtimes") / TFLITE_FILE
#: A backend's own precision where it is not ``f32``: what it runs when not asked, and the
#: only precision it serves (``savedmodel_bf16`` and ``savedmodel_bf16_xla`` are bfloat16
#: graphs).
OWN_PRECISION = {"savedmodel_bf16": "bf16", "savedmodel_bf16_xla": "bf16"}
#: Suffixes of the two parts an OpenVINO IR ``<name>.xml`` is saved in when its export names
#: ``float32_layers`` (:func:`split_openvino`): ``<name>.bf16_part.xml`` (bf16 under a bf16
#: hint) and ``<name>.f32_part.xml`` (always f32), fed one after the other. The first part's
#: outputs named ``float32_part_input_<i>`` are the second part's inputs.
OPENVINO_PARTS = (".bf16_part.xml", ".f32_part.xml")
#: Name prefix of the tensors the first part hands to the float32 part.
HANDED = "float32_part_input_"
#: TensorFlow's Grappler option that rewrites a graph's float32 ops to bfloat16 for oneDNN
#: (``tf.config.optimizer.set_experimental_options``): ``savedmodel_noxla`` in ``bf16``.
TF_BF16_REWRITE = "auto_mixed_precision_onednn_bfloat16"
#: Edits to the rewrite's op lists, as TensorFlow reads them from the environment when the
#: rewrite optimises a graph: ``Erfc`` (GELU's exact form, BERT's) leaves the infer list for
#: the deny list, so it runs in float32 between bfloat16 products. ``serving/timing_worker.py``
#: holds the same edits (it imports no ``re2_tf``).
TF_BF16_REWRITE_LISTS = {
    "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE": "Erfc",
    "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD": "Erfc",
}
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


#: An absolute path in an error message; group 1 is its last component.
ABSOLUTE_PATH = re.compile(r"(?<![\w.-])/(?:[^\s:/()]+/)+([^\s:/()]+)")


def first_line(text):
    """The first non-blank line of ``text`` (an error or its message), stripped, at most 300
    characters; ``"unknown error"`` when there is none."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return (lines or ["unknown error"])[0][:300]


def failure(error):
    """``"failed: <what>"`` for an error converting or running an export in another runtime:
    the ops a :class:`ConversionError` (or the error's text) names, else its last line's
    :func:`first_line`, each absolute path in it cut to its file name."""
    if isinstance(error, ConversionError):
        return "failed: " + (", ".join(error.ops) if error.ops else error.detail)
    text = str(error)
    ops = unsupported_ops(text)
    # a file's name, not the directory it had on this machine (records and exports travel)
    return "failed: " + (
        ", ".join(ops)
        if ops
        else ABSOLUTE_PATH.sub(r"\1", first_line(text.splitlines()[-1] if text else ""))
    )


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


class MissingOpError(RuntimeError):
    """A SavedModel needs ops this TensorFlow lacks (TensorFlow Text's); the message says
    what to install."""


def _missing_op(error):
    """The op name of TensorFlow's "Op type not registered '<op>'" in ``error``, or ``None``."""
    match = re.search(r"Op type not registered '([^']+)'", str(error))
    return None if match is None else match.group(1)


def load_saved_model(path):
    """``tf.saved_model.load(path)``, with TensorFlow Text's ops registered when it needs them.

    TensorFlow Text's ops (used by keras-hub's WordPiece tokenizer in BERT exports) are
    registered only by ``import tensorflow_text`` (about 0.3 s, and it imports Keras), so it
    is imported only when loading fails with "Op type not registered", and loading is tried
    again; the import is skipped when the package is absent.

    Raises:
        MissingOpError: ``<path>: the SavedModel needs the op '<op>' ...`` naming the fix
            (``pip install tensorflow-text``) when loading fails with "Op type not
            registered" with TensorFlow Text imported, or absent; other loading errors
            propagate unchanged.
    """
    # lazy: OpenVINO, ONNX Runtime and LiteRT serve without TensorFlow
    import tensorflow as tf

    errors = (RuntimeError, tf.errors.NotFoundError)
    try:
        return tf.saved_model.load(str(path))
    except errors as e:
        if _missing_op(e) is None:
            raise
        error = e
    try:
        # lazy: TensorFlow Text (bert extra) only when a SavedModel needs its ops
        import tensorflow_text  # noqa: F401  (registers NormalizeUTF8, FastWordpiece..., ...)

        text_installed = True
    except ImportError:
        text_installed = False
    if text_installed:
        try:
            return tf.saved_model.load(str(path))
        except errors as e:
            if _missing_op(e) is None:
                raise
            error = e
    fix = (
        f"tensorflow-text is installed but does not register it: install the "
        f"tensorflow-text release matching TensorFlow {tf.__version__}"
        if text_installed
        else "pip install tensorflow-text (or pip install -e '.[bert]')"
    )
    raise MissingOpError(
        f"{path}: the SavedModel needs the op '{_missing_op(error)}', which "
        f"this TensorFlow does not have (TensorFlow Text ops, used by BERT "
        f"exports): {fix}"
    ) from error


def _signature(export_dir, converting=False):
    """``(loaded SavedModel, its serving_ids function)``; keep the first alive while the
    function is used (it reads the model's variables). ``converting``: the export's
    ``serving_ids_portable`` where it has one (:mod:`re2_tf.serving.export`: the same
    function in the form a converter reads), else ``serving_ids``."""
    loaded = load_saved_model(export_dir)
    if converting and PORTABLE_SIGNATURE in loaded.signatures:
        return loaded, loaded.signatures[PORTABLE_SIGNATURE]
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


def _erfc_to_onnx(ctx, node, name, args):
    """tf2onnx handler (its ``custom_op_handlers`` form) for TensorFlow's ``Erfc``, which
    tf2onnx has no handler for at any opset (keras-hub BERT's exact GELU,
    ``0.5 * x * erfc(-x / sqrt(2))``): ``erfc(x) = 1 - erf(x)`` with ONNX's ``Erf``
    (opset >= 9), the same function up to float32 rounding where ``erf(x)`` is near 1
    (docs/performance.md, "CPU runtimes")."""
    del name, args
    x, dtype, shape = node.input[0], node.output_dtypes[0], node.output_shapes[0]
    ctx.remove_node(node.name)
    one = ctx.make_const(f"{node.name}_one", np.array(1, _numpy_dtype(dtype)))
    erf = ctx.make_node("Erf", [x], name=f"{node.name}_erf", shapes=[shape], dtypes=[dtype])
    ctx.make_node(
        "Sub",
        [one.output[0], erf.output[0]],
        name=f"{node.name}_sub",
        outputs=node.output,
        shapes=[shape],
        dtypes=[dtype],
    )


def _numpy_dtype(onnx_dtype):
    import onnx  # lazy: only while tf2onnx converts, which needs it anyway

    return onnx.helper.tensor_dtype_to_np_dtype(onnx_dtype)


#: TensorFlow op -> tf2onnx handler (``custom_op_handlers``) for ops tf2onnx lacks.
ONNX_HANDLERS = {"Erfc": (_erfc_to_onnx, [])}


def _to_onnx(export_dir, path, opset=OPSET):
    import tensorflow as tf  # lazy: OpenVINO, ONNX Runtime and LiteRT serve without it

    tf2onnx, onnx = require("tf2onnx"), require("onnx")
    loaded, fn = _signature(export_dir, converting=True)
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
        proto, _ = tf2onnx.convert.from_function(
            function, input_signature=specs, opset=opset, custom_op_handlers=dict(ONNX_HANDLERS)
        )
    except Exception as error:  # tf2onnx and TensorFlow's freezer raise their own errors
        text = "\n".join([*messages, str(error)])
        raise ConversionError(
            "tf2onnx", unsupported_ops(text), first_line(error), _hint(export_dir)
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


def _copy_passed_states(model, ov):
    """Make every loop state that a ``Loop`` body passes on unchanged (a body ``Result`` fed
    straight by a body ``Parameter``, as ``tf.while_loop(..., lambda k, a, b: (k + 1, f(a, b),
    a))`` converts) a computed value, ``Add(parameter, 0)``; returns how many were changed.

    OpenVINO's CPU plugin (2026.4) runs such a loop wrong: the passed-on state reads the
    value the same iteration writes to the state it is passed from, not the one it came in
    with (docs/performance.md, "OpenVINO: a loop state passed on unchanged"). The converted
    graph is right; the added ``Add`` (kept by the plugin's transformations) gives the
    plugin a separate value to copy. Bodies of nested loops are changed too."""
    changed = 0
    for op in model.get_ordered_ops():
        if op.get_type_name() not in ("Loop", "TensorIterator"):
            continue
        body = op.get_function()
        changed += _copy_passed_states(body, ov)
        for result in body.get_results():
            source = result.input_value(0)
            kind = source.get_element_type()
            if source.get_node().get_type_name() != "Parameter" or kind == ov.Type.boolean:
                continue
            zero = ov.opset13.constant(np.zeros([], kind.to_dtype()))
            result.input(0).replace_source_output(ov.opset13.add(source, zero).output(0))
            changed += 1
        body.validate_nodes_and_infer_types()
    model.validate_nodes_and_infer_types()
    return changed


def _to_openvino(export_dir, path, layers=()):
    ov = require("openvino")
    loaded, fn = _signature(export_dir, converting=True)
    try:
        model = ov.convert_model(fn)
    except Exception as error:  # OpenVINO's OpConversionFailure and others
        raise ConversionError(
            "openvino", unsupported_ops(str(error)), first_line(error), _hint(export_dir)
        ) from error
    _copy_passed_states(model, ov)
    ov.save_model(model, str(path), compress_to_fp16=False)
    del loaded
    if layers:
        first, second = split_openvino(model, layers)
        for part, suffix in zip((first, second), OPENVINO_PARTS):
            ov.save_model(part, str(_part_path(path, suffix)), compress_to_fp16=False)


def _part_path(path, suffix):
    path = Path(path)
    return path.with_name(path.name[: -len(".xml")] + suffix)


def split_openvino(model, layers):
    """Cut an OpenVINO ``model`` in two: the ops of the Keras ``layers`` (an op's friendly
    name has a path segment ``<layer>`` or ``<layer>_<n>``, as ``convert_model`` names them)
    and every op computed from them form the second part; the rest the first. Every tensor
    the first part hands to the second becomes a first-part ``Result`` and a second-part
    ``Parameter``, both named ``float32_part_input_<i>``; each original ``Result`` goes with
    the part that computes it. ``model`` is changed (its second-part ops read the new
    parameters): save it before.

    Fed in turn (the first part's outputs named ``float32_part_input_*`` into the second),
    the parts compute what ``model`` does; compiled with different
    ``INFERENCE_PRECISION_HINT`` s they keep ``layers`` in one precision and the rest in
    another (OpenVINO's CPU plugin has one hint per compiled model).

    Args:
        model: an ``openvino.Model``.
        layers: Keras layer names (``export_config.json``'s ``float32_layers``).

    Returns:
        ``(first, second)``, two ``openvino.Model`` s.

    Raises:
        ValueError: no op of ``model`` belongs to ``layers``.
    """
    ov = require("openvino")
    pattern = re.compile("(^|/)(" + "|".join(re.escape(name) for name in layers) + r")(_\d+)?(/|$)")
    second = set()
    for op in model.get_ordered_ops():  # topological: producers come first
        if op.get_type_name() == "Result":
            continue
        fed = any(
            inp.get_source_output().get_node().get_friendly_name() in second for inp in op.inputs()
        )
        if fed or pattern.search(op.get_friendly_name()):
            second.add(op.get_friendly_name())
    if not second:
        raise ValueError(f"no op of the converted model belongs to the layers {list(layers)}")
    cut = {}
    for op in model.get_ordered_ops():
        if op.get_friendly_name() not in second:
            continue
        for inp in op.inputs():
            source = inp.get_source_output()
            node = source.get_node()
            if node.get_friendly_name() in second or node.get_type_name() == "Constant":
                continue
            cut.setdefault((node.get_friendly_name(), source.get_index()), source)
    results = {True: [], False: []}
    for result in model.get_results():
        name = result.input_value(0).get_node().get_friendly_name()
        results[name in second].append(result)
    handed = []
    for i, source in enumerate(cut.values()):
        result = ov.opset13.result(source)
        result.set_friendly_name(f"{HANDED}{i}")
        result.output(0).set_names({f"{HANDED}{i}"})
        handed.append(result)
    first = ov.Model(results[False] + handed, model.get_parameters(), "bf16_part")
    parameters = []
    for i, source in enumerate(cut.values()):
        parameter = ov.opset13.parameter(
            source.get_partial_shape(), source.get_element_type(), name=f"{HANDED}{i}"
        )
        parameter.output(0).set_names({f"{HANDED}{i}"})
        for target in list(source.get_target_inputs()):
            if target.get_node().get_friendly_name() in second:
                target.replace_source_output(parameter.output(0))
        parameters.append(parameter)
    return first, ov.Model(results[True], parameters, "f32_part")


def convert(export_dir, backend, cache_dir=None):
    """The ``backend``'s file converted from the SavedModel ``export_dir`` (made when absent
    or older than the SavedModel).

    Args:
        export_dir: a SavedModel export (``re2-export``; convertible when made with
            ``--xla=false``).
        backend: ``openvino`` (IR ``.xml``), ``onnxruntime`` (``.onnx``),
            ``savedmodel_noxla`` (a copy of an ``--xla=false`` export, the folder
            ``savedmodel_noxla``; an XLA export has one only where ``re2-export`` measured
            the serving choice, which keeps it), ``savedmodel_bf16`` (likewise a copy of an
            ``--xla=false --precision=bf16`` export, kept where the serving choice made one)
            or ``savedmodel_bf16_xla`` (likewise, of a ``--precision=bf16`` XLA export).
        cache_dir: where the file is written; default ``<export_dir>/runtimes`` (a temporary
            folder when that cannot be written).

    Returns:
        ``Path`` of the converted file (for the kept SavedModels, :data:`KEPT`: the folder,
        or, for an export that is one itself without ``cache_dir``, ``export_dir`` itself).

    Raises:
        ValueError: an unknown backend or not a SavedModel export; a kept SavedModel
        (:data:`KEPT`) of an export that is not one and has none kept. ConversionError:
        the converter's unsupported ops. MissingPackageError: the converter is not installed.
    """
    if backend not in CONVERTED:
        raise ValueError(f"backend must be one of {list(CONVERTED)}, got {backend!r}")
    export_dir = Path(export_dir)
    saved = export_dir / "saved_model.pb"
    if not saved.exists():
        raise ValueError(f"{export_dir} is not a SavedModel export (no saved_model.pb)")
    # only the kept SavedModels depend on how the export was made
    config = _export_config(export_dir)
    wanted = KEPT.get(backend, {})
    made = {"xla": bool(config.get("xla")), "precision": config.get("precision", "fp32")}
    other = [f"{k}={made[k]}" for k, v in wanted.items() if made[k] != v]
    if backend in KEPT and not cache_dir and not other:
        return export_dir  # the export itself is one
    cache = Path(cache_dir) if cache_dir else export_dir / "runtimes"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        if not os.access(cache, os.W_OK):
            raise OSError(cache)
    except OSError:
        cache = Path(tempfile.mkdtemp(prefix="re2_tf_runtimes_"))
    path = cache / CONVERTED[backend]
    layers = _export_config(export_dir).get("float32_layers") if backend == "openvino" else None
    parts = [_part_path(path, suffix) for suffix in OPENVINO_PARTS] if layers else []
    if all(p.exists() and p.stat().st_mtime >= saved.stat().st_mtime for p in [path, *parts]):
        return path
    if backend in KEPT:
        if other:
            flags = " ".join(f"--{k}={str(v).lower()}" for k, v in wanted.items())
            raise ValueError(
                f"{export_dir} ({', '.join(other)}) has no {backend} kept in {cache}: export "
                f"with {flags} (or re2-export's default --serving=auto, which keeps one where "
                "it measured it)"
            )
        if path.exists():
            shutil.rmtree(path)
        shutil.copytree(export_dir, path, ignore=shutil.ignore_patterns("runtimes"))
        os.utime(path)  # copytree gave it the source's time: it is made now
        return path
    if backend == "openvino":
        _to_openvino(export_dir, path, layers)
    else:
        _to_onnx(export_dir, path)
    return path


@contextlib.contextmanager
def tf_bf16_rewrite():
    """While open, TensorFlow's oneDNN bfloat16 rewrite (:data:`TF_BF16_REWRITE`) is on, with
    its op lists edited (:data:`TF_BF16_REWRITE_LISTS`, each added to a list the environment
    already names); both are restored on exit. A graph TensorFlow optimises meanwhile (a
    ``tf.function``'s or a SavedModel signature's first call) keeps the rewrite.

    Raises:
        ImportError: TensorFlow is not installed.
    """
    # lazy: OpenVINO, ONNX Runtime and LiteRT serve without TensorFlow
    import tensorflow as tf

    before_option = tf.config.optimizer.get_experimental_options().get(TF_BF16_REWRITE, False)
    before_env = {name: os.environ.get(name) for name in TF_BF16_REWRITE_LISTS}
    for name, ops in TF_BF16_REWRITE_LISTS.items():
        listed = [op for op in (before_env[name] or "").split(",") if op]
        os.environ[name] = ",".join(listed + [op for op in ops.split(",") if op not in listed])
    tf.config.optimizer.set_experimental_options({TF_BF16_REWRITE: True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({TF_BF16_REWRITE: before_option})
        for name, value in before_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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


def _compile_openvino(path, precision, threads=0):
    """The IR ``path`` compiled for the CPU: ``[compiled model]``, or under a bf16 hint with
    :data:`OPENVINO_PARTS` beside it, ``[first part (bf16), float32 part (f32)]``."""
    ov = require("openvino")
    config = {"INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY"}
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    core = ov.Core()
    parts = [_part_path(path, suffix) for suffix in OPENVINO_PARTS]
    if precision == "f32" or not all(p.exists() for p in parts):
        parts = [path]
    return [
        core.compile_model(
            str(part), "CPU", dict(config, INFERENCE_PRECISION_HINT=precision if k == 0 else "f32")
        )
        for k, part in enumerate(parts)
    ]


def run_openvino(compiled, features, requests=None):
    """``{output name: np.ndarray}`` of OpenVINO compiled models run in turn: the first on
    ``features`` (``{input name: np.ndarray}``), each next one on the outputs named
    ``HANDED*`` of the one before (:func:`split_openvino`'s parts); the other outputs of every
    part are kept. ``requests``: one infer request per compiled model (default: new ones)."""
    requests = requests or [c.create_infer_request() for c in compiled]
    outputs = {}
    for c, r in zip(compiled, requests):
        if outputs:  # the float32 part reads what the first part handed on
            features = {k: outputs.pop(k) for k in list(outputs) if k.startswith(HANDED)}
        result = r.infer(features)
        outputs.update({o.get_any_name(): result[o] for o in c.outputs})
    return outputs


def asked_precision(backend, precision):
    """What a runtime process is asked to run ``backend`` at (the timing worker's
    ``precision`` option): ``precision``, or ``None`` for a backend whose graph is in its own
    precision (:data:`OWN_PRECISION`: a SavedModel like any other, nothing to rewrite)."""
    return None if backend in OWN_PRECISION else precision


def served_precision(backend, precision=None):
    """The precision ``backend`` serves when asked for ``precision`` (``None``: its own,
    ``f32`` but for :data:`OWN_PRECISION`'s).

    Raises:
        ValueError: ``precision`` is not ``f32`` or ``bf16``; ``bf16`` for a backend other
            than ``openvino``, ``savedmodel_noxla`` and ``savedmodel_bf16``; ``f32`` for
            ``savedmodel_bf16``.
    """
    own = OWN_PRECISION.get(backend)
    precision = precision or own or "f32"
    if precision not in ("f32", "bf16"):
        raise ValueError(f"precision must be f32 or bf16, got {precision!r}")
    if own and precision != own:
        raise ValueError(
            f"--backend={backend} is a {own} SavedModel: {precision} is served by "
            "savedmodel_noxla (the same weights in float32)"
        )
    if precision == "bf16" and backend not in ("openvino", "savedmodel_noxla", *OWN_PRECISION):
        raise ValueError(
            f"--backend={backend} runs the export's own precision: bf16 is served by openvino, "
            "savedmodel_noxla or savedmodel_bf16 (or export with --precision=bf16)"
        )
    return precision


def keep_tflite(tflite_export, export_dir):
    """Keep the LiteRT model of ``tflite_export`` (a ``--format=tflite`` export of the same
    model as the SavedModel ``export_dir``: its folder or its ``model.tflite``) as
    ``<export_dir>/runtimes/model.tflite`` (:data:`KEPT_TFLITE`), for ``--backend=tflite`` on
    ``export_dir``.

    Returns:
        ``Path`` of the kept file.

    Raises:
        ValueError: ``tflite_export`` has no ``model.tflite``, or ``export_dir`` is not a
            SavedModel export.
    """
    source, export_dir = Path(tflite_export), Path(export_dir)
    if source.is_dir():
        source = source / TFLITE_FILE
    if source.name != TFLITE_FILE or not source.exists():
        raise ValueError(f"{tflite_export} is not a TFLite export (no {TFLITE_FILE})")
    if not (export_dir / "saved_model.pb").exists():
        raise ValueError(f"{export_dir} is not a SavedModel export (no saved_model.pb)")
    kept = export_dir / KEPT_TFLITE
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, kept)
    return kept


def tflite_path(export_dir):
    """The LiteRT model that ``--backend=tflite`` serves for ``export_dir``: a TFLite
    export's own ``model.tflite``, else the one a SavedModel export keeps
    (:data:`KEPT_TFLITE`, :func:`keep_tflite`).

    Raises:
        ValueError: neither exists (the message says how to make one).
    """
    export_dir = Path(export_dir)
    for path in (export_dir / TFLITE_FILE, export_dir / KEPT_TFLITE):
        if path.exists():
            return path
    raise ValueError(
        f"{export_dir} has no {TFLITE_FILE} and keeps none in {export_dir / KEPT_TFLITE.parent}: "
        "export with --format=tflite (re2-export's --serving=auto keeps one where it measured "
        "LiteRT)"
    )


def load(export_dir, backend, *, threads=0, precision=None, cache_dir=None):
    """A :class:`Runtime` over ``export_dir``'s ``serving_ids`` in ``backend``.

    Args:
        export_dir: an export (``re2-export``): a SavedModel for ``savedmodel``,
            ``openvino``, ``onnxruntime`` (the last two converted by :func:`convert`); for
            ``tflite`` a TFLite export or a SavedModel export that keeps one
            (:func:`tflite_path`).
        backend: one of :data:`BACKENDS`.
        threads: intra-op threads (0 = the runtime's default).
        precision: OpenVINO's ``INFERENCE_PRECISION_HINT`` (``f32``, ``bf16``; ``bf16`` with
            the IR's :data:`OPENVINO_PARTS` beside it: the first part in bf16, the
            ``float32_layers`` part in f32); for ``savedmodel_noxla``, ``bf16`` runs it under
            TensorFlow's oneDNN bfloat16 rewrite (:data:`TF_BF16_REWRITE`); the others run the
            export's own precision, ``savedmodel_bf16`` and ``savedmodel_bf16_xla`` ``bf16``
            (:data:`OWN_PRECISION`). ``None``: the backend's own (``f32`` but for those).
        cache_dir: see :func:`convert`.

    Raises:
        ValueError: an unknown backend, a precision it does not serve
            (:func:`served_precision`), or an export of the other format.
        ConversionError, MissingPackageError: see :func:`convert`.
    """

    export_dir = Path(export_dir)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    precision = served_precision(backend, precision)
    own = backend in OWN_PRECISION
    if backend == "tflite":
        tflite = tflite_path(export_dir)
        try:
            # lazy: LiteRT only for a TFLite export
            from ai_edge_litert.interpreter import Interpreter
        except ImportError:
            # lazy: OpenVINO, ONNX Runtime and LiteRT serve without TensorFlow
            import tensorflow as tf

            Interpreter = tf.lite.Interpreter
        interpreter = Interpreter(model_path=str(tflite), num_threads=threads or None)
        return Runtime(
            backend,
            tflite,
            lambda x: interpreter.get_signature_runner(SIGNATURE)(**x),
        )
    if not (export_dir / "saved_model.pb").exists():
        raise ValueError(f"{export_dir} is not a SavedModel export: --backend=tflite serves it")
    if backend == "savedmodel" or backend in KEPT:
        # lazy: OpenVINO, ONNX Runtime and LiteRT serve without TensorFlow
        import tensorflow as tf

        if backend in KEPT:
            export_dir = convert(export_dir, backend, cache_dir)
        loaded, fn = _signature(export_dir)

        def call(features, loaded=loaded):  # loaded: kept alive with the function
            return {
                k: v.numpy()
                for k, v in fn(**{k: tf.constant(v) for k, v in features.items()}).items()
            }

        if precision != "bf16" or own:
            return Runtime(backend, export_dir, call, precision=precision)

        def rewritten(features):
            with tf_bf16_rewrite():
                return call(features)

        return Runtime(backend, export_dir, rewritten, precision="bf16")
    path = convert(export_dir, backend, cache_dir)
    if backend == "onnxruntime":
        ort = require("onnxruntime")
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return Runtime(backend, path, lambda x: dict(zip(names, session.run(None, x))))
    compiled = _compile_openvino(path, precision, threads)
    requests = [c.create_infer_request() for c in compiled]

    def infer(features):
        return run_openvino(compiled, features, requests)

    effective = compiled[0].get_property("INFERENCE_PRECISION_HINT").get_type_name()
    return Runtime(backend, path, infer, precision=effective)


def versions():
    """``{package: version or None}`` of :data:`PACKAGES` (``None``: not installed)."""
    found = {}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def agreement(reference, probabilities):
    """How far ``probabilities`` are from ``reference`` (float ``[n, num_classes]`` each):
    ``max_abs_dp`` (max |Δp|), ``dp_over_spread`` (that over the reference's spread, the std
    of its probabilities over the ``n`` pairs averaged over classes: random-weight models give
    nearly uniform probabilities, so an absolute Δp alone says little) and
    ``argmax_agreement`` (share of pairs with the same most probable class; a pair whose
    ``probabilities`` are not all finite counts as changed). :func:`agrees` reads the last."""
    reference = np.asarray(reference, np.float64).reshape(-1, np.shape(reference)[-1])
    got = np.asarray(probabilities, np.float64).reshape(reference.shape)
    finite = np.isfinite(got).all(axis=-1)
    diff = float(np.abs(reference - got).max())
    spread = float(reference.std(axis=0).mean())
    return {
        "max_abs_dp": diff,
        "dp_over_spread": diff / spread if spread else None,
        "argmax_agreement": float((finite & (reference.argmax(-1) == got.argmax(-1))).mean()),
    }


#: Least share of pairs whose most probable label another path must share with the SavedModel
#: (our threshold). The one agreement rule (:func:`agrees`) of the serving choice
#: (:mod:`re2_tf.serving.serving_choice`), ``--precision=measure``
#: (:mod:`re2_tf.serving.auto_precision`) and the lab's runtimes record.
MIN_AGREEMENT = 0.99


def agrees(label_agreement, min_agreement=MIN_AGREEMENT):
    """The agreement rule: whether a path whose most probable label equals the SavedModel's
    on the share ``label_agreement`` of the pairs (:func:`agreement`'s ``argmax_agreement``)
    may stand in for it, that is ``label_agreement >= min_agreement``; ``False`` when nothing
    was measured (``None``).

    One rule for every precision: a label is what a matching model's user acts on, and
    float32 and bfloat16 paths differ in how often a near-tie flips, not in what a flip
    costs. Max |Δp| is stated beside it (:func:`agreement`) but does not decide: on the
    nearly uniform outputs of random weights, where the lab measures runtimes, its scale
    says little, and on a trained model a label that holds is the promise."""
    return label_agreement is not None and label_agreement >= min_agreement
