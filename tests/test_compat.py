"""The private framework internals re2_tf relies on (``re2_tf/_compat.py``, and pytest's in
``tests/conftest.py``), each checked against the installed version by what it must do, with
a failure message that names the internal. A failure here means Keras, keras-hub or pytest
moved or changed that internal: fix ``re2_tf/_compat.py`` (or the conftest), not the callers."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from re2_tf import _compat

VERSIONS = f"keras {keras.__version__}"


def moved(internal):
    return f"{VERSIONS}: the private {internal} moved or changed; update re2_tf/_compat.py"


# --------------------------------------------------------------------------- a nested network
class Penalised(keras.layers.Layer):
    """A custom layer holding a Dense sublayer (not a model), adding ``weight * sum(x)``."""

    def __init__(self, weight, **kwargs):
        super().__init__(**kwargs)
        self.weight = weight
        self.inner = keras.layers.Dense(
            2, name="inner_dense", kernel_regularizer=keras.regularizers.L2(0.1)
        )

    def call(self, x):
        self.add_loss(self.weight * tf.reduce_sum(x))
        return self.inner(x)


class AddsLoss(keras.layers.Layer):
    def call(self, x):
        self.add_loss(tf.reduce_mean(tf.square(x)))
        return x


def nested_network():
    """model -> [Dense "top", inner model -> [Penalised -> Dense "inner_dense", AddsLoss]]."""
    inner_in = keras.Input((2,))
    inner = keras.Model(
        inner_in, AddsLoss(name="adds")(Penalised(0.5, name="pen")(inner_in)), name="inner_model"
    )
    x = keras.Input((3,))
    return keras.Model(x, inner(keras.layers.Dense(2, name="top")(x)), name="outer")


# --------------------------------------------------------------------------- keras
def test_all_sublayers_reaches_every_nested_layer():
    network = nested_network()
    try:
        names = [layer.name for layer in _compat.all_sublayers(network)]
        with_self = _compat.all_sublayers(network, include_self=True)
    except AttributeError as error:
        pytest.fail(f"{moved('Layer._flatten_layers')}: {error}")
    expected = {"top", "inner_model", "pen", "inner_dense", "adds"}
    assert expected <= set(names), moved("Layer._flatten_layers")
    assert "outer" not in names and with_self[0] is network, moved("Layer._flatten_layers")
    assert len(names) == len(set(names)), moved("Layer._flatten_layers")  # each layer once
    # The same layers the public per-layer weight lists imply: every variable of the network
    # belongs to exactly one of the listed layers' own (non-nested) variables.
    layers = _compat.all_sublayers(network)
    direct = [v.path for layer in layers if not _compat.all_sublayers(layer) for v in layer.weights]
    assert sorted(direct) == sorted(v.path for v in network.weights), moved("Layer._flatten_layers")


def test_own_losses_partition_the_public_losses():
    network = nested_network()
    x = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -0.1]], "float32")
    network(x)
    try:
        own = {
            layer.name: [float(t) for t in _compat.own_losses(layer)]
            for layer in _compat.all_sublayers(network, include_self=True)
        }
    except AttributeError as error:
        pytest.fail(f"{moved('Layer._get_own_losses')}: {error}")
    # Written out independently: the penalty of "pen" on the output of "top", the mean square
    # of "adds" on the output of "pen"; the regulariser is not an add_loss term.
    top = network.get_layer("top")
    h = x @ top.kernel.numpy() + top.bias.numpy()
    dense = network.get_layer("inner_model").get_layer("pen").inner
    out = h @ dense.kernel.numpy() + dense.bias.numpy()
    assert own["pen"] == pytest.approx([0.5 * h.sum()], rel=1e-5), moved("Layer._get_own_losses")
    assert own["adds"] == pytest.approx([np.mean(out**2)], rel=1e-5), moved("Layer._get_own_losses")
    assert all(not v for k, v in own.items() if k not in ("pen", "adds")), moved(
        "Layer._get_own_losses"
    )
    # Together with the (public) regularisers they are exactly the public Layer.losses.
    regularisers = [
        float(v.regularizer(v)) for v in network.trainable_weights if v.regularizer is not None
    ]
    assert regularisers == pytest.approx([0.1 * np.sum(dense.kernel.numpy() ** 2)], rel=1e-5)
    assert sorted(float(t) for t in network.losses) == pytest.approx(
        sorted([*own["pen"], *own["adds"], *regularisers]), rel=1e-6
    ), moved("Layer._get_own_losses")


@keras.saving.register_keras_serializable(package="re2_tf_tests")
class SharingProbe(keras.layers.Layer):
    """Identity recording, while ``load_model`` deserialises it, the sharing maps seen inside
    and after :func:`re2_tf._compat.outside_object_sharing`."""

    seen = {}

    def call(self, x):
        return x

    @classmethod
    def from_config(cls, config):
        cls.seen["loading"] = _compat.sharing_maps()
        with _compat.outside_object_sharing():
            cls.seen["suspended"] = _compat.sharing_maps()
        cls.seen["restored"] = _compat.sharing_maps()
        return super().from_config(config)


def test_object_sharing_maps_are_where_outside_object_sharing_looks(tmp_path):
    internal = "keras.src.backend.common.global_state 'shared_objects/...' maps"
    assert _compat.sharing_maps() == (None, None), moved(internal)
    keras.Sequential([keras.Input((2,)), SharingProbe()]).save(tmp_path / "probe.keras")
    SharingProbe.seen.clear()
    try:
        keras.saving.load_model(tmp_path / "probe.keras")
    except ImportError as error:
        pytest.fail(f"{moved(internal)}: {error}")
    loading = SharingProbe.seen["loading"]
    # load_model's object-sharing scope keeps its two maps under exactly these keys ...
    assert all(isinstance(m, dict) for m in loading), moved(internal)
    # ... the context suspends them and gives the same objects back afterwards.
    assert SharingProbe.seen["suspended"] == (None, None), moved(internal)
    assert all(a is b for a, b in zip(SharingProbe.seen["restored"], loading)), moved(internal)
    assert _compat.sharing_maps() == (None, None), moved(internal)


def test_transformer_intermediate_dense_is_the_feed_forward_activation():
    keras_hub = pytest.importorskip("keras_hub")
    internal = (
        f"keras_hub {keras_hub.__version__} TransformerEncoder._feedforward_intermediate_dense"
    )
    keras.utils.set_random_seed(0)
    encoder = keras_hub.layers.TransformerEncoder(
        intermediate_dim=6, num_heads=1, activation="relu"
    )
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    encoder(x)
    try:
        dense = _compat.transformer_intermediate_dense(encoder)
    except (AttributeError, TypeError) as error:
        pytest.fail(f"{moved(internal)}: {error}")
    assert tuple(dense.kernel.shape) == (4, 6), moved(internal)  # hidden -> intermediate
    assert dense.activation is keras.activations.relu, moved(internal)
    # Swapping the activation there changes what the encoder computes, to what a relu ->
    # identity swap predicts: the encoder built with activation=None, same weights.
    dense.activation = keras.activations.linear
    linear = keras_hub.layers.TransformerEncoder(intermediate_dim=6, num_heads=1, activation=None)
    linear(x)
    linear.set_weights(encoder.get_weights())
    np.testing.assert_allclose(encoder(x), linear(x), atol=1e-6, err_msg=moved(internal))


def test_transformer_parts_are_the_encoders_layers_by_role():
    """The encoder recomputed in NumPy from the parts' weights, each used in its role
    (post-LayerNorm order: attention, residual, ``attention_norm``; ``intermediate`` with the
    activation, ``output``, residual, ``output_norm``), equals the encoder's own output."""
    keras_hub = pytest.importorskip("keras_hub")
    internal = (
        f"keras_hub {keras_hub.__version__} TransformerEncoder parts ({_compat.TRANSFORMER_PARTS})"
    )
    keras.utils.set_random_seed(0)
    encoder = keras_hub.layers.TransformerEncoder(
        intermediate_dim=6, num_heads=2, activation="relu", layer_norm_epsilon=1e-5
    )
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    mask = np.array([[1, 1, 1], [1, 1, 0]], "int32")
    encoder(x, padding_mask=mask)
    for w in encoder.weights:
        w.assign(rng.normal(0.0, 0.7, tuple(w.shape)).astype("float32"))
    try:
        parts = _compat.transformer_parts(encoder)
    except TypeError as error:
        pytest.fail(f"{moved(internal)}: {error}")

    def dense(layer, h):
        return h @ layer.kernel.numpy() + layer.bias.numpy()

    def norm(layer, h):
        mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        return (h - mean) / np.sqrt(var + 1e-5) * layer.gamma.numpy() + layer.beta.numpy()

    attention = parts["attention"]

    def project(layer, h):  # EinsumDense "abc,cde->abde": [batch, L, heads, dim]
        return np.einsum("abc,cde->abde", h, layer.kernel.numpy()) + layer.bias.numpy()

    q, k, v = (
        project(d, x) for d in (attention.query_dense, attention.key_dense, attention.value_dense)
    )
    scores = np.einsum("abhd,achd->ahbc", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[:, None, None, :] > 0, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    context = np.einsum("ahbc,achd->abhd", weights, v)
    out = attention.output_dense
    attended = np.einsum("abhd,hde->abe", context, out.kernel.numpy()) + out.bias.numpy()
    h = norm(parts["attention_norm"], attended + x)
    inner = np.maximum(dense(parts["intermediate"], h), 0.0)
    expected = norm(parts["output_norm"], dense(parts["output"], inner) + h)
    got = encoder(x, padding_mask=mask).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-4, err_msg=moved(internal))


# --------------------------------------------------------------------------- pytest
@pytest.fixture(scope="module")
def module_resource():
    return object()


@pytest.fixture
def function_resource():
    return object()


def test_tests_sharing_a_module_fixture_are_grouped(request, module_resource):
    # tests/conftest.py reads fixture scopes from pytest's private
    # Function._fixtureinfo.name2fixturedefs; the mark it adds is the public result.
    mark = request.node.get_closest_marker("xdist_group")
    assert mark is not None, (
        f"pytest {pytest.__version__}: conftest did not group a test "
        "using a module-scoped fixture (Function._fixtureinfo changed?)"
    )
    assert mark.args == (f"{__name__}:module_resource",)


def test_tests_without_a_module_fixture_are_not_grouped(request, function_resource):
    assert request.node.get_closest_marker("xdist_group") is None


# --------------------------------------------------------------------------- tensorflow
def test_unique_text_file_initializer_gives_named_tables_that_never_share(tmp_path):
    """``UniqueTextFileInitializer`` overrides the private ``_shared_name`` that a named
    ``StaticHashTable`` reads: the table must be named (not anonymous: the TF1 session loader
    cannot initialise those), and two tables over files at the same path with different
    contents (the same ``Asset`` address can recur too) must not share their contents."""
    path = tmp_path / "vocab.txt"
    lookups = []
    for words in (["<PAD>", "<UNK>", "cat"], ["<PAD>", "<UNK>", "dog", "cat"]):
        path.write_text("".join(f"{w}\n" for w in words))
        init = _compat.UniqueTextFileInitializer(
            str(path),
            tf.string,
            tf.lookup.TextFileIndex.WHOLE_LINE,
            tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER,
        )
        table = tf.lookup.StaticHashTable(init, default_value=1)
        assert not table._is_anonymous, moved("StaticHashTable._is_anonymous")
        assert table._shared_name == init._shared_name, moved("StaticHashTable._shared_name")
        assert init._shared_name.startswith(f"hash_table_{path}"), moved(
            "TextFileInitializer._shared_name"
        )
        lookups.append(table.lookup(tf.constant(["cat", "dog"])).numpy().tolist())
        del table, init
    assert lookups == [[2, 1], [3, 2]]


def test_gradients_already_summed_replaces_the_optimizers_cross_replica_sum():
    """Keras' TensorFlow optimiser has the private method the patch replaces (its absence
    would mean gradients summed twice across replicas), the patched method passes gradients
    through unchanged, and an optimiser without it is refused by name."""
    from types import SimpleNamespace

    from re2_tf._compat import gradients_already_summed

    for optimizer in (
        keras.optimizers.Adam(),
        keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam()),
    ):
        gradients_already_summed(optimizer)
        grads_and_vars = [(tf.constant([1.0, 2.0]), "v")]
        assert optimizer._all_reduce_sum_gradients(grads_and_vars) == grads_and_vars
    with pytest.raises(RuntimeError, match="_all_reduce_sum_gradients"):
        gradients_already_summed(SimpleNamespace())


def test_a_built_trainer_skips_keras_symbolic_build():
    """The private step the mix-in overrides is the one Keras' ``fit`` calls (a subclass
    without the mix-in reaches it), and with the network and optimiser built the mix-in's
    trainer never reaches it."""
    from re2_tf._compat import SkipsSymbolicBuildOnceBuilt

    calls = []

    class Counting(keras.Model):
        def _maybe_symbolic_build(self, iterator=None, data_batch=None):
            calls.append(type(self).__name__)
            super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)

    class Trainer(SkipsSymbolicBuildOnceBuilt, Counting):
        def __init__(self):
            super().__init__()
            self.network = keras.Sequential([keras.layers.Dense(1)])

        def call(self, x):
            return self.network(x)

    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    plain = Trainer()
    plain.compile(optimizer="sgd", loss="mse")
    plain.fit(x, y, epochs=1, verbose=0)  # nothing built yet: Keras' step runs
    assert calls == ["Trainer"]
    calls.clear()
    built = Trainer()
    built.compile(optimizer="sgd", loss="mse")
    built.network.build((None, 3))
    built.optimizer.build(built.network.trainable_variables)
    built.fit(x, y, epochs=1, verbose=0)
    assert calls == []
