"""Padding masks and masked reductions shared by all matching models.

Token id 0 is padding everywhere in re2_tf. Masks are float tensors ``[batch, length, 1]``
holding 1.0 on real tokens and 0.0 on padding, so they broadcast over the feature axis.
"""

import warnings

import keras
import ml_dtypes
import numpy as np
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
    """Softmax of ``logits`` along ``axis`` with masked entries filled by the dtype minimum.

    Args:
        logits: float tensor.
        mask: tensor broadcastable to ``logits``; 0 marks excluded entries.
        axis: int, the axis normalised over.

    Returns:
        float tensor like ``logits``; excluded entries get exactly 0 weight whenever at
        least one entry along ``axis`` is kept (all-excluded slices come out uniform, as
        in the release).
    """
    filled = fill_padding(logits, mask, dtype_min(logits.dtype))
    with warnings.catch_warnings():
        # A one-token text makes ``axis`` of size 1 in eager calls; its softmax is exactly 1,
        # which is right here, so Keras' "did you mean sigmoid" warning is only noise.
        warnings.filterwarnings("ignore", message="You are using a softmax over axis",
                                category=UserWarning)
        return ops.softmax(filled, axis=axis)


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
