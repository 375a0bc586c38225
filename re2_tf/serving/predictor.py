r"""Predict labels for text pairs with an exported model (:mod:`re2_tf.serving.export`).

Library: :class:`Predictor`, which loads an export and runs it (tokenisation, runtime:
:meth:`Predictor.outputs`); :class:`re2_tf.Matcher` (``Matcher.from_export(export_dir)``:
``predict``, ``scores``, ``rank``, ``evaluate``) is the model object over it;
:func:`read_pairs` (parse input lines). Command line
(:mod:`re2_tf.cli.predict`)::

    re2-predict --export_dir=exports/snli --input=pairs.tsv > predictions.jsonl
    echo '{"text1": "A man sleeps.", "text2": "A person rests."}' | \
        re2-predict --export_dir=exports/snli --input=-

Input (:func:`read_pairs`; the command's ``--input``, a file or ``-`` for stdin): UTF-8
lines, each ended by ``\n`` or ``\r\n`` (a bare ``\r`` is part of a field, never a line
end). Each line is decoded on its own; a UTF-8 byte-order mark at the start of the first
line is dropped.

- TSV: ``text1<TAB>text2[<TAB>anything...]`` per line (extra columns, e.g. a gold label,
  are ignored); ``<TAB>`` alone is a pair of two empty texts;
- JSON lines: objects with string fields ``text1`` and ``text2``. Other fields are copied
  to the output; one named like an output field (``label``, ``probabilities``) is copied
  as ``input_label`` / ``input_probabilities`` (``input_`` repeated until the name is
  free), so nothing is lost.

Format ``auto`` reads JSON lines when the first line parses as a JSON object, and TSV
otherwise (a TSV whose first text starts with ``{`` stays TSV).

Output (:meth:`Predictor.predict`): one record per pair, in input order (the command
writes them as JSON lines)::

    {"label": "entailment", "probabilities": {"entailment": 0.91, ...}}

Tokenisation (``tokenize``): ``graph`` feeds raw text to the ``serving_default``
signature; ``python`` tokenises with the exact Python tokeniser of the run
(``re2_tf.data.tokenization``) and the exported vocabulary, then calls ``serving_ids``;
``auto`` (default) uses ``graph`` when the in-graph tokeniser is exact (``whitespace``) and
``python`` otherwise (``snli``, ``scitail``: the in-graph versions are approximations, see
``re2_tf/serving/README.md``). TFLite exports always use ``python``.

Runtime (``backend``): ``savedmodel`` (TensorFlow), ``tflite`` (LiteRT: a TFLite export, or
the LiteRT model a SavedModel export keeps where its serving choice measured it,
:func:`re2_tf.serving.runtimes.tflite_path`), or ``openvino`` / ``onnxruntime``: the
SavedModel's ``serving_ids`` converted by
:mod:`re2_tf.serving.runtimes` (optional extras ``.[openvino]`` / ``.[onnx]``), or
``savedmodel_noxla`` / ``savedmodel_bf16``: TensorFlow without XLA on the SavedModels kept
beside the export (float32; bfloat16), or ``savedmodel_bf16_xla``: the bfloat16 XLA export
kept there (a part compiled by XLA), each fed by the ``python`` tokenisation as TFLite is. Not
told (the default), a Predictor serves what the export recorded (:func:`default_routes`):
the TFLite file, or the runtimes ``re2-export`` measured fastest on its CPU per batch size
(:mod:`re2_tf.serving.serving_choice`), or the SavedModel.

Policy: **every input line yields one output record, or reading stops with one error
``<input>:<line>: <reason>``** (:class:`InputError`) before anything is predicted: invalid
UTF-8, a blank or whitespace-only line, a TSV line without a tab, invalid JSON, a JSON value
that is not an object with string fields ``text1`` and ``text2`` (or whose strings are not
valid Unicode).

Empty texts (also texts with no token after tokenisation) are all-padding rows, as in
training and evaluation; the model's output for them is defined (see
``re2_tf/serving/README.md``). Unknown words are ``<UNK>``. Texts longer than the export's
``max_length`` tokens are truncated; :meth:`Predictor.predict` returns how many pairs were.

SavedModels of BERT models (``packed_pair`` with the ``wordpiece`` tokenizer) use TensorFlow
Text ops (``NormalizeUTF8``, ``FastWordpieceTokenizeWithOffsets``, ...): when loading meets
one that is not registered, ``tensorflow_text`` is imported (it registers them) and loading
is tried again; without it loading stops with :class:`MissingOpError` saying ``pip install
tensorflow-text``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
from pathlib import Path

import numpy as np

from re2_tf.machine import cpu_units, machine
from re2_tf.serving.files import EXPORT_CONFIG_FILE, TFLITE_FILE
from re2_tf.serving.runtimes import (
    CONVERTED,
    EXTRAS,
    KEPT_TFLITE,
    MissingOpError,
    load_saved_model,
    served_precision,
    tflite_path,
)

#: The backends TensorFlow runs, on its process-wide thread pools.
TENSORFLOW_BACKENDS = ("savedmodel", "savedmodel_noxla", "savedmodel_bf16", "savedmodel_bf16_xla")

#: Converted backend -> the Python packages it needs.
PACKAGES = {
    "onnxruntime": ("onnxruntime", "tf2onnx", "onnx"),
    "openvino": ("openvino",),
    "savedmodel_noxla": (),
    "savedmodel_bf16": (),
    "savedmodel_bf16_xla": (),
}


def installed(backend):
    """Whether every package of a converted ``backend`` (:data:`PACKAGES`) is installed
    (found, not imported)."""
    return all(importlib.util.find_spec(p) is not None for p in PACKAGES[backend])


def export_featurizers(export_dir, config):
    """The Python-side featurisers of an export: one per ``config["features"]`` entry (its
    ``export_config.json``), loaded from ``<export_dir>/assets``."""
    # lazy: Python-side tokenisation only for exports that need it (re2-predict start-up)
    from re2_tf.data.features import load_featurizer

    return [
        load_featurizer(Path(export_dir) / "assets", kind, options)
        for kind, options in config["features"].items()
    ]


def route(routes, batch):
    """The route serving a call of ``batch`` pairs: of ``routes`` (``[{"batch", "backend",
    "precision"}]``, one per timed shape), the one whose timed batch is nearest on a log scale
    (the smaller on ties)."""
    return min(routes, key=lambda r: (abs(math.log(batch / r["batch"])), r["batch"]))


def default_routes(export_dir, config):
    """``(routes, note)``: what a :class:`Predictor` serves ``export_dir`` through when not
    told, as :func:`route` routes (``[{"batch", "backend", "precision"}]``): its TFLite file;
    else the routes its ``export_config.json`` ``serving_choice`` records
    (:mod:`re2_tf.serving.serving_choice`), each whose converted file is in
    ``<export>/runtimes/`` and whose runtime is installed; the SavedModel for the others (and
    for an export without a choice). A bfloat16 route is followed only on a CPU with
    bfloat16 units (:func:`re2_tf.machine.cpu_units`): the choice measured it on such a CPU,
    and elsewhere bfloat16 is emulated, or, for oneDNN's fused kernels a bfloat16 export may
    hold, fails when it runs. ``note`` says why a recorded route is not followed (``None``
    when every one is)."""
    export_dir = Path(export_dir)
    if (export_dir / TFLITE_FILE).exists():
        return [{"batch": 1, "backend": "tflite", "precision": "f32"}], None
    choice = config.get("serving_choice") or {}
    recorded = choice.get("routes") or [
        {"batch": 1, "backend": choice.get("backend", "savedmodel"), "precision": "f32"}
    ]
    routes, notes = [], []
    bf16_units = cpu_units()["bfloat16"]
    for r in recorded:
        backend = r["backend"]
        kept = export_dir / KEPT_TFLITE if backend == "tflite" else None
        if backend in CONVERTED:
            kept = export_dir / "runtimes" / CONVERTED[backend]
        if r.get("precision", "f32") == "bf16" and not bf16_units:
            notes.append(
                f"the export chose {backend} in bfloat16, and this CPU has no bfloat16 units"
            )
        elif kept and not kept.exists():
            notes.append(f"the export chose {backend}, but {export_dir}/runtimes/ has no model")
        elif backend in CONVERTED and not installed(backend):
            extra = EXTRAS[backend]
            notes.append(
                f"the export chose {backend}, which is not installed (pip install -e '.[{extra}]')"
            )
        else:
            routes.append(dict(r, precision=r.get("precision", "f32")))
            continue
        routes.append({"batch": r["batch"], "backend": "savedmodel", "precision": "f32"})
    note = "; ".join(dict.fromkeys(notes)) + ": serving the SavedModel there" if notes else None
    return routes, note


def recorded_tf_threads(config):
    """``(threads, note)``: the TensorFlow thread setting an export's ``serving_choice``
    measured its routes on (``tf_threads``: ``(intra, inter)``,
    :func:`re2_tf.serving.serving_choice.pick_threads`), or ``None`` (TensorFlow's default)
    where it records none or its choice was made on another CPU (:func:`re2_tf.machine.machine`:
    another ``cpu`` or ``cpu_count``; ``note`` then says so)."""
    choice = config.get("serving_choice") or {}
    if not choice.get("tf_threads"):
        return None, None
    here = machine()
    if (choice.get("cpu"), choice.get("cpu_count")) != (here["cpu"], here["cpu_count"]):
        return None, (
            f"the export's TensorFlow threads {choice['tf_threads']} were chosen on "
            f"{choice.get('cpu_count')} cores of {choice.get('cpu')}, not this CPU "
            f"({here['cpu_count']} cores of {here['cpu']}): TensorFlow's default threads"
        )
    return tuple(int(n) for n in choice["tf_threads"]), None


def set_tf_threads(tf, threads):
    """Size TensorFlow's thread pools in this process: ``threads`` ``(intra, inter)`` (0: that
    pool's default). TensorFlow fixes them once it has run anything, so then they are left
    as they are. Returns ``(in_effect, note)``: the ``(intra, inter)`` TensorFlow reports
    afterwards (0: its default) and, where ``threads`` could not be set, why."""
    threading = tf.config.threading
    try:
        threading.set_intra_op_parallelism_threads(int(threads[0]))
        threading.set_inter_op_parallelism_threads(int(threads[1]))
        note = None
    except RuntimeError as error:  # "... cannot be modified after initialization"
        note = f"TensorFlow's threads could not be set to {tuple(threads)}: {error}"
    in_effect = (
        threading.get_intra_op_parallelism_threads(),
        threading.get_inter_op_parallelism_threads(),
    )
    return in_effect, note


__all__ = [
    "InputError",
    "MissingOpError",
    "PACKAGES",
    "Predictor",
    "TENSORFLOW_BACKENDS",
    "default_routes",
    "recorded_tf_threads",
    "set_tf_threads",
    "export_featurizers",
    "installed",
    "route",
    "load_saved_model",
    "read_pairs",
]


class InputError(ValueError):
    """A malformed input line (message ``<source>:<line>: <reason>``)."""


_BOM = "\ufeff"


def read_pairs(lines, source="<stdin>", fmt="auto"):
    r"""Parse TSV or JSON-lines text pairs, one pair per line (see the module docstring).

    Args:
        lines: iterable of lines, ``bytes`` (as from a file opened ``"rb"``: only ``\n``
            splits lines; each line is decoded as strict UTF-8) or ``str``; a trailing
            ``\n`` or ``\r\n`` is removed, a leading byte-order mark on line 1 too.
        source: name used in error messages.
        fmt: ``auto`` (JSON lines if line 1 parses as a JSON object, else TSV), ``tsv`` or
            ``jsonl``.

    Returns:
        list with one dict per line: ``text1``, ``text2`` (``str``) and, for JSON lines,
        the other fields.

    Raises:
        InputError: ``<source>:<line>: <reason>`` for the first malformed line (invalid
            UTF-8, blank line, no tab, invalid JSON, missing or non-string fields).
    """
    pairs = []
    for lineno, line in enumerate(lines, 1):
        where = f"{source}:{lineno}"
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(f"{where}: invalid UTF-8 at byte {e.start}") from None
        line = line.removesuffix("\n").removesuffix("\r")
        if lineno == 1:
            line = line.removeprefix(_BOM)
        if not line.strip() and "\t" not in line:
            raise InputError(f"{where}: blank line (a pair of empty texts is a lone <TAB>)")
        record, error = None, None
        if fmt != "tsv":
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                error = e.msg
            if fmt == "auto":
                fmt = "jsonl" if isinstance(record, dict) else "tsv"
        if fmt == "jsonl":
            if error:
                raise InputError(f"{where}: invalid JSON ({error})")
            if not isinstance(record, dict) or not all(
                isinstance(record.get(k), str) for k in ("text1", "text2")
            ):
                raise InputError(
                    f"{where}: expected an object with string fields 'text1' and 'text2'"
                )
            try:
                record["text1"].encode("utf-8"), record["text2"].encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(
                    f"{where}: text1/text2 hold an unpaired surrogate escape (not valid Unicode)"
                ) from None
            pairs.append(record)
        else:
            fields = line.split("\t")
            if len(fields) < 2:
                raise InputError(
                    f"{where}: expected text1<TAB>text2, found no tab"
                    + (f" (nor a JSON object: {error})" if error else "")
                )
            pairs.append({"text1": fields[0], "text2": fields[1]})
    return pairs


class Predictor:
    """Load an export and predict pairs.

    Args:
        export_dir: a directory written by :func:`re2_tf.serving.export.export_model`
            (SavedModel or TFLite).
        tokenize: ``auto``, ``graph`` or ``python`` (see module docstring).
        batch_size: pairs per model call (>= 1).
        backend: ``savedmodel``, ``tflite``, ``openvino``, ``onnxruntime``,
            ``savedmodel_noxla``, ``savedmodel_bf16`` or ``savedmodel_bf16_xla`` (module
            docstring); ``None`` = what the export recorded (:func:`default_routes`).
        precision: ``f32`` or ``bf16``: OpenVINO's inference precision, or for
            ``savedmodel_noxla`` TensorFlow's oneDNN bfloat16 rewrite
            (:func:`re2_tf.serving.runtimes.load`); ``None`` = the recorded choice's with
            ``backend=None``, else the backend's own (``f32``; ``bf16`` for
            ``savedmodel_bf16`` and ``savedmodel_bf16_xla``, the kept bfloat16 SavedModels).
            The other runtimes run the export's own precision (asking them for another is a
            ValueError: :func:`re2_tf.serving.runtimes.served_precision`; with
            ``backend=None`` it applies to the routes these serve).
        tf_threads: ``(intra, inter)`` TensorFlow threads set before loading (0: that pool's
            default; :func:`set_tf_threads`); ``None`` = with ``backend=None`` the setting
            the export's choice timed its routes on, where the choice was made on this CPU
            (:func:`recorded_tf_threads`), else TensorFlow's default. TensorFlow sizes its
            pools once per process: where it has already run, they stay as they are and a
            warning says so.

    Attributes:
        routes: ``[{"batch", "backend", "precision"}]``: which runtime serves a call of how
            many pairs (:func:`route`; one route unless the export's choice has several).
        backend, precision: the first route's (``precision`` as asked; OpenVINO may fall
            back to ``f32`` on a CPU without bfloat16 units).
        tf_threads: ``(intra, inter)`` TensorFlow threads in effect after loading (0: that
            pool's default).

    Raises:
        FileNotFoundError: not an export directory. ValueError: ``graph`` with a backend
        other than ``savedmodel``, a backend the export's format cannot serve, or
        ``batch_size`` < 1. MissingOpError (a RuntimeError): the SavedModel needs TensorFlow
        Text ops that are not registered (see :func:`load_saved_model`).
        ``re2_tf.serving.runtimes.ConversionError`` / ``MissingPackageError``: OpenVINO or
        ONNX Runtime cannot take the export, or is not installed.
    """

    def __init__(
        self,
        export_dir,
        tokenize="auto",
        batch_size=64,
        backend=None,
        precision=None,
        tf_threads=None,
    ):
        # lazy: a TFLite or OpenVINO/ONNX Runtime export is served without TensorFlow
        import tensorflow as tf

        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.export_dir = Path(export_dir)
        config_path = self.export_dir / "assets" / EXPORT_CONFIG_FILE
        if not config_path.exists():
            raise FileNotFoundError(f"{export_dir} is not a re2_tf export (no {config_path})")
        self.config = json.loads(config_path.read_text())
        self.label_names = self.config["label_names"]
        self.batch_size = int(batch_size)
        tflite = (self.export_dir / TFLITE_FILE).exists()
        if backend is None and tokenize == "graph":  # raw text: only the SavedModel takes it
            backend = "tflite" if tflite else "savedmodel"
        logger = logging.getLogger(__name__)
        if backend is None:
            routes, note = default_routes(self.export_dir, self.config)
            if note:
                logger.warning("%s", note)
            if tf_threads is None:
                tf_threads, note = recorded_tf_threads(self.config)
                if note:
                    logger.warning("%s", note)
            if precision:
                routes = [dict(r, precision=precision) for r in routes]
        else:
            precision = served_precision(backend, precision)
            routes = [{"batch": 1, "backend": backend, "precision": precision}]
        self.routes = routes
        self.backend, self.precision = routes[0]["backend"], routes[0]["precision"]
        for r in routes:
            if tflite and r["backend"] != "tflite":  # a TFLite export has nothing else
                raise ValueError(
                    f"--backend={r['backend']} cannot serve the TFLite export {export_dir}"
                )
            if r["backend"] == "tflite":
                tflite_path(self.export_dir)  # a SavedModel export must keep one
        if tf_threads is not None:  # before anything runs TensorFlow here
            _, note = set_tf_threads(tf, tf_threads)
            if note:
                logger.warning("%s", note)
        self.tf_threads = (
            tf.config.threading.get_intra_op_parallelism_threads(),
            tf.config.threading.get_inter_op_parallelism_threads(),
        )
        ids_only = any(r["backend"] != "savedmodel" for r in routes)
        if tokenize == "auto":
            tokenize = (
                "graph" if self.config["in_graph_tokenizer_exact"] and not ids_only else "python"
            )
        if tokenize == "graph" and ids_only:
            raise ValueError(f"--backend={self.backend} takes ids: use --tokenize=python")
        self.tokenize = tokenize
        served = {}
        for r in routes:
            where = (r["backend"], r["precision"])
            if where not in served:
                served[where] = self._load(r["backend"], r["precision"], tf)
        if len(served) == 1:
            self._features_fn = next(iter(served.values()))
        else:

            def by_batch(features):
                r = route(routes, len(next(iter(features.values()))))
                return served[(r["backend"], r["precision"])](features)

            self._features_fn = by_batch
        if tokenize == "python":
            # lazy: Python-side tokenisation only for exports that need it (re2-predict start-up)
            from re2_tf.data.tokenization import get_tokenizer

            self._tokenizer = get_tokenizer(
                self.config["python_tokenizer"], lower=self.config["lower"]
            )
            self._featurizers = export_featurizers(self.export_dir, self.config)

    def _load(self, backend, precision, tf):
        """``features -> outputs`` of one runtime over this export (the SavedModel's also sets
        the raw-text function)."""
        if backend in CONVERTED:
            # lazy: OpenVINO/ONNX Runtime only when asked for or chosen
            from re2_tf.serving import runtimes

            return runtimes.load(self.export_dir, backend, precision=precision)
        if backend == "tflite":
            try:
                # lazy: LiteRT only for a TFLite export
                from ai_edge_litert.interpreter import Interpreter
            except ImportError:
                Interpreter = tf.lite.Interpreter
            runner = Interpreter(model_path=str(tflite_path(self.export_dir))).get_signature_runner(
                "serving_ids"
            )
            return lambda features: runner(**features)
        loaded = load_saved_model(self.export_dir)
        self._loaded = loaded
        text_fn, ids_fn = loaded.signatures["serving_default"], loaded.signatures["serving_ids"]
        self._text_fn = lambda a, b: {
            k: v.numpy()
            for k, v in text_fn(
                text1=tf.constant(a, tf.string), text2=tf.constant(b, tf.string)
            ).items()
        }
        return lambda features: {
            k: v.numpy()
            for k, v in ids_fn(**{k: tf.constant(v) for k, v in features.items()}).items()
        }

    def _features(self, texts1, texts2):
        """The model's padded input features for ``n`` pairs (Python tokeniser and
        featurisers: the training path) and int ``[n]`` tokens cut: beyond ``max_length``
        per text, plus what a featuriser cut after that (BERT: word pieces beyond packing,
        its ``truncated_tokens`` statistic), counted as ``serving_default`` counts them."""
        # lazy: Python-side tokenisation only for exports that need it (re2-predict start-up)
        from re2_tf.data.pipeline import pack_ragged

        max_length = self.config["max_length"]
        rows, cut = [], []
        for a, b in zip(texts1, texts2):
            tokens = [self._tokenizer(a), self._tokenizer(b)]
            packed_before = sum(f.stats["truncated_tokens"] for f in self._featurizers)
            pair = {}
            for featurizer in self._featurizers:
                pair.update(featurizer.python(*(t[:max_length] for t in tokens)))
            rows.append(pair)
            packed = sum(f.stats["truncated_tokens"] for f in self._featurizers) - packed_before
            cut.append(sum(max(len(t) - max_length, 0) for t in tokens) + packed)
        specs = {s.name: s for f in self._featurizers for s in f.specs()}
        features = {
            name: pack_ragged([row[name] for row in rows], spec.dtype, spec.inner_shape)
            .to_tensor(spec.pad_value)
            .numpy()
            for name, spec in specs.items()
        }
        return features, np.asarray(cut)

    def features(self, texts1, texts2):
        """The export's ``serving_ids`` inputs for ``n`` pairs of raw texts, as this Predictor
        makes them with ``tokenize="python"``: ``{name: np.ndarray}`` (int32 ids ``[n,
        length]`` padded with 0, or the model's other features), what a
        :class:`~re2_tf.serving.runtimes.Runtime` takes.

        Raises:
            ValueError: a Predictor made with ``tokenize="graph"`` (its SavedModel tokenises
                in the graph), or ``texts1`` and ``texts2`` differ in length.
        """
        if self.tokenize != "python":
            raise ValueError('features needs tokenize="python"')
        if len(texts1) != len(texts2):
            raise ValueError(f"{len(texts1)} text1 but {len(texts2)} text2")
        return self._features(texts1, texts2)[0]

    def outputs(self, texts1, texts2):
        """``{"probabilities": float32 [n, C], "truncated": int [n]}`` plus ``"score"``
        float32 ``[n]`` when the export serves one, for ``n`` pairs of raw texts."""
        if len(texts1) != len(texts2):
            raise ValueError(f"{len(texts1)} text1 but {len(texts2)} text2")
        parts = {
            "probabilities": [np.zeros((0, len(self.label_names)), np.float32)],
            "truncated": [np.zeros(0, int)],
            "score": [np.zeros(0, np.float32)],
        }
        for start in range(0, len(texts1), self.batch_size):
            a, b = texts1[start : start + self.batch_size], texts2[start : start + self.batch_size]
            if self.tokenize == "graph":
                out = self._text_fn(a, b)
            else:
                features, pair_cut = self._features(a, b)
                out = dict(self._features_fn(features), truncated=pair_cut)
            for name in parts:
                if name in out:
                    parts[name].append(np.asarray(out[name]))
        batches = -(-len(texts1) // self.batch_size)
        return {
            name: np.concatenate(arrays)
            for name, arrays in parts.items()
            if len(arrays) == batches + 1
        }

    def run(self, texts1, texts2):
        """Probabilities float32 ``[n, num_classes]`` and tokens cut by truncation int
        ``[n]`` (both texts together) for ``n`` pairs of raw texts.

        Raises:
            ValueError: ``texts1`` and ``texts2`` differ in length.
        """
        outputs = self.outputs(texts1, texts2)
        return outputs["probabilities"], outputs["truncated"]

    def probabilities(self, texts1, texts2):
        """float32 ``[n, num_classes]`` for ``n`` pairs of raw texts."""
        return self.run(texts1, texts2)[0]
