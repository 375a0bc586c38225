"""BERT's inference-time forward pass over plain weights, in the form TensorFlow fuses best.

:func:`fold_bert` reads a built keras-hub ``BertBackbone`` (:mod:`re2_tf.layers.bert_backbone`)
and returns plain NumPy arrays; :func:`bert_forward` is a pure TensorFlow function of those
arrays and the packed pair's ids that computes the backbone's ``sequence_output`` and
``pooled_output`` (``backbone(inputs, training=False)``), up to float rounding. It is what an
``--xla=false`` export of BERT+MatchLSTM runs (backend ``bert_folded``,
:class:`re2_tf.serving.backends.FoldedBertBackend`, which runs the model's own head on its
outputs). Four rewrites of keras-hub's graph, exact up to float rounding (the fourth in
bfloat16 only):

1. **Every dense layer is a 2-D product** with its bias as a ``BiasAdd`` and its activation
   after it (:func:`re2_tf.serving.folded._dense_rows`), the form in which TensorFlow's graph
   optimiser fuses bias and activation (exact GELU included) into oneDNN's product kernel;
   keras-hub's ``EinsumDense`` projections and its ``Dense`` on 3-D inputs run as
   ``Einsum``/``MatMul`` + ``Add`` + a separate ``Erfc`` chain.
2. **Query, key and value are one product** (their kernels concatenated, ``[hidden, 3 *
   hidden]``), with the query's scale ``1 / sqrt(head_dim)`` folded into its kernel and bias.
3. **The residual sums follow the output products' ``BiasAdd``** (the same optimiser fuses
   one of the two per layer into its product).
4. **In bfloat16, each LayerNorm is oneDNN's fused kernel** (``_MklLayerNorm``, TensorFlow's
   oneDNN op, where this TensorFlow registers it on the CPU for bfloat16, its x86 builds, and
   the CPU has bfloat16 units, ``avx512_bf16`` or ``amx_bf16``; without AVX-512 oneDNN makes
   no bfloat16 LayerNorm and the op fails when it runs, so there the plain form stays):
   one kernel where the plain form runs about ten (casts, two means, the normalisation and
   the affine part). The pass names the op itself: TensorFlow's graph optimiser did not
   rewrite the plain forms into it (``docs/performance.md``, "BERT's LayerNorms as one
   oneDNN kernel"). Its statistics are float32 (oneDNN's), its scale and offset bfloat16
   (the op's one dtype). A SavedModel holding it loads only in a TensorFlow that registers
   it; float32 keeps the plain form, which every TensorFlow and the other runtimes'
   converters read.

Everything else follows keras-hub 0.32 line by line: token, position and segment embeddings
summed and LayerNorm'd; per layer (post-LayerNorm, BERT's order) the masked multi-head
self-attention (softmax over the keys a padding mask keeps), its output projection, residual
sum and LayerNorm, the feed-forward pair (the checkpoint's activation: exact GELU or the tanh
approximation) with its residual sum and LayerNorm; the pooler ``tanh(W h_[CLS] + b)``.
Dropout is the identity at inference. In bfloat16 (``dtype=tf.bfloat16``: weights and products
in bfloat16) the LayerNorm statistics and the softmax are computed in float32, as Keras's
``mixed_bfloat16`` policy keeps them, and the outputs are float32; the LayerNorms' scale and
offset are rounded to bfloat16 where the fused kernel runs them (rewrite 4).

Reference: Devlin et al., "BERT", NAACL 2019 (Sec. 3); Vaswani et al., "Attention Is All You
Need", 2017 (Sec. 3.2); keras-hub 0.32 ``BertBackbone``, ``TransformerEncoder``. Why it exists
and what it changes per runtime: ``docs/performance.md`` ("BERT's encoder as a forward pass
over plain weights"), from its record ``docs/runs/roofline/folded_bert_ab.json``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import kernels, op_def_library

from re2_tf._compat import transformer_parts
from re2_tf.machine import cpu_units
from re2_tf.serving.folded import _dense_rows, _np

__all__ = ["STRUCTURE_KEYS", "bert_forward", "fold_bert"]

#: Keys of :func:`fold_bert`'s dict that hold the network's structure, not arrays.
STRUCTURE_KEYS = ("num_layers", "num_heads", "epsilon", "activation")

#: ``hidden_activation`` of :class:`re2_tf.layers.bert_backbone.BertBackbone` -> whether the
#: feed-forward GELU is the tanh approximation.
_APPROXIMATE = {"gelu": False, "gelu_approximate": True}


def fold_bert(backbone) -> dict:
    """The weights of a built keras-hub ``BertBackbone`` as plain float32 arrays, in the layout
    :func:`bert_forward` reads.

    Args:
        backbone: a built ``keras_hub.models.BertBackbone`` (or
            :class:`re2_tf.layers.bert_backbone.BertBackbone`; its ``hidden_activation`` says
            which GELU; keras-hub's own class uses the tanh approximation).

    Returns:
        ``dict``: the :data:`STRUCTURE_KEYS` (``num_layers``, ``num_heads``, ``epsilon``:
        the LayerNorms' epsilon, ``activation``: ``"gelu"`` or ``"gelu_approximate"``) and
        float32 arrays: ``embeddings/{token,position,segment}`` ``[rows, hidden]``,
        ``embeddings/norm/{gamma,beta}``; per layer ``i`` ``layer{i}/qkv/{kernel,bias}``
        ``[hidden, 3 hidden]`` (query columns scaled by ``1 / sqrt(head_dim)``),
        ``layer{i}/attention_output/...`` ``[hidden, hidden]``, ``layer{i}/attention_norm/...``,
        ``layer{i}/intermediate/...`` ``[hidden, intermediate]``, ``layer{i}/output/...``,
        ``layer{i}/output_norm/...``; ``pooler/{kernel,bias}``.

    Raises:
        ValueError: a LayerNorm without scale or centre, or layers whose epsilons differ.
        TypeError: keras-hub's encoder layout changed (:func:`re2_tf._compat.transformer_parts`).
    """
    p = {
        "num_layers": len(backbone.transformer_layers),
        "num_heads": int(backbone.num_heads),
        "activation": getattr(backbone, "hidden_activation", "gelu_approximate"),
        "embeddings/token": _np(backbone.token_embedding.embeddings),
        "embeddings/position": _np(backbone.position_embedding.position_embeddings),
        "embeddings/segment": _np(backbone.segment_embedding.embeddings),
    }
    epsilons = set()

    def norm(prefix, layer):
        if not (layer.scale and layer.center):
            raise ValueError(f"{layer.name}: a LayerNorm without scale or centre")
        epsilons.add(float(layer.epsilon))
        p[f"{prefix}/gamma"], p[f"{prefix}/beta"] = _np(layer.gamma), _np(layer.beta)

    def dense(prefix, layer):
        p[f"{prefix}/kernel"], p[f"{prefix}/bias"] = _np(layer.kernel), _np(layer.bias)

    norm("embeddings/norm", backbone.embeddings_layer_norm)
    for i, encoder in enumerate(backbone.transformer_layers):
        parts = transformer_parts(encoder)
        attention = parts["attention"]
        # EinsumDense kernels [hidden, heads, head_dim] and biases [heads, head_dim]
        hidden = int(attention.query_dense.kernel.shape[0])
        head_dim = int(attention.query_dense.kernel.shape[-1])
        scale = 1.0 / math.sqrt(float(head_dim))
        kernels, biases = [], []
        for projection, factor in (
            (attention.query_dense, scale),
            (attention.key_dense, 1.0),
            (attention.value_dense, 1.0),
        ):
            kernels.append(_np(projection.kernel).reshape(hidden, -1) * factor)
            biases.append(_np(projection.bias).reshape(-1) * factor)
        p[f"layer{i}/qkv/kernel"] = np.concatenate(kernels, axis=1)
        p[f"layer{i}/qkv/bias"] = np.concatenate(biases)
        # output EinsumDense kernel [heads, head_dim, hidden]
        p[f"layer{i}/attention_output/kernel"] = _np(attention.output_dense.kernel).reshape(
            -1, hidden
        )
        p[f"layer{i}/attention_output/bias"] = _np(attention.output_dense.bias)
        norm(f"layer{i}/attention_norm", parts["attention_norm"])
        dense(f"layer{i}/intermediate", parts["intermediate"])
        dense(f"layer{i}/output", parts["output"])
        norm(f"layer{i}/output_norm", parts["output_norm"])
    dense("pooler", backbone.pooled_dense)
    if len(epsilons) != 1:
        raise ValueError(f"the LayerNorms' epsilons differ: {sorted(epsilons)}")
    p["epsilon"] = epsilons.pop()
    return p


@functools.cache
def _has_fused_layer_norm(dtype) -> bool:
    """Whether this TensorFlow registers oneDNN's fused LayerNorm (``_MklLayerNorm``) on the
    CPU for ``dtype``."""
    wanted = dtype.as_datatype_enum
    return any(
        kernel.device_type == "CPU"
        and any(c.name == "T" and wanted in c.allowed_values.list.type for c in kernel.constraint)
        for kernel in kernels.get_registered_kernels_for_op("_MklLayerNorm").kernel
    )


@functools.cache
def _fused_layer_norm_runs() -> bool:
    """Whether a bfloat16 LayerNorm is oneDNN's fused kernel here: this TensorFlow registers
    it (:func:`_has_fused_layer_norm`) and the CPU has bfloat16 units
    (:func:`re2_tf.machine.cpu_units`); oneDNN creates no bfloat16 LayerNorm primitive on a
    CPU without AVX-512 (``AbortedError`` at run time)."""
    return _has_fused_layer_norm(tf.bfloat16) and cpu_units()["bfloat16"]


def _fused_layer_norm_op(x, scale, offset, epsilon):
    """``_MklLayerNorm`` in the graph being built (it has no Python wrapper)."""
    _, _, op, _ = op_def_library._apply_op_helper(
        "_MklLayerNorm", x=x, scale=scale, offset=offset, epsilon=epsilon, name="LayerNorm"
    )
    return op.outputs[0]


_fused_layer_norm_eager = tf.function(_fused_layer_norm_op, autograph=False)


def _layer_norm(x, gamma, beta, epsilon):
    """LayerNorm over the last axis (biased variance), statistics in float32; ``x``'s dtype
    out. A bfloat16 ``x`` goes through oneDNN's fused kernel where it runs
    (:func:`_fused_layer_norm_runs`; its scale and offset then in bfloat16; module docstring,
    rewrite 4)."""
    if x.dtype == tf.bfloat16 and _fused_layer_norm_runs():
        fused = _fused_layer_norm_eager if tf.executing_eagerly() else _fused_layer_norm_op
        return fused(x, tf.cast(gamma, x.dtype), tf.cast(beta, x.dtype), float(epsilon))
    x32 = tf.cast(x, tf.float32)
    mean, variance = tf.nn.moments(x32, axes=[-1], keepdims=True)
    y = (x32 - mean) * tf.math.rsqrt(variance + epsilon)
    return tf.cast(y * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32), x.dtype)


def bert_forward(params, token_ids, segment_ids, padding_mask, dtype=tf.float32):
    """BERT's encoder and pooler on the packed pair, from :func:`fold_bert`'s arrays.

    Args:
        params: :func:`fold_bert`'s dict; its arrays as tensors or arrays of ``dtype``.
        token_ids, segment_ids: int32 ``[batch, L]`` (``L`` at most the position table's
            rows).
        padding_mask: int32 ``[batch, L]``, 1 on tokens, 0 on padding (after the tokens).
        dtype: ``tf.float32`` or ``tf.bfloat16``, the dtype of the weights, the products and
            the states between them (LayerNorm statistics and softmax: float32; in bfloat16
            the LayerNorms are oneDNN's fused kernel where it runs, rewrite 4).

    Returns:
        ``{"sequence_output": float32 [batch, L, hidden], "pooled_output": float32 [batch,
        hidden]}``. Padded positions carry states that no token's state depends on (the
        softmax gives padded keys weight 0), so padding width never changes the tokens'.
    """
    P = params
    heads = P["num_heads"]
    approximate = _APPROXIMATE[P["activation"]]
    epsilon = P["epsilon"]
    batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    hidden = P["embeddings/token"].shape[-1]
    head_dim = hidden // heads

    def dense(x, prefix, activation=None):
        return _dense_rows(x, P[f"{prefix}/kernel"], P[f"{prefix}/bias"], activation)

    def norm(x, prefix):
        return _layer_norm(x, P[f"{prefix}/gamma"], P[f"{prefix}/beta"], epsilon)

    def gelu(x):
        return tf.nn.gelu(x, approximate=approximate)

    def split_heads(x):  # [batch * L, hidden] -> [batch, heads, L, head_dim]
        return tf.transpose(tf.reshape(x, [batch, length, heads, head_dim]), [0, 2, 1, 3])

    # === Embeddings (keras-hub BertBackbone: token + position + segment, LayerNorm) ===
    x = (
        tf.gather(P["embeddings/token"], token_ids)
        # the first L rows, broadcast over the batch (TFLite's converter refuses a strided
        # slice that adds an axis; so the reshape of ``keep`` below)
        + tf.slice(P["embeddings/position"], [0, 0], tf.stack([length, hidden]))
        + tf.gather(P["embeddings/segment"], segment_ids)
    )
    rows = norm(tf.reshape(x, [-1, hidden]), "embeddings/norm")  # [batch * L, hidden]
    keep = tf.reshape(tf.cast(padding_mask, tf.bool), [batch, 1, 1, length])  # keys kept
    for i in range(P["num_layers"]):
        # === Self-attention (Vaswani et al. Eq. 1; keras MultiHeadAttention) ===
        q, k, v = tf.split(dense(rows, f"layer{i}/qkv"), 3, axis=-1)
        scores = tf.cast(tf.matmul(split_heads(q), split_heads(k), transpose_b=True), tf.float32)
        weights = tf.nn.softmax(tf.where(keep, scores, tf.float32.min), axis=-1)
        context = tf.matmul(tf.cast(weights, dtype), split_heads(v))  # [batch, heads, L, dim]
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, hidden])
        # === Output projection, residual sum, LayerNorm (post-LN) ===
        rows = norm(dense(context, f"layer{i}/attention_output") + rows, f"layer{i}/attention_norm")
        # === Feed-forward, residual sum, LayerNorm ===
        inner = dense(rows, f"layer{i}/intermediate", gelu)
        rows = norm(dense(inner, f"layer{i}/output") + rows, f"layer{i}/output_norm")
    sequence = tf.reshape(rows, [batch, length, hidden])
    pooled = dense(sequence[:, 0, :], "pooler", tf.tanh)
    return {
        "sequence_output": tf.cast(sequence, tf.float32),
        "pooled_output": tf.cast(pooled, tf.float32),
    }
