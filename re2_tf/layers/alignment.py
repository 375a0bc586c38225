"""RE2's alignment layer (paper Eq. 2-3)."""

import math

import keras
from keras import ops

from re2_tf.layers.masking import two_way_attention
from re2_tf.layers.weight_norm import WeightNormDense

ALIGNMENTS = ("linear", "identity")


@keras.saving.register_keras_serializable(package="re2_tf")
class Alignment(keras.layers.Layer):
    """Soft alignment of two sequences by dot-product attention (RE2 Eq. 2-3).

    ``e_ij = t * F(a_i)^T F(b_j)`` (Eq. 2) with a trainable scalar temperature ``t``
    initialised to ``sqrt(1 / hidden_size)`` (the release's addition); pairs involving
    padding are filled with the dtype's minimum; then (Eq. 3)::

        attention_a = softmax(e, axis=1)      # over positions of a, for each b_j
        attention_b = softmax(e, axis=2)      # over positions of b, for each a_i
        aligned_a   = attention_b  @ b        # a'_i = sum_j softmax_j(e_ij) b_j
        aligned_b   = attention_a^T @ a       # b'_j = sum_i softmax_i(e_ij) a_i

    ``F`` is ``linear`` (dropout, then a weight-normalised GeLU dense to ``hidden_size``,
    shared by both sequences) or ``identity``.

    Args:
        hidden_size: int, projection width; also sets the temperature's initial value.
        alignment: ``"linear"`` (default) or ``"identity"``.
        dropout_rate: float, dropout before the projection (``linear`` only).

    Call arguments:
        a: float tensor ``[batch, len_a, dim]``.
        b: float tensor ``[batch, len_b, dim]``.
        a_mask: float ``[batch, len_a, 1]``, 1 on tokens.
        b_mask: float ``[batch, len_b, 1]``, 1 on tokens.
        training: bool, enables dropout.
        return_attention_scores: bool; if True also return the two attention matrices.

    Returns:
        ``(aligned_a [batch, len_a, dim], aligned_b [batch, len_b, dim])``, and with
        ``return_attention_scores`` also ``(attention_a, attention_b)``, both
        ``[batch, len_a, len_b]``: ``attention_a`` sums to 1 over axis 1, ``attention_b``
        over axis 2; no weight falls on a padding position of the sequence normalised over.
        Slices with nothing to normalise over are all zeros (see
        :func:`re2_tf.layers.masking.masked_softmax`): the columns of ``attention_a`` at
        padding positions of ``b`` and the rows of ``attention_b`` at padding positions of
        ``a``. So when ``b`` is an empty text (all padding), ``aligned_a`` is 0 (and vice
        versa) instead of the release's mean of ``b``'s padding vectors; for two non-empty
        texts every output at a real position equals the release's.

    Reference: RE2 paper Eq. 2-3 (after Parikh et al., 2016); release's ``Alignment`` /
    ``MappedAlignment`` (temperature, ``tf.float32.min`` fill).
    """

    def __init__(self, hidden_size, alignment="linear", dropout_rate=0.2, **kwargs):
        super().__init__(**kwargs)
        if alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {alignment!r}")
        self.hidden_size = int(hidden_size)
        self.alignment = alignment
        self.dropout_rate = float(dropout_rate)
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.projection = (
            WeightNormDense(
                self.hidden_size, activation="gelu", dtype=self.dtype_policy, name="projection"
            )
            if alignment == "linear"
            else None
        )

    def build(self, a_shape, b_shape):
        if a_shape[-1] != b_shape[-1]:
            raise ValueError(f"a and b must have the same width, got {a_shape} and {b_shape}")
        self.temperature = self.add_weight(
            name="temperature",
            shape=(),
            initializer=keras.initializers.Constant(math.sqrt(1.0 / self.hidden_size)),
        )
        if self.projection is not None:
            self.projection.build((None, None, a_shape[-1]))

    def _project(self, x, training):
        if self.projection is None:
            return x
        return self.projection(self.dropout(x, training=training))

    def call(self, a, b, a_mask, b_mask, training=None, return_attention_scores=False):
        scores = ops.matmul(
            self._project(a, training), ops.transpose(self._project(b, training), (0, 2, 1))
        )
        scores = scores * ops.cast(self.temperature, scores.dtype)
        aligned_a, aligned_b, attention_a, attention_b = two_way_attention(
            scores, a, b, a_mask, b_mask
        )
        if return_attention_scores:
            return aligned_a, aligned_b, attention_a, attention_b
        return aligned_a, aligned_b

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size, alignment=self.alignment, dropout_rate=self.dropout_rate
        )
        return config
