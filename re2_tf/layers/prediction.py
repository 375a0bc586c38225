"""RE2's prediction layer (paper Eq. 5-7)."""

import keras
from keras import ops

from re2_tf.layers.weight_norm import WeightNormDense

PREDICTIONS = ("full", "symmetric", "simple")


def pair_features(a, b, prediction):
    """Matching features of two pooled vectors.

    ``full`` ``[a; b; a*b; a-b]`` (Eq. 5), ``symmetric`` ``[a; b; a*b; |a-b|]`` (Eq. 6),
    ``simple`` ``[a; b]`` (Eq. 7). The order of the terms is the release's.
    """
    if prediction == "full":
        return ops.concatenate([a, b, a * b, a - b], axis=-1)
    if prediction == "symmetric":
        return ops.concatenate([a, b, a * b, ops.abs(a - b)], axis=-1)
    if prediction == "simple":
        return ops.concatenate([a, b], axis=-1)
    raise ValueError(f"prediction must be one of {PREDICTIONS}, got {prediction!r}")


@keras.saving.register_keras_serializable(package="re2_tf")
class Prediction(keras.layers.Layer):
    """Two-layer feed-forward classifier over pair features (RE2 Eq. 5-7).

    ``logits = D2(dropout(gelu(D1(dropout(features(a, b))))))`` where ``D1`` is a
    weight-normalised GeLU dense layer to ``hidden_size`` and ``D2`` a linear one to
    ``num_classes``.

    Args:
        hidden_size: int, width of ``D1``.
        num_classes: int, number of output logits.
        prediction: ``"full"``, ``"symmetric"`` or ``"simple"``.
        dropout_rate: float, dropout before each dense layer.

    Call arguments:
        a, b: float ``[batch, dim]`` pooled representations of text1 and text2.
        training: bool, enables dropout.

    Returns:
        float ``[batch, num_classes]`` unnormalised logits (softmax cross-entropy loss).

    Reference: RE2 paper Eq. 5-7; release's ``Prediction``/``AdvancedPrediction``/
    ``SymmetricPrediction``.
    """

    def __init__(self, hidden_size, num_classes, prediction="full", dropout_rate=0.2, **kwargs):
        super().__init__(**kwargs)
        if prediction not in PREDICTIONS:
            raise ValueError(f"prediction must be one of {PREDICTIONS}, got {prediction!r}")
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes!r}")
        self.hidden_size = int(hidden_size)
        self.num_classes = int(num_classes)
        self.prediction = prediction
        self.dropout_rate = float(dropout_rate)
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.dense_1 = WeightNormDense(
            self.hidden_size, activation="gelu", dtype=self.dtype_policy, name="dense_1"
        )
        self.dense_2 = WeightNormDense(
            self.num_classes, activation=None, dtype=self.dtype_policy, name="dense_2"
        )

    def build(self, a_shape, b_shape):
        terms = 2 if self.prediction == "simple" else 4
        self.dense_1.build((None, terms * a_shape[-1]))
        self.dense_2.build((None, self.hidden_size))

    def call(self, a, b, training=None):
        x = self.dropout(pair_features(a, b, self.prediction), training=training)
        x = self.dropout(self.dense_1(x), training=training)
        return self.dense_2(x)

    def compute_output_shape(self, a_shape, b_shape):
        return (a_shape[0], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_classes=self.num_classes,
            prediction=self.prediction,
            dropout_rate=self.dropout_rate,
        )
        return config
