"""MaskedBiLSTM's own recurrence (input projection hoisted out of the loop, one loop per
direction) against Keras' Bidirectional(LSTM) on the same weights, every weight random."""

import numpy as np
import pytest
import tensorflow as tf

from re2_tf.layers import MaskedBiLSTM

MASKS = np.array(
    [
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 0, 0, 0, 0],  # trailing padding, as the data path makes it
        [1, 0, 1, 1, 0, 1, 0],  # holes: Keras skips them in both directions
        [0, 0, 0, 0, 0, 0, 0],  # empty text
    ],
    "float32",
)


def random_layer(seed, units=5, dim=4, l2=0.0):
    rng = np.random.default_rng(seed)
    layer = MaskedBiLSTM(units, l2=l2)
    layer.build((None, None, dim))
    for variable in layer.weights:  # biases too: at Keras' init the forget bias hides bugs
        variable.assign(rng.normal(scale=0.7, size=variable.shape).astype("float32"))
    x = rng.normal(size=(len(MASKS), MASKS.shape[1], dim)).astype("float32")
    return layer, x


def keras_reference(layer, x, mask):
    outputs = layer.bilstm(x, mask=mask > 0)
    return outputs * mask[..., None]


def test_outputs_equal_keras_bidirectional_lstm_for_any_mask():
    layer, x = random_layer(0)
    ours = layer(x, MASKS[..., None]).numpy()
    np.testing.assert_allclose(ours, keras_reference(layer, x, MASKS), atol=2e-6)
    assert np.all(ours[MASKS == 0] == 0)
    # the backward half at a text's first token has read the whole text: not a padding state
    assert np.abs(ours[1, 0, 5:]).max() > 0


def test_gradients_equal_keras_for_inputs_and_every_weight():
    layer, x = random_layer(1)
    x = tf.constant(x)
    target = np.random.default_rng(2).normal(size=(len(MASKS), MASKS.shape[1], 10))

    def gradients(forward):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum((forward() - target) ** 2)
        return tape.gradient(loss, [x] + layer.trainable_weights)

    ours = gradients(lambda: layer(x, MASKS))
    keras_side = gradients(lambda: keras_reference(layer, x, MASKS))
    assert len(ours) == 7
    for a, b in zip(ours, keras_side):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_gradients_compile_under_xla_and_equal_keras():
    """An XLA-compiled training step (--jit_compile) differentiates the loop: XLA must be able
    to size the gradient's accumulators."""
    layer, x = random_layer(6)
    x = tf.constant(x)

    def gradients(forward):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(forward(x) ** 2)
        return tape.gradient(loss, [x] + layer.trainable_weights)

    ours = tf.function(lambda: gradients(lambda a: layer(a, MASKS)), jit_compile=True)()
    keras_side = gradients(lambda a: keras_reference(layer, a, MASKS))
    for a, b in zip(ours, keras_side):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_xla_and_graph_calls_agree_and_length_zero_has_a_shape():
    layer, x = random_layer(3)
    expected = keras_reference(layer, x, MASKS)
    for jit in (False, True):
        call = tf.function(lambda a, m: layer(a, m), jit_compile=jit)
        np.testing.assert_allclose(call(x, MASKS).numpy(), expected, atol=2e-6)
        empty = call(np.zeros((2, 0, 4), "float32"), np.zeros((2, 0), "float32"))
        assert empty.shape == (2, 0, 10)


def test_l2_reaches_both_kernels_of_both_directions_not_the_biases():
    layer, _ = random_layer(4, l2=0.01)
    cells = (layer.bilstm.forward_layer.cell, layer.bilstm.backward_layer.cell)
    expected = sum(
        0.01 * np.sum(np.square(w.numpy())) for c in cells for w in (c.kernel, c.recurrent_kernel)
    )
    assert float(sum(layer.losses)) == pytest.approx(expected, rel=1e-5)


def test_mixed_bfloat16_runs_in_bfloat16_close_to_float32():
    layer, x = random_layer(5)
    half = MaskedBiLSTM(5, dtype="mixed_bfloat16")
    half.build((None, None, 4))
    for a, b in zip(half.weights, layer.weights):
        a.assign(b)
    out = half(x, MASKS)
    assert out.dtype == tf.bfloat16
    np.testing.assert_allclose(
        out.numpy().astype("float32"), keras_reference(layer, x, MASKS), atol=0.08
    )
