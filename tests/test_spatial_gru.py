"""Match-SRNN's layers: the wavefront spatial GRU and the cell-by-cell scan against an
independent NumPy reference (both directions, with and without reset gates, random weights,
padding in both texts), padding invariance of the true corner, a hand-worked 2 x 2 example,
empty texts, XLA, the neural tensor network, and serialisation."""

import math

import keras
import match_srnn_numpy_reference as ref
import numpy as np
import pytest
import tensorflow as tf
from weights import randomize_weights

from re2_tf.layers.neural_tensor import NeuralTensorNetwork
from re2_tf.layers.spatial_gru import SpatialGRU, cell_by_cell_spatial_gru

HIDDEN, CHANNELS = 3, 4
# Padded widths 5 x 6. Pairs: m = 1; m != n with n = the padded width; m = the padded width
# with a short second text; an inner block; the full grid.
LENGTHS1 = np.array([1, 3, 5, 4, 5])
LENGTHS2 = np.array([4, 6, 2, 3, 6])


# --------------------------------------------------------------------------- helpers
def masks(lengths, width):
    return (np.arange(width)[None, :] < np.asarray(lengths)[:, None]).astype("float32")


def batch(seed=0, lengths1=LENGTHS1, lengths2=LENGTHS2, width1=5, width2=6, padding=1e4):
    """``s`` with standard-normal true cells and ``padding`` everywhere else, and float masks
    ``[batch, len, 1]``."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, (len(lengths1), width1, width2, CHANNELS))
    m1, m2 = masks(lengths1, width1), masks(lengths2, width2)
    s = np.where((m1[:, :, None] * m2[:, None, :])[..., None] > 0, s, padding)
    return s.astype("float32"), m1[..., None], m2[..., None]


def built_layer(seed=0, units=HIDDEN, channels=CHANNELS, **options):
    layer = SpatialGRU(units, **options)
    layer.build((None, None, None, channels))
    randomize_weights(layer, seed)  # every weight, biases included: normal(0, 0.5)
    return layer


def params(layer):
    return {w.name: w.numpy() for w in layer.weights}


# --------------------------------------------------------------------------- reference
@pytest.mark.parametrize("reset_gates", [True, False])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_wavefront_matches_numpy_reference(go_backwards, reset_gates):
    layer = built_layer(seed=1, reset_gates=reset_gates, go_backwards=go_backwards)
    s, m1, m2 = batch(seed=2)
    # The masks come in different forms: float [batch, len, 1] and bool [batch, len].
    corner, grid = layer(s, m1, m2[..., 0] > 0, return_grid=True)
    want_corner, want_grid = ref.spatial_gru(params(layer), s, LENGTHS1, LENGTHS2, go_backwards)
    true = (m1 * m2[:, None, :, 0])[..., None] > 0  # [batch, m, n, 1]
    assert grid.shape == (5, 5, 6, HIDDEN) and corner.shape == (5, HIDDEN)
    np.testing.assert_allclose(np.where(true, grid, 0), want_grid, atol=1e-5, rtol=0)
    np.testing.assert_allclose(corner, want_corner, atol=1e-5, rtol=0)
    assert np.all(np.isfinite(grid))
    assert np.linalg.norm(want_corner, axis=1).min() > 1e-3  # every corner is a real state
    # The corner is the true corner's grid cell, not the padded corner.
    for b, (m, n) in enumerate(zip(LENGTHS1, LENGTHS2)):
        cell = (0, 0) if go_backwards else (m - 1, n - 1)
        np.testing.assert_array_equal(corner[b], grid[b][cell])
    # The corner alone (no grid) is the same.
    np.testing.assert_array_equal(layer(s, m1, m2), corner)


@pytest.mark.parametrize("reset_gates", [True, False])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_cell_by_cell_scan_matches_numpy_reference(go_backwards, reset_gates):
    layer = built_layer(seed=3, reset_gates=reset_gates, go_backwards=go_backwards)
    s, m1, m2 = batch(seed=4)
    corner = cell_by_cell_spatial_gru(layer, s, m1, m2)
    want, _ = ref.spatial_gru(params(layer), s, LENGTHS1, LENGTHS2, go_backwards)
    np.testing.assert_allclose(corner, want, atol=1e-5, rtol=0)
    np.testing.assert_allclose(corner, layer(s, m1, m2), atol=1e-6, rtol=0)


def test_wavefront_and_cell_by_cell_gradients_agree():
    layer = built_layer(seed=12, go_backwards=True)
    s, m1, m2 = batch(seed=12, padding=0.0)
    s = tf.constant(s)
    probe = tf.constant(np.random.default_rng(12).normal(0, 1, (5, HIDDEN)), "float32")
    grads = []
    for scan in (layer, lambda *a: cell_by_cell_spatial_gru(layer, *a)):
        with tf.GradientTape() as tape:
            tape.watch(s)
            loss = tf.reduce_sum(scan(s, m1, m2) * probe)
        grads.append(tape.gradient(loss, [s] + layer.trainable_weights))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    assert np.abs(grads[0][0]).max() > 0
    true = (m1 * m2[:, None, :, 0])[..., None] > 0
    np.testing.assert_array_equal(np.where(true, 0, grads[0][0]), 0)  # padding gets none


def test_reference_without_reset_gates_is_reset_gates_at_one():
    """Sanity check of the reference itself: r = 1 is what a huge reset bias gives."""
    p = params(built_layer(seed=5))
    s, _, _ = batch(seed=5)
    no_reset = {**p, "reset_kernel": None, "reset_bias": None}
    saturated = {**p, "reset_kernel": 0 * p["reset_kernel"], "reset_bias": 0 * p["reset_bias"] + 50}
    for go_backwards in (False, True):
        a = ref.spatial_gru(no_reset, s, LENGTHS1, LENGTHS2, go_backwards)[0]
        b = ref.spatial_gru(saturated, s, LENGTHS1, LENGTHS2, go_backwards)[0]
        np.testing.assert_allclose(a, b, atol=1e-12)


# --------------------------------------------------------------------------- padding
@pytest.mark.parametrize("go_backwards", [False, True])
def test_appending_padding_leaves_the_corner_unchanged(go_backwards):
    layer = built_layer(seed=6, go_backwards=go_backwards)
    s, m1, m2 = batch(seed=6, padding=0.0)
    corner = layer(s, m1, m2).numpy()
    for extra1, extra2 in ((3, 0), (0, 2), (3, 2)):
        rng = np.random.default_rng(extra1 + 10 * extra2)
        padded = np.pad(s, [(0, 0), (0, extra1), (0, extra2), (0, 0)])
        garbage = rng.normal(0.0, 5.0, padded.shape).astype("float32")
        padded[:, 5:] = garbage[:, 5:]  # the new rows and columns hold garbage
        padded[:, :, 6:] = garbage[:, :, 6:]
        p1 = np.pad(m1, [(0, 0), (0, extra1), (0, 0)])
        p2 = np.pad(m2, [(0, 0), (0, extra2), (0, 0)])
        np.testing.assert_allclose(layer(padded, p1, p2), corner, atol=1e-6, rtol=0)
    # Non-finite padding values of s do not leak either.
    s_inf = np.where(batch(seed=6, padding=np.inf)[0] == np.inf, np.inf, s)
    corner_inf, grid_inf = layer(s_inf, m1, m2, return_grid=True)
    np.testing.assert_allclose(corner_inf, corner, atol=1e-6, rtol=0)
    assert np.all(np.isfinite(grid_inf))


@pytest.mark.parametrize("go_backwards", [False, True])
def test_the_corner_alone_is_right_when_every_pair_is_shorter_than_the_padding(go_backwards):
    # The corner-only scan stops on the last pair's corner diagonal, max_b (m_b + n_b) - 2.
    # Here every pair leaves padding in both texts (widths 7 x 8), and the longest first
    # text (5) and the longest second text (6) are in different pairs, so that diagonal
    # (5 + 4 - 2 = 7) is before both max m + max n - 2 = 9 and the padded grid's last (13):
    # a scan that stopped one diagonal early would leave pair 2's corner at 0.
    lengths1, lengths2 = np.array([5, 2, 5, 1]), np.array([3, 6, 4, 1])
    layer = built_layer(seed=13, go_backwards=go_backwards)
    s, m1, m2 = batch(seed=13, lengths1=lengths1, lengths2=lengths2, width1=7, width2=8)
    want, _ = ref.spatial_gru(params(layer), s, lengths1, lengths2, go_backwards)
    assert np.linalg.norm(want, axis=1).min() > 1e-3
    xla = tf.function(lambda *a: layer(*a), jit_compile=True)
    for run in (layer, xla):
        np.testing.assert_allclose(run(s, m1, m2), want, atol=1e-5, rtol=0)


def test_empty_texts_give_finite_zeros():
    layer = built_layer(seed=7)
    backward = built_layer(seed=7, go_backwards=True)
    lengths1, lengths2 = np.array([0, 3, 0, 2]), np.array([4, 0, 0, 3])
    s, m1, m2 = batch(seed=7, lengths1=lengths1, lengths2=lengths2, width1=3, width2=4)
    for gru in (layer, backward):
        corner, grid = gru(s, m1, m2, return_grid=True)
        assert np.all(np.isfinite(grid)) and np.all(np.isfinite(corner))
        np.testing.assert_array_equal(corner[:3], 0.0)
        np.testing.assert_array_equal(grid[:3], 0.0)
        assert np.linalg.norm(corner[3]) > 0
        np.testing.assert_array_equal(cell_by_cell_spatial_gru(gru, s, m1, m2)[:3], 0.0)
        # Gradients through the scan are finite too.
        s_t = tf.constant(s)
        with tf.GradientTape() as tape:
            tape.watch(s_t)
            loss = tf.reduce_sum(gru(s_t, m1, m2) ** 2)
        grads = tape.gradient(loss, [s_t] + gru.trainable_weights)
        assert all(np.all(np.isfinite(g)) for g in grads)


@pytest.mark.parametrize("m,n", [(0, 0), (0, 4), (3, 0)])
def test_grids_of_width_zero_give_zeros_in_every_mode(m, n):
    # A batch whose padded width is 0 in one or both texts (m + n - 1 <= 0 anti-diagonals):
    # eager, a graph with unknown widths, and XLA all return zeros of the right shapes.
    layer = built_layer(seed=3)
    s = tf.constant(np.random.default_rng(3).normal(size=(2, m, n, CHANNELS)), tf.float32)
    dynamic = tf.function(
        lambda x: layer(x, return_grid=True),
        input_signature=[tf.TensorSpec([None, None, None, CHANNELS])],
    )
    xla = tf.function(lambda x: layer(x, return_grid=True), jit_compile=True)
    for run in (lambda x: layer(x, return_grid=True), dynamic, xla):
        corner, grid = run(s)
        np.testing.assert_array_equal(corner, np.zeros((2, HIDDEN), "float32"))
        assert grid.shape == (2, m, n, HIDDEN)


# --------------------------------------------------------------------------- by hand
def test_hand_worked_two_by_two_example():
    """H = 1, c = 1, s = [[1, 0], [0, 1]] with weights chosen so every number is simple:

    - reset gates: kernel 0, bias [ln 3, 0, -ln 3] -> r_l = 3/4, r_t = 1/2, r_d = 1/4;
    - update gates: kernel 0 except the s row [ln 3, 0, 0, 0], bias [0, ln 2, 0, 0]:
      s = 1 -> e^z = [3, 2, 1, 1] -> (z_i, z_l, z_t, z_d) = (3/7, 2/7, 1/7, 1/7);
      s = 0 -> e^z = [1, 2, 1, 1] -> (z_i, z_l, z_t, z_d) = (1/5, 2/5, 1/5, 1/5);
    - candidate: W = 1, U = [1, 1, 1], b = 0 -> h' = tanh(s + 3/4 left + 1/2 top + 1/4 diag).

    By hand (1-based cells, boundary 0):
      h11: s=1, no neighbours:          h' = tanh(1) = 0.7615942
           h11 = 3/7 * 0.7615942                              = 0.3263975
      h12: s=0, left = h11:             h' = tanh(3/4 * 0.3263975) = tanh(0.2447981) = 0.2400226
           h12 = 2/5 * 0.3263975 + 1/5 * 0.2400226            = 0.1785635
      h21: s=0, top = h11:              h' = tanh(1/2 * 0.3263975) = tanh(0.1631987) = 0.1617651
           h21 = 1/5 * 0.3263975 + 1/5 * 0.1617651            = 0.0976325
      h22: s=1, left = h21, top = h12, diag = h11:
           h' = tanh(1 + 3/4 * 0.0976325 + 1/2 * 0.1785635 + 1/4 * 0.3263975)
              = tanh(1.2441055) = 0.8466225
           h22 = 2/7 * 0.0976325 + 1/7 * 0.1785635 + 1/7 * 0.3263975 + 3/7 * 0.8466225
               = 0.4628705
    Note h12 != h21: left and top are gated differently. The backward scan of this
    s (unchanged by reversing both texts) has the same corner h22.
    """
    l2, l3 = math.log(2.0), math.log(3.0)
    weights = {
        "reset_kernel": np.zeros((4, 3)),
        "reset_bias": np.array([l3, 0.0, -l3]),
        "update_kernel": np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [l3, 0, 0, 0]]),
        "update_bias": np.array([0.0, l2, 0.0, 0.0]),
        "input_kernel": np.array([[1.0]]),
        "recurrent_kernel": np.array([[1.0], [1.0], [1.0]]),
        "bias": np.array([0.0]),
    }
    want = np.array([[0.3263975, 0.1785635], [0.0976325, 0.4628705]])
    s = np.array([[[[1.0], [0.0]], [[0.0], [1.0]]]], "float32")  # [1, 2, 2, 1]
    for go_backwards in (False, True):
        layer = SpatialGRU(1, go_backwards=go_backwards)
        layer.build(s.shape)
        for w in layer.weights:
            w.assign(weights[w.name].astype("float32"))
        corner, grid = layer(s, return_grid=True)
        assert float(corner[0, 0]) == pytest.approx(0.4628705, abs=1e-6)
        if not go_backwards:
            np.testing.assert_allclose(grid[0, :, :, 0], want, atol=1e-6)
        assert float(cell_by_cell_spatial_gru(layer, s)[0, 0]) == pytest.approx(0.4628705, abs=1e-6)
    np.testing.assert_allclose(ref.spatial_gru_pair(weights, s[0])[1:, 1:, 0], want, atol=1e-6)


# --------------------------------------------------------------------------- XLA
def test_runs_under_xla_with_the_same_numbers_and_gradients():
    layer = built_layer(seed=8, go_backwards=True)
    forward = built_layer(seed=9)
    s, m1, m2 = batch(seed=8)

    def run(s, m1, m2):
        with tf.GradientTape() as tape:
            tape.watch(s)
            corner, grid = layer(s, m1, m2, return_grid=True)
            loss = tf.reduce_sum(corner**2) + tf.reduce_sum(forward(s, m1, m2))
        grads = tape.gradient(loss, [s] + layer.trainable_weights + forward.trainable_weights)
        return corner, grid, forward(s, m1, m2), grads

    args = [tf.constant(x) for x in (s, m1, m2)]
    eager = run(*args)
    xla = tf.function(run, jit_compile=True)(*args)
    for a, b in zip(tf.nest.flatten(eager), tf.nest.flatten(xla)):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)
    corner_xla = tf.function(lambda *a: cell_by_cell_spatial_gru(layer, *a), jit_compile=True)(
        *args
    )
    np.testing.assert_allclose(corner_xla, eager[0], atol=1e-5)


# --------------------------------------------------------------------------- NTN
def test_neural_tensor_network_matches_numpy_reference():
    rng = np.random.default_rng(10)
    u = rng.normal(0.0, 1.0, (3, 4, 5)).astype("float32")
    v = rng.normal(0.0, 1.0, (3, 6, 5)).astype("float32")
    ntn = NeuralTensorNetwork(slices=7)
    ntn.build(u.shape)
    randomize_weights(ntn, 10)
    assert {w.name: tuple(w.shape) for w in ntn.weights} == {
        "tensor": (7, 5, 5),
        "kernel": (10, 7),
        "bias": (7,),
    }
    s = ntn(u, v).numpy()
    p = params(ntn)
    np.testing.assert_allclose(s, ref.neural_tensor_network(p, u, v), atol=1e-5, rtol=0)
    assert s.shape == (3, 4, 6, 7) and 0.2 < np.mean(s > 0) < 0.8  # the ReLU cuts some
    linear = NeuralTensorNetwork(slices=7, activation="linear")
    linear.build(u.shape)
    linear.set_weights(ntn.get_weights())
    np.testing.assert_allclose(
        linear(u, v), ref.neural_tensor_network(p, u, v, None), atol=1e-5, rtol=0
    )
    with pytest.raises(ValueError, match="5 wide"):
        ntn(u, v[..., :4])
    with pytest.raises(ValueError, match="slices"):
        NeuralTensorNetwork(slices=0)


# --------------------------------------------------------------------------- weights, configs
def test_weight_names_and_shapes():
    layer = SpatialGRU(HIDDEN)
    layer.build((None, None, None, CHANNELS))
    h, c = HIDDEN, CHANNELS
    assert {w.name: tuple(w.shape) for w in layer.weights} == {
        "reset_kernel": (3 * h + c, 3 * h),
        "reset_bias": (3 * h,),
        "update_kernel": (3 * h + c, 4 * h),
        "update_bias": (4 * h,),
        "input_kernel": (c, h),
        "recurrent_kernel": (3 * h, h),
        "bias": (h,),
    }
    no_reset = SpatialGRU(HIDDEN, reset_gates=False)
    no_reset.build((None, None, None, CHANNELS))
    assert {w.name for w in no_reset.weights} == {
        "update_kernel",
        "update_bias",
        "input_kernel",
        "recurrent_kernel",
        "bias",
    }
    assert SpatialGRU().units == 10
    with pytest.raises(ValueError, match="units"):
        SpatialGRU(0)


def test_get_config_and_keras_file_round_trips(tmp_path):
    for layer in (
        SpatialGRU(4, reset_gates=False, go_backwards=True, name="gru"),
        NeuralTensorNetwork(3, activation="tanh", name="ntn"),
    ):
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config

    # A small Bi-Match-SRNN: word vectors -> NTN -> forward and backward spatial GRUs.
    u = keras.Input((None, 5), name="u")
    v = keras.Input((None, 5), name="v")
    mu = keras.Input((None,), name="mask1")
    mv = keras.Input((None,), name="mask2")
    s = NeuralTensorNetwork(4, name="ntn")(u, v)
    h_f = SpatialGRU(3, name="forward")(s, mu, mv)
    h_b, grid = SpatialGRU(3, go_backwards=True, name="backward")(s, mu, mv, return_grid=True)
    score = keras.layers.Dense(1, name="score")(keras.layers.Concatenate()([h_f, h_b]))
    model = keras.Model([u, v, mu, mv], [score, grid])
    randomize_weights(model, 11)

    rng = np.random.default_rng(11)
    inputs = [
        rng.normal(0, 1, (2, 4, 5)).astype("float32"),
        rng.normal(0, 1, (2, 3, 5)).astype("float32"),
        masks([4, 2], 4),
        masks([1, 3], 3),
    ]
    outputs = [x.numpy() for x in model(inputs)]
    path = tmp_path / "bi_match_srnn.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    for a, b in zip(loaded(inputs), outputs):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=1e-6)
    assert loaded.get_layer("backward").go_backwards
    clone = keras.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(inputs)[0], outputs[0], atol=1e-6, rtol=1e-6)
