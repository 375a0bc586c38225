"""DRCN's interaction and prediction layer (paper Eq. 7 and the classifier after it)."""

import keras
from keras import ops


def interaction_features(p, q):
    """``v = [p; q; p + q; p - q; |p - q|]`` (DRCN Eq. 7), along the last axis."""
    return ops.concatenate([p, q, p + q, p - q, ops.abs(p - q)], axis=-1)


@keras.saving.register_keras_serializable(package="re2_tf")
class InteractionPrediction(keras.layers.Layer):
    """Aggregate two pooled sentence vectors and classify them.

    ::

        v = [p; q; p + q; p - q; |p - q|]                     # Eq. 7, 5 * dim
        x = v
        repeat fc_layers times:  x = ReLU(BN?(dropout(x) W_k + b_k))
        logits = x W_o + b_o

    Readings chosen where the paper is not explicit: the dropout ("applied before the
    fully-connected layers with a keep rate of 0.8") precedes each hidden FC layer, not the
    output layer; with ``batch_norm`` ("applied on the fully-connected layers, only for the
    one-way type datasets") each hidden FC layer is ``Dense -> BatchNormalization -> ReLU``
    (Keras defaults: momentum 0.99, epsilon 1e-3; the dense bias is kept; batch statistics
    over the global batch when training under ``tf.distribute``, ``synchronized=True``, so
    replicas normalise as one process does). L2
    (``l2 * sum(W**2)``) applies to every kernel, not to biases or batch-norm parameters.

    Args:
        num_classes: int >= 1, number of logits.
        units: int >= 1, width of each hidden FC layer (paper: 1000).
        fc_layers: int >= 1, hidden FC layers (paper: 2).
        dropout_rate: float in [0, 1), dropout before each hidden FC layer (paper: 0.2).
        batch_norm: bool, batch normalisation on the hidden FC layers.
        l2: float >= 0, L2 factor on the kernels (paper: 1e-6).

    Call arguments:
        p, q: float ``[batch, dim]`` pooled representations of text1 and text2.
        training: bool, enables dropout and batch statistics.

    Returns:
        float32 ``[batch, num_classes]`` unnormalised logits (softmax cross-entropy).

    Raises:
        ValueError: a size below 1 or a dropout rate outside [0, 1).

    Reference: DRCN paper (Kim et al., AAAI 2019), "Interaction and Prediction Layer"
    (Eq. 7) and "Implementation Details".

    Example:

    ```python
    logits = InteractionPrediction(3, units=1000, batch_norm=True)(p, q)  # [batch, 3]
    ```
    """

    def __init__(
        self,
        num_classes,
        units=1000,
        fc_layers=2,
        dropout_rate=0.2,
        batch_norm=False,
        l2=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("num_classes", num_classes),
            ("units", units),
            ("fc_layers", fc_layers),
        ):
            if int(value) < 1:
                raise ValueError(f"{name} must be >= 1, got {value!r}")
        if not 0.0 <= float(dropout_rate) < 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate!r}")
        self.num_classes = int(num_classes)
        self.units = int(units)
        self.fc_layers = int(fc_layers)
        self.dropout_rate = float(dropout_rate)
        self.batch_norm = bool(batch_norm)
        self.l2 = float(l2)
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.hidden = [
            keras.layers.Dense(
                self.units,
                kernel_regularizer=self._regularizer(),
                dtype=self.dtype_policy,
                name=f"fc{k + 1}",
            )
            for k in range(self.fc_layers)
        ]
        self.norms = (
            [
                keras.layers.BatchNormalization(
                    synchronized=True, dtype=self.dtype_policy, name=f"fc{k + 1}_batch_norm"
                )
                for k in range(self.fc_layers)
            ]
            if self.batch_norm
            else []
        )
        self.output_layer = keras.layers.Dense(
            self.num_classes,
            kernel_regularizer=self._regularizer(),
            dtype=self.dtype_policy,
            name="output",
        )

    def _regularizer(self):
        return keras.regularizers.L2(self.l2) if self.l2 else None

    def build(self, p_shape):
        width = 5 * int(p_shape[-1])
        for k, dense in enumerate(self.hidden):
            dense.build((None, width))
            if self.batch_norm:
                self.norms[k].build((None, self.units))
            width = self.units
        self.output_layer.build((None, width))

    def call(self, p, q, training=None):
        x = interaction_features(p, q)
        for k, dense in enumerate(self.hidden):
            x = dense(self.dropout(x, training=training))
            if self.batch_norm:
                x = self.norms[k](x, training=training)
            x = ops.relu(x)
        return self.output_layer(x)

    def compute_output_shape(self, p_shape):
        return (p_shape[0], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            units=self.units,
            fc_layers=self.fc_layers,
            dropout_rate=self.dropout_rate,
            batch_norm=self.batch_norm,
            l2=self.l2,
        )
        return config
