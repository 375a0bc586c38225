"""RE2's sequence encoder: a stack of same-padded convolutions."""

import keras

from re2_tf.layers.weight_norm import WeightNormConv1D

#: Activations of the encoder's convolutions: ``relu`` = the authors' TensorFlow release,
#: ``gelu`` (tanh approximation) = the authors' PyTorch port.
ENCODER_ACTIVATIONS = ("relu", "gelu")


@keras.saving.register_keras_serializable(package="re2_tf")
class ConvEncoder(keras.layers.Layer):
    """Multi-layer convolutional encoder with the release's masking and dropout placement.

    For each of ``enc_layers`` layers ``k``::

        x = mask * x
        if k > 0: x = dropout(x)
        x = act(conv1d_k(x))           # weight-normalised, `same` padding, `hidden_size` filters

    then ``dropout(x)`` after the last layer. Multiplying by the mask before every
    convolution makes padding behave like the convolution's own zero padding, so appending
    padding never changes the encoding of real tokens. (Dropout before the first
    convolution is the block input's own dropout: the embedding's, in block 0.)

    Args:
        hidden_size: int, filters per convolution.
        enc_layers: int, number of convolutions (RE2: 1-5, default 2).
        kernel_size: int, temporal width (RE2: 3).
        dropout_rate: float in [0, 1), drop probability (release: 0.2 = keep 0.8).
        activation: ``act``, one of :data:`ENCODER_ACTIVATIONS`: ``"relu"`` (default) as
            the authors' TensorFlow release (its conv helper keeps the ReLU it is given);
            ``"gelu"`` (tanh approximation) as the authors' PyTorch port
            (``alibaba-edu/simple-effective-text-matching-pytorch``), which applies GeLU
            after its convolutions. Both use He gain ``sqrt(2)``.

    Call arguments:
        inputs: float tensor ``[batch, length, dim]``.
        inputs_mask: float tensor ``[batch, length, 1]``, 1 on tokens, 0 on padding.
        training: bool, enables dropout.

    Returns:
        float tensor ``[batch, length, hidden_size]``; values at padding positions are
        not zeroed (everything downstream masks them).

    Raises:
        ValueError: ``enc_layers < 1`` or an ``activation`` outside
            :data:`ENCODER_ACTIVATIONS`.

    Reference: RE2 paper §2 (encoder, which names no activation); the TensorFlow release's
    ``Encoder`` (ReLU convolutions) and the PyTorch port's ``Encoder`` (GeLU convolutions).
    """

    def __init__(
        self,
        hidden_size,
        enc_layers=2,
        kernel_size=3,
        dropout_rate=0.2,
        activation="relu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(enc_layers) < 1:
            raise ValueError(f"enc_layers must be >= 1, got {enc_layers!r}")
        if activation not in ENCODER_ACTIVATIONS:
            raise ValueError(
                f"encoder activation must be one of {ENCODER_ACTIVATIONS}, got {activation!r}"
            )
        self.hidden_size = int(hidden_size)
        self.enc_layers = int(enc_layers)
        self.kernel_size = int(kernel_size)
        self.dropout_rate = float(dropout_rate)
        self.activation = activation
        self.convolutions = [
            WeightNormConv1D(
                self.hidden_size,
                self.kernel_size,
                activation=activation,
                dtype=self.dtype_policy,
                name=f"conv_{k}",
            )
            for k in range(self.enc_layers)
        ]
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        for conv in self.convolutions:
            conv.build((None, None, width))
            width = self.hidden_size

    def call(self, inputs, inputs_mask, training=None):
        x = inputs
        for k, conv in enumerate(self.convolutions):
            x = x * inputs_mask
            if k > 0:
                x = self.dropout(x, training=training)
            x = conv(x)
        return self.dropout(x, training=training)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            enc_layers=self.enc_layers,
            kernel_size=self.kernel_size,
            dropout_rate=self.dropout_rate,
            activation=self.activation,
        )
        return config
