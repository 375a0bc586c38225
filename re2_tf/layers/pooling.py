"""Masked max-over-time pooling (RE2 §2, pooling layer)."""

import keras
from keras import ops

from re2_tf.layers.masking import dtype_min, fill_padding, masked_max


@keras.saving.register_keras_serializable(package="re2_tf")
class MaskedMaxPooling(keras.layers.Layer):
    """Max-over-time pooling that ignores padding.

    ``v = max_t (x_t if mask_t else dtype_min)`` for a text with at least one token (the
    release's computation); ``v = 0`` for an all-padding text (see
    :func:`re2_tf.layers.masking.masked_max`).

    Call arguments:
        inputs: float tensor ``[batch, length, dim]``.
        inputs_mask: float tensor ``[batch, length, 1]``, 1 on tokens.
        return_positions: bool; also return where each maximum was taken (for analysis:
            DRCN's rate of max-pooled positions per word).

    Returns:
        float tensor ``[batch, dim]``, same dtype as ``inputs``. An empty text (every
        position padding) pools to zeros: the release has no defined value there (it
        returns the dtype minimum, which makes logits near 1e38 and a NaN loss); 0 is the
        reading chosen here. With ``return_positions`` also int32 ``[batch, dim]``: the
        position (0-based, along ``length``) of each feature's maximum over the tokens, the
        first one on ties; -1 for an empty text.

    Reference: RE2 paper §2 (max-over-time pooling, Collobert et al., 2011); release's
    ``Pooling`` (padding filled with ``tf.float32.min``).
    """

    def call(self, inputs, inputs_mask, return_positions=False):
        pooled = masked_max(inputs, inputs_mask, axis=1)
        if not return_positions:
            return pooled
        filled = fill_padding(inputs, inputs_mask, dtype_min(inputs.dtype))
        positions = ops.cast(ops.argmax(filled, axis=1), "int32")
        has_token = ops.any(ops.greater(inputs_mask, 0), axis=1)
        return pooled, ops.where(has_token, positions, -ops.ones_like(positions))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])

    def compute_output_spec(self, inputs, inputs_mask, return_positions=False):
        shape = (inputs.shape[0], inputs.shape[2])
        pooled = keras.KerasTensor(shape, dtype=inputs.dtype)
        if not return_positions:
            return pooled
        return pooled, keras.KerasTensor(shape, dtype="int32")
