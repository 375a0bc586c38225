"""Padding masks and masked reductions shared by all matching models.

Token id 0 is padding everywhere in re2_tf. Masks are float tensors ``[batch, length, 1]``
holding 1.0 on real tokens and 0.0 on padding, so they broadcast over the feature axis.
"""

import warnings

import keras
import ml_dtypes
import numpy as np
import tensorflow as tf
from keras import ops


def dtype_min(dtype):
    """The most negative finite value of a float dtype (the release's ``tf.float32.min``)."""
    name = keras.backend.standardize_dtype(dtype)
    finfo = ml_dtypes.finfo(name) if name == "bfloat16" else np.finfo(name)
    return float(finfo.min)


def fill_padding(x, mask, value):
    """Replace entries of ``x`` where ``mask == 0`` by ``value`` (``mask`` broadcasts)."""
    return ops.where(ops.greater(mask, 0), x, ops.cast(value, x.dtype))


def masked_softmax(logits, mask, axis):
    """Softmax of ``logits`` along ``axis`` over the entries where ``mask`` is non-zero.

    Masked entries are filled with float32's minimum before the softmax (the release's
    ``tf.float32.min``), then the weights of masked entries are set to 0 (a select, where the
    release multiplies by the mask: the same values, but a slice with no kept entry stays 0
    even where the fill became ``-inf``, as under TensorFlow's oneDNN bfloat16 rewrite, whose
    softmax of an all ``-inf`` slice is NaN). The softmax is computed
    in float32 for any logits dtype (16-bit logits of mixed precision are cast up) and the
    weights are returned in the logits' dtype.

    Args:
        logits: float tensor.
        mask: tensor broadcastable to ``logits``, 1 on kept entries and 0 on excluded ones.
        axis: int, the axis normalised over.

    Returns:
        float tensor like ``logits``. Where at least one entry along ``axis`` is kept, the
        kept weights sum to 1 and excluded entries get exactly 0 (``exp`` of the dtype
        minimum underflows to 0, so the multiplication by the mask changes nothing: same
        values as the release). A slice with no kept entry (an empty text, or a padding
        position) is all zeros, not the release's uniform weights over padding.
    """
    dtype = logits.dtype
    # Computed in float32 whatever the compute dtype (mixed precision keeps attention
    # softmaxes in float32, re2_tf/training/precision.py); returned in the logits' dtype.
    logits = ops.cast(logits, "float32")
    filled = fill_padding(logits, mask, dtype_min("float32"))
    with warnings.catch_warnings():
        # A one-token text makes ``axis`` of size 1 in eager calls; its softmax is exactly 1,
        # which is right here, so Keras' "did you mean sigmoid" warning is only noise.
        warnings.filterwarnings(
            "ignore", message="You are using a softmax over axis", category=UserWarning
        )
        weights = ops.softmax(filled, axis=axis)
    kept = ops.broadcast_to(ops.greater(mask, 0), ops.shape(weights))
    return ops.cast(ops.where(kept, weights, ops.zeros_like(weights)), dtype)


def two_way_attention(scores, a, b, a_mask, b_mask):
    """Soft alignment of two texts in both directions from their pairwise scores.

    Args:
        scores: float ``[batch, len_a, len_b]`` (RE2: scaled dot products, Eq. 2; DRCN:
            cosine similarities, Eq. 5).
        a, b: float ``[batch, len_a, dim]``, ``[batch, len_b, dim]``: the summarised texts.
        a_mask, b_mask: float ``[batch, len_a, 1]``, ``[batch, len_b, 1]``, 1 on tokens.

    Returns:
        ``(aligned_a, aligned_b, over_a, over_b)``: ``aligned_a = over_b @ b``
        ``[batch, len_a, dim]`` (for each position of ``a``, ``b`` weighted by a masked
        softmax over ``b``), ``aligned_b = over_a^T @ a``; ``over_a`` (softmax over axis 1)
        and ``over_b`` (over axis 2) are the ``[batch, len_a, len_b]`` weights, 0 on padding
        (and all 0 where the other text is empty, see :func:`masked_softmax`).
    """
    pair_mask = ops.matmul(a_mask, ops.transpose(b_mask, (0, 2, 1)))
    over_a = masked_softmax(scores, pair_mask, axis=1)
    over_b = masked_softmax(scores, pair_mask, axis=2)
    return (ops.matmul(over_b, b), ops.matmul(ops.transpose(over_a, (0, 2, 1)), a), over_a, over_b)


def masked_max(x, mask, axis=1):
    """Maximum of ``x`` along ``axis`` over the positions where ``mask`` is non-zero.

    Args:
        x: float tensor, e.g. ``[batch, length, dim]``.
        mask: tensor broadcastable to ``x``, e.g. ``[batch, length, 1]``, 1 on tokens.
        axis: int, the reduced axis.

    Returns:
        ``x`` reduced over ``axis``; where the mask has no non-zero entry along ``axis``
        (an all-padding text) the result is 0, not the dtype minimum, so an empty text
        gives finite features and no NaN loss. Otherwise it equals the release's
        ``max(where(mask, x, dtype_min))``.
    """
    pooled = ops.max(fill_padding(x, mask, dtype_min(x.dtype)), axis=axis)
    has_token = ops.any(ops.greater(mask, 0), axis=axis)
    return ops.where(has_token, pooled, ops.zeros_like(pooled))


@keras.saving.register_keras_serializable(package="re2_tf")
class PaddingMask(keras.layers.Layer):
    """Float padding mask from token ids.

    Call arguments:
        inputs: int tensor ``[batch, length]`` of token ids, 0 = padding.

    Returns:
        ``[batch, length, 1]`` tensor in the layer's compute dtype: 1.0 for tokens, 0.0 for
        padding.

    Reference: original release, ``mask = tf.expand_dims(tf.cast(tf.not_equal(ids, 0), ...), -1)``.
    """

    def call(self, inputs):
        return ops.expand_dims(ops.cast(ops.not_equal(inputs, 0), self.compute_dtype), -1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (1,)


def global_batch_mean(total, count, rows):
    """A mean over the units of the *global* batch (positions, tokens) as one replica's term.

    The trainer weighs every replica's loss terms by its share of the batch's rows
    (``rows / global rows``) and sums them, which is right for a mean over rows. A term that
    is a mean over other units -- DRCN's reconstruction loss averages over the real positions
    of the batch -- would then average per replica. This returns
    ``total / global count * global rows / rows`` (counts summed across replicas, outside the
    gradient), so the trainer's weighted sum is ``sum of totals / global count``: the term one
    process computes on the whole batch. With one replica: ``total / max(count, 1)``.

    Args:
        total: float scalar tensor, this replica's sum (e.g. of squared errors).
        count: float scalar tensor, this replica's number of units.
        rows: int scalar tensor, this replica's rows (batch size).

    Returns:
        float scalar tensor (0 when the global batch has no unit).
    """
    count = tf.cast(count, total.dtype)
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return total / tf.maximum(count, 1.0)
    rows = tf.cast(rows, total.dtype)
    counts = tf.stop_gradient(
        context.all_reduce(tf.distribute.ReduceOp.SUM, tf.stack([count, rows]))
    )
    return total / tf.maximum(counts[0], 1.0) * counts[1] / tf.maximum(rows, 1.0)
