r"""Export a trained run as a self-contained SavedModel (raw text in) or a TFLite file.

Usage::

    python -m re2_tf.export --run_dir=checkpoints/snli --export_dir=exports/snli
    python -m re2_tf.export --run_dir=... --export_dir=... --format=tflite --precision=int8

The SavedModel needs nothing but TensorFlow to serve (``tf.saved_model.load`` or TensorFlow
Serving); the tokeniser, the vocabulary (``assets/vocab.txt`` feeding a lookup table) and
the label names are inside it.

Signatures (batch dimension first, TF Serving conventions):

``serving_default``
    inputs ``text1``, ``text2``: ``tf.string [batch]`` raw sentences.
    outputs ``probabilities``: float32 ``[batch, num_classes]``; ``label``: ``tf.string
    [batch]`` (the dataset's label names).
    In the graph: (lower-casing and) tokenisation with the run's tokeniser
    (:mod:`re2_tf.serving.text`), truncation to ``max_length`` tokens, vocabulary lookup
    (unknown -> ``<UNK>`` = 1). A text with no token after tokenisation (empty, only
    whitespace, or -- for ``snli`` -- only punctuation) is read as the single token
    ``<UNK>``, because RE2's masked max pooling is undefined on an all-padding text.
``serving_ids``
    inputs ``text1``, ``text2``: int32 ``[batch, length]`` token ids (0 = padding, the two
    lengths independent); same outputs. Rows with no non-zero id are read as ``[<UNK>]``;
    columns beyond ``max_length`` are dropped.

Errors: ``InvalidArgumentError`` with the message ``text1 and text2 must have the same batch
size`` for mismatched batches, ``token ids must be in [0, vocab_size)`` for out-of-range
ids; a wrong dtype or rank is rejected by the signature (``TypeError``/``ValueError`` from
``tf.saved_model.load``'d functions, ``INVALID_ARGUMENT`` in TF Serving).

Speed (``--xla``, default on): weight normalisation is folded into plain kernels and the
fusion layer's G1/G2 are one matmul (:mod:`re2_tf.serving.folded`); the model function is
saved with ``jit_compile=True``. XLA compiles once per input shape, so inputs are padded
(with 0 = padding; the model is padding-invariant) to a length bucket (``--length_buckets``)
and the batch to a power of two; the first call per bucket shape costs ~1-2 s.

Attributes of the loaded object: ``vocab_size``, ``num_classes`` (int64 variables),
``label_names`` (string variable), ``max_length``; assets ``vocab.txt``, ``label_names.txt``,
``flags.txt`` (the run's training flags) and ``export_config.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from re2_tf.serving import folded as folded_lib
from re2_tf.serving import text as text_lib

__all__ = ["ServingModule", "export_run", "export_model", "DEFAULT_LENGTH_BUCKETS",
           "EXPORT_CONFIG_FILE", "TFLITE_FILE"]

UNK_ID = 1
DEFAULT_MAX_LENGTH = 512
DEFAULT_LENGTH_BUCKETS = (8, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320,
                          384, 448, 512)
EXPORT_CONFIG_FILE = "export_config.json"
TFLITE_FILE = "model.tflite"
BATCH_MISMATCH = "text1 and text2 must have the same batch size"
ID_RANGE = "token ids must be in [0, vocab_size)"


def _buckets_for(max_length, length_buckets):
    buckets = sorted({int(b) for b in length_buckets if 0 < int(b) < max_length} | {max_length})
    return tf.constant(buckets, tf.int32)


class ServingModule(tf.Module):
    """The exported object: weights, lookup table, metadata and the two signatures.

    Args:
        model: a Keras model with inputs ``text1``/``text2`` (int32 ids) and logits output.
            RE2 models are served from folded weights (:func:`folded.fold_re2`); any other
            architecture through the Keras model itself.
        vocab_file: path of ``vocab.txt`` (line number = id); becomes an asset.
        label_names: class names in label-id order.
        tokenizer: in-graph tokeniser name (:data:`text.IN_GRAPH_TOKENIZERS`).
        lower: lower-case before lookup.
        max_length: tokens kept per text (longer texts are truncated).
        length_buckets: lengths inputs are padded to when ``xla``.
        xla: save the model function with ``jit_compile=True``.
        precision: ``fp32`` or ``bf16`` (weights and compute in bfloat16, logits float32).
        joint: run both texts as one sequence (:func:`folded.re2_forward`); RE2 only.
        extra_assets: ``{name: path}`` more files to carry as assets (``flags.txt``, ...).
    """

    def __init__(self, model, vocab_file, label_names, *, tokenizer="whitespace", lower=True,
                 max_length=DEFAULT_MAX_LENGTH, length_buckets=DEFAULT_LENGTH_BUCKETS,
                 xla=True, precision="fp32", joint=True, extra_assets=None):
        super().__init__(name="re2_serving")
        self._joint = bool(joint)
        if precision not in ("fp32", "bf16"):
            raise ValueError(f"SavedModel precision must be fp32 or bf16, got {precision!r}")
        if tokenizer not in text_lib.IN_GRAPH_TOKENIZERS:
            raise ValueError(f"no in-graph tokenizer {tokenizer!r}")
        if int(max_length) < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        self._tokenizer_name = tokenizer
        self._lower = bool(lower)
        self._xla = bool(xla)
        self._dtype = tf.bfloat16 if precision == "bf16" else tf.float32
        self._label_list = [str(n) for n in label_names]
        with open(vocab_file, encoding="utf-8") as f:
            num_vocab = sum(1 for _ in f)

        self.vocab_asset = tf.saved_model.Asset(str(vocab_file))
        self.extra_assets = {k: tf.saved_model.Asset(str(v)) for k, v in (extra_assets or {}).items()}
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                self.vocab_asset, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
                tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER),
            default_value=UNK_ID)
        self.vocab_size = tf.Variable(num_vocab, dtype=tf.int64, trainable=False, name="vocab_size")
        self.num_classes = tf.Variable(len(self._label_list), dtype=tf.int64, trainable=False,
                                       name="num_classes")
        self.label_names = tf.Variable(self._label_list, dtype=tf.string, trainable=False,
                                       name="label_names")
        self.max_length = tf.Variable(int(max_length), dtype=tf.int32, trainable=False,
                                      name="max_length")
        self._max_length = int(max_length)
        self._buckets = _buckets_for(int(max_length), length_buckets)

        if folded_lib.is_re2(model):
            params = folded_lib.fold_re2(model)
            self._structure = folded_lib.structure_of(params)
            self.weights = {k.replace("/", "."): tf.Variable(tf.cast(v, self._dtype),
                                                             trainable=False, name=k)
                            for k, v in params.items() if k not in self._structure}
            self.keras_model = None
        else:
            if precision != "fp32":
                raise ValueError("bf16 export is implemented for RE2 (folded weights) only")
            self._structure = None
            self.keras_model = model
        self._core = tf.function(self._logits, jit_compile=self._xla, reduce_retracing=True)

    # ---------------------------------------------------------------- model function (XLA)
    def _logits(self, ids1, ids2):
        """float32 logits ``[batch, classes]`` of int32 ids (no all-padding rows)."""
        if self.keras_model is not None:
            return tf.cast(self.keras_model({"text1": ids1, "text2": ids2}, training=False),
                           tf.float32)
        params = dict(self._structure)
        params.update({k.replace(".", "/"): v for k, v in self.weights.items()})
        return folded_lib.re2_forward(params, ids1, ids2, dtype=self._dtype, joint=self._joint)

    # ------------------------------------------------------------------ shared post-lookup
    def _pad(self, ids, batch, length, rows):
        return tf.pad(ids, [[0, rows - batch], [0, length - tf.shape(ids)[1]]])

    def _predict_ids(self, ids1, ids2):
        """Bucket-pad, fix empty rows, run the model, softmax and label names."""
        batch = tf.shape(ids1)[0]
        rows, len1, len2 = batch, tf.maximum(tf.shape(ids1)[1], 1), tf.maximum(tf.shape(ids2)[1], 1)
        if self._xla:  # pad to a bucket so XLA compiles a bounded number of shapes
            rows = tf.cast(2 ** tf.math.ceil(tf.math.log(tf.cast(tf.maximum(batch, 1), tf.float32))
                                             / np.log(2.0) - 1e-6), tf.int32)
            rows = tf.maximum(rows, tf.maximum(batch, 1))
            len1 = tf.gather(self._buckets, tf.searchsorted(self._buckets, [len1]))[0]
            len2 = tf.gather(self._buckets, tf.searchsorted(self._buckets, [len2]))[0]
        ids1 = self._pad(ids1, batch, len1, rows)
        ids2 = self._pad(ids2, batch, len2, rows)
        ids1, ids2 = self._unk_if_empty(ids1), self._unk_if_empty(ids2)
        logits = self._core(ids1, ids2)[:batch]
        probabilities = tf.nn.softmax(logits, axis=-1)
        labels = tf.gather(tf.constant(self._label_list), tf.argmax(probabilities, -1))
        return {"probabilities": probabilities, "label": labels}

    @staticmethod
    def _unk_if_empty(ids):
        """Rows without any token become ``[<UNK>, 0, ...]``."""
        empty = tf.reduce_all(tf.equal(ids, 0), axis=1)
        first = tf.where(empty, tf.constant(UNK_ID, ids.dtype), ids[:, 0])
        return tf.concat([tf.expand_dims(first, 1), ids[:, 1:]], axis=1)

    def _check_batch(self, text1, text2):
        return tf.debugging.assert_equal(tf.shape(text1)[0], tf.shape(text2)[0],
                                         message=BATCH_MISMATCH)

    # ------------------------------------------------------------------------- signatures
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text1"),
                                  tf.TensorSpec([None], tf.string, name="text2")])
    def serve_text(self, text1, text2):
        """Raw sentences -> probabilities/label (see module docstring for the contract).

        Args:
            text1, text2: ``tf.string [batch]`` UTF-8 sentences (same batch size).

        Returns:
            ``{"probabilities": float32 [batch, num_classes], "label": string [batch]}``.

        Raises:
            InvalidArgumentError: ``text1 and text2 must have the same batch size``.
        """
        with tf.control_dependencies([self._check_batch(text1, text2)]):
            text1, text2 = tf.identity(text1), tf.identity(text2)
        ids = []
        for text in (text1, text2):
            tokens = text_lib.tokenize(self._tokenizer_name, text, lower=self._lower)
            tokens = tokens[:, : self._max_length]
            ids.append(tf.cast(tf.ragged.map_flat_values(self.table.lookup, tokens), tf.int32)
                       .to_tensor(0))
        return self._predict_ids(*ids)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="text1"),
                                  tf.TensorSpec([None, None], tf.int32, name="text2")])
    def serve_ids(self, text1, text2):
        """Token ids -> probabilities/label.

        Args:
            text1, text2: int32 ``[batch, length]`` ids in ``[0, vocab_size)``, 0 = padding.

        Returns:
            ``{"probabilities": float32 [batch, num_classes], "label": string [batch]}``.

        Raises:
            InvalidArgumentError: mismatched batch sizes, or an id outside ``[0, vocab_size)``.
        """
        vocab_size = tf.cast(self.vocab_size, tf.int32)
        checks = [self._check_batch(text1, text2)]
        for ids in (text1, text2):
            checks.append(tf.debugging.assert_non_negative(ids, message=ID_RANGE))
            checks.append(tf.debugging.assert_less(ids, vocab_size, message=ID_RANGE))
        with tf.control_dependencies(checks):
            text1 = tf.identity(text1[:, : self._max_length])
            text2 = tf.identity(text2[:, : self._max_length])
        return self._predict_ids(text1, text2)


class _TFLiteModule(tf.Module):
    """The id-level model function only (no strings, no assertions) for TFLite conversion."""

    def __init__(self, serving):
        super().__init__()
        self.serving = serving

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="text1"),
                                  tf.TensorSpec([None, None], tf.int32, name="text2")])
    def serve_ids(self, text1, text2):
        s = self.serving
        logits = s._logits(s._unk_if_empty(text1), s._unk_if_empty(text2))
        return {"probabilities": tf.nn.softmax(logits, axis=-1)}


def export_model(model, export_dir, *, vocab_tokens, label_names, tokenizer="whitespace",
                 lower=True, flags_text="", max_length=DEFAULT_MAX_LENGTH,
                 length_buckets=DEFAULT_LENGTH_BUCKETS, xla=True, fmt="savedmodel",
                 precision="fp32", python_tokenizer=None, extra_config=None):
    """Write ``model`` as a SavedModel (``fmt="savedmodel"``) or TFLite file to ``export_dir``.

    Args:
        model: Keras model (ids in, logits out).
        export_dir: output directory (replaced if it exists).
        vocab_tokens: all vocabulary tokens in id order (``<PAD>``, ``<UNK>``, ...).
        label_names: class names in id order.
        tokenizer: name of the run's tokeniser; the in-graph version of it is used.
        lower: lower-case before lookup.
        flags_text: the training flags, stored as ``assets/flags.txt``.
        max_length, length_buckets, xla: see :class:`ServingModule`.
        fmt: ``savedmodel`` or ``tflite``.
        precision: ``fp32``; ``bf16`` (SavedModel) or ``int8`` (TFLite dynamic-range
            quantisation: int8 weights, float activations).
        python_tokenizer: tokeniser ``re2_tf.predict`` should use when the in-graph one is
            only an approximation (recorded in ``export_config.json``).
        extra_config: more entries for ``export_config.json``.

    Returns:
        ``Path`` of the export directory.

    Raises:
        ValueError: unsupported ``fmt``/``precision`` combination.
    """
    if fmt not in ("savedmodel", "tflite"):
        raise ValueError(f"format must be savedmodel or tflite, got {fmt!r}")
    allowed = {"savedmodel": ("fp32", "bf16"), "tflite": ("fp32", "int8")}[fmt]
    if precision not in allowed:
        raise ValueError(f"--precision={precision} is not supported with --format={fmt} "
                         f"(choose from {allowed})")
    export_dir = Path(export_dir)
    config = {
        "format": fmt, "precision": precision, "tokenizer": tokenizer, "lower": bool(lower),
        "in_graph_tokenizer_exact": tokenizer in text_lib.EXACT,
        "python_tokenizer": python_tokenizer or tokenizer, "max_length": int(max_length),
        "length_buckets": [int(b) for b in length_buckets], "xla": bool(xla),
        "vocab_size": len(vocab_tokens), "label_names": list(label_names),
        "signatures": {"serving_default": "text1, text2: string [batch]",
                       "serving_ids": "text1, text2: int32 [batch, length]"},
        **(extra_config or {}),
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "vocab.txt").write_text("".join(t + "\n" for t in vocab_tokens), encoding="utf-8")
        (tmp / "label_names.txt").write_text("".join(f"{n}\n" for n in label_names),
                                             encoding="utf-8")
        (tmp / "flags.txt").write_text(flags_text, encoding="utf-8")
        (tmp / EXPORT_CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
        extra = {name: tmp / name for name in ("label_names.txt", "flags.txt", EXPORT_CONFIG_FILE)}
        module = ServingModule(
            model, tmp / "vocab.txt", label_names, tokenizer=tokenizer, lower=lower,
            max_length=max_length, length_buckets=length_buckets,
            xla=xla and fmt == "savedmodel", precision=precision if fmt == "savedmodel" else "fp32",
            extra_assets=extra)
        if export_dir.exists():
            shutil.rmtree(export_dir)
        if fmt == "savedmodel":
            signatures = {"serving_default": module.serve_text, "serving_ids": module.serve_ids}
            tf.saved_model.save(module, str(export_dir), signatures=signatures)
        else:
            staging = tmp / "tflite_savedmodel"
            lite = _TFLiteModule(module)
            tf.saved_model.save(lite, str(staging), signatures={"serving_ids": lite.serve_ids})
            converter = tf.lite.TFLiteConverter.from_saved_model(str(staging),
                                                                 signature_keys=["serving_ids"])
            if precision == "int8":
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            export_dir.mkdir(parents=True)
            (export_dir / TFLITE_FILE).write_bytes(converter.convert())
            (export_dir / "assets").mkdir()
            for name in ("vocab.txt", *extra):
                shutil.copy(tmp / name, export_dir / "assets" / name)
    logging.info("exported %s (%s, %s) to %s", fmt, precision, tokenizer, export_dir)
    return export_dir


def export_run(run_dir, export_dir, **kwargs):
    """Export a run directory (``re2_tf.runs`` layout). ``kwargs`` go to :func:`export_model`.

    ``tokenizer`` defaults to the run's (``config.json``); the Python tokeniser recorded for
    ``re2_tf.predict`` is always the run's.
    """
    from re2_tf import runs

    config = runs.load_config(run_dir)
    model = runs.load_best_model(run_dir)
    vocab = runs.load_vocab(run_dir)
    flags_path = Path(run_dir) / runs.FLAGS_FILE
    flags_text = flags_path.read_text() if flags_path.exists() else ""
    kwargs.setdefault("tokenizer", config.tokenizer)
    return export_model(
        model, export_dir, vocab_tokens=vocab.tokens, label_names=config.label_names,
        lower=config.lower, flags_text=flags_text, python_tokenizer=config.tokenizer,
        extra_config={"dataset": config.dataset, "model": config.model,
                      "model_kwargs": config.model_kwargs, "run_dir": os.fspath(run_dir)},
        **kwargs)


FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_string("run_dir", None, "Run directory (config.json, vocab.txt, best.keras).")
    flags.DEFINE_string("export_dir", None, "Output directory (replaced if it exists).")
    flags.DEFINE_enum("format", "savedmodel", ["savedmodel", "tflite"], "Export format.")
    flags.DEFINE_enum("precision", "fp32", ["fp32", "bf16", "int8"],
                      "fp32; bf16 (savedmodel) or int8 dynamic-range quantisation (tflite).")
    flags.DEFINE_string("tokenizer", None, "In-graph tokeniser (default: the run's): "
                        + ", ".join(sorted(text_lib.IN_GRAPH_TOKENIZERS)))
    flags.DEFINE_integer("max_length", DEFAULT_MAX_LENGTH,
                         "Tokens kept per text; longer texts are truncated.")
    flags.DEFINE_list("length_buckets", [str(b) for b in DEFAULT_LENGTH_BUCKETS],
                      "Lengths XLA inputs are padded to (max_length is always one).")
    flags.DEFINE_bool("xla", True, "Save the model function XLA-compiled (jit_compile).")
    flags.mark_flags_as_required(["run_dir", "export_dir"])


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # SavedModel writing logs every asset at INFO
    tf.get_logger().setLevel("ERROR")
    kwargs = dict(fmt=FLAGS.format, precision=FLAGS.precision, max_length=FLAGS.max_length,
                  length_buckets=[int(b) for b in FLAGS.length_buckets], xla=FLAGS.xla)
    if FLAGS.tokenizer:
        kwargs["tokenizer"] = FLAGS.tokenizer
    try:
        path = export_run(FLAGS.run_dir, FLAGS.export_dir, **kwargs)
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(str(e))
    print(path)


if __name__ == "__main__":
    define_flags()
    app.run(main)
