"""DRCN model: an independent NumPy forward pass (logits, reconstruction losses, attention)
for every connection variant with and without autoencoders, padding invariance, the paper's
parameter count by hand, serialisation, symbolic = eager, the spec, and learning."""

import re
from pathlib import Path

import drcn_numpy_reference as ref
import keras
import numpy as np
import pytest
import tensorflow as tf
from model_scaffolding import assert_round_trips, pair_batch, train_on_fixed_batch
from weights import randomize_weights

from re2_lab import paper_values
from re2_tf.layers import Autoencoder, CharCNN, CoAttention, InteractionPrediction, MaskedBiLSTM
from re2_tf.models import count_parameters, get_spec
from re2_tf.models.drcn import DRCN_DEFAULTS, build_drcn, parse_layer_positions
from re2_tf.training.trainer import model_loss_terms

REPO = Path(__file__).resolve().parents[1]
WORDS, CHARS, CLASSES = 30, 12, 3
TINY = get_spec("drcn").tiny


# --------------------------------------------------------------------------- helpers
def tiny_batch(seed=0, width=6):
    """Four pairs with padding in both texts (text2 of the last pair is empty: one padding
    position), character ids with padding characters, and exact-match flags."""
    return pair_batch(seed, char_vocab=CHARS, width=width, exact_match=True)


def build(seed=0, **options):
    model = build_drcn(WORDS, CHARS, CLASSES, **{**TINY, **options})
    randomize(model, seed)
    return model


def randomize(model, seed):
    randomize_weights(model, seed)  # every weight, biases, both embeddings, BN statistics


def reconstruction_losses(model):
    """``{layer number: loss}`` of the last call, read as the trainer reads them."""
    terms = model_loss_terms(model)
    found = (re.fullmatch(r"loss_layer/layer(\d+)_autoencoder", key) for key in terms)
    return {int(m.group(1)): float(terms[m.group(0)]) for m in found if m}


def optional_layer(model, name):
    try:
        return model.get_layer(name)
    except ValueError:
        return None


def extract_params(model, num_layers):
    """Copy the Keras weights into the plain-dict layout of drcn_numpy_reference."""

    def lstm(cell):
        return {
            "W": cell.kernel.numpy(),
            "U": cell.recurrent_kernel.numpy(),
            "b": cell.bias.numpy(),
        }

    params = {}
    for key in ("embedding", "fixed_embedding"):
        layer = optional_layer(model, key)
        params[key] = None if layer is None else layer.embeddings.numpy()
    chars = optional_layer(model, "char_cnn")
    params["char"] = (
        None
        if chars is None
        else {
            "embedding": chars.char_embedding.embeddings.numpy(),
            "kernel": chars.conv.kernel.numpy(),
            "bias": chars.conv.bias.numpy(),
        }
    )
    params["layers"] = []
    for number in range(1, num_layers + 1):
        bilstm = model.get_layer(f"layer{number}_bilstm").bilstm
        ae = optional_layer(model, f"layer{number}_autoencoder")
        params["layers"].append(
            {
                "forward": lstm(bilstm.forward_layer.cell),
                "backward": lstm(bilstm.backward_layer.cell),
                "autoencoder": None
                if ae is None
                else {
                    "W_e": ae.encoder.kernel.numpy(),
                    "b_e": ae.encoder.bias.numpy(),
                    "W_d": ae.decoder.kernel.numpy(),
                    "b_d": ae.decoder.bias.numpy(),
                },
            }
        )
    head = model.get_layer("prediction")
    hidden = []
    for k, dense in enumerate(head.hidden):
        bn = None
        if head.batch_norm:
            norm = head.norms[k]
            bn = {
                "gamma": norm.gamma.numpy(),
                "beta": norm.beta.numpy(),
                "mean": norm.moving_mean.numpy(),
                "var": norm.moving_variance.numpy(),
                "eps": norm.epsilon,
            }
        hidden.append({"W": dense.kernel.numpy(), "b": dense.bias.numpy(), "bn": bn})
    params["prediction"] = {
        "hidden": hidden,
        "output": {"W": head.output_layer.kernel.numpy(), "b": head.output_layer.bias.numpy()},
    }
    return params


def reference(model, cfg, batch):
    params = extract_params(model, cfg["num_layers"])
    return ref.forward(
        params,
        cfg,
        batch["text1"],
        batch["text2"],
        batch["text1_chars"],
        batch["text2_chars"],
        batch["text1_exact_match"],
        batch["text2_exact_match"],
    )


# --------------------------------------------------------------------------- NumPy reference
VARIANTS = {
    "dense_autoencoders_3_5": {},
    "dense_without_autoencoder": dict(autoencoder_layers=""),
    "residual_autoencoders_3_5": dict(connection="residual"),
    "residual_without_autoencoder": dict(connection="residual", autoencoder_layers="none"),
    "residual_no_dense_autoencoders_3_5": dict(connection="residual_no_dense"),
    "residual_no_dense_without_autoencoder": dict(
        connection="residual_no_dense", autoencoder_layers=""
    ),
    "batch_norm_tanh_autoencoder_every_layer": dict(
        batch_norm=True,
        autoencoder_layers="1,2,3,4,5",
        autoencoder_activation="tanh",
        reconstruction_weight=0.5,
    ),
    "without_co_attention_residual": dict(co_attention=False, connection="residual"),
    "fixed_embedding_only_without_char_cnn": dict(trainable_embedding=False, char_cnn=False),
    "trainable_embedding_only_without_exact_match_two_layers_one_fc": dict(
        fixed_embedding=False, exact_match=False, num_layers=2, autoencoder_layers="2", fc_layers=1
    ),
}
#: A smaller network for the tests that check plumbing rather than arithmetic.
SMALL = dict(num_layers=2, autoencoder_layers="1,2", batch_norm=True)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_keras_matches_numpy_reference(variant):
    options = VARIANTS[variant]
    cfg = {**DRCN_DEFAULTS, **TINY, **options}
    model = build(seed=len(variant), return_attention=cfg["co_attention"], **options)
    batch = tiny_batch(seed=len(variant))
    out = model(batch, training=False)
    losses = reconstruction_losses(model)
    logits, ref_losses, ref_attention = reference(model, cfg, batch)

    logits_keras = out["logits"] if cfg["co_attention"] else out
    assert np.abs(logits).max() > 0.1  # the comparison is not between near-zero numbers
    np.testing.assert_allclose(logits_keras.numpy(), logits, rtol=1e-5, atol=1e-5)
    assert sorted(losses) == list(
        parse_layer_positions(cfg["autoencoder_layers"], cfg["num_layers"])
    )
    assert sorted(ref_losses) == sorted(losses)
    for number, value in ref_losses.items():
        assert value > 0
        np.testing.assert_allclose(losses[number], value, rtol=1e-5, atol=1e-5)
    if cfg["co_attention"]:
        for number, (alpha, beta) in ref_attention.items():
            np.testing.assert_allclose(out[f"attention_{number}_text2"], alpha, atol=1e-5)
            np.testing.assert_allclose(out[f"attention_{number}_text1"], beta, atol=1e-5)


def _pad(batch, side, extra_positions=0, extra_chars=0):
    out = dict(batch)
    ids = np.pad(batch[side], ((0, 0), (0, extra_positions)))
    out[side] = ids
    out[f"{side}_exact_match"] = np.pad(
        batch[f"{side}_exact_match"], ((0, 0), (0, extra_positions))
    )
    out[f"{side}_chars"] = np.pad(
        batch[f"{side}_chars"], ((0, 0), (0, extra_positions), (0, extra_chars))
    )
    return out


def test_padding_changes_no_logit_no_loss_and_gets_no_attention():
    model = build(seed=3, batch_norm=True, return_attention=True)
    batch = tiny_batch(seed=3)
    base = model(batch, training=False)
    base_losses = reconstruction_losses(model)
    assert sorted(base_losses) == [3, 5]
    for side in ("text1", "text2"):
        for extra_positions, extra_chars in ((3, 0), (2, 4)):  # padding words, characters
            out = model(_pad(batch, side, extra_positions, extra_chars), training=False)
            np.testing.assert_allclose(out["logits"], base["logits"], rtol=1e-6, atol=1e-6)
            for number, value in reconstruction_losses(model).items():
                np.testing.assert_allclose(value, base_losses[number], rtol=1e-6)

    real1, real2 = batch["text1"] > 0, batch["text2"] > 0
    for number in range(1, 6):
        alpha = base[f"attention_{number}_text2"].numpy()  # over text2 positions (axis 2)
        beta = base[f"attention_{number}_text1"].numpy()  # over text1 positions (axis 1)
        assert np.all(alpha[~np.broadcast_to(real2[:, None, :], alpha.shape)] == 0)
        assert np.all(alpha[~np.broadcast_to(real1[:, :, None], alpha.shape)] == 0)
        assert np.all(beta[~np.broadcast_to(real1[:, :, None], beta.shape)] == 0)
        assert np.all(beta[~np.broadcast_to(real2[:, None, :], beta.shape)] == 0)
        # Rows (columns) with something to attend to sum to 1; the empty text2 gets nothing.
        rows = real1 & real2.any(axis=1, keepdims=True)
        np.testing.assert_allclose(alpha.sum(axis=2)[rows], 1.0, rtol=1e-6)
        cols = real2 & real1.any(axis=1, keepdims=True)
        np.testing.assert_allclose(beta.sum(axis=1)[cols], 1.0, rtol=1e-6)
        assert np.all(alpha[3] == 0) and np.all(beta[3] == 0)


# --------------------------------------------------------------------------- parameter count
def lstm(fan_in, units=100):
    """BiLSTM: per direction 4 gates x (input kernel + recurrent kernel + bias)."""
    return 2 * (4 * units * fan_in + 4 * units * units + 4 * units)


def dense(fan_in, units):
    return fan_in * units + units


def test_paper_snli_settings_have_6_671_228_parameters_plus_the_char_embedding():
    # Word representation: 300 (E_tr) + 300 (E_fix) + 32 (char CNN) + 1 (exact match) = 633.
    # Each layer adds [h; a] = 200 + 200 = 400 (100 units per direction); autoencoders after
    # layers 3 and 5 compress to 200.
    word, f = 300 + 300 + 32 + 1, 400
    char_cnn = 5 * 16 * 32 + 32  # conv width 5, 16 -> 32
    layers_1_3 = lstm(word) + lstm(word + f) + lstm(word + 2 * f)  # inputs 633, 1033, 1433
    ae_3 = dense(word + 3 * f, 200) + dense(200, word + 3 * f)  # 1833 -> 200 -> 1833
    layers_4_5 = lstm(200) + lstm(200 + f)  # inputs 200, 600
    ae_5 = dense(200 + 2 * f, 200) + dense(200, 200 + 2 * f)  # 1000 -> 200 -> 1000
    batch_norm = 2 * 1000  # gamma, beta per FC layer
    head = dense(5 * 200, 1000) + batch_norm + dense(1000, 1000) + batch_norm + dense(1000, 3)
    assert (layers_1_3, ae_3, layers_4_5, ae_5, head) == (
        2_721_600,
        735_233,
        801_600,
        401_200,
        2_009_003,
    )
    expected = char_cnn + layers_1_3 + ae_3 + layers_4_5 + ae_5 + head
    assert expected == 6_671_228
    paper = paper_values.value("drcn_kim2019", "text (SNLI results)", "DRCN single model")
    assert round(expected / 1e6, 1) == paper
    char_vocab = 100
    model = build_drcn(10, char_vocab, 3, batch_norm=True)
    assert count_parameters(model) == expected + 16 * char_vocab
    # The word embeddings: E_tr is trainable (10 x 300), E_fix is not.
    assert count_parameters(model, include_embedding=True) == count_parameters(model) + 3000

    # Other readings, by the same arithmetic: 100 units in total (50 per direction) ...
    half = (
        lstm(word, 50)
        + lstm(word + 200, 50)
        + lstm(word + 400, 50)
        + dense(word + 600, 200)
        + dense(200, word + 600)
        + lstm(200, 50)
        + lstm(400, 50)
        + dense(600, 200)
        + dense(200, 600)
    )
    assert char_cnn + half + head == 4_088_628
    # ... and no autoencoder (Table 6 (2)): v = 5 x (633 + 5 x 400) = 13,165 wide.
    no_ae = (
        sum(lstm(word + k * f) for k in range(5))
        + dense(5 * (word + 5 * f), 1000)
        + batch_norm
        + dense(1000, 1000)
        + batch_norm
        + dense(1000, 3)
    )
    assert char_cnn + no_ae == 20_312_595
    model = build_drcn(10, char_vocab, 3, batch_norm=True, autoencoder_layers="")
    assert count_parameters(model) == char_cnn + no_ae + 16 * char_vocab


def test_embeddings_start_equal_and_only_one_is_trainable():
    vectors = np.random.default_rng(0).normal(size=(WORDS, 4)).astype("float32")
    model = build_drcn(WORDS, CHARS, 2, embeddings=vectors, **{**TINY, "embedding_dim": 7})
    trainable, fixed = model.get_layer("embedding"), model.get_layer("fixed_embedding")
    assert trainable.trainable and not fixed.trainable
    np.testing.assert_array_equal(trainable.embeddings.numpy(), vectors)
    np.testing.assert_array_equal(fixed.embeddings.numpy(), vectors)
    model = build_drcn(WORDS, CHARS, 2, **TINY)  # no vectors: frozen copy of E_tr's init
    np.testing.assert_array_equal(
        model.get_layer("embedding").embeddings.numpy(),
        model.get_layer("fixed_embedding").embeddings.numpy(),
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(connection="sum"), "connection"),
        (dict(num_layers=0), "num_layers"),
        (dict(autoencoder_layers="6"), "autoencoder_layers"),
        (dict(autoencoder_layers="2,2"), "autoencoder_layers"),
        (dict(autoencoder_layers="three"), "autoencoder_layers"),
        (
            dict(
                trainable_embedding=False, fixed_embedding=False, char_cnn=False, exact_match=False
            ),
            "at least one",
        ),
        (dict(co_attention=False, return_attention=True), "co_attention"),
        (dict(fc_dropout=1.0), "fc_dropout"),
        (dict(embeddings=np.zeros((7, 4))), "embeddings"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_drcn(WORDS, CHARS, 2, **kwargs)


def test_char_cnn_needs_the_character_vocabulary_size():
    with pytest.raises(ValueError, match="char_vocab_size"):
        build_drcn(WORDS, None, 2)
    assert build_drcn(WORDS, None, 2, **TINY, char_cnn=False).get_layer("prediction")


# --------------------------------------------------------------------------- serialisation
@keras.saving.register_keras_serializable(package="re2_tf_tests")
class BiLSTMsBuiltWhileLoading(keras.layers.Layer):
    """Identity whose ``from_config`` -- run by ``keras.saving.load_model`` inside Keras'
    object-sharing scope -- constructs ``count`` :class:`MaskedBiLSTM` layers and records, for
    each, whether a sharing scope was open and the ``go_backwards`` of its two directions."""

    seen = []

    def __init__(self, count=0, **kwargs):
        super().__init__(**kwargs)
        self.count = count

    def call(self, x):
        return x

    def get_config(self):
        return {**super().get_config(), "count": self.count}

    @classmethod
    def from_config(cls, config):
        from re2_tf._compat import sharing_maps

        for _ in range(config["count"]):
            scope_open = all(isinstance(m, dict) for m in sharing_maps())
            layer = MaskedBiLSTM(3)
            cls.seen.append(
                (
                    scope_open,
                    layer.bilstm.forward_layer.go_backwards,
                    layer.bilstm.backward_layer.go_backwards,
                )
            )
        return super().from_config(config)


def test_bilstm_construction_is_safe_inside_a_loading_scope(tmp_path):
    """Regression: ``load_model`` builds layers inside Keras' object-sharing scope, where
    ``Bidirectional``'s internal copies were matched by recycled ``id()``s and a forward
    LSTM sometimes came back as an earlier backward one (2 of 200 constructions failed
    before the fix; a .keras load of FITN failed the same way under pytest-xdist). Here 300
    are constructed while a ``.keras`` file loads."""
    model = keras.Sequential([keras.Input((2,)), BiLSTMsBuiltWhileLoading(300)])
    model.save(tmp_path / "probe.keras")
    BiLSTMsBuiltWhileLoading.seen.clear()
    keras.saving.load_model(tmp_path / "probe.keras")
    assert len(BiLSTMsBuiltWhileLoading.seen) == 300
    assert all(scope_open for scope_open, _, _ in BiLSTMsBuiltWhileLoading.seen)
    assert all(not forward and backward for _, forward, backward in BiLSTMsBuiltWhileLoading.seen)


def test_keras_file_and_get_config_round_trips(tmp_path):
    model = build(seed=5, **SMALL)
    batch = tiny_batch(seed=5)
    model(batch, training=False)
    losses = reconstruction_losses(model)

    # .keras file and get_config + weights: the same logits (loaded's last call is on batch)
    loaded = assert_round_trips(model, batch, tmp_path / "drcn.keras")
    assert reconstruction_losses(loaded) == pytest.approx(losses, rel=1e-6)
    assert not loaded.get_layer("fixed_embedding").trainable
    assert count_parameters(loaded) == count_parameters(model)

    layers = [
        CharCNN(CHARS, 3, 4, 3, 0.5, l2=1e-6),
        MaskedBiLSTM(3, l2=1e-6),
        CoAttention(epsilon=1e-10),
        Autoencoder(5, 0.2, "tanh", 0.5, 1e-6),
        InteractionPrediction(3, 6, 2, 0.2, True, 1e-6),
    ]
    for layer in layers + [model.get_layer("layer2_autoencoder"), model.get_layer("prediction")]:
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config


def test_symbolic_and_eager_calls_agree():
    model = build(seed=7, **SMALL)
    batch = tiny_batch(seed=7)
    eager = model(batch, training=False).numpy()
    eager_losses = reconstruction_losses(model)

    @tf.function
    def graph(features):
        logits = model(features, training=False)
        return logits, model_loss_terms(model)

    logits, terms = graph({k: tf.constant(v) for k, v in batch.items()})
    np.testing.assert_allclose(logits.numpy(), eager, rtol=1e-6, atol=1e-6)
    for number, value in eager_losses.items():
        assert float(terms[f"loss_layer/layer{number}_autoencoder"]) == pytest.approx(
            value, rel=1e-6
        )


# --------------------------------------------------------------------------- spec
def test_spec_declares_the_paper_recipe_and_builds():
    spec = get_spec("drcn")
    assert set(spec.features) == {"word_ids", "char_ids", "exact_match"}
    assert spec.features["char_ids"]["max_word_length"] == 16
    assert spec.training["optimizer"] == "rmsprop" and spec.training["lr_schedule"] == "plateau"
    assert spec.training["lr"] == 1e-3 and spec.training["plateau_factor"] == 0.85
    assert spec.presets["snli"]["max_len"] == 35 and spec.presets["quora"]["max_len"] == 25
    assert spec.presets["snli"]["batch_norm"] and not spec.presets["quora"]["batch_norm"]
    assert spec.presets["trecqa"] == {"max_len": 50, "batch_norm": True}  # paper: TrecQA 50
    assert spec.defaults() == DRCN_DEFAULTS
    assert spec.export_backend == "keras" and "DRCN" in spec.benchmark
    model = spec.build(
        2,
        {"word_ids": WORDS, "char_ids": CHARS, "exact_match": None},
        None,
        **{**spec.defaults(), **TINY},
    )
    assert model.output.shape == (None, 2)
    for dataset in ("snli", "quora"):
        text = (REPO / "configs" / "drcn" / f"{dataset}.flags").read_text()
        assert "--model=drcn" in text and f"--dataset={dataset}" in text


# --------------------------------------------------------------------------- learning
def test_a_few_updates_lower_the_task_and_reconstruction_losses():
    keras.utils.set_random_seed(0)
    model = build_drcn(
        WORDS,
        CHARS,
        CLASSES,
        **TINY,
        num_layers=1,
        autoencoder_layers="1",
        embedding_dropout=0.0,
        autoencoder_dropout=0.0,
        fc_dropout=0.0,
    )
    rng = np.random.default_rng(0)
    for w in model.weights:  # a start with a clear reconstruction error to remove
        w.assign(rng.normal(0.0, 0.3, tuple(w.shape)).astype("float32"))
    batch = tiny_batch(seed=0)
    labels = rng.integers(0, CLASSES, len(batch["text1"])).astype("int32")
    history = train_on_fixed_batch(
        model, batch, labels, keras.optimizers.RMSprop(1e-2), updates=29, grad_clipping=5.0
    )
    first, last = history[0], history[-1]  # each step logs the losses before its update
    assert set(first) >= {"loss_task", "loss_regularization", "loss_layer/layer1_autoencoder"}
    assert last["loss_task"] < 0.2 * first["loss_task"]
    key = "loss_layer/layer1_autoencoder"
    assert last[key] < 0.5 * first[key]
    assert first["loss_regularization"] > 0


# The raw-text SavedModel (char ids and exact match computed in the graph), fresh-process
# serving and bad input are tested for every registered model in tests/test_export_models.py.
