r"""Export a trained run as a self-contained SavedModel (raw text in) or a TFLite file.

Library: :func:`export_run` (a run directory) and :func:`export_model` (a Keras model and its
featurisers). Command line (:mod:`re2_tf.cli.export`)::

    re2-export --run_dir=checkpoints/snli --export_dir=exports/snli
    re2-export --run_dir=... --export_dir=... --format=tflite --precision=int8

The SavedModel needs nothing but TensorFlow to serve (``tf.saved_model.load`` or TensorFlow
Serving); the tokeniser, the vocabulary (``assets/vocab.txt`` feeding a lookup table) and
the label names are inside it.

Signatures (batch dimension first, TF Serving conventions):

``serving_default``
    inputs ``text1``, ``text2``: ``tf.string [batch]`` raw sentences.
    outputs ``probabilities``: float32 ``[batch, num_classes]``; ``label``: ``tf.string
    [batch]`` (the dataset's label names); ``truncated``: int32 ``[batch]``, the number of
    tokens cut from ``text1`` and ``text2`` together by truncation (0 = nothing cut), plus
    what a featuriser cut after that (BERT's packed pairs: word pieces beyond its
    ``max_length``).
    In the graph: (lower-casing and) tokenisation with the run's tokeniser
    (:mod:`re2_tf.data.text`), truncation to ``max_length`` tokens, vocabulary lookup
    (unknown -> ``<UNK>`` = 1). A text with no token after tokenisation (empty, only
    whitespace, or -- for ``snli`` -- only punctuation) is an all-padding row, exactly as
    training and evaluation feed an empty text; the model's layers define its output
    (masked max pooling and attention over an empty text give 0).
``serving_ids``
    inputs ``text1``, ``text2``: int32 ``[batch, length]`` token ids (0 = padding, the two
    lengths independent), or the model's other features (BERT: ``token_ids``,
    ``segment_ids``, ``padding_mask`` ``[batch, length]`` packed pairs); same outputs.
    All-padding rows and zero-length inputs are empty texts (as above); columns beyond
    ``max_length`` (packed pairs: beyond ``max_pair_length``) are dropped, and ``truncated``
    counts the non-padding ids among them.
``serving_ids_portable`` (an ``--xla=false`` export whose backend has a form of its own for
    other runtimes' converters: RE2's folded pass, its encoder's convolutions as one matrix
    product per kernel tap, :func:`re2_tf.serving.folded.re2_forward`)
    the same inputs, outputs, checks and function as ``serving_ids``, in the form
    :func:`re2_tf.serving.runtimes.convert` reads for OpenVINO and ONNX Runtime; TensorFlow
    serves ``serving_ids``. Why: ``docs/performance.md``, "RE2's convolutions as products".

An empty batch gives ``probabilities [0, num_classes]``, ``label [0]``, ``truncated [0]``.

Errors (``InvalidArgumentError`` from a loaded signature, ``INVALID_ARGUMENT`` in TF
Serving): ``text1 and text2 must have the same batch size`` for mismatched batches
(``serving_ids`` names its own inputs: ``token_ids, segment_ids and padding_mask must ...``
for BERT, every feature input for DRCN and FITN); ``text1
must be valid UTF-8; rows: [...]`` (or ``text2``) for a text that is not valid UTF-8 (the
predict CLI rejects such a line too, naming file and line); ``token
ids must be in [0, vocab_size)`` for out-of-range ids; ``text1 must be tf.string [batch]`` /
``text1 must be int32 [batch, length]`` (or ``text2 ...``) for an input of the wrong rank,
checked at run time because loaded signatures and TF Serving do not enforce the signature's
rank. A wrong dtype is rejected by the signature itself (``TypeError``/``ValueError`` from
``tf.saved_model.load``'d functions).

Loaders: every export (default, ``--xla=false``, ``--precision=bf16``) runs under both
``tf.saved_model.load`` and the TF1 session loader (``saved_model_cli run``;
``tf.compat.v1.saved_model.loader.load`` in a ``tf.compat.v1.Session``), the loader of
TensorFlow Serving: lookup tables are named and initialised by the SavedModel's main op, and
the model's variables are tracked as the tf.Variables its functions read
(``tests/test_export_models.py`` compares the two loaders on both signatures). TensorFlow
Serving's model server itself is not tested here. It disables XLA on CPU unless started with
its experimental ``--xla_cpu_compilation_enabled=true``; without that flag, serve the
``--xla=false`` export (same outputs).

Speed (``--xla``, default on): weight normalisation is folded into plain kernels and the
fusion layer's G1/G2 are one matmul (:mod:`re2_tf.serving.folded`); the model function is
saved with ``jit_compile=True``. XLA compiles once per input shape, so inputs are padded
(with 0 = padding; the model is padding-invariant) to a length bucket (``--length_buckets``)
and the batch to a power of two; the first call per bucket shape costs ~1-2 s. The model
function's shapes must follow the input's shape only (no width taken from input values:
BERT+MatchLSTM's segment split is exported with ``width="input"``), or XLA compiles once per
distinct input value instead (``tests/test_export_buckets.py`` counts the compilations).

Attributes of the loaded object: ``vocab_size`` (int64: token ids -- word ids, or BERT's
word pieces; not characters -- are in ``[0, vocab_size)``), ``num_classes`` (int64),
``label_names`` (string), ``max_length`` (int32: tokens kept per text) and
``max_pair_length`` (int32: positions kept per packed pair, the special tokens included; 0
for models without packed pairs); assets ``vocab.txt`` (BERT: its WordPiece vocabulary),
``label_names.txt``, ``flags.txt`` (the run's training flags) and ``export_config.json``
(which also states the limits in words: its ``truncation`` entry).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf
from absl import logging

# No public API freezes a TF2 concrete function's variables (tf.compat.v1's works on v1
# graphs only); this is the function the TFLite converter itself uses.
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from re2_tf._compat import all_sublayers
from re2_tf.data import text as text_lib
from re2_tf.data.features import TRUNCATED_KEY
from re2_tf.layers import PairSegmentSplit
from re2_tf.serving.backends import BACKENDS, make_backend
from re2_tf.serving.files import (  # noqa: F401  (re-exported)
    EXPORT_CONFIG_FILE,
    PORTABLE_SIGNATURE,
    TFLITE_FILE,
)

__all__ = [
    "ServingModule",
    "batch_mismatch",
    "export_model",
    "float32_layers",
    "DEFAULT_LENGTH_BUCKETS",
    "EXPORT_CONFIG_FILE",
    "TFLITE_FILE",
]

DEFAULT_MAX_LENGTH = 512
DEFAULT_LENGTH_BUCKETS = (
    8,
    12,
    16,
    20,
    24,
    32,
    40,
    48,
    64,
    80,
    96,
    128,
    160,
    192,
    256,
    320,
    384,
    448,
    512,
)
#: ``precision`` values of :func:`export_run` that choose between fp32 and bf16.
CHOICES = ("auto", "measure")
SAME_BATCH = "must have the same batch size"  # after the inputs' names (batch_mismatch)
BATCH_MISMATCH = "text1 and text2 " + SAME_BATCH  # serving_default's (and RE2's serving_ids')
ID_RANGE = "token ids must be in [0, vocab_size)"
TEXT_SHAPE = "must be tf.string [batch]"  # after the input name: "text1 must be ..."
IDS_SHAPE = "must be int32 [batch, length]"
UTF8 = "must be valid UTF-8"  # after the input name: "text1 must be valid UTF-8"


def _buckets_for(max_length, length_buckets):
    """int32 ``[n]`` sorted length buckets: those in ``(0, max_length)``, then ``max_length``."""
    buckets = sorted({int(b) for b in length_buckets if 0 < int(b) < max_length} | {max_length})
    return tf.constant(buckets, tf.int32)


@contextlib.contextmanager
def _shape_only_widths(model, enabled):
    """While exporting with XLA: every :class:`~re2_tf.layers.PairSegmentSplit` in ``model``
    splits to the input's length (``width="input"``), restored on exit.

    With its default ``width="batch"`` the split's output widths depend on the values of
    ``segment_ids`` / ``padding_mask``, so XLA would take those inputs as compile-time
    constants and compile a new program for every distinct mask, bucketing or not; with
    ``"input"`` the model function's shapes follow the (bucket-padded) input shape only. The
    outputs are the same (the MatchLSTM after the split ignores padding).

    Args:
        model: a Keras model; enabled: bool (``False``: leave ``model`` as it is).
    """
    splits = [
        layer
        for layer in (all_sublayers(model, include_self=True) if enabled else [])
        if isinstance(layer, PairSegmentSplit)
    ]
    before = [layer.width for layer in splits]
    for layer in splits:
        layer.width = "input"
    try:
        yield
    finally:
        for layer, width in zip(splits, before):
            layer.width = width


def _feature_shape(spec):
    """The rank error's text for a feature input: ``"must be <dtype> [batch, length, ...]"``."""
    inner = "".join(f", {d}" for d in spec.inner_shape)
    return f"must be {spec.dtype} [batch, length{inner}]"


# ------------------------------------------------------------------- shared helpers
def _model_outputs(backend, output, features):
    """The model function (saved with ``jit_compile`` when ``xla``).

    Args:
        backend: the serving backend (feature dict in, logits or scores out).
        output: ``logits`` or ``score``.
        features: ``{name: tensor [batch, length, *inner]}``, padded.

    Returns:
        float32 logits ``[batch, classes]``, or scores ``[batch]`` when ``output="score"``.
    """
    out = tf.cast(backend(features), tf.float32)
    return tf.reshape(out, [-1]) if output == "score" else out


def _probabilities(outputs, output):
    """float32 ``[batch, classes]`` probabilities of :func:`_model_outputs`' ``outputs``.

    Softmax of logits; a score ``s`` (``output="score"``, ``[batch]``) gives
    ``[1 - sigmoid(s), sigmoid(s)]``, as :func:`re2_tf.evaluation.to_probabilities`.
    """
    if output == "score":
        positive = tf.sigmoid(outputs)
        return tf.stack([1.0 - positive, positive], axis=-1)
    return tf.nn.softmax(outputs, axis=-1)


def _model_function(backend, output, with_probabilities, features):
    """What the export's model function computes (``jit_compile`` when ``xla``).

    With ``with_probabilities`` (the XLA export), the model's outputs, their probabilities and
    the most probable label's id, so that the softmax and the argmax run inside the compiled
    function with the network rather than as TensorFlow kernels after it (each such kernel
    costs a dispatch per call; ``docs/performance.md``, "Where the default's time goes").
    Without (``xla=False`` exports, which TensorFlow's oneDNN bfloat16 rewrite and the other
    runtimes' converters run), the outputs only: :func:`_predict` computes the rest after the
    function. Inside it, the rewrite would paint the output softmax bfloat16 (it follows the
    logits' MatMul, which the rewrite converts) and every probability would come out a
    bfloat16 number, near-equal classes tied (``docs/performance.md``, "TensorFlow's
    bfloat16 rewrite and the output softmax").

    Args:
        backend, output: as :func:`_model_outputs`.
        with_probabilities: whether to compute the probabilities and the label id here.
        features: as :func:`_model_outputs`.

    Returns:
        ``{"outputs": float32 [batch] or [batch, classes] (:func:`_model_outputs`)}``, with
        ``with_probabilities`` also ``"probabilities": float32 [batch, classes]``
        (:func:`_probabilities`) and ``"label_id": int32 [batch]`` (``tf.argmax`` of the
        probabilities).
    """
    outputs = _model_outputs(backend, output, features)
    if not with_probabilities:
        return {"outputs": outputs}
    probabilities = _probabilities(outputs, output)
    label_id = tf.argmax(probabilities, -1, output_type=tf.int32)
    return {"outputs": outputs, "probabilities": probabilities, "label_id": label_id}


def _bucket(buckets, n):
    """The smallest length bucket >= ``n``; ``n`` itself past the largest (a packed pair
    of two texts can be longer than ``max_length``, the limit per text).

    Args:
        buckets: int32 ``[k]`` sorted buckets (:func:`_buckets_for`).
        n: int32 scalar length.

    Returns:
        int32 scalar.
    """
    index = tf.searchsorted(buckets, [n])[0]
    last = tf.size(buckets) - 1
    return tf.where(index <= last, tf.gather(buckets, tf.minimum(index, last)), n)


def _batch_bucket(rows):
    """int32 scalar: the smallest power of two >= ``rows`` (int32 scalar >= 1)."""
    return tf.maximum(
        rows,
        tf.cast(
            2 ** tf.math.ceil(tf.math.log(tf.cast(rows, tf.float32)) / np.log(2.0) - 1e-6),
            tf.int32,
        ),
    )


def _padded(features, specs, buckets):
    """Every feature padded (with its spec's ``pad_value``) to a common batch and, per side,
    a common length.

    At least one row and one position are always kept (padding), because a zero-sized
    batch or text fails inside the kernels without XLA. With ``buckets`` (XLA), the batch
    is padded to a power of two and each side's length to a bucket (:func:`_bucket`), so
    XLA compiles a bounded number of shapes.

    Args:
        features: ``{name: tensor [batch, length, *inner]}``, one per spec.
        specs: the features' specs (``name``, ``side``, ``inner_shape``, ``pad_value``).
        buckets: int32 ``[k]`` length buckets, or ``None`` (no bucketing).

    Returns:
        ``{name: tensor [rows, side length, *inner]}``, same dtypes; rows >= batch.
    """
    batch = tf.shape(features[specs[0].name])[0]
    rows = tf.maximum(batch, 1)
    lengths = {}
    for spec in specs:
        length = tf.maximum(tf.shape(features[spec.name])[1], 1)
        lengths[spec.side] = tf.maximum(lengths.get(spec.side, 1), length)
    if buckets is not None:
        rows = _batch_bucket(rows)
        lengths = {side: _bucket(buckets, n) for side, n in lengths.items()}
    padded = {}
    for spec in specs:
        x = features[spec.name]
        pads = [[0, rows - batch], [0, lengths[spec.side] - tf.shape(x)[1]]]
        padded[spec.name] = tf.pad(
            x,
            pads + [[0, 0]] * len(spec.inner_shape),
            constant_values=tf.cast(spec.pad_value, x.dtype),
        )
    return padded


def _predict(module, features, truncated, core=None):
    """Bucket-pad every feature, run the model; probabilities, label names, truncation.

    Args:
        module: the :class:`ServingModule` (its specs, buckets, model function, labels).
        features: ``{name: tensor [batch, length, *inner]}`` (the model's features, at most
            ``max_length`` positions per text).
        truncated: int32 ``[batch]`` tokens cut per pair.
        core: the model function to run (default: ``module._core``).

    Returns:
        ``{"probabilities": float32 [batch, num_classes], "label": string [batch],
        "truncated": int32 [batch]}``, plus ``"score"`` float32 ``[batch]`` for score models.
    """
    batch = tf.shape(features[module._specs[0].name])[0]
    buckets = module._buckets if module._xla else None
    core = (core or module._core)(_padded(features, module._specs, buckets))
    if "probabilities" in core:  # computed inside the model function (_model_function)
        probabilities, label_id = core["probabilities"][:batch], core["label_id"][:batch]
    else:
        probabilities = _probabilities(core["outputs"][:batch], module._output)
        label_id = tf.argmax(probabilities, -1, output_type=tf.int32)
    labels = tf.gather(tf.constant(module._label_list), label_id)
    result = {"probabilities": probabilities, "label": labels}
    result["truncated"] = truncated
    if module._output == "score":
        result["score"] = core["outputs"][:batch]
    return result


def batch_mismatch(names):
    """The run-time error of a signature whose inputs ``names`` (in signature order) came
    with different batch sizes: ``"text1 and text2 must have the same batch size"``,
    ``"token_ids, segment_ids and padding_mask must have the same batch size"``."""
    names = list(names)
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    return f"{listed} {SAME_BATCH}"


def _checked(inputs, specs):
    """``inputs`` after run-time checks of each one's rank, then of their batch sizes.

    ``tf.rank``/``tf.debugging.assert_rank`` cannot do the rank check: the signature's
    static shape makes them constants, while a loaded signature (and TF Serving) feeds a
    tensor of any rank. The rank is counted at run time as the size of
    ``tf.where(tf.shape(x) >= 0)``, whose size graph optimisers cannot infer, so a wrong
    rank stops here with ``"<name> must be ..."`` instead of deep in a kernel.

    Args:
        inputs: ``{name: tensor}``.
        specs: ``{name: (rank, message)}``, in the signature's input order.

    Returns:
        ``{name: tensor}``, the same values behind the checks.

    Raises:
        InvalidArgumentError (at run time): ``"<name> <message>"`` for a wrong rank;
            :func:`batch_mismatch` of the ``specs``' names for different batch sizes.
    """
    checks = [
        tf.debugging.assert_equal(
            tf.shape(tf.where(tf.shape(x) >= 0), out_type=tf.int32)[0],
            specs[name][0],
            message=f"{name} {specs[name][1]}",
        )
        for name, x in inputs.items()
    ]
    with tf.control_dependencies(checks):
        inputs = {name: tf.identity(x) for name, x in inputs.items()}
    batches = [tf.shape(x)[0] for x in inputs.values()]
    mismatch = batch_mismatch(specs)
    with tf.control_dependencies(
        [tf.debugging.assert_equal(b, batches[0], message=mismatch) for b in batches[1:]]
    ):
        return {name: tf.identity(x) for name, x in inputs.items()}


# --------------------------------------------------------------- raw-text signature
def _checked_utf8(texts):
    """``texts`` behind a run-time check that every text is valid UTF-8.

    A text is valid when transcoding it from UTF-8 to UTF-8 with replacement of malformed
    sequences leaves it unchanged. The predict CLI rejects invalid UTF-8 too (naming file
    and line), so the graph and the CLI have one behaviour: reject, never guess.

    Args:
        texts: ``{name: tf.string [batch]}``.

    Returns:
        ``{name: tf.string [batch]}``, the same values.

    Raises:
        InvalidArgumentError (at run time): ``"<name> must be valid UTF-8"`` followed by the
            indices of the offending rows.
    """
    checks = []
    for name, text in texts.items():
        repaired = tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        valid = tf.equal(repaired, text)
        checks.append(
            tf.debugging.Assert(
                tf.reduce_all(valid),
                [f"{name} {UTF8}; rows:", tf.where(tf.logical_not(valid))[:, 0]],
            )
        )
    with tf.control_dependencies(checks):
        return {name: tf.identity(x) for name, x in texts.items()}


def _tokens(text, tokenizer, lower, max_length):
    """Tokenise one batch of texts and truncate it.

    Args:
        text: ``tf.string [batch]``.
        tokenizer: in-graph tokeniser name; lower: lower-case while tokenising.
        max_length: tokens kept per text.

    Returns:
        ``(tokens, cut)``: ``tf.string`` ragged ``[batch, (<= max_length)]`` (a text with no
        token has no row entries) and int32 ``[batch]`` tokens cut beyond ``max_length``.
    """
    ragged = text_lib.tokenize(tokenizer, text, lower=lower)
    # tf.strings.split gives [""] for a text with no token: drop it (no token = empty)
    ragged = tf.ragged.boolean_mask(ragged, tf.strings.length(ragged) > 0)
    cut = tf.maximum(tf.cast(ragged.row_lengths(), tf.int32) - max_length, 0)
    return ragged[:, :max_length], cut


def _featurized(featurizers, tokens):
    """The model's features of the token batches, and what the featurisers cut.

    Args:
        featurizers: in-graph featurisers (``Featurizer.graph``).
        tokens: ragged ``tf.string [batch, (length)]`` per text (``text1``, ``text2``).

    Returns:
        ``(features, cut)``: ``{name: tensor [batch, length, *inner]}`` and int32 ``[batch]``
        (or ``0``) positions a featuriser cut (e.g. BERT's word pieces beyond packing).
    """
    features, cut = {}, 0
    for featurizer in featurizers:
        out = dict(featurizer(*tokens))
        cut += out.pop(TRUNCATED_KEY, 0)  # e.g. word pieces cut by packing
        features.update(out)
    return features, cut


def _text_signature(module):
    """``serving_default``: a ``tf.function`` over two ``tf.string [None]`` inputs.

    Tokenise, truncate and count, featurise, predict (:func:`_predict`) with ``module``'s
    tokeniser, featurisers and model function.
    """

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text1"),
            tf.TensorSpec([None], tf.string, name="text2"),
        ]
    )
    def serve_text(text1, text2):
        """Raw sentences -> probabilities/label/truncated (module docstring: the contract).

        Args:
            text1, text2: ``tf.string [batch]`` UTF-8 sentences (same batch size); a text
                with no token is an empty (all-padding) text, as in training.

        Returns:
            ``{"probabilities": float32 [batch, num_classes], "label": string [batch],
            "truncated": int32 [batch]}`` (tokens cut beyond ``max_length``, both texts;
            plus ``score`` float32 ``[batch]`` for score models).

        Raises:
            InvalidArgumentError: ``text1 and text2 must have the same batch size``;
                ``text1 must be tf.string [batch]`` (or ``text2``) for another rank;
                ``text1 must be valid UTF-8; rows: ...`` (or ``text2``).
        """
        texts = _checked(
            {"text1": text1, "text2": text2}, {"text1": (1, TEXT_SHAPE), "text2": (1, TEXT_SHAPE)}
        )
        texts = _checked_utf8(texts)
        tokens, truncated = [], 0
        for text in texts.values():
            ragged, cut = _tokens(text, module._tokenizer_name, module._lower, module._max_length)
            truncated += cut
            tokens.append(ragged)
        features, cut = _featurized(module.featurizers, tokens)
        return _predict(module, features, truncated + cut)

    return serve_text


# --------------------------------------------------------------- features signature
def _checked_ids(features, specs, vocab_sizes):
    """``features`` behind run-time range checks of their token ids.

    Args:
        features: ``{name: tensor [batch, length, *inner]}``.
        specs: the features' specs; vocab_sizes: ``{name: vocabulary size}`` of id features.

    Returns:
        ``{name: tensor}``, the same values.

    Raises:
        InvalidArgumentError (at run time): :data:`ID_RANGE` for an integer id feature with
            a value outside ``[0, vocab_size)``.
    """
    checks = []
    for spec in specs:
        x = features[spec.name]
        if spec.name in vocab_sizes and spec.dtype.startswith("int"):
            checks.append(tf.debugging.assert_non_negative(x, message=ID_RANGE))
            checks.append(
                tf.debugging.assert_less(
                    x, tf.constant(vocab_sizes[spec.name], x.dtype), message=ID_RANGE
                )
            )
    with tf.control_dependencies(checks):
        return {name: tf.identity(x) for name, x in features.items()}


def _truncated_ids(features, specs, limits):
    """Features cut to their side's limit, and the positions cut.

    Args:
        features: ``{name: tensor [batch, length, *inner]}``.
        specs: the features' specs. Per side (``text1``, ``text2``, ``pair``), the positions
            of the first plain ``[batch, length]`` feature beyond the limit that are not
            padding (``!= pad_value``) are counted.
        limits: ``{side: positions kept}``: ``max_length`` per text, ``pair_max_length`` for
            packed pairs (BERT: word pieces per pair, specials included).

    Returns:
        ``(features, truncated)``: same names and dtypes; int32 ``[batch]``.
    """
    truncated, counted = 0, set()
    for spec in specs:
        x = features[spec.name]
        if spec.side not in counted and not spec.inner_shape:
            counted.add(spec.side)  # positions beyond the limit, counted once per side
            beyond = x[:, limits[spec.side] :] != tf.cast(spec.pad_value, x.dtype)
            truncated += tf.reduce_sum(tf.cast(beyond, tf.int32), 1)
    features = {s.name: features[s.name][:, : limits[s.side]] for s in specs}
    truncated += tf.zeros(tf.shape(features[specs[0].name])[:1], tf.int32)
    return features, truncated


def _features_signature(module, core=None):
    """``serving_ids``: a concrete function over ``module``'s feature inputs
    (:meth:`ServingModule.feature_signature`); with ``core`` (``module._portable_core``),
    ``serving_ids_portable``, the same checks around that model function.

    Check shapes and ids, truncate and count, predict (:func:`_predict`).
    """
    specs = module._specs

    def _serve_features(**features):
        """The model's input features -> probabilities/label/truncated (``serving_ids``).

        Raises:
            InvalidArgumentError: ``<name> must be <dtype> [batch, length, ...]`` for
                another rank; :func:`batch_mismatch` naming every feature input (BERT:
                ``token_ids, segment_ids and padding_mask must have the same batch size``);
                :data:`ID_RANGE`.
        """
        features = _checked(
            features, {s.name: (2 + len(s.inner_shape), _feature_shape(s)) for s in specs}
        )
        features = _checked_ids(features, specs, module._vocab_sizes)
        features, truncated = _truncated_ids(features, specs, module._limits)
        return _predict(module, features, truncated, core)

    return tf.function(_serve_features).get_concrete_function(**module.feature_signature())


def _portable_form(backend, xla):
    """The backend's form for other runtimes' converters (``serving_ids_portable``), or None.

    Only an ``xla=False`` export has one (the XLA export does not convert), and only where
    the backend (an object or its class from ``BACKENDS``) defines ``portable``.
    """
    return None if xla else getattr(backend, "portable", None)


class ServingModule(tf.Module):
    """The exported object: backend weights, in-graph featurisers, metadata, the signatures.

    The state lives here; the signatures are built by :func:`_text_signature`
    (``serve_text``, ``serving_default``) and :func:`_features_signature`
    (``serve_features``, ``serving_ids``; ``serve_portable``, ``serving_ids_portable``, or
    None where the export has none).

    Args:
        backend: a serving backend (:mod:`re2_tf.serving.backends`) of the trained model:
            feature dict in, float32 logits ``[batch, classes]`` or scores ``[batch]`` out.
        featurizers: the model's fitted featurisers (:mod:`re2_tf.data.features`).
        feature_dir: directory holding their saved vocabularies (they become assets).
        label_names: class names in label-id order.
        output: ``logits`` or ``score`` (a score ``s`` is served as probabilities
            ``[1 - sigmoid(s), sigmoid(s)]``, as :func:`re2_tf.evaluation.to_probabilities`).
        tokenizer: in-graph tokeniser name (:data:`text.IN_GRAPH_TOKENIZERS`).
        lower: lower-case while tokenising (the prepared training data is lower-cased).
        max_length: tokens kept per text (longer texts are truncated, and counted).
        length_buckets: lengths inputs are padded to when ``xla``.
        xla: save the model function with ``jit_compile=True`` (a backend whose
            ``jit_compile`` attribute is ``False`` compiles its own part instead;
            :mod:`re2_tf.serving.backends`).
        extra_assets: ``{name: path}`` more files to carry as assets (``flags.txt``, ...).

    Raises:
        ValueError: an unknown ``tokenizer`` or ``output``, or ``max_length < 1``.
    """

    def __init__(
        self,
        backend,
        featurizers,
        feature_dir,
        label_names,
        *,
        output="logits",
        tokenizer="whitespace",
        lower=True,
        max_length=DEFAULT_MAX_LENGTH,
        length_buckets=DEFAULT_LENGTH_BUCKETS,
        xla=True,
        extra_assets=None,
    ):
        super().__init__(name="re2_tf_serving")
        if tokenizer not in text_lib.IN_GRAPH_TOKENIZERS:
            raise ValueError(f"no in-graph tokenizer {tokenizer!r}")
        if int(max_length) < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        if output not in ("logits", "score"):
            raise ValueError(f"output must be logits or score, got {output!r}")
        self._tokenizer_name = tokenizer
        self._lower = bool(lower)
        self._xla = bool(xla)
        self._output = output
        self._label_list = [str(n) for n in label_names]
        self.backend = backend
        self.featurizers = [f.graph(feature_dir) for f in featurizers]
        self._specs = [s for f in featurizers for s in f.specs()]
        self._vocab_sizes = {
            s.name: f.vocab_size for f in featurizers for s in f.specs() if f.vocab_size is not None
        }
        self.extra_assets = {
            k: tf.saved_model.Asset(str(v)) for k, v in (extra_assets or {}).items()
        }
        # token ids (word ids, or BERT's word pieces: the first plain integer input with a
        # vocabulary, not characters) are in [0, vocab_size)
        token_vocab = [
            f.vocab_size
            for f in featurizers
            for s in f.specs()
            if f.vocab_size and s.dtype.startswith("int") and not s.inner_shape
        ]
        self.vocab_size = tf.Variable(
            token_vocab[0] if token_vocab else 0, dtype=tf.int64, trainable=False, name="vocab_size"
        )
        pair_lengths = [f.pair_max_length for f in featurizers if f.pair_max_length]
        self._limits = {"text1": int(max_length), "text2": int(max_length)}
        if pair_lengths:
            self._limits["pair"] = int(pair_lengths[0])
        self.max_pair_length = tf.Variable(
            self._limits.get("pair", 0), dtype=tf.int32, trainable=False, name="max_pair_length"
        )
        self.num_classes = tf.Variable(
            len(self._label_list), dtype=tf.int64, trainable=False, name="num_classes"
        )
        self.label_names = tf.Variable(
            self._label_list, dtype=tf.string, trainable=False, name="label_names"
        )
        self.max_length = tf.Variable(
            int(max_length), dtype=tf.int32, trainable=False, name="max_length"
        )
        self._max_length = int(max_length)
        self._buckets = _buckets_for(int(max_length), length_buckets)
        # One trace of each model function, over the features' general shapes, called by
        # every signature that runs it: a trace holds its own copy of the graph's constants
        # (the constant kernels of re2_tf.serving.backends._FoldedWeights), so a trace per
        # caller would write them into the SavedModel once per caller.
        self._core = tf.function(
            functools.partial(_model_function, backend, output, self._xla),
            jit_compile=self._xla and getattr(backend, "jit_compile", True),
        ).get_concrete_function(self.feature_signature())
        self.serve_features = _features_signature(self)
        self.serve_text = _text_signature(self)
        portable = _portable_form(backend, self._xla)
        self._portable_core = portable and tf.function(
            functools.partial(_model_function, portable, output, False)
        ).get_concrete_function(self.feature_signature())
        self.serve_portable = portable and _features_signature(self, self._portable_core)

    def feature_signature(self):
        """``{input name: tf.TensorSpec [None, None, *inner]}`` of the model's features."""
        return {
            s.name: tf.TensorSpec([None, None, *s.inner_shape], s.dtype, name=s.name)
            for s in self._specs
        }


class _TFLiteModule(tf.Module):
    """The feature-level model function only (no strings, no assertions) for TFLite, with
    the weights frozen into the graph as constants.

    All-padding rows are empty texts, as in training; no truncation (the Predictor
    truncates to ``max_length`` before calling it).

    Frozen because the TFLite converter, given a SavedModel whose weights are read before a
    ``tf.while_loop`` that captures them (the spatial GRU's wavefront, MatchLSTM), keeps them
    as resource variables (``VAR_HANDLE``/``READ_VARIABLE``) with nothing that assigns them:
    LiteRT then reads unset variables (NaN outputs under XNNPACK, an error without it).
    Frozen, every weight is a constant and the loops convert to builtins.
    """

    def __init__(self, serving):
        super().__init__()
        self.serving = serving
        signature = serving.feature_signature()
        traced = tf.function(self._serve).get_concrete_function(**signature)
        # The frozen function takes its inputs flat, in the traced function's order.
        self._names = [spec.name for spec in tf.nest.flatten(traced.structured_input_signature)]
        self._frozen = convert_variables_to_constants_v2(traced)
        self.serve_features = tf.function(self._serve_frozen).get_concrete_function(**signature)

    def _serve(self, **features):
        s = self.serving
        return {
            "probabilities": _probabilities(
                _model_outputs(s.backend, s._output, features), s._output
            )
        }

    def _serve_frozen(self, **features):
        (probabilities,) = self._frozen(*[features[name] for name in self._names])
        return {"probabilities": probabilities}


@contextlib.contextmanager
def litert_loop_form(model):
    """Within the block, every layer class in ``model`` that declares ``litert_loop_form``
    (:class:`re2_tf.layers.SpatialGRU`, :class:`re2_tf.layers.MaskedBiLSTM`) has it set True,
    so a trace writes its loops in the form the TFLite converter lowers to builtins and
    LiteRT's ``WHILE`` runs correctly (each class's attribute says what changes; the values
    are the same). The TFLite export traces under it. Restored after, also on error."""
    classes = {
        type(layer)
        for layer in all_sublayers(model, include_self=True)
        if hasattr(type(layer), "litert_loop_form")
    }
    for cls in classes:
        cls.litert_loop_form = True
    try:
        yield
    finally:
        for cls in classes:
            cls.litert_loop_form = False


def float32_layers(model):
    """Names of ``model``'s layers (at any depth, outermost only) whose class sets
    ``serving_float32 = True``: the parts a runtime serving in bfloat16 keeps in float32
    (recorded in ``export_config.json`` as ``float32_layers``; OpenVINO's bf16 path,
    :func:`re2_tf.serving.runtimes.convert`). ``[]`` when there are none."""
    flagged = [layer for layer in all_sublayers(model) if getattr(layer, "serving_float32", False)]
    inner = {id(sub) for layer in flagged for sub in all_sublayers(layer)}
    return [layer.name for layer in flagged if id(layer) not in inner]


def export_model(
    model,
    export_dir,
    *,
    featurizers,
    label_names,
    backend="keras",
    output="logits",
    tokenizer="whitespace",
    lower=True,
    flags_text="",
    max_length=DEFAULT_MAX_LENGTH,
    length_buckets=DEFAULT_LENGTH_BUCKETS,
    xla=True,
    fmt="savedmodel",
    precision="fp32",
    python_tokenizer=None,
    extra_config=None,
):
    """Write ``model`` as a SavedModel (``fmt="savedmodel"``) or TFLite file to ``export_dir``.

    Args:
        model: trained Keras model over the featurisers' inputs.
        export_dir: output directory (replaced if it exists).
        featurizers: the model's fitted featurisers; their vocabularies become assets and
            their in-graph paths compute the features from raw text.
        label_names: class names in id order.
        backend: serving backend name (``ModelSpec.export_backend``).
        output: the model's output kind (``ModelSpec.output``).
        tokenizer: name of the run's tokeniser; the in-graph version of it is used.
        lower: lower-case while tokenising.
        flags_text: the training flags, stored as ``assets/flags.txt``.
        max_length, length_buckets, xla: see :class:`ServingModule`.
        fmt: ``savedmodel`` or ``tflite``.
        precision: ``fp32``; ``bf16`` (SavedModel: RE2's folded weights in bfloat16,
            BERT+MatchLSTM's BERT too (:mod:`re2_tf.serving.folded_bert`; with ``xla``
            only its float32 head is compiled: ``backends.FoldedBertBackend``), or for
            the other models a copy under Keras's ``mixed_bfloat16`` policy,
            ``re2_tf.serving.backends.bfloat16_copy``) or ``int8`` (TFLite dynamic-range
            quantisation: int8 weights, float activations).
        python_tokenizer: tokeniser :class:`re2_tf.serving.predictor.Predictor` should use
            when the in-graph one is only an approximation (recorded in ``export_config.json``).
        extra_config: more entries for ``export_config.json``.

    Returns:
        ``Path`` of the export directory.

    Raises:
        ValueError: unsupported ``fmt``/``precision`` combination (for this backend), or a
            model the TFLite converter cannot convert (BERT+MatchLSTM), naming the op.
    """

    if fmt not in ("savedmodel", "tflite"):
        raise ValueError(f"format must be savedmodel or tflite, got {fmt!r}")
    allowed = {"savedmodel": ("fp32", "bf16"), "tflite": ("fp32", "int8")}[fmt]
    if precision not in allowed:
        raise ValueError(
            f"--precision={precision} is not supported with --format={fmt} (choose from {allowed})"
        )
    export_dir = Path(export_dir)
    specs = [s for f in featurizers for s in f.specs()]
    pair_max_length = next((f.pair_max_length for f in featurizers if f.pair_max_length), 0)
    truncation = f"max_length={int(max_length)} tokens per text" + (
        f", then {pair_max_length} word pieces per packed pair (special tokens included)"
        if pair_max_length
        else ""
    )
    config = {
        "format": fmt,
        "precision": precision,
        "tokenizer": tokenizer,
        "lower": bool(lower),
        "in_graph_tokenizer_exact": tokenizer in text_lib.EXACT,
        "python_tokenizer": python_tokenizer or tokenizer,
        "max_length": int(max_length),
        "max_pair_length": pair_max_length,
        "truncation": truncation,
        "length_buckets": [int(b) for b in length_buckets],
        "xla": bool(xla),
        "float32_layers": float32_layers(model),
        "label_names": list(label_names),
        "output": output,
        "backend": backend,
        "features": {f.kind: f.get_config() for f in featurizers},
        "vocab_sizes": {f.kind: f.vocab_size for f in featurizers if f.vocab_size is not None},
        "signatures": {
            "serving_default": {
                "inputs": "text1, text2: string [batch]",
                "outputs": "probabilities, label, truncated"
                + (", score" if output == "score" else ""),
            },
            "serving_ids": {
                "inputs": {
                    s.name: f"{s.dtype} [batch, length"
                    + "".join(f", {d}" for d in s.inner_shape)
                    + "]"
                    for s in specs
                },
                "outputs": "probabilities, label, truncated"
                + (", score" if output == "score" else ""),
            },
        },
        **(extra_config or {}),
    }
    if fmt == "savedmodel" and _portable_form(BACKENDS.get(backend), xla) is not None:
        config["signatures"][PORTABLE_SIGNATURE] = dict(
            config["signatures"]["serving_ids"], form="for other runtimes' converters"
        )
    with (
        tempfile.TemporaryDirectory() as tmp,
        _shape_only_widths(model, xla and fmt == "savedmodel"),
    ):
        tmp = Path(tmp)
        files = [name for f in featurizers for name in f.save(tmp)]
        (tmp / "label_names.txt").write_text(
            "".join(f"{n}\n" for n in label_names), encoding="utf-8"
        )
        (tmp / "flags.txt").write_text(flags_text, encoding="utf-8")
        (tmp / EXPORT_CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
        extra = {name: tmp / name for name in ("label_names.txt", "flags.txt", EXPORT_CONFIG_FILE)}
        module = ServingModule(
            make_backend(
                backend,
                model,
                precision if fmt == "savedmodel" else "fp32",
                xla=xla and fmt == "savedmodel",
            ),
            featurizers,
            tmp,
            label_names,
            output=output,
            tokenizer=tokenizer,
            lower=lower,
            max_length=max_length,
            length_buckets=length_buckets,
            xla=xla and fmt == "savedmodel",
            extra_assets=extra,
        )
        if export_dir.exists():
            shutil.rmtree(export_dir)
        if fmt == "savedmodel":
            signatures = {
                "serving_default": module.serve_text,
                "serving_ids": module.serve_features,
            }
            if module.serve_portable:
                signatures[PORTABLE_SIGNATURE] = module.serve_portable
            tf.saved_model.save(module, str(export_dir), signatures=signatures)
            if module._xla:
                logging.info(
                    "XLA export: TensorFlow Serving's model server runs it only when started "
                    "with --xla_cpu_compilation_enabled=true; export with --xla=false to serve "
                    "it there without that flag"
                )
        else:
            staging = tmp / "tflite_savedmodel"
            with litert_loop_form(model):
                lite = _TFLiteModule(module)
            tf.saved_model.save(lite, str(staging), signatures={"serving_ids": lite.serve_features})
            converter = tf.lite.TFLiteConverter.from_saved_model(
                str(staging), signature_keys=["serving_ids"]
            )
            if precision == "int8":
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
            try:
                flatbuffer = converter.convert()
            except Exception as error:  # the converter raises its own ConverterError
                text = str(error)
                found = re.search(r"'(tf\.\w+)' op ([^\n]*)", text)
                reason = (
                    f"'{found.group(1)}' op {found.group(2).strip()}"
                    if found
                    else (text.strip().splitlines() or ["unknown error"])[0][:300]
                )
                raise ValueError(
                    f"--format=tflite: the TFLite converter cannot convert "
                    f"{model.name}: {reason} -- export a SavedModel "
                    "instead"
                ) from error
            export_dir.mkdir(parents=True)
            (export_dir / TFLITE_FILE).write_bytes(flatbuffer)
            (export_dir / "assets").mkdir()
            for name in (*files, *extra):
                shutil.copy(tmp / name, export_dir / "assets" / name)
    logging.info("exported %s (%s, %s) to %s", fmt, precision, tokenizer, export_dir)
    return export_dir
