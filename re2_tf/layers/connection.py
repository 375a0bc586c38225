"""Connections between consecutive RE2 blocks (paper §2.1, Eq. 1, and Table 6)."""

import math

import keras
from keras import ops

from re2_tf.layers.weight_norm import WeightNormDense

CONNECTIONS = ("aug", "residual")


@keras.saving.register_keras_serializable(package="re2_tf")
class AugmentedResidualConnection(keras.layers.Layer):
    """Augmented residual connection, as the release computes it.

    For block ``n`` (0-based ``block_index >= 1``), with ``x`` the previous block's output
    ``[.., hidden]`` and ``res`` the previous block's input after its own connection:

    - ``block_index == 1``: ``[res; x]`` (``res`` is the embedding);
    - ``block_index > 1``: ``[res[..., :-h]; (res[..., -h:] + x) * sqrt(1/2)]``, ``h`` the
      width of ``x``.

    The embedding part is carried untouched and the residual part is a running scaled sum
    of block outputs: with 4 blocks the last block sees ``(o1 + o2)/2 + o3/sqrt(2)``, not
    Eq. 1's ``o3 + o2`` (the authors confirmed the release's form). No weights.

    Args:
        block_index: int >= 1, the 0-based index of the block this connection feeds.

    Call arguments:
        inputs: float ``[batch, length, hidden]``, the previous block's output.
        residual: float ``[batch, length, embed_dim (+ hidden)]``.

    Returns:
        float ``[batch, length, embed_dim + hidden]``.

    Reference: RE2 paper §2.1 Eq. 1 (with its 1/sqrt(2) scaling for n >= 3); release's
    ``AugmentedResidual``.
    """

    def __init__(self, block_index, **kwargs):
        super().__init__(**kwargs)
        if int(block_index) < 1:
            raise ValueError(f"block_index must be >= 1, got {block_index!r}")
        self.block_index = int(block_index)

    def call(self, inputs, residual):
        if self.block_index == 1:
            return ops.concatenate([residual, inputs], axis=-1)
        hidden = inputs.shape[-1]
        carried = residual[..., :-hidden]
        summed = (residual[..., -hidden:] + inputs) * math.sqrt(0.5)
        return ops.concatenate([carried, summed], axis=-1)

    def compute_output_shape(self, inputs_shape, residual_shape):
        width = residual_shape[-1] + (inputs_shape[-1] if self.block_index == 1 else 0)
        return tuple(residual_shape[:-1]) + (width,)

    def get_config(self):
        config = super().get_config()
        config["block_index"] = self.block_index
        return config


@keras.saving.register_keras_serializable(package="re2_tf")
class ResidualConnection(keras.layers.Layer):
    """Plain residual connection (Table 6 ablation "residual conn."), as in the release.

    ``out = (P(x) + res) * sqrt(1/2)`` where ``P`` is a linear weight-normalised dense layer
    to ``res``'s width when the widths differ, the identity otherwise.

    Call arguments:
        inputs: float ``[batch, length, hidden]``, the previous block's output.
        residual: float ``[batch, length, width]``, the previous block's input.

    Returns:
        float ``[batch, length, width]``.

    Reference: RE2 paper Table 6 (2); release's ``Residual`` connection.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.projection = None

    def build(self, inputs_shape, residual_shape):
        if inputs_shape[-1] != residual_shape[-1]:
            self.projection = WeightNormDense(
                residual_shape[-1], activation=None, dtype=self.dtype_policy, name="projection"
            )
            self.projection.build((None, None, inputs_shape[-1]))

    def call(self, inputs, residual):
        x = self.projection(inputs) if self.projection is not None else inputs
        return (x + residual) * math.sqrt(0.5)

    def compute_output_shape(self, inputs_shape, residual_shape):
        return tuple(residual_shape)
