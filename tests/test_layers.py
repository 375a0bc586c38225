"""Layer-level checks against NumPy and hand-worked values, and config round trips."""

import math

import keras
import numpy as np
import pytest

from re2_tf import layers as L


def test_gelu_is_the_tanh_approximation():
    x = np.linspace(-6, 6, 101).astype("float32")
    expected = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(np.asarray(L.gelu(x)), expected, atol=1e-6)
    # and it is not the exact erf GeLU: they differ by ~1e-4 near |x| = 2
    assert abs(float(L.gelu(np.float32(2.0))) - 1.9545977) < 1e-5


def test_unknown_activation_raises():
    with pytest.raises(ValueError, match="activation"):
        L.WeightNormDense(3, activation="swish")


def test_weight_norm_dense_kernel_is_v_over_norm_times_g():
    layer = L.WeightNormDense(4, activation=None)
    layer.build((None, 3))
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, 4)).astype("float32")
    g = rng.uniform(0.5, 2, size=4).astype("float32")
    b = rng.normal(size=4).astype("float32")
    layer.set_weights([v, g, b])
    w = v / np.linalg.norm(v, axis=0, keepdims=True) * g
    np.testing.assert_allclose(np.asarray(layer.kernel), w, rtol=1e-5)
    # each column of W has norm g
    np.testing.assert_allclose(np.linalg.norm(np.asarray(layer.kernel), axis=0), g, rtol=1e-5)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    np.testing.assert_allclose(np.asarray(layer(x)), x @ w + b, rtol=1e-5, atol=1e-6)


def test_weight_norm_floor_avoids_nan_for_a_zero_kernel():
    layer = L.WeightNormDense(2)
    layer.build((None, 3))
    layer.set_weights([np.zeros((3, 2), "float32"), np.ones(2, "float32"), np.zeros(2, "float32")])
    out = np.asarray(layer(np.ones((1, 3), "float32")))
    assert np.all(np.isfinite(out)) and np.all(out == 0)


def test_weight_norm_conv_normalises_each_filter_over_time_and_input():
    layer = L.WeightNormConv1D(3, kernel_size=2, activation="relu")
    layer.build((None, None, 4))
    v = np.asarray(layer.kernel_v)
    w = np.asarray(layer.kernel)
    assert w.shape == (2, 4, 3)
    np.testing.assert_allclose(np.sqrt((w**2).sum(axis=(0, 1))), np.ones(3), rtol=1e-5)
    np.testing.assert_allclose(w, v / np.sqrt((v**2).sum(axis=(0, 1), keepdims=True)), rtol=1e-5)


@pytest.mark.parametrize("activation, gain", [("gelu", math.sqrt(2)), (None, 1.0)])
def test_initialisation_is_he_normal_with_the_release_gain(activation, gain):
    keras.utils.set_random_seed(1)
    fan_in, units = 400, 300
    layer = L.WeightNormDense(units, activation=activation)
    layer.build((None, fan_in))
    v = np.asarray(layer.kernel_v)
    assert abs(v.mean()) < 0.002
    np.testing.assert_allclose(v.std(), gain / math.sqrt(fan_in), rtol=0.01)
    np.testing.assert_array_equal(np.asarray(layer.kernel_g), np.ones(units))
    np.testing.assert_array_equal(np.asarray(layer.bias), np.zeros(units))
    conv = L.WeightNormConv1D(200, kernel_size=3, activation="relu")
    conv.build((None, None, 100))
    np.testing.assert_allclose(
        np.asarray(conv.kernel_v).std(), math.sqrt(2) / math.sqrt(300), rtol=0.01
    )


def test_augmented_residual_running_scaled_sum_hand_worked():
    # One position, embedding e = [10], block outputs o1 = [1], o2 = [2], o3 = [4].
    e, o1, o2, o3 = (np.array([[[v]]], "float32") for v in (10.0, 1.0, 2.0, 4.0))
    x1 = np.asarray(L.AugmentedResidualConnection(1)(o1, e))  # [e; o1]
    np.testing.assert_allclose(x1, [[[10.0, 1.0]]])
    x2 = np.asarray(L.AugmentedResidualConnection(2)(o2, x1))  # [e; (o1 + o2)/sqrt2]
    np.testing.assert_allclose(x2, [[[10.0, 3.0 / math.sqrt(2)]]], rtol=1e-6)
    x3 = np.asarray(L.AugmentedResidualConnection(3)(o3, x2))
    # the 4th block sees (o1 + o2)/2 + o3/sqrt2 = 1.5 + 2.828..., not Eq. 1's o3 + o2 = 6
    np.testing.assert_allclose(x3, [[[10.0, 1.5 + 4.0 / math.sqrt(2)]]], rtol=1e-6)


def test_residual_connection_projects_only_when_widths_differ():
    same = L.ResidualConnection()
    out = np.asarray(same(np.ones((1, 2, 3), "float32"), 3 * np.ones((1, 2, 3), "float32")))
    np.testing.assert_allclose(out, np.full((1, 2, 3), 4 / math.sqrt(2)), rtol=1e-6)
    assert same.projection is None
    wider = L.ResidualConnection()
    wider(np.ones((1, 2, 3), "float32"), np.ones((1, 2, 5), "float32"))
    assert wider.projection is not None and wider.projection.activation is None
    assert tuple(wider.projection.kernel_v.shape) == (3, 5)


def test_masked_softmax_puts_no_weight_on_padding():
    logits = np.array([[1.0, 50.0, 2.0]], "float32")
    mask = np.array([[1.0, 0.0, 1.0]], "float32")
    p = np.asarray(L.masked_softmax(logits, mask, axis=-1))
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(p, [[e[0] / e.sum(), 0.0, e[1] / e.sum()]], rtol=1e-6)


def test_masked_softmax_over_no_kept_entry_is_all_zero():
    # Row 0 keeps both entries (plain softmax); row 1 keeps none (an empty text): zeros, not
    # the uniform 0.5/0.5 a softmax over two equal fill values gives.
    logits = np.array([[1.0, 3.0], [2.0, 9.0]], "float32")
    mask = np.array([[1.0, 1.0], [0.0, 0.0]], "float32")
    p = np.asarray(L.masked_softmax(logits, mask, axis=-1))
    e = np.exp([1.0, 3.0])
    np.testing.assert_allclose(p[0], e / e.sum(), rtol=1e-6)
    assert p[1].tolist() == [0.0, 0.0]


def test_masked_max_pooling_ignores_padding_even_when_it_is_larger():
    x = np.array([[[1.0, -5.0], [3.0, -7.0], [100.0, 100.0]]], "float32")
    mask = np.array([[[1.0], [1.0], [0.0]]], "float32")
    np.testing.assert_allclose(np.asarray(L.MaskedMaxPooling()(x, mask)), [[3.0, -5.0]])


def test_masked_max_pooling_of_an_all_padding_text_is_zero():
    # Text 0 is all padding -> 0 (not float32 min); text 1 has only negative values, which
    # its maximum keeps (the empty-text rule must not clip real maxima at 0).
    x = np.array([[[4.0, -2.0], [7.0, 1.0]], [[-3.0, -8.0], [-1.0, -9.0]]], "float32")
    mask = np.array([[[0.0], [0.0]], [[1.0], [1.0]]], "float32")
    out = np.asarray(L.MaskedMaxPooling()(x, mask))
    assert out.tolist() == [[0.0, 0.0], [-1.0, -8.0]]


def test_padding_mask_from_ids():
    ids = np.array([[5, 1, 0, 0]], "int32")
    np.testing.assert_array_equal(np.asarray(L.PaddingMask()(ids))[..., 0], [[1, 1, 0, 0]])


def _inputs(rng, *shapes):
    return [rng.normal(size=s).astype("float32") for s in shapes]


MASK = np.array([[[1.0], [1.0], [0.0]], [[1.0], [1.0], [1.0]]], "float32")
LAYER_CASES = {
    "WeightNormDense": (lambda: L.WeightNormDense(4, activation="gelu"), [(2, 3, 5)], {}),
    "WeightNormConv1D": (lambda: L.WeightNormConv1D(4, 3, activation="relu"), [(2, 3, 5)], {}),
    "ConvEncoder": (lambda: L.ConvEncoder(4, enc_layers=2), [(2, 3, 5)], {"inputs_mask": MASK}),
    "ConvEncoderGelu": (
        lambda: L.ConvEncoder(4, enc_layers=2, activation="gelu"),
        [(2, 3, 5)],
        {"inputs_mask": MASK},
    ),
    "Alignment": (
        lambda: L.Alignment(4, "linear"),
        [(2, 3, 5), (2, 3, 5)],
        {"a_mask": MASK, "b_mask": MASK},
    ),
    "AlignmentIdentity": (
        lambda: L.Alignment(4, "identity"),
        [(2, 3, 5), (2, 3, 5)],
        {"a_mask": MASK, "b_mask": MASK},
    ),
    "FusionFull": (lambda: L.Fusion(4, "full"), [(2, 3, 5), (2, 3, 5)], {}),
    "FusionSimple": (lambda: L.Fusion(4, "simple"), [(2, 3, 5), (2, 3, 5)], {}),
    "AugmentedResidual": (lambda: L.AugmentedResidualConnection(2), [(2, 3, 4), (2, 3, 7)], {}),
    "Residual": (lambda: L.ResidualConnection(), [(2, 3, 4), (2, 3, 7)], {}),
    "MaskedMaxPooling": (lambda: L.MaskedMaxPooling(), [(2, 3, 5)], {"inputs_mask": MASK}),
    "PredictionSymmetric": (lambda: L.Prediction(4, 3, "symmetric"), [(2, 5), (2, 5)], {}),
}


@pytest.mark.parametrize("name", sorted(LAYER_CASES))
def test_get_config_from_config_round_trip(name):
    make, shapes, kwargs = LAYER_CASES[name]
    rng = np.random.default_rng(0)
    inputs = _inputs(rng, *shapes)
    layer = make()
    out = layer(*inputs, **kwargs)
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config
    clone(*inputs, **kwargs)  # build
    clone.set_weights(layer.get_weights())
    out_clone = clone(*inputs, **kwargs)
    for x, y in zip(keras.tree.flatten(out), keras.tree.flatten(out_clone)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # serialisable through Keras' registry (what .keras saving uses)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer) and restored.get_config() == config


# --------------------------------------------------------------------------- dropout placement
def _both_modes(layer, *args, **kwargs):
    keras.utils.set_random_seed(5)
    train = layer(*args, training=True, **kwargs)
    infer = layer(*args, training=False, **kwargs)
    return train, infer


def _is_inverted_dropout_of(train, infer, rate):
    """Every entry is 0 or infer / (1 - rate): dropout was the layer's last operation."""
    train, infer = np.asarray(train), np.asarray(infer)
    kept = ~np.isclose(train, 0.0)
    return (
        bool(np.allclose(train[kept], infer[kept] / (1 - rate), rtol=1e-5, atol=1e-6))
        and 0 < kept.mean() < 1
    )


def test_encoder_dropout_after_the_last_convolution_and_between_layers_only():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6, 5)).astype("float32")
    mask = np.ones((4, 6, 1), "float32")
    one = L.ConvEncoder(8, enc_layers=1, dropout_rate=0.5)
    train, infer = _both_modes(one, x, mask)
    # one layer: no dropout before the convolution, one after it
    assert _is_inverted_dropout_of(train, infer, 0.5)
    two = L.ConvEncoder(8, enc_layers=2, dropout_rate=0.5)
    train, infer = _both_modes(two, x, mask)
    # two layers: the dropout between them changes the kept values too
    assert not _is_inverted_dropout_of(train, infer, 0.5)


def test_layers_without_dropout_in_the_release_are_deterministic_in_training():
    rng = np.random.default_rng(1)
    a, b = _inputs(rng, (2, 3, 5), (2, 3, 5))
    for layer, args, kwargs in [
        (L.Alignment(4, "identity", dropout_rate=0.5), (a, b), {"a_mask": MASK, "b_mask": MASK}),
        (L.Fusion(4, "simple", dropout_rate=0.5), (a, b), {}),
    ]:
        train, infer = _both_modes(layer, *args, **kwargs)
        for t, i in zip(keras.tree.flatten(train), keras.tree.flatten(infer)):
            np.testing.assert_array_equal(np.asarray(t), np.asarray(i))


def test_dropout_before_the_linear_alignment_projection_and_the_fusion_projection():
    rng = np.random.default_rng(2)
    a, b = _inputs(rng, (2, 3, 5), (2, 3, 5))
    for layer, args, kwargs in [
        (L.Alignment(4, "linear", dropout_rate=0.5), (a, b), {"a_mask": MASK, "b_mask": MASK}),
        (L.Fusion(4, "full", dropout_rate=0.5), (a, b), {}),
    ]:
        train, infer = _both_modes(layer, *args, **kwargs)
        assert not np.allclose(
            np.asarray(keras.tree.flatten(train)[0]), np.asarray(keras.tree.flatten(infer)[0])
        )


def test_prediction_dropout_before_each_dense_layer():
    rng = np.random.default_rng(3)
    a, b = _inputs(rng, (64, 5), (64, 5))
    layer = L.Prediction(6, 3, "full", dropout_rate=0.5)
    layer(a, b)
    # Zero the first dense layer's kernel direction except through its bias: then dense_1's
    # output is gelu(bias) for every row, whatever dropout did to the features, and the only
    # remaining randomness is the dropout before dense_2 -> logits vary across rows in training.
    layer.dense_1.kernel_g.assign(np.zeros(6, "float32"))
    layer.dense_1.bias.assign(np.linspace(0.5, 1.5, 6).astype("float32"))
    train, infer = _both_modes(layer, a, b)
    infer = np.asarray(infer)
    assert np.allclose(infer, infer[0])  # inference: identical rows
    assert np.unique(np.round(np.asarray(train), 5), axis=0).shape[0] > 1  # dropout before dense_2


def _dropout_draws(layer, *args, **kwargs):
    """How many times ``layer``'s dropout ran in one training call: each application advances
    its Keras SeedGenerator state by one."""
    generators = [v for v in layer.non_trainable_variables if "seed_generator" in v.path]
    before = sum(int(np.asarray(v)[1]) for v in generators)
    layer(*args, training=True, **kwargs)
    return sum(int(np.asarray(v)[1]) for v in generators) - before


def test_number_of_dropout_applications_matches_the_release():
    rng = np.random.default_rng(4)
    a, b = _inputs(rng, (2, 3, 5), (2, 3, 5))
    masks = {"a_mask": MASK, "b_mask": MASK}
    cases = [
        (L.ConvEncoder(4, enc_layers=1), (a,), {"inputs_mask": MASK}, 1),  # after the last conv
        (L.ConvEncoder(4, enc_layers=3), (a,), {"inputs_mask": MASK}, 3),  # + between layers
        (L.Alignment(4, "linear"), (a, b), masks, 2),  # before F, per side
        (L.Alignment(4, "identity"), (a, b), masks, 0),
        (L.Fusion(4, "full"), (a, b), {}, 1),  # before G
        (L.Fusion(4, "simple"), (a, b), {}, 0),
        (L.Prediction(4, 3, "full"), (a[:, 0], b[:, 0]), {}, 2),  # before each dense
    ]
    for layer, args, kwargs, expected in cases:
        layer(*args, **kwargs)  # build
        assert _dropout_draws(layer, *args, **kwargs) == expected, layer.name
