"""RE2's fusion layer (paper Eq. 4)."""

import keras
from keras import ops

from re2_tf.layers.weight_norm import WeightNormDense

FUSIONS = ("full", "simple")


@keras.saving.register_keras_serializable(package="re2_tf")
class Fusion(keras.layers.Layer):
    """Fuse each position with its aligned representation (RE2 Eq. 4).

    ``full`` (Eq. 4)::

        x1 = G1([x; x'])        x2 = G2([x; x - x'])        x3 = G3([x; x * x'])
        out = G(dropout([x1; x2; x3]))

    ``simple`` (Table 6 ablation "simple fusion"): ``out = G1([x; x'])``.
    Every ``G`` is a weight-normalised GeLU dense layer to ``hidden_size`` with its own
    parameters; the layer is shared by the two sequences.

    Args:
        hidden_size: int, output width.
        fusion: ``"full"`` (default) or ``"simple"``.
        dropout_rate: float, dropout before ``G`` (``full`` only).

    Call arguments:
        inputs: float ``[batch, length, dim]`` — the block features ``x``.
        aligned: float ``[batch, length, dim]`` — ``x'`` from the alignment layer.
        training: bool, enables dropout.

    Returns:
        float ``[batch, length, hidden_size]``, the block output.

    Reference: RE2 paper Eq. 4 and Table 6; release's ``FullFusion`` / ``Fusion``.
    """

    def __init__(self, hidden_size, fusion="full", dropout_rate=0.2, **kwargs):
        super().__init__(**kwargs)
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
        self.hidden_size = int(hidden_size)
        self.fusion = fusion
        self.dropout_rate = float(dropout_rate)
        self.orig = WeightNormDense(
            self.hidden_size, activation="gelu", dtype=self.dtype_policy, name="orig"
        )
        if fusion == "full":
            self.sub = WeightNormDense(
                self.hidden_size, activation="gelu", dtype=self.dtype_policy, name="sub"
            )
            self.mul = WeightNormDense(
                self.hidden_size, activation="gelu", dtype=self.dtype_policy, name="mul"
            )
            self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
            self.proj = WeightNormDense(
                self.hidden_size, activation="gelu", dtype=self.dtype_policy, name="proj"
            )

    def build(self, inputs_shape, aligned_shape):
        width = 2 * inputs_shape[-1]
        self.orig.build((None, None, width))
        if self.fusion == "full":
            self.sub.build((None, None, width))
            self.mul.build((None, None, width))
            self.proj.build((None, None, 3 * self.hidden_size))

    def call(self, inputs, aligned, training=None):
        x, x_aligned = inputs, aligned
        fused = self.orig(ops.concatenate([x, x_aligned], axis=-1))
        if self.fusion == "simple":
            return fused
        fused = ops.concatenate(
            [
                fused,
                self.sub(ops.concatenate([x, x - x_aligned], axis=-1)),
                self.mul(ops.concatenate([x, x * x_aligned], axis=-1)),
            ],
            axis=-1,
        )
        return self.proj(self.dropout(fused, training=training))

    def compute_output_shape(self, inputs_shape, aligned_shape):
        return tuple(inputs_shape[:-1]) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size, fusion=self.fusion, dropout_rate=self.dropout_rate
        )
        return config
