"""DRCN's autoencoder bottleneck with a masked reconstruction loss."""

import keras
from keras import ops

from re2_tf.layers.masking import global_batch_mean


@keras.saving.register_keras_serializable(package="re2_tf")
class Autoencoder(keras.layers.Layer):
    """Compress the densely connected features of both texts; add their reconstruction loss.

    For every position of either text, with ``x`` the ``D``-wide input::

        z  = dropout(act(x W_e + b_e))      # [units]: the code, the next layer's input
        x^ = z W_d + b_d                    # [D]: linear decoder

    and one loss term per call, added with ``add_loss``::

        loss = weight * sum_{real positions t of a and b} |x^_t - x_t|^2 / (D * n_real)

    i.e. the mean squared error over every feature of every real (non-padding) position of
    both texts of the batch (0 when the batch has no real position). Padding positions do not
    count, so appending padding to a text does not change the loss. Under ``tf.distribute``
    the mean is over the global batch's positions
    (:func:`re2_tf.layers.masking.global_batch_mean`).

    Readings chosen where the DRCN paper is silent (it gives "200 hidden units as encoded
    features of the autoencoder with a dropout rate of 0.2" and says the model minimises
    "the multi-class cross entropy loss and the reconstruction loss of autoencoders"):

    - the encoder's activation is ``activation`` (default ReLU); the decoder is linear,
      since its targets (LSTM states, attentive features, embeddings) are not bounded to an
      activation's range;
    - the dropout acts on the code; the decoder reconstructs from the same (dropped-out)
      code that the next layer reads;
    - the loss is a plain mean squared error with weight ``loss_weight`` (default 1: the
      paper adds the losses), and gradients flow into ``x`` as well ("trained end-to-end");
    - the loss is added in every call, training or not (it is a deterministic function of
      the inputs at inference), so an evaluation can report it; it never feeds the logits.
      The trainer logs it as ``loss_layer/<layer name>``.

    L2 (``l2 * sum(W**2)``) applies to ``W_e`` and ``W_d``, not to biases.

    Args:
        units: int >= 1, code width (paper: 200).
        dropout_rate: float in [0, 1), dropout on the code (paper: 0.2).
        activation: encoder activation (a Keras activation name; default ``"relu"``).
        loss_weight: float >= 0, factor on the reconstruction loss.
        l2: float >= 0, L2 factor on the kernels (paper: 1e-6).

    Call arguments:
        a: float ``[batch, len_a, D]``.
        b: float ``[batch, len_b, D]``.
        a_mask: float ``[batch, len_a, 1]``, 1 on tokens.
        b_mask: float ``[batch, len_b, 1]``, 1 on tokens.
        training: bool, enables dropout.

    Returns:
        ``(z_a [batch, len_a, units], z_b [batch, len_b, units])``, float32.

    Raises:
        ValueError: ``units`` below 1, a dropout rate outside [0, 1), a negative weight, or
            ``a`` and ``b`` of different widths.

    Reference: DRCN paper (Kim et al., AAAI 2019), "Bottleneck component", "Interaction and
    Prediction Layer" (the loss) and "Implementation Details".

    Example:

    ```python
    ae = Autoencoder(200)
    z_p, z_q = ae(x_p, x_q, mask_p, mask_q)  # ae.losses: [reconstruction MSE]
    ```
    """

    def __init__(
        self, units, dropout_rate=0.2, activation="relu", loss_weight=1.0, l2=0.0, **kwargs
    ):
        super().__init__(**kwargs)
        if int(units) < 1:
            raise ValueError(f"units must be >= 1, got {units!r}")
        if not 0.0 <= float(dropout_rate) < 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate!r}")
        if float(loss_weight) < 0:
            raise ValueError(f"loss_weight must be >= 0, got {loss_weight!r}")
        self.units = int(units)
        self.dropout_rate = float(dropout_rate)
        self.activation = keras.activations.serialize(keras.activations.get(activation))
        self.loss_weight = float(loss_weight)
        self.l2 = float(l2)
        self.encoder = keras.layers.Dense(
            self.units,
            activation=activation,
            kernel_regularizer=self._regularizer(),
            dtype=self.dtype_policy,
            name="encoder",
        )
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.decoder = None

    def _regularizer(self):
        return keras.regularizers.L2(self.l2) if self.l2 else None

    def build(self, input_shape):
        width = int(input_shape[-1])
        self.encoder.build((None, None, width))
        self.decoder = keras.layers.Dense(
            width,
            activation=None,
            kernel_regularizer=self._regularizer(),
            dtype=self.dtype_policy,
            name="decoder",
        )
        self.decoder.build((None, None, self.units))

    def _squared_error(self, x, mask, training):
        code = self.dropout(self.encoder(x), training=training)
        error = ops.sum(ops.square(self.decoder(code) - x), axis=-1, keepdims=True)
        return code, ops.sum(error * mask)

    def call(self, a, b, a_mask, b_mask, training=None):
        if a.shape[-1] != b.shape[-1]:
            raise ValueError(f"a and b must have the same width, got {a.shape} and {b.shape}")
        code_a, error_a = self._squared_error(a, a_mask, training)
        code_b, error_b = self._squared_error(b, b_mask, training)
        count = (ops.sum(a_mask) + ops.sum(b_mask)) * ops.cast(a.shape[-1], a_mask.dtype)
        # Over the real positions of the whole batch, also when replicas share it.
        loss = global_batch_mean(error_a + error_b, count, ops.shape(a)[0])
        self.add_loss(ops.cast(loss, "float32") * self.loss_weight)
        return code_a, code_b

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            dropout_rate=self.dropout_rate,
            activation=self.activation,
            loss_weight=self.loss_weight,
            l2=self.l2,
        )
        return config
