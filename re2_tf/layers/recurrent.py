"""Masked bidirectional LSTM (DRCN's recurrent layer ``H_l``, FITN's per-round BiLSTM).

The recurrence is a ``tf.while_loop`` written with TensorFlow ops, like
:mod:`re2_tf.layers.match_lstm`: the input projection ``x_t W + b`` of both directions is one
matrix product over every position before the loops, so each step of a direction's loop is
one ``h_{t-1} U`` product and the gate arithmetic. The two directions are two loops with
nothing between them, which TensorFlow runs side by side (one loop for both, with a
block-diagonal ``U``, would serialise what the two loops overlap).
"""

import keras
import tensorflow as tf

from re2_tf._compat import outside_object_sharing


def lstm_cell_update(z, cell):
    """Keras' LSTM cell update from the gate pre-activations (Hochreiter & Schmidhuber 1997).

    Args:
        z: float ``[batch, 4H]``, ``x_t W + h_{t-1} U + b``, gate blocks ``i, f, c~, o``.
        cell: float ``[batch, H]``, ``c_{t-1}``.

    Returns:
        ``(h_t, c_t)``, float ``[batch, H]`` each: ``c_t = sigmoid(z_f) * c_{t-1} +
        sigmoid(z_i) * tanh(z_c)``, ``h_t = sigmoid(z_o) * tanh(c_t)``.
    """
    gate_i, gate_f, candidate, gate_o = tf.split(z, 4, axis=-1)
    new_cell = tf.sigmoid(gate_f) * cell + tf.sigmoid(gate_i) * tf.tanh(candidate)
    return tf.sigmoid(gate_o) * tf.tanh(new_cell), new_cell


def _lstm_recurrence(projected, tokens, recurrent, litert=False):
    """One direction of an LSTM over precomputed input projections (Keras' LSTM cell).

    Args:
        projected: float ``[length, batch, 4H]``, ``x_t W + b`` per step, gate blocks
            ``i, f, c~, o``.
        tokens: bool ``[length, batch, 1]``; a False step leaves the states unchanged.
        recurrent: float ``[H, 4H]``, ``U``.
        litert: collect the outputs in a ``[length, batch, H]`` loop state, step ``t``
            selected into row ``t``, instead of a TensorArray, whose ``TensorListReserve``
            with a dynamic batch the TFLite converter cannot lower (a select over all the
            outputs per step: for export to LiteRT only).

    Returns:
        float ``[length, batch, H]``: ``h_t`` after each step (the carried state at a
        False step).
    """
    steps, batch = tf.shape(projected)[0], tf.shape(projected)[1]
    units = int(recurrent.shape[0])
    # Token flags as wide as the state: the per-step select then needs no broadcast.
    tokens = tf.broadcast_to(tokens, tf.stack([steps, batch, units]))
    # One spare (never read) step, so that XLA, which compiles the loop body even when it
    # never runs, can index these for a text of length 0.
    padding = [[0, 1], [0, 0], [0, 0]]
    # Per-step reads from TensorArrays: a slice's gradient would be a dense tensor of the
    # whole input at every step (see re2_tf/layers/match_lstm.py).
    projected, tokens = (
        tf.TensorArray(t.dtype, size=steps + 1, element_shape=t.shape[1:]).unstack(
            tf.pad(t, padding)
        )
        for t in (projected, tokens)
    )

    def body(t, state, cell, outputs):
        z = projected.read(t) + tf.matmul(state, recurrent)  # [batch, 4H]
        new_state, new_cell = lstm_cell_update(z, cell)
        token = tokens.read(t)
        state = tf.where(token, new_state, state)
        cell = tf.where(token, new_cell, cell)
        if litert:
            row = tf.reshape(tf.equal(positions, t), [-1, 1, 1])
            return t + 1, state, cell, tf.where(row, tf.expand_dims(state, 0), outputs)
        return t + 1, state, cell, outputs.write(t, state)

    start = tf.zeros(tf.stack([batch, units]), recurrent.dtype)
    if litert:
        positions = tf.range(steps)
        _, _, _, outputs = tf.while_loop(
            lambda t, *_: t < steps,
            body,
            (tf.constant(0), start, start, tf.zeros(tf.stack([steps, batch, units]), start.dtype)),
            maximum_iterations=steps,
        )
        return outputs
    outputs = tf.TensorArray(recurrent.dtype, size=steps, element_shape=[None, units])
    # maximum_iterations: XLA needs it to size the gradient's accumulators.
    _, _, _, outputs = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (tf.constant(0), start, start, outputs),
        maximum_iterations=steps,
    )
    # The reshape gives an empty stack (length 0) its shape.
    return tf.reshape(outputs.stack(), tf.stack([steps, batch, units]))


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

    The weights are those of a Keras ``Bidirectional(LSTM)`` (``self.bilstm``, kept so that
    checkpoints and ``.keras`` files keep their layout), but the layer computes the
    recurrence itself: Keras' LSTM on CPU multiplies ``x_t W`` inside its loop, one small
    product per step and, in the gradient, one ``dW`` per step summed by ``AddN``; here
    ``x W + b`` is one product over all positions of both directions before the loop and
    ``dW`` one product after it. The backward direction reverses the whole row, as Keras
    does, so any mask (not only trailing padding) gives Keras' result; tests/test_recurrent.py
    checks the two against each other with every weight random.

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

    #: While True, the recurrence collects its outputs in a form the TFLite converter lowers
    #: (``_lstm_recurrence(litert=True)``); the same values. The TFLite export sets it while
    #: it traces (:func:`re2_tf.serving.export.litert_loop_form`).
    litert_loop_form = False

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
        dtype = self.compute_dtype
        x = tf.cast(tf.convert_to_tensor(inputs), dtype)
        mask = tf.convert_to_tensor(inputs_mask)
        if mask.shape.rank == 3:
            mask = tf.squeeze(mask, axis=-1)
        mask = tf.greater(mask, tf.zeros([], mask.dtype))  # [batch, length]
        forward, backward = self.bilstm.forward_layer.cell, self.bilstm.backward_layer.cell
        kernel_f, kernel_b, bias_f, bias_b, recurrent_f, recurrent_b = (
            tf.cast(tf.convert_to_tensor(v), dtype)
            for v in (
                forward.kernel,
                backward.kernel,
                forward.bias,
                backward.bias,
                forward.recurrent_kernel,
                backward.recurrent_kernel,
            )
        )
        units, dim = self.units, int(x.shape[-1])
        batch, steps = tf.shape(x)[0], tf.shape(x)[1]

        # x_t W + b of both directions at every position: one [batch * length, 8H] product.
        projected = tf.matmul(
            tf.reshape(x, [-1, dim]), tf.concat([kernel_f, kernel_b], axis=1)
        ) + tf.concat([bias_f, bias_b], axis=0)
        projected = tf.transpose(tf.reshape(projected, [batch, steps, 8 * units]), [1, 0, 2])
        ahead, behind = tf.split(projected, 2, axis=-1)  # [length, batch, 4H] each
        tokens = tf.expand_dims(tf.transpose(mask), -1)  # [length, batch, 1]
        # Two loops with nothing between them: TensorFlow runs them side by side. The
        # backward one reads the reversed row (Keras' go_backwards).
        litert = self.litert_loop_form
        ahead = _lstm_recurrence(ahead, tokens, recurrent_f, litert)
        behind = _lstm_recurrence(
            tf.reverse(behind, axis=[0]), tf.reverse(tokens, axis=[0]), recurrent_b, litert
        )
        outputs = tf.concat([ahead, tf.reverse(behind, axis=[0])], axis=-1)
        outputs = tf.transpose(outputs, [1, 0, 2])  # [batch, length, 2H]
        # Zero at padding, as Keras' Bidirectional gives it.
        return outputs * tf.expand_dims(tf.cast(mask, dtype), -1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (2 * self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, l2=self.l2)
        return config
