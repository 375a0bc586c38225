"""Masked bidirectional LSTM (DRCN's recurrent layer ``H_l``)."""

import keras
from keras import ops

from re2_tf._compat import outside_object_sharing


@keras.saving.register_keras_serializable(package="re2_tf")
class MaskedBiLSTM(keras.layers.Layer):
    """Bidirectional LSTM over the real tokens of each text; padding never enters a state.

    Each direction is a Keras ``LSTM`` (gates ``i, f, c~, o`` in that order in the kernel's
    columns, sigmoid gates, tanh cell and output)::

        z_t = x_t W + h_{t-1} U + b
        i, f, o = sigmoid(z_i), sigmoid(z_f), sigmoid(z_o);  c~ = tanh(z_c)
        c_t = f * c_{t-1} + i * c~;  h_t = o * tanh(c_t)

    run forward over positions ``1 .. n`` and backward over ``n .. 1`` of a text of ``n``
    real tokens (padding at the end of the row, as the data path makes it): the padding
    mask is passed to Keras' recurrence, so a padding step leaves the state unchanged and
    the backward direction starts at the last real token, not at the padding. Outputs at
    padding positions are zero. Both directions start from zero states. The output is
    ``[h_forward; h_backward]``.

    ``units`` is per direction: the DRCN paper's "100 hidden units" is read as 100 per
    direction (200-d BiLSTM output), the reading under which the paper's SNLI model has
    about 6.7M parameters (see ``re2_tf/models/drcn.py``).

    L2 (``l2 * sum(w**2)``) is applied to the input and recurrent kernels of both
    directions, not to biases (the paper: "all weights except embedding matrices"; biases
    are read as not being "weights").

    Args:
        units: int >= 1, hidden units per direction (paper: 100).
        l2: float >= 0, L2 factor on the kernels (paper: 1e-6).

    Call arguments:
        inputs: float ``[batch, length, dim]``.
        inputs_mask: float ``[batch, length, 1]`` (or ``[batch, length]``), 1 on tokens.

    Returns:
        float32 ``[batch, length, 2 * units]``; zero at padding positions.

    Raises:
        ValueError: ``units`` below 1.

    Reference: DRCN paper (Kim et al., AAAI 2019), "Densely connected Recurrent Networks"
    (BiLSTM as ``H_l``, Eq. 2) and "Implementation Details"; Hochreiter & Schmidhuber (1997).

    Example:

    ```python
    layer = MaskedBiLSTM(100)
    h = layer(x, mask)  # x [batch, len, dim], mask [batch, len, 1] -> [batch, len, 200]
    ```
    """

    def __init__(self, units, l2=0.0, **kwargs):
        super().__init__(**kwargs)
        if int(units) < 1:
            raise ValueError(f"units must be >= 1, got {units!r}")
        self.units = int(units)
        self.l2 = float(l2)
        regularizer = keras.regularizers.L2(self.l2) if self.l2 else None
        # keras.layers.Bidirectional serialises and deserialises copies of the LSTM it wraps.
        # Inside keras.saving.load_model's object-sharing scope those round trips record
        # objects by id(); a freed template's id can be reused by a later one, and Keras then
        # handed back an earlier *backward* LSTM as the new forward layer ("Forward layer and
        # backward layer should have different `go_backwards` value"; about one load in a
        # hundred layers). The copies are private to this layer, so they need no sharing
        # (tests/test_drcn.py has the regression test).
        with outside_object_sharing():
            self.bilstm = keras.layers.Bidirectional(
                keras.layers.LSTM(
                    self.units,
                    return_sequences=True,
                    dtype=self.dtype_policy,
                    kernel_regularizer=regularizer,
                    recurrent_regularizer=regularizer,
                ),
                merge_mode="concat",
                dtype=self.dtype_policy,
                name="bidirectional",
            )

    def build(self, input_shape):
        self.bilstm.build((None, None, input_shape[-1]))

    def call(self, inputs, inputs_mask):
        mask = ops.greater(inputs_mask, 0)
        if len(mask.shape) == 3:
            mask = ops.squeeze(mask, axis=-1)
        outputs = self.bilstm(inputs, mask=mask)
        # Zero at padding (Keras' Bidirectional already gives 0 there; this makes it this
        # layer's guarantee) and a new tensor: no Keras mask travels on to layers that take
        # the padding mask explicitly.
        return outputs * ops.cast(ops.expand_dims(mask, -1), outputs.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (2 * self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, l2=self.l2)
        return config
