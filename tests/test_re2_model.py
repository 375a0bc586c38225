"""RE2 model: parameter counts by hand, a NumPy reference forward pass, padding invariance,
serialisation and learning."""

import keras
import numpy as np
import pytest
import re2_numpy_reference as ref
import tensorflow as tf
from model_scaffolding import assert_calls_agree, assert_round_trips
from weights import randomize_weights

from re2_lab import paper_values
from re2_tf.models import build_re2, count_parameters
from re2_tf.serving import folded


# --------------------------------------------------------------------------- parameter counts
def dense(fan_in, units):
    """Weight-normalised dense: V (fan_in x units) + g (units) + bias (units)."""
    return fan_in * units + 2 * units


def conv(kernel, fan_in, filters):
    return kernel * fan_in * filters + 2 * filters


def test_snli_settings_have_2_774_559_parameters():
    # SNLI: embedding 300, hidden 150, 3 blocks, 2 encoder layers, linear alignment, full
    # fusion and prediction, 3 classes. Block widths: block 0 reads 300, blocks 1-2 read
    # 300 + 150 = 450 (augmented residual); block features are [x; enc(x)] = width + 150.
    block0 = (
        conv(3, 300, 150)
        + conv(3, 150, 150)  # encoder: 135,300 + 67,800
        + dense(450, 150)
        + 1  # alignment projection + temperature
        + 3 * dense(900, 150)
        + dense(450, 150)  # fusion G1..G3 on [x; .] (2 x 450) and G
    )
    block12 = (
        conv(3, 450, 150)
        + conv(3, 150, 150)
        + dense(600, 150)
        + 1
        + 3 * dense(1200, 150)
        + dense(450, 150)
    )
    head = dense(4 * 150, 150) + dense(150, 3)
    assert block0 == 744_601 and block12 == 969_601 and head == 90_756
    expected = block0 + 2 * block12 + head
    assert expected == 2_774_559
    assert round(expected / 1e6, 1) == paper_values.value("re2_yang2019", "Table 1", "RE2 (ours)")
    model = build_re2(100, 3, embedding_dim=300, blocks=3, enc_layers=2, hidden_size=150)
    assert count_parameters(model) == expected


def test_release_scitail_quora_wikiqa_and_table5_parameter_counts():
    h = 200
    # SciTail: 2 blocks, 3 encoder layers, identity alignment (temperature only), full prediction.
    scitail = (
        conv(3, 300, h)
        + 2 * conv(3, h, h)
        + 1
        + 3 * dense(2 * 500, h)
        + dense(3 * h, h)
        + conv(3, 500, h)
        + 2 * conv(3, h, h)
        + 1
        + 3 * dense(2 * 700, h)
        + dense(3 * h, h)
        + dense(4 * h, h)
        + dense(h, 2)
    )
    # Quora: 2 blocks, 2 encoder layers, linear alignment, symmetric prediction (4h wide).
    quora = (
        conv(3, 300, h)
        + conv(3, h, h)
        + dense(500, h)
        + 1
        + 3 * dense(1000, h)
        + dense(3 * h, h)
        + conv(3, 500, h)
        + conv(3, h, h)
        + dense(700, h)
        + 1
        + 3 * dense(1400, h)
        + dense(3 * h, h)
        + dense(4 * h, h)
        + dense(h, 2)
    )
    # WikiQA: 2 blocks, 3 encoder layers, linear alignment, simple prediction ([a; b], 2h wide).
    wikiqa = (
        conv(3, 300, h)
        + 2 * conv(3, h, h)
        + dense(500, h)
        + 1
        + 3 * dense(1000, h)
        + dense(3 * h, h)
        + conv(3, 500, h)
        + 2 * conv(3, h, h)
        + dense(700, h)
        + 1
        + 3 * dense(1400, h)
        + dense(3 * h, h)
        + dense(2 * h, h)
        + dense(h, 2)
    )
    assert (scitail, quora, wikiqa) == (2_806_406, 2_806_406, 2_967_206)
    # Table 5 timing model: SNLI settings with 3 encoder layers adds one 150->150 conv per block.
    table5 = 2_774_559 + 3 * conv(3, 150, 150)
    assert table5 == 2_977_959

    def n(**kw):
        return count_parameters(build_re2(50, kw.pop("classes"), embedding_dim=300, **kw))

    assert n(classes=2, blocks=2, enc_layers=3, hidden_size=h, alignment="identity") == scitail
    assert n(classes=2, blocks=2, enc_layers=2, hidden_size=h, prediction="symmetric") == quora
    assert n(classes=2, blocks=2, enc_layers=3, hidden_size=h, prediction="simple") == wikiqa
    assert n(classes=3, blocks=3, enc_layers=3, hidden_size=150) == table5


def test_fixed_embedding_is_not_trainable_and_holds_the_vectors():
    vectors = np.random.default_rng(0).normal(size=(30, 8)).astype("float32")
    vectors[0] = 0.0
    model = build_re2(30, 2, embeddings=vectors, hidden_size=4, blocks=1)
    emb = model.get_layer("embedding")
    assert not emb.trainable
    np.testing.assert_array_equal(emb.get_weights()[0], vectors)
    assert count_parameters(model) == count_parameters(model, include_embedding=True)


def test_random_embedding_is_trainable():
    model = build_re2(30, 2, embedding_dim=8, hidden_size=4, blocks=1)
    assert model.get_layer("embedding").trainable
    assert count_parameters(model, include_embedding=True) == count_parameters(model) + 30 * 8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(blocks=0), "blocks"),
        (dict(blocks=6), "blocks"),
        (dict(enc_layers=0), "enc_layers"),
        (dict(alignment="bilinear"), "alignment"),
        (dict(fusion="gated"), "fusion"),
        (dict(connection="dense"), "connection"),
        (dict(prediction="mlp"), "prediction"),
        (dict(encoder_activation="tanh"), "encoder activation"),
        (dict(dropout_rate=1.0), "dropout_rate"),
        (dict(embeddings=np.zeros((7, 4))), "embeddings"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_re2(10, 2, **kwargs)


# --------------------------------------------------------------------------- NumPy reference
def _wn(layer):
    return {
        "v": layer.kernel_v.numpy(),
        "g": layer.kernel_g.numpy(),
        "b": layer.bias.numpy(),
    }


def extract_params(model, blocks, fusion, connection):
    """Copy the Keras weights into the plain-dict layout of re2_numpy_reference."""
    params = {"embedding": model.get_layer("embedding").get_weights()[0], "blocks": []}
    for i in range(blocks):
        enc = model.get_layer(f"block{i}_encoder")
        aln = model.get_layer(f"block{i}_alignment")
        fus = model.get_layer(f"block{i}_fusion")
        names = ("orig", "sub", "mul", "proj") if fusion == "full" else ("orig",)
        block = {
            "encoder": [_wn(c) for c in enc.convolutions],
            "alignment": {
                "t": float(aln.temperature.numpy()),
                "proj": _wn(aln.projection) if aln.projection is not None else None,
            },
            "fusion": {name: _wn(getattr(fus, name)) for name in names},
            "connection": {"proj": None},
        }
        if i > 0 and connection == "residual":
            try:
                proj = model.get_layer(f"block{i}_connection").projection
            except ValueError:  # parallel blocks: no connection layers
                proj = None
            block["connection"]["proj"] = _wn(proj) if proj is not None else None
        params["blocks"].append(block)
    pred = model.get_layer("prediction")
    params["prediction"] = {"dense_1": _wn(pred.dense_1), "dense_2": _wn(pred.dense_2)}
    return params


def tiny_batch():
    # Three pairs with padding in different places; lengths independent between texts.
    text1 = np.array([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0], [9, 10, 11, 12, 13]], "int32")
    text2 = np.array([[14, 15, 16, 0], [17, 0, 0, 0], [5, 4, 3, 2]], "int32")
    return text1, text2


BASE = dict(
    blocks=3,
    enc_layers=2,
    kernel_size=3,
    alignment="linear",
    fusion="full",
    connection="aug",
    prediction="full",
    enc_in=True,
    parallel_blocks=False,
    encoder_activation="relu",
)
VARIANTS = {
    "default_3_blocks": {},
    "one_block": dict(blocks=1),
    "four_blocks_running_sum": dict(blocks=4),
    "enc_layers_1": dict(enc_layers=1),
    "enc_layers_3_kernel_5": dict(enc_layers=3, kernel_size=5),
    "kernel_2_asymmetric_same_padding": dict(kernel_size=2),
    "identity_alignment": dict(alignment="identity"),
    "simple_fusion": dict(fusion="simple"),
    "residual_connection": dict(connection="residual"),
    "symmetric_prediction": dict(prediction="symmetric"),
    "simple_prediction": dict(prediction="simple"),
    "without_enc_in": dict(enc_in=False),
    "parallel_blocks": dict(parallel_blocks=True),
    "residual_without_enc_in": dict(connection="residual", enc_in=False),
    "gelu_encoder_pytorch_port": dict(encoder_activation="gelu"),
    "gelu_encoder_3_layers_identity": dict(
        encoder_activation="gelu", enc_layers=3, alignment="identity"
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_keras_matches_numpy_reference(variant):
    cfg = {**BASE, **VARIANTS[variant]}
    model = build_re2(
        20,
        3,
        embedding_dim=6,
        hidden_size=5,
        return_attention=True,
        **{k: cfg[k] for k in BASE},
    )
    randomize_weights(model, seed=len(variant))
    text1, text2 = tiny_batch()
    out = model({"text1": text1, "text2": text2}, training=False)
    params = extract_params(model, cfg["blocks"], cfg["fusion"], cfg["connection"])
    logits, attention = ref.forward(params, text1, text2, cfg)
    assert np.abs(logits).max() > 1e-2  # the comparison is not between near-zero numbers
    np.testing.assert_allclose(out["logits"].numpy(), logits, atol=1e-5, rtol=1e-5)
    for i, (attn_a, attn_b) in enumerate(attention):
        # Whole matrices: slices at padding positions are all-zero in both.
        np.testing.assert_allclose(out[f"attention_{i}_text1"].numpy(), attn_a, atol=1e-5)
        np.testing.assert_allclose(out[f"attention_{i}_text2"].numpy(), attn_b, atol=1e-5)


def test_encoder_activation_changes_the_logits_and_is_recorded():
    # Same weights, only the conv activation differs: the logits must differ (the option is
    # wired in), and the layer config carries it.
    text1, text2 = tiny_batch()
    logits = {}
    for act in ("relu", "gelu"):
        model = build_re2(20, 3, embedding_dim=6, hidden_size=5, encoder_activation=act)
        randomize_weights(model, seed=5)
        logits[act] = model({"text1": text1, "text2": text2}).numpy()
        assert model.get_layer("block1_encoder").get_config()["activation"] == act
    assert np.abs(logits["relu"] - logits["gelu"]).max() > 1e-3


# --------------------------------------------------------------------------- empty texts
def empty_text_batch():
    """Pairs with text1 empty, text2 empty, both empty, and neither (row 3)."""
    text1 = np.array([[0, 0, 0, 0], [3, 4, 5, 0], [0, 0, 0, 0], [6, 7, 8, 9]], "int32")
    text2 = np.array([[10, 11, 0], [0, 0, 0], [0, 0, 0], [12, 2, 0]], "int32")
    return text1, text2


EMPTY_VARIANTS = [
    "default_3_blocks",
    "gelu_encoder_pytorch_port",
    "identity_alignment",
    "residual_connection",
    "parallel_blocks",
    "symmetric_prediction",
]


@pytest.mark.parametrize("variant", EMPTY_VARIANTS)
def test_empty_texts_give_finite_logits_equal_to_the_reference(variant):
    cfg = {**BASE, **VARIANTS[variant]}
    model = build_re2(20, 3, embedding_dim=6, hidden_size=5, return_attention=True, **cfg)
    randomize_weights(model, seed=11)
    text1, text2 = empty_text_batch()
    out = model({"text1": text1, "text2": text2}, training=False)
    logits, attention = ref.forward(
        extract_params(model, cfg["blocks"], cfg["fusion"], cfg["connection"]), text1, text2, cfg
    )
    got = out["logits"].numpy()
    assert np.isfinite(got).all() and np.abs(got).max() < 1e3
    assert np.abs(logits).max() > 1e-2
    np.testing.assert_allclose(got, logits, atol=1e-5, rtol=1e-5)
    for i, (attn_a, attn_b) in enumerate(attention):
        np.testing.assert_allclose(out[f"attention_{i}_text1"].numpy(), attn_a, atol=1e-5)
        np.testing.assert_allclose(out[f"attention_{i}_text2"].numpy(), attn_b, atol=1e-5)
        # Both attention matrices of a pair with an empty text are all zeros.
        assert not out[f"attention_{i}_text1"].numpy()[:3].any()
        assert not out[f"attention_{i}_text2"].numpy()[:3].any()


def test_empty_texts_give_finite_loss_and_gradients():
    model = build_re2(20, 3, embedding_dim=6, hidden_size=5, blocks=2)
    randomize_weights(model, seed=2)
    text1, text2 = empty_text_batch()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(
            np.array([0, 1, 2, 0]), model({"text1": text1, "text2": text2}, training=True)
        )
    grads = tape.gradient(loss, model.trainable_weights)
    assert np.isfinite(loss.numpy()) and loss.numpy() < 1e3
    assert all(np.isfinite(tf.convert_to_tensor(g).numpy()).all() for g in grads)


@pytest.mark.parametrize("variant", EMPTY_VARIANTS)
@pytest.mark.parametrize("joint", [True, False])
def test_folded_forward_equals_keras_on_empty_texts(variant, joint):
    # The exported model's forward pass (weight norm folded) treats empty texts as Keras does.
    cfg = {**BASE, **VARIANTS[variant]}
    model = build_re2(20, 3, embedding_dim=6, hidden_size=5, **cfg)
    randomize_weights(model, seed=13)
    text1, text2 = empty_text_batch()
    expected = model({"text1": text1, "text2": text2}, training=False).numpy()
    params = folded.fold_re2(model)
    assert params["encoder_activation"] == cfg["encoder_activation"]
    got = folded.re2_forward(params, tf.constant(text1), tf.constant(text2), joint=joint).numpy()
    assert np.isfinite(got).all()
    # rtol: a few float32 ulps of the logits, summed in another order than Keras's layers
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-6)


# --------------------------------------------------------------------------- padding
def _pad(x, extra):
    return np.pad(x, ((0, 0), (0, extra)))


@pytest.mark.parametrize("variant", ["default_3_blocks", "residual_connection", "parallel_blocks"])
def test_padding_leaves_logits_unchanged_and_gets_no_attention(variant):
    cfg = {**BASE, **VARIANTS[variant]}
    model = build_re2(20, 3, embedding_dim=6, hidden_size=5, return_attention=True, **cfg)
    randomize_weights(model, seed=7)
    text1, text2 = tiny_batch()
    base = model({"text1": text1, "text2": text2})
    for extra1, extra2 in [(3, 0), (0, 4), (2, 6)]:
        padded = model({"text1": _pad(text1, extra1), "text2": _pad(text2, extra2)})
        np.testing.assert_allclose(padded["logits"].numpy(), base["logits"].numpy(), atol=1e-5)
        for i in range(cfg["blocks"]):
            # attention_text1 normalises over text1 positions (axis 1): for every real text2
            # token, the weight on text1 padding must be exactly 0, and vice versa.
            a1 = padded[f"attention_{i}_text1"].numpy()
            a2 = padded[f"attention_{i}_text2"].numpy()
            pad1 = _pad(text1, extra1) == 0
            pad2 = _pad(text2, extra2) == 0
            real2 = ~pad2
            assert np.all(np.where(pad1[:, :, None] & real2[:, None, :], a1, 0.0) == 0.0)
            real1 = ~pad1
            assert np.all(np.where(real1[:, :, None] & pad2[:, None, :], a2, 0.0) == 0.0)
            np.testing.assert_allclose(
                np.where(real2[:, None, :], a1, 0).sum(axis=1)[real2], 1.0, atol=1e-5
            )


# --------------------------------------------------------------------------- Keras life cycle
def test_symbolic_and_eager_calls_agree_and_shapes_are_dynamic():
    model = build_re2(20, 3, embedding_dim=6, hidden_size=5, blocks=2)
    spec = model.outputs[0]
    assert tuple(spec.shape) == (None, 3)
    text1, text2 = tiny_batch()
    assert_calls_agree(model, {"text1": text1, "text2": text2}, atol=1e-6)


def test_keras_save_and_load_round_trip(tmp_path):
    model = build_re2(
        20,
        3,
        embedding_dim=6,
        hidden_size=5,
        blocks=3,
        connection="residual",
        encoder_activation="gelu",
    )
    randomize_weights(model, seed=3)
    text1, text2 = tiny_batch()
    batch = {"text1": text1, "text2": text2}
    loaded = assert_round_trips(model, batch, tmp_path / "re2.keras")  # + get_config rebuild
    np.testing.assert_array_equal(loaded(batch).numpy(), model(batch).numpy())  # bit for bit
    assert count_parameters(loaded) == count_parameters(model)
    assert loaded.get_layer("block2_encoder").activation == "gelu"


@pytest.mark.slow  # a real training run
def test_a_few_training_steps_lower_the_loss():
    keras.utils.set_random_seed(0)
    model = build_re2(20, 3, embedding_dim=8, hidden_size=8, blocks=2, dropout_rate=0.0)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    text1, text2 = tiny_batch()
    labels = np.array([0, 1, 2], "int32")
    x = {"text1": text1, "text2": text2}
    first = model.evaluate(x, labels, verbose=0)
    model.fit(x, labels, epochs=30, batch_size=3, verbose=0)
    last = model.evaluate(x, labels, verbose=0)
    assert last < 0.5 * first
