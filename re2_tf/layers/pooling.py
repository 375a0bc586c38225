"""Masked max-over-time pooling (RE2 §2, pooling layer)."""

import keras

from re2_tf.layers.masking import masked_max


@keras.saving.register_keras_serializable(package="re2_tf")
class MaskedMaxPooling(keras.layers.Layer):
    """Max-over-time pooling that ignores padding.

    ``v = max_t (x_t if mask_t else dtype_min)`` for a text with at least one token (the
    release's computation); ``v = 0`` for an all-padding text (see
    :func:`re2_tf.layers.masking.masked_max`).

    Call arguments:
        inputs: float tensor ``[batch, length, dim]``.
        inputs_mask: float tensor ``[batch, length, 1]``, 1 on tokens.

    Returns:
        float tensor ``[batch, dim]``, same dtype as ``inputs``. An empty text (every
        position padding) pools to zeros: the release has no defined value there (it
        returns the dtype minimum, which makes logits near 1e38 and a NaN loss); 0 is the
        reading chosen here.

    Reference: RE2 paper §2 (max-over-time pooling, Collobert et al., 2011); release's
    ``Pooling`` (padding filled with ``tf.float32.min``).
    """

    def call(self, inputs, inputs_mask):
        return masked_max(inputs, inputs_mask, axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])
