"""BERT+MatchLSTM's MatchLSTM layers against an independent NumPy reference (forward,
backward, bidirectional; every weight random; padding in both texts; an empty A and an empty
B), padding invariance, parameter count, serialisation, symbolic vs eager, XLA and one
training step."""

import keras
import match_lstm_numpy_reference as ref
import numpy as np
import pytest
import tensorflow as tf
from roundtrip import assert_round_trips

from re2_tf.layers import BidirectionalMatchLSTM, MatchLSTM

UNITS, ATTENTION, DIM_B, DIM_A = 3, 4, 4, 3
WIDTH_B, WIDTH_A = 6, 5
# Rows: both texts full width; B shorter than A; an empty A; an empty B; short B, longer A.
LENGTHS_B = np.array([6, 3, 4, 0, 2])
LENGTHS_A = np.array([5, 2, 0, 3, 4])


# --------------------------------------------------------------------------- helpers
def masks(lengths, width):
    return (np.arange(width)[None, :] < np.asarray(lengths)[:, None]).astype("float32")


def batch(
    seed=0, lengths_b=LENGTHS_B, lengths_a=LENGTHS_A, width_b=WIDTH_B, width_a=WIDTH_A, padding=1e4
):
    """``h_b``, ``h_a`` standard normal on tokens and ``padding`` elsewhere, float masks
    ``[batch, len]``."""
    rng = np.random.default_rng(seed)
    mask_b, mask_a = masks(lengths_b, width_b), masks(lengths_a, width_a)
    h_b = rng.normal(0.0, 1.0, (len(lengths_b), width_b, DIM_B))
    h_a = rng.normal(0.0, 1.0, (len(lengths_a), width_a, DIM_A))
    h_b = np.where(mask_b[..., None] > 0, h_b, padding).astype("float32")
    h_a = np.where(mask_a[..., None] > 0, h_a, padding).astype("float32")
    return h_b, h_a, mask_b, mask_a


def randomize(layer, seed):
    """Every weight random (biases and the forget bias included): normal(0, 0.5), except
    ``W^A``, ``W^B``, ``W^s`` normal(0, 1) and the attention vector ``u`` normal(0, 4), so the
    attention logits spread over several units and move with ``h^B_i`` and ``s_(i-1)``."""
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        scale = (
            4.0
            if w.name == "attention_vector"
            else 1.0
            if w.name.startswith("attention_kernel")
            else 0.5
        )
        w.assign(rng.normal(0.0, scale, tuple(w.shape)).astype("float32"))


def built(seed=0, **options):
    layer = MatchLSTM(UNITS, attention_units=ATTENTION, **options)
    layer.build((None, None, DIM_B), (None, None, DIM_A))
    randomize(layer, seed)
    return layer


def built_bidirectional(seed=0, **options):
    layer = BidirectionalMatchLSTM(UNITS, attention_units=ATTENTION, **options)
    layer.build((None, None, DIM_B), (None, None, DIM_A))
    randomize(layer, seed)
    return layer


def params(layer):
    return {w.name: w.numpy() for w in layer.weights}


def reference(layer, h_b, h_a, go_backwards, lengths_b=LENGTHS_B, lengths_a=LENGTHS_A):
    return ref.match_lstm(params(layer), h_b, h_a, lengths_b, lengths_a, go_backwards)


# --------------------------------------------------------------------------- reference
@pytest.mark.parametrize("go_backwards", [False, True])
def test_matches_numpy_reference(go_backwards):
    layer = built(seed=1, go_backwards=go_backwards, return_sequences=True)
    h_b, h_a, mask_b, mask_a = batch(seed=2)
    # The masks come in different forms: float [batch, len, 1] and bool [batch, len].
    last, sequence = layer(h_b, h_a, mask_b[..., None], mask_a > 0)
    want_last, want_sequence, attention = reference(layer, h_b, h_a, go_backwards)
    assert last.shape == (5, UNITS) and sequence.shape == (5, WIDTH_B, UNITS)
    np.testing.assert_allclose(last, want_last, atol=1e-5, rtol=0)
    np.testing.assert_allclose(sequence, want_sequence, atol=1e-5, rtol=0)
    assert np.all(np.isfinite(last)) and np.all(np.isfinite(sequence))

    # The attention is far from uniform: at a typical step the largest weight is well above
    # 1 / |A|; it moves from step to step; the reference's weights sum to 1 over A's tokens.
    peaks = [
        attention[b, i, : LENGTHS_A[b]].max() - 1.0 / LENGTHS_A[b]
        for b in range(5)
        if LENGTHS_A[b] > 1
        for i in range(LENGTHS_B[b])
    ]
    assert len(peaks) == 11 and np.median(peaks) > 0.3, peaks
    assert np.abs(attention[0] - attention[0, :1]).max() > 0.1
    for b in range(5):
        if LENGTHS_A[b]:
            np.testing.assert_allclose(attention[b, : LENGTHS_B[b]].sum(-1), 1.0, atol=1e-12)

    # The last state is the sequence's state at B's last (forward) / first (backward) token.
    for b, n in enumerate(LENGTHS_B):
        if n:
            np.testing.assert_array_equal(last[b], sequence[b, 0 if go_backwards else n - 1])
        assert np.linalg.norm(want_last[b]) > 1e-3 or n == 0  # every real row has a state
    # An empty B gives exactly 0; an empty A (row 2) a real state with c_i = 0.
    np.testing.assert_array_equal(last[3], 0.0)
    np.testing.assert_array_equal(sequence[3], 0.0)
    np.testing.assert_array_equal(np.asarray(sequence) * (1 - mask_b[..., None]), 0.0)
    assert np.linalg.norm(last[2]) > 1e-3
    # Without return_sequences: the same last state.
    plain = MatchLSTM(UNITS, attention_units=ATTENTION, go_backwards=go_backwards)
    plain.build((None, None, DIM_B), (None, None, DIM_A))
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(plain(h_b, h_a, mask_b, mask_a), last, atol=1e-6, rtol=0)


def test_directions_differ_and_reference_sees_the_order():
    """Sanity check of the test itself: the backward scan is not the forward one, and the
    reference's backward pass is the forward pass over each row's reversed tokens."""
    layer = built(seed=3)
    h_b, h_a, _, _ = batch(seed=3)
    forward = reference(layer, h_b, h_a, False)[0]
    backward = reference(layer, h_b, h_a, True)[0]
    assert np.abs(forward - backward)[[0, 1, 2, 4]].min(axis=1).max() > 1e-3
    reversed_b = h_b.copy()
    for b, n in enumerate(LENGTHS_B):
        reversed_b[b, :n] = h_b[b, :n][::-1]
    np.testing.assert_allclose(reference(layer, reversed_b, h_a, False)[0], backward, atol=1e-12)


def test_bidirectional_matches_numpy_reference():
    layer = built_bidirectional(seed=4, return_sequences=True)
    h_b, h_a, mask_b, mask_a = batch(seed=5)
    last, sequence = layer(h_b, h_a, mask_b, mask_a)
    fwd_last, fwd_sequence, _ = reference(layer.forward_layer, h_b, h_a, False)
    bwd_last, bwd_sequence, _ = reference(layer.backward_layer, h_b, h_a, True)
    assert last.shape == (5, 2 * UNITS) and sequence.shape == (5, WIDTH_B, 2 * UNITS)
    np.testing.assert_allclose(last, np.concatenate([fwd_last, bwd_last], -1), atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        sequence, np.concatenate([fwd_sequence, bwd_sequence], -1), atol=1e-5, rtol=0
    )
    # The two directions have their own weights.
    assert not np.allclose(layer.forward_layer.kernel, layer.backward_layer.kernel)
    plain = BidirectionalMatchLSTM(UNITS, attention_units=ATTENTION)
    plain.build((None, None, DIM_B), (None, None, DIM_A))
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(plain(h_b, h_a, mask_b, mask_a), last, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(last[3], 0.0)


# --------------------------------------------------------------------------- padding
@pytest.mark.parametrize("direction", ["forward", "backward", "bidirectional"])
def test_appending_padding_leaves_outputs_unchanged(direction):
    layer = (
        built_bidirectional(seed=6, return_sequences=True)
        if direction == "bidirectional"
        else built(seed=6, go_backwards=direction == "backward", return_sequences=True)
    )
    h_b, h_a, mask_b, mask_a = batch(seed=6)
    last, sequence = (x.numpy() for x in layer(h_b, h_a, mask_b, mask_a))
    rng = np.random.default_rng(7)
    for extra_b, extra_a in ((3, 0), (0, 2), (3, 2)):
        pad_b = rng.normal(0.0, 5.0, (5, extra_b, DIM_B)).astype("float32")
        pad_a = rng.normal(0.0, 5.0, (5, extra_a, DIM_A)).astype("float32")
        got_last, got_sequence = layer(
            np.concatenate([h_b, pad_b], 1),
            np.concatenate([h_a, pad_a], 1),
            np.pad(mask_b, [(0, 0), (0, extra_b)]),
            np.pad(mask_a, [(0, 0), (0, extra_a)]),
        )
        np.testing.assert_allclose(got_last, last, atol=1e-6, rtol=0)
        np.testing.assert_allclose(got_sequence[:, :WIDTH_B], sequence, atol=1e-6, rtol=0)
        np.testing.assert_array_equal(got_sequence[:, WIDTH_B:], 0.0)
    # Non-finite padding values do not leak either.
    h_b_inf, h_a_inf, _, _ = batch(seed=6, padding=np.inf)
    got_last, got_sequence = layer(h_b_inf, h_a_inf, mask_b, mask_a)
    np.testing.assert_allclose(got_last, last, atol=1e-6, rtol=0)
    assert np.all(np.isfinite(got_sequence))


@pytest.mark.parametrize("go_backwards", [False, True])
def test_last_state_skips_trailing_padding_columns_eagerly_and_under_xla(go_backwards):
    # With only the last state out, the loop stops after B's last token in any row (a run-time
    # trip count): the numpy reference at the tight width, however many padding columns follow;
    # and a batch whose B is empty in every row gives zeros.
    layer = built(seed=8, go_backwards=go_backwards)
    h_b, h_a, mask_b, mask_a = batch(seed=8)
    want = reference(layer, h_b, h_a, go_backwards)[0]
    compiled = tf.function(layer, jit_compile=True)
    for extra in (0, 4):
        args = (
            np.pad(h_b, [(0, 0), (0, extra), (0, 0)], constant_values=7.0),
            h_a,
            np.pad(mask_b, [(0, 0), (0, extra)]),
            mask_a,
        )
        np.testing.assert_allclose(layer(*args), want, atol=1e-5, rtol=0)
        np.testing.assert_allclose(compiled(*args), want, atol=1e-5, rtol=0)
    empty = np.zeros_like(mask_b)
    np.testing.assert_array_equal(compiled(h_b, h_a, empty, mask_a), 0.0)


def test_empty_rows_have_finite_gradients_and_padding_gets_none():
    layer = built_bidirectional(seed=8)
    h_b, h_a, mask_b, mask_a = (tf.constant(x) for x in batch(seed=8, padding=0.0))
    probe = tf.constant(np.random.default_rng(8).normal(0, 1, (5, 2 * UNITS)), "float32")
    with tf.GradientTape() as tape:
        tape.watch([h_b, h_a])
        loss = tf.reduce_sum(layer(h_b, h_a, mask_b, mask_a) * probe)
    grads = tape.gradient(loss, [h_b, h_a] + layer.trainable_weights)
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert all(np.abs(g).max() > 0 for g in grads)  # every weight gets a gradient
    np.testing.assert_array_equal(grads[0] * (1 - mask_b[..., None]), 0.0)
    np.testing.assert_array_equal(grads[1] * (1 - mask_a[..., None]), 0.0)
    np.testing.assert_array_equal(grads[0][3], 0.0)  # empty B: nothing is read
    np.testing.assert_array_equal(grads[1][3], 0.0)
    assert np.abs(grads[0][2]).max() > 0  # empty A: B is still read


def test_zero_width_texts():
    """A batch whose B (or A) has no position at all: defined outputs, eager and graph."""
    layer = built_bidirectional(seed=14, return_sequences=True)
    h_b, h_a, mask_b, _ = batch(seed=14, padding=0.0)
    no_b, no_a = h_b[:, :0], h_a[:, :0]
    for graph in (False, True):
        run = tf.function(layer) if graph else layer
        last, sequence = run(no_b, h_a)
        assert sequence.shape == (5, 0, 2 * UNITS)
        np.testing.assert_array_equal(last, 0.0)
        last, sequence = run(h_b, no_a, mask_b)
        want = np.concatenate(
            [
                reference(layer.forward_layer, h_b, no_a, False, LENGTHS_B, [0] * 5)[0],
                reference(layer.backward_layer, h_b, no_a, True, LENGTHS_B, [0] * 5)[0],
            ],
            -1,
        )
        np.testing.assert_allclose(last, want, atol=1e-5, rtol=0)  # c_i = 0 throughout


# --------------------------------------------------------------------------- weights
def test_weight_shapes_parameter_count_and_initialisation():
    layer = MatchLSTM(UNITS, attention_units=ATTENTION)
    layer.build((None, None, DIM_B), (None, None, DIM_A))
    h, d, db, da = UNITS, ATTENTION, DIM_B, DIM_A
    assert {w.name: tuple(w.shape) for w in layer.weights} == {
        "attention_kernel_a": (da, d),
        "attention_kernel_b": (db, d),
        "attention_kernel_s": (h, d),
        "attention_bias": (d,),
        "attention_vector": (d,),
        "kernel": (db + da, 4 * h),
        "recurrent_kernel": (h, 4 * h),
        "bias": (4 * h,),
    }
    # By hand, H = 3, D = 4, d_B = 4, d_A = 3:
    #   attention: W^A 3*4 = 12, W^B 4*4 = 16, W^s 3*4 = 12, b 4, u 4     ->  48
    #   LSTM:      K (4+3)*12 = 84, R 3*12 = 36, b 12                     -> 132
    assert layer.count_params() == 180
    bidirectional = BidirectionalMatchLSTM(UNITS, attention_units=ATTENTION)
    bidirectional.build((None, None, DIM_B), (None, None, DIM_A))
    assert bidirectional.count_params() == 360
    assert len(bidirectional.trainable_weights) == 16
    # Keras' LSTM bias initialisation (unit_forget_bias): 1 on the forget block (i, f, c, o).
    np.testing.assert_array_equal(layer.bias, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(layer.attention_bias, 0.0)
    no_forget = MatchLSTM(2, unit_forget_bias=False)
    no_forget.build((None, None, 2), (None, None, 2))
    np.testing.assert_array_equal(no_forget.bias, 0.0)
    # attention_units defaults to units.
    assert MatchLSTM(7).attention_units == 7
    assert BidirectionalMatchLSTM(5).forward_layer.attention_units == 5


def test_invalid_arguments_raise():
    with pytest.raises(ValueError, match="units"):
        MatchLSTM(0)
    with pytest.raises(ValueError, match="attention_units"):
        MatchLSTM(3, attention_units=0)
    with pytest.raises(ValueError, match="h_a"):
        MatchLSTM(3).build((None, None, 4), (None, None, None))
    with pytest.raises(ValueError, match="h_b"):
        MatchLSTM(3).build((None, 4), (None, None, 4))


# --------------------------------------------------------------------------- Keras
def small_model(return_sequences=False):
    h_b = keras.Input((None, DIM_B), name="h_b")
    h_a = keras.Input((None, DIM_A), name="h_a")
    mask_b = keras.Input((None,), name="mask_b")
    mask_a = keras.Input((None,), name="mask_a")
    both = BidirectionalMatchLSTM(UNITS, attention_units=ATTENTION, name="bi")(
        h_b, h_a, mask_b, mask_a
    )
    backward = MatchLSTM(2, go_backwards=True, unit_forget_bias=False, name="backward")(
        h_b, h_a, mask_b, mask_a
    )
    features = keras.layers.Concatenate()([both, backward])
    return keras.Model([h_b, h_a, mask_b, mask_a], features)


def test_config_and_keras_file_round_trips(tmp_path):
    for layer in (
        MatchLSTM(
            4,
            attention_units=2,
            go_backwards=True,
            return_sequences=True,
            unit_forget_bias=False,
            kernel_initializer="he_normal",
            name="m",
        ),
        BidirectionalMatchLSTM(
            4,
            attention_units=6,
            return_sequences=True,
            recurrent_initializer="glorot_normal",
            name="bi",
        ),
    ):
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config
    model = small_model()
    rng = np.random.default_rng(9)
    for w in model.weights:
        w.assign(rng.normal(0.0, 0.5, tuple(w.shape)).astype("float32"))
    loaded = assert_round_trips(
        model, list(batch(seed=9, padding=0.0)), tmp_path / "match_lstm.keras"
    )
    assert loaded.get_layer("backward").go_backwards
    assert loaded.get_layer("bi").backward_layer.go_backwards
    assert not loaded.get_layer("bi").forward_layer.go_backwards


def test_symbolic_model_equals_eager_calls():
    model = small_model()
    rng = np.random.default_rng(10)
    for w in model.weights:
        w.assign(rng.normal(0.0, 0.5, tuple(w.shape)).astype("float32"))
    inputs = batch(seed=10)
    eager = np.concatenate(
        [model.get_layer("bi")(*inputs), model.get_layer("backward")(*inputs)], -1
    )
    np.testing.assert_allclose(model(list(inputs)), eager, atol=1e-6, rtol=0)
    assert model.output.shape == (None, 2 * UNITS + 2)


def test_runs_under_xla_with_the_same_values_and_gradients():
    layer = built_bidirectional(seed=11, return_sequences=True)
    probe = tf.constant(np.random.default_rng(11).normal(0, 1, (5, 2 * UNITS)), "float32")

    def run(h_b, h_a, mask_b, mask_a):
        with tf.GradientTape() as tape:
            tape.watch([h_b, h_a])
            last, sequence = layer(h_b, h_a, mask_b, mask_a)
            loss = tf.reduce_sum(last * probe) + tf.reduce_sum(sequence**2)
        return last, sequence, tape.gradient(loss, [h_b, h_a] + layer.trainable_weights)

    inputs = batch(seed=11, padding=0.0)
    args = [tf.constant(x) for x in inputs]
    eager = run(*args)
    xla = tf.function(run, jit_compile=True)(*args)
    for a, b in zip(tf.nest.flatten(eager), tf.nest.flatten(xla)):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    want = np.concatenate(
        [
            reference(layer.forward_layer, *inputs[:2], False)[0],
            reference(layer.backward_layer, *inputs[:2], True)[0],
        ],
        -1,
    )
    np.testing.assert_allclose(xla[0], want, atol=1e-5, rtol=0)


def test_one_fit_step_decreases_the_loss():
    keras.utils.set_random_seed(13)
    h_b = keras.Input((None, DIM_B))
    h_a = keras.Input((None, DIM_A))
    mask_b = keras.Input((None,))
    mask_a = keras.Input((None,))
    s = BidirectionalMatchLSTM(UNITS, name="bi")(h_b, h_a, mask_b, mask_a)
    score = keras.layers.Dense(1, activation="sigmoid")(s)
    model = keras.Model([h_b, h_a, mask_b, mask_a], score)
    model.compile(
        optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy", jit_compile=False
    )
    inputs = list(batch(seed=13, padding=0.0))
    labels = np.array([[1.0], [0.0], [1.0], [0.0], [1.0]], "float32")
    u_before = model.get_layer("bi").forward_layer.attention_vector.numpy()

    def loss():
        return float(keras.losses.binary_crossentropy(labels, model(inputs)).numpy().mean())

    before = loss()
    history = model.fit(inputs, labels, batch_size=5, epochs=1, verbose=0)
    assert history.history["loss"][0] == pytest.approx(before, rel=1e-4)  # one step, from here
    assert loss() < before - 1e-3
    assert not np.allclose(model.get_layer("bi").forward_layer.attention_vector, u_before)
