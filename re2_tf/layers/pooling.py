"""Masked max-over-time pooling (RE2 §2, pooling layer)."""

import keras
from keras import ops

from re2_tf.layers.masking import dtype_min, fill_padding


@keras.saving.register_keras_serializable(package="re2_tf")
class MaskedMaxPooling(keras.layers.Layer):
    """Max-over-time pooling that ignores padding.

    ``v = max_t (x_t if mask_t else dtype_min)``.

    Call arguments:
        inputs: float tensor ``[batch, length, dim]``.
        inputs_mask: float tensor ``[batch, length, 1]``, 1 on tokens.

    Returns:
        float tensor ``[batch, dim]``. A text made only of padding has no maximum; callers
        must give every text at least one real token (the export maps an empty text to
        ``<UNK>``).

    Reference: RE2 paper §2 (max-over-time pooling, Collobert et al., 2011); release's
    ``Pooling`` (padding filled with ``tf.float32.min``).
    """

    def call(self, inputs, inputs_mask):
        return ops.max(fill_padding(inputs, inputs_mask, dtype_min(inputs.dtype)), axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])
