"""RE2's inference-time forward pass with weight normalisation folded into plain kernels.

:func:`fold_re2` reads a trained Keras RE2 model (``re2_tf.models.build_re2``) and returns
plain NumPy arrays; :func:`re2_forward` is a pure TensorFlow function of those arrays and two
id tensors that computes the same logits as ``model(..., training=False)``. It is what the
exported SavedModel and TFLite file run. Two exact rewrites make it cheaper than the Keras
graph:

1. **Weight-norm folding.** Every ``WeightNormDense``/``WeightNormConv1D`` computes
   ``W = V / max(||V||, 1e-7) * g`` on every call; here ``W`` is computed once
   (``layer.kernel``) and stored.
2. **Fusion G1/G2 merge** (RE2 Eq. 4). With ``G2``'s kernel split into the rows that see
   ``x`` and the rows that see ``x - x'``, ``[x; x - x'] W2 = x (W2x + W2d) - x' W2d``, so
   ``G1([x; x'])`` and ``G2([x; x - x'])`` are one matmul of ``[x; x']`` with the block kernel
   ``[[W1x, W2x + W2d], [W1x', -W2d]]``; ``G3([x; x*x'])`` stays a matmul of ``[x; x*x']``.
   Same FLOPs as the three separate layers (a single block-diagonal matmul over
   ``[x; x'; x-x'; x*x']`` would double them), one matmul fewer; equal up to float rounding.

Every dense layer runs on 2-D rows with its bias as a ``BiasAdd`` (:func:`_dense_rows`), the
form in which TensorFlow fuses the bias and the activation into the product's kernel.

Everything else follows the layers' equations in ``re2_tf/layers`` line by line (cited per
step below). Dropout is the identity at inference. No Keras and no ``re2_tf`` code runs at
serving time, so a loaded SavedModel needs only TensorFlow.

Why it is kept beside the Keras backend, and how it compares with the other CPU runtimes:
``docs/performance.md`` (RE2's folded forward pass), from its record
``docs/runs/roofline/folded_ab.json``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import tensorflow as tf

__all__ = ["fold_re2", "re2_forward", "is_re2"]

#: How :func:`re2_forward` computes the encoder's convolutions.
CONVOLUTIONS = ("conv1d", "products")

#: Config keys of the folded parameters (everything else in the dict is an array).
_STRUCTURE_KEYS = (
    "blocks",
    "alignment",
    "fusion",
    "connection",
    "prediction",
    "enc_in",
    "parallel_blocks",
    "enc_layers",
    "encoder_activation",
)


def is_re2(model) -> bool:
    """True if ``model`` has the layer names ``build_re2`` gives (so :func:`fold_re2` applies)."""
    names = {layer.name for layer in model.layers}
    return {
        "embedding",
        "block0_encoder",
        "block0_alignment",
        "block0_fusion",
        "pooling",
        "prediction",
    } <= names


def _np(x):
    return np.asarray(tf.convert_to_tensor(x), dtype=np.float32)


def fold_re2(model) -> dict:
    """Fold a Keras RE2 model's weights into plain kernels.

    Args:
        model: a model from ``build_re2`` (any options of its Table 6 ablations).

    Returns:
        dict with the structure (``blocks``, ``alignment``, ``fusion``, ``connection``,
        ``prediction``, ``enc_in``, ``parallel_blocks``, ``enc_layers``,
        ``encoder_activation`` = ``"relu"`` or ``"gelu"``) and float32 arrays:
        ``embedding [V, E]``; per block ``i``: ``block{i}/conv{k}/kernel [K, in, H]`` and
        ``/bias``, ``block{i}/align/kernel``, ``/bias`` (linear alignment), ``/temperature``
        (scalar), ``block{i}/fusion/...`` and, for a ``residual`` connection with a
        projection, ``block{i}/connection/kernel``; ``pred/dense_1/...``, ``pred/dense_2/...``.

    Raises:
        ValueError: if ``model`` is not an RE2 model.
    """
    if not is_re2(model):
        raise ValueError("fold_re2 needs a model built by re2_tf.models.build_re2")
    layers = {layer.name: layer for layer in model.layers}
    blocks = sum(1 for name in layers if re.fullmatch(r"block\d+_encoder", name))
    p = {
        "blocks": blocks,
        "enc_layers": len(layers["block0_encoder"].convolutions),
        "encoder_activation": layers["block0_encoder"].activation,
        "alignment": layers["block0_alignment"].alignment,
        "fusion": layers["block0_fusion"].fusion,
        "prediction": layers["prediction"].prediction,
        "enc_in": "block0_features" in layers,
        "parallel_blocks": blocks > 1 and "block1_connection" not in layers,
        "connection": "aug",
        "embedding": _np(layers["embedding"].embeddings),
    }
    if blocks > 1 and "block1_connection" in layers:
        p["connection"] = (
            "aug"
            if type(layers["block1_connection"]).__name__ == "AugmentedResidualConnection"
            else "residual"
        )

    def dense(prefix, layer):
        p[f"{prefix}/kernel"] = _np(layer.kernel)  # W = V / max(||V||, 1e-7) * g
        p[f"{prefix}/bias"] = _np(layer.bias)

    for i in range(blocks):
        for k, conv in enumerate(layers[f"block{i}_encoder"].convolutions):
            dense(f"block{i}/conv{k}", conv)
        align = layers[f"block{i}_alignment"]
        p[f"block{i}/align/temperature"] = _np(align.temperature)
        if align.projection is not None:
            dense(f"block{i}/align", align.projection)
        fusion = layers[f"block{i}_fusion"]
        if p["fusion"] == "simple":
            dense(f"block{i}/fusion/orig", fusion.orig)
        else:
            w1, w2, w3 = _np(fusion.orig.kernel), _np(fusion.sub.kernel), _np(fusion.mul.kernel)
            d = w1.shape[0] // 2
            # [x; x'] @ [[W1x, W2x + W2d], [W1x', -W2d]] == [G1([x;x']), G2([x; x-x'])] pre-act.
            p[f"block{i}/fusion/k12"] = np.block([[w1[:d], w2[:d] + w2[d:]], [w1[d:], -w2[d:]]])
            p[f"block{i}/fusion/b12"] = np.concatenate(
                [_np(fusion.orig.bias), _np(fusion.sub.bias)]
            )
            p[f"block{i}/fusion/k3"] = w3
            p[f"block{i}/fusion/b3"] = _np(fusion.mul.bias)
            dense(f"block{i}/fusion/proj", fusion.proj)
        if i > 0 and p["connection"] == "residual" and not p["parallel_blocks"]:
            projection = layers[f"block{i}_connection"].projection
            if projection is not None:
                dense(f"block{i}/connection", projection)
    dense("pred/dense_1", layers["prediction"].dense_1)
    dense("pred/dense_2", layers["prediction"].dense_2)
    return p


def _gelu(x):
    # Tanh-approximated GeLU, as re2_tf.layers.activations.gelu / the release.
    return tf.nn.gelu(x, approximate=True)


def _dense_rows(x, kernel, bias, activation=None):
    """``activation(x kernel + bias)`` over the last axis, computed on 2-D rows: ``x``
    reshaped to ``[rows, fan_in]``, ``MatMul``, ``BiasAdd``, the activation, and the result
    reshaped back to ``x``'s leading shape.

    The same function as a product over the last axis of ``x`` and an added bias; in this
    form TensorFlow's graph optimiser (Grappler's remapper, with oneDNN) fuses the bias and a
    ReLU or the tanh-approximated GeLU (``tf.nn.gelu(..., approximate=True)``) into the
    product's kernel, in float32 and in bfloat16 (``docs/performance.md``, "Dense layers as
    fused products").

    Args:
        x: ``[..., fan_in]``; kernel: ``[fan_in, units]``; bias: ``[units]``, same dtype.
        activation: ``None`` or an element-wise function.

    Returns:
        ``[..., units]``.
    """
    rows = x if x.shape.rank == 2 else tf.reshape(x, [-1, kernel.shape[0]])
    y = tf.nn.bias_add(tf.matmul(rows, kernel), bias)
    if activation is not None:
        y = activation(y)
    if x.shape.rank == 2:
        return y
    return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [kernel.shape[1]]], 0))


def _lowest(dtype):
    return tf.constant(dtype.min, dtype)


def _masked_max(x, mask):
    """MaskedMaxPooling (``re2_tf.layers.masking.masked_max``): max over time of the tokens;
    0 for an all-padding text."""
    pooled = tf.reduce_max(tf.where(mask > 0, x, _lowest(x.dtype)), axis=1)
    return tf.where(tf.reduce_any(mask > 0, axis=1), pooled, tf.zeros_like(pooled))


def _masked_softmax(scores, keep, axis):
    """``re2_tf.layers.masking.masked_softmax``: softmax over kept entries (``keep`` bool),
    excluded entries 0, all-zero where nothing along ``axis`` is kept (a select, so also
    where the fill became ``-inf`` and the softmax NaN, as under TensorFlow's oneDNN bfloat16
    rewrite)."""
    weights = tf.nn.softmax(tf.where(keep, scores, _lowest(scores.dtype)), axis=axis)
    return tf.where(keep, weights, tf.zeros_like(weights))


def _conv_as_products(x, kernel):
    """A stride-1 ``SAME`` 1-D convolution (``tf.nn.conv1d(x, kernel, 1, "SAME")``) as a sum
    of one matrix product per kernel tap: ``y[t] = sum_j x[t + j - left] kernel[j]``, with
    ``x`` zero outside ``[0, T)`` and ``left = (K - 1) // 2`` (TensorFlow's ``SAME``).

    Same FLOPs as the convolution; the graph holds matrix products on channels-last
    tensors only, which the converters of other runtimes keep as they are (a ``Conv2D`` is
    run channels-first there, wrapped in layout transposes; ``docs/performance.md``, "RE2's
    convolutions as products").

    Args:
        x: ``[batch, T, C]``; kernel: ``[K, C, H]``, same dtype.

    Returns:
        ``[batch, T, H]``.
    """
    taps = kernel.shape[0]
    left = (taps - 1) // 2
    length = tf.shape(x)[1]
    padded = tf.pad(x, [[0, 0], [left, taps - 1 - left], [0, 0]])
    return tf.add_n([tf.matmul(padded[:, j : j + length], kernel[j]) for j in range(taps)])


def re2_forward(params, ids1, ids2, dtype=tf.float32, joint=True, convolution="conv1d"):
    """RE2 logits from folded weights (inference; same equations as ``build_re2``).

    Args:
        params: ``{name: tf.Tensor/tf.Variable or array}`` plus structure keys, as returned by
            :func:`fold_re2` (arrays may have been turned into variables of ``dtype``).
        ids1, ids2: int32 ``[batch, len1]``, ``[batch, len2]`` token ids, 0 = padding. A
            row of padding only (an empty text) is computed as ``build_re2`` computes it:
            it pools to zeros and the other text's alignment to it is zero.
        dtype: compute dtype (``tf.float32`` or ``tf.bfloat16``); the arrays in ``params``
            must already have this dtype.
        joint: run the position-wise layers (embedding, connection, encoder, alignment
            projection, fusion) once on the two texts laid end to end, ``[text1; gap;
            text2]`` along time, instead of once per text. The gap holds
            ``kernel_size // 2`` padding positions, which every convolution sees as zeros
            (the encoder masks its input), so no convolution window spans both texts and the
            result is the same; only alignment and pooling split the sequence again. Half
            the ops, same FLOPs (see :func:`_joint_blocks`).
        convolution: how the encoder's convolutions are computed: ``"conv1d"``
            (``tf.nn.conv1d``, what TensorFlow serves) or ``"products"`` (one matrix product
            per kernel tap, :func:`_conv_as_products`: the same function, in the form the
            other runtimes' converters read, the export's ``serving_ids_portable``).

    Returns:
        float32 logits ``[batch, num_classes]``.

    Raises:
        ValueError: an unknown ``convolution``.

    Reference: RE2 paper §2 / Eq. 1-7; equations of ``re2_tf.layers`` (cited per step).
    """
    P = params
    if convolution not in CONVOLUTIONS:
        raise ValueError(f"convolution must be one of {CONVOLUTIONS}, got {convolution!r}")
    conv = {
        "conv1d": lambda x, kernel: tf.nn.conv1d(x, kernel, stride=1, padding="SAME"),
        "products": _conv_as_products,
    }[convolution]

    def mask_of(ids):  # PaddingMask: 1.0 on tokens, 0.0 on padding, [batch, len, 1]
        return tf.expand_dims(tf.cast(tf.not_equal(ids, 0), dtype), -1)

    def dense(x, prefix, activation=None):  # WeightNormDense with folded kernel
        return _dense_rows(x, P[f"{prefix}/kernel"], P[f"{prefix}/bias"], activation)

    activation = {"relu": tf.nn.relu, "gelu": _gelu}[P["encoder_activation"]]

    def encoder(x, mask, i):  # ConvEncoder: x = act(conv(mask * x)) per layer, SAME padding
        for k in range(P["enc_layers"]):
            x = conv(x * mask, P[f"block{i}/conv{k}/kernel"])
            x = activation(tf.nn.bias_add(x, P[f"block{i}/conv{k}/bias"]))
        return x

    def align(a, b, mask_a, mask_b, i, projected=None):  # Alignment, Eq. 2-3
        if projected is not None:
            fa, fb = projected
        elif P["alignment"] == "linear":
            fa, fb = dense(a, f"block{i}/align", _gelu), dense(b, f"block{i}/align", _gelu)
        else:
            fa, fb = a, b
        scores = tf.matmul(fa, fb, transpose_b=True) * P[f"block{i}/align/temperature"]
        pair = tf.matmul(mask_a, mask_b, transpose_b=True) > 0
        attention_a = _masked_softmax(scores, pair, axis=1)  # over positions of a
        attention_b = _masked_softmax(scores, pair, axis=2)  # over positions of b
        aligned_a = tf.matmul(attention_b, b)
        aligned_b = tf.matmul(attention_a, a, transpose_a=True)
        return aligned_a, aligned_b

    def fuse(x, x_aligned, i):  # Fusion, Eq. 4 (G1/G2 merged, see module docstring)
        f = f"block{i}/fusion"
        if P["fusion"] == "simple":
            return dense(tf.concat([x, x_aligned], -1), f"{f}/orig", _gelu)
        # GeLU is element-wise: GeLU([g12; g3]) = [GeLU(g12); GeLU(g3)].
        g12 = _dense_rows(tf.concat([x, x_aligned], -1), P[f"{f}/k12"], P[f"{f}/b12"], _gelu)
        g3 = _dense_rows(tf.concat([x, x * x_aligned], -1), P[f"{f}/k3"], P[f"{f}/b3"], _gelu)
        return dense(tf.concat([g12, g3], -1), f"{f}/proj", _gelu)

    def connect(x, res, i):  # AugmentedResidualConnection / ResidualConnection (Eq. 1)
        if P["connection"] == "aug":
            if i == 1:
                return tf.concat([res, x], -1)
            h = x.shape[-1]
            return tf.concat([res[..., :-h], (res[..., -h:] + x) * math.sqrt(0.5)], -1)
        if f"block{i}/connection/kernel" in P:
            x = dense(x, f"block{i}/connection")
        return (x + res) * math.sqrt(0.5)

    if joint and not P["parallel_blocks"]:
        a, b, mask1, mask2 = _joint_blocks(
            P, ids1, ids2, mask_of, dense, encoder, align, fuse, connect
        )
    else:
        a, b, mask1, mask2 = _separate_blocks(P, ids1, ids2, mask_of, encoder, align, fuse, connect)

    pooled_a, pooled_b = _masked_max(a, mask1), _masked_max(b, mask2)
    # Prediction, Eq. 5-7 (pair_features order of the release).
    if P["prediction"] == "full":
        features = tf.concat([pooled_a, pooled_b, pooled_a * pooled_b, pooled_a - pooled_b], -1)
    elif P["prediction"] == "symmetric":
        features = tf.concat(
            [pooled_a, pooled_b, pooled_a * pooled_b, tf.abs(pooled_a - pooled_b)], -1
        )
    else:
        features = tf.concat([pooled_a, pooled_b], -1)
    hidden = dense(features, "pred/dense_1", _gelu)
    return tf.cast(dense(hidden, "pred/dense_2"), tf.float32)


def _separate_blocks(P, ids1, ids2, mask_of, encoder, align, fuse, connect):
    """The blocks of ``build_re2`` applied to each text separately (Figure 1)."""
    mask1, mask2 = mask_of(ids1), mask_of(ids2)
    emb1 = tf.gather(P["embedding"], ids1)
    emb2 = tf.gather(P["embedding"], ids2)
    a, b = emb1, emb2
    res_a, res_b = a, b
    outs_a, outs_b = [], []
    for i in range(P["blocks"]):
        if P["parallel_blocks"]:
            a, b = emb1, emb2
        elif i > 0:
            a, b = connect(a, res_a, i), connect(b, res_b, i)
            res_a, res_b = a, b
        enc_a, enc_b = encoder(a, mask1, i), encoder(b, mask2, i)
        if P["enc_in"]:
            a, b = tf.concat([a, enc_a], -1), tf.concat([b, enc_b], -1)
        else:
            a, b = enc_a, enc_b
        align_a, align_b = align(a, b, mask1, mask2, i)
        a, b = fuse(a, align_a, i), fuse(b, align_b, i)
        outs_a.append(a)
        outs_b.append(b)
    if P["parallel_blocks"] and P["blocks"] > 1:
        a, b = tf.add_n(outs_a), tf.add_n(outs_b)
    return a, b, mask1, mask2


def _joint_blocks(P, ids1, ids2, mask_of, dense, encoder, align, fuse, connect):
    """The same blocks on ``x = [text1; gap; text2]`` (one sequence per pair).

    Position-wise layers and convolutions act on ``x`` directly; ``x[:, :len1]`` and
    ``x[:, len1 + gap:]`` are the two texts for the alignment (Eq. 2-3), whose outputs are
    laid end to end again (zeros in the gap) for the fusion. Padding positions inside each
    text stay where they were, so masks are the concatenated masks.
    """
    kernel_size = P["block0/conv0/kernel"].shape[0]
    gap = max(kernel_size // 2, 1)
    len1 = tf.shape(ids1)[1]
    batch = tf.shape(ids1)[0]
    ids = tf.concat([ids1, tf.zeros([batch, gap], ids1.dtype), ids2], axis=1)
    mask = mask_of(ids)
    mask1, mask2 = mask[:, :len1], mask[:, len1 + gap :]
    x = tf.gather(P["embedding"], ids)
    res = x
    for i in range(P["blocks"]):
        if i > 0:
            x = connect(x, res, i)
            res = x
        enc = encoder(x, mask, i)
        x = tf.concat([x, enc], -1) if P["enc_in"] else enc
        if P["alignment"] == "linear":  # project once, then split (Alignment._project)
            projected = dense(x, f"block{i}/align", _gelu)
        else:
            projected = x
        a, b = x[:, :len1], x[:, len1 + gap :]
        align_a, align_b = align(
            a, b, mask1, mask2, i, projected=(projected[:, :len1], projected[:, len1 + gap :])
        )
        aligned = tf.concat([align_a, tf.zeros_like(x[:, :gap]), align_b], axis=1)
        x = fuse(x, aligned, i)
    return x[:, :len1], x[:, len1 + gap :], mask1, mask2


def structure_of(params) -> dict:
    """The non-array entries of a folded parameter dict."""
    return {k: params[k] for k in _STRUCTURE_KEYS}
