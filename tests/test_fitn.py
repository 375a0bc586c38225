"""FITN model: an independent NumPy forward pass (logits and attention maps) for every
attention x connection option, padding invariance, the paper's parameter count by hand,
serialisation, symbolic = eager, the spec, and learning."""

from pathlib import Path

import fitn_numpy_reference as ref
import keras
import numpy as np
import pytest
import tensorflow as tf
from model_scaffolding import (
    assert_calls_agree,
    assert_round_trips,
    pair_batch,
    train_on_fixed_batch,
)
from weights import randomize_weights

from re2_lab import paper_values
from re2_tf.layers import (
    FITN_ATTENTIONS,
    FITN_CONNECTIONS,
    BlockOutput,
    MemoryBasedAttention,
    OAMixedConnection,
)
from re2_tf.models import count_parameters, get_spec
from re2_tf.models.fitn import FITN_DEFAULTS, build_fitn

REPO = Path(__file__).resolve().parents[1]
WORDS, CHARS, CLASSES = 30, 12, 3
TINY = dict(get_spec("fitn").tiny, dropout=0.3)


def tiny_batch(seed=0, width=5):
    """Four pairs with padding in both texts (text2 of the last pair is empty), and
    character ids with padding characters."""
    return pair_batch(seed, char_vocab=CHARS, width=width)


def build(seed=0, **options):
    keras.utils.set_random_seed(seed)
    model = build_fitn(WORDS, CHARS, CLASSES, **{**TINY, **options})
    randomize_weights(model, seed)  # every weight: biases, pool bias and embeddings included
    sharpen(model, seed)
    return model


def sharpen(model, seed):
    """Make the attention far from uniform, so that a wrong memory, interaction or pooling
    term shows in the logits: with normal(0, 0.5) weights at these tiny widths ``M = h * h``
    is ~0.01 and Eq. 8's ReLU flattens most rows, and any attention bug would hide."""
    rng = np.random.default_rng(seed + 500)
    for w in model.weights:
        name = w.path.split("/")[-1]
        if "bilstm" in w.path and name in ("kernel", "recurrent_kernel"):
            w.assign(w * 6.0)  # saturate the states: |h| near 1
        elif name in ("interaction_kernel", "memory_kernel"):
            w.assign(w * 3.0)
        elif name == "kernel" and "attention" in w.path:
            w.assign(w * 10.0)  # wDot-Att's W
        elif name == "pool_kernel":
            w.assign(w * 4.0)
        elif name == "pool_bias":
            w.assign(rng.uniform(1.0, 2.0))  # mostly positive logits before the ReLU


def extract_params(model, cfg):
    """Copy the Keras weights into fitn_numpy_reference's layout; Eq. 7's single ``w_m`` is
    rebuilt as ``[W_g; W_m]`` (rows for ``Mbar^{l-1}`` first, as the paper concatenates)."""

    def lstm(cell):
        return {
            "W": cell.kernel.numpy(),
            "U": cell.recurrent_kernel.numpy(),
            "b": cell.bias.numpy(),
        }

    params = {"embedding": model.get_layer("embedding").embeddings.numpy(), "char": None}
    try:
        chars = model.get_layer("char_cnn")
        params["char"] = {
            "embedding": chars.char_embedding.embeddings.numpy(),
            "kernel": chars.conv.kernel.numpy(),
            "bias": chars.conv.bias.numpy(),
        }
    except ValueError:
        pass
    params["rounds"] = []
    for number in range(cfg["rounds"]):
        bilstm = model.get_layer(f"round{number}_bilstm").bilstm
        att = model.get_layer(f"round{number}_attention")
        if cfg["attention"] in ("mem", "inter"):
            w_m = att.interaction_kernel.numpy()
            if att.has_memory:
                w_m = np.concatenate([att.memory_kernel.numpy(), w_m], axis=0)
            attention = {
                "w_m": w_m,
                "b_m": att.memory_bias.numpy(),
                "w_p": att.pool_kernel.numpy(),
                "b_p": att.pool_bias.numpy(),
            }
        elif cfg["attention"] == "wdot":
            attention = {"W": att.kernel.numpy()}
        else:
            attention = {}
        out = model.get_layer(f"round{number}_output")
        params["rounds"].append(
            {
                "forward": lstm(bilstm.forward_layer.cell),
                "backward": lstm(bilstm.backward_layer.cell),
                "attention": attention,
                "output": {"W": out.kernel.numpy(), "b": out.bias.numpy()},
            }
        )
    for key, layer in (("hidden", "fc_hidden"), ("output", "logits")):
        dense = model.get_layer(layer)
        params[key] = {"W": dense.kernel.numpy(), "b": dense.bias.numpy()}
    return params


def reference(model, cfg, batch):
    return ref.forward(
        extract_params(model, cfg),
        cfg,
        batch["text1"],
        batch["text2"],
        batch["text1_chars"],
        batch["text2_chars"],
    )


# --------------------------------------------------------------------------- NumPy reference
VARIANTS = [(a, c) for a in FITN_ATTENTIONS for c in FITN_CONNECTIONS]


@pytest.mark.parametrize("attention,connection", VARIANTS)
def test_keras_matches_numpy_reference(attention, connection):
    options = dict(attention=attention, connection=connection)
    cfg = {**FITN_DEFAULTS, **TINY, **options}
    seed = FITN_ATTENTIONS.index(attention) * 4 + FITN_CONNECTIONS.index(connection)
    model = build(seed=seed, return_attention=True, **options)
    batch = tiny_batch(seed=seed)
    out = model(batch, training=False)
    logits, maps = reference(model, cfg, batch)
    assert np.abs(logits).max() > 0.1  # the comparison is not between near-zero numbers
    np.testing.assert_allclose(out["logits"].numpy(), logits, rtol=1e-5, atol=1e-5)
    assert len(maps) == cfg["rounds"] == 3
    # the attention is far from uniform somewhere (the weights within one row of pair 0
    # or pair 2, whose texts have 4 x 3 and 5 x 4 real positions)
    spread = max(
        float(max(np.ptp(over_t[0, :4, :3], axis=1).max(), np.ptp(over_t[2], 1).max()))
        for over_t, _ in maps
    )
    assert spread > (0.03 if attention == "dot" else 0.3), spread
    for number, (over_t, over_s) in enumerate(maps):
        np.testing.assert_allclose(out[f"attention_{number}_text2"], over_t, atol=1e-5)
        np.testing.assert_allclose(out[f"attention_{number}_text1"], over_s, atol=1e-5)


@pytest.mark.parametrize(
    "options",
    [
        dict(activation="tanh", rounds=2, char_cnn=False),
        dict(activation="sigmoid", rounds=1, attention="mem"),
        dict(activation="linear", rounds=4, attention="inter", connection="residual"),
    ],
)
def test_other_activations_and_rounds_match_the_reference(options):
    cfg = {**FITN_DEFAULTS, **TINY, **options}
    model = build(seed=len(str(options)), **options)
    batch = tiny_batch(seed=7)
    logits, _ = reference(model, cfg, batch)
    np.testing.assert_allclose(model(batch, training=False).numpy(), logits, rtol=1e-5, atol=1e-5)


def _pad(batch, side, extra_positions=0, extra_chars=0):
    out = dict(batch)
    out[side] = np.pad(batch[side], ((0, 0), (0, extra_positions)))
    out[f"{side}_chars"] = np.pad(
        batch[f"{side}_chars"], ((0, 0), (0, extra_positions), (0, extra_chars))
    )
    return out


@pytest.mark.parametrize("attention", ["mem", "wdot"])
def test_padding_changes_no_logit_and_gets_no_attention(attention):
    model = build(seed=11, attention=attention, return_attention=True)
    batch = tiny_batch(seed=2)
    base = model(batch, training=False)
    for side in ("text1", "text2"):
        padded = model(_pad(batch, side, extra_positions=3, extra_chars=2), training=False)
        np.testing.assert_allclose(padded["logits"], base["logits"], rtol=1e-5, atol=1e-6)
        for number in range(3):
            for key in (f"attention_{number}_text2", f"attention_{number}_text1"):
                weights = padded[key].numpy()
                keep = (_pad(batch, side, 3)["text1"] != 0)[:, :, None] & (
                    _pad(batch, side, 3)["text2"] != 0
                )[:, None, :]
                assert (weights[~keep] == 0).all()
    # weights sum to 1 over the real positions of the other text, 0 where it is empty
    over_t = base["attention_0_text2"].numpy()
    np.testing.assert_allclose(over_t[0, :4].sum(-1), 1.0, atol=1e-6)
    assert (over_t[3] == 0).all()  # text2 of the last pair is empty
    assert np.isfinite(base["logits"]).all()


# ------------------------------------------------------------------------ parameter count
def _lstm(inputs, units):
    return 2 * 4 * units * (inputs + units + 1)  # two directions, Keras' LSTM


def hand_count(
    hidden_size,
    memory_size,
    rounds=3,
    word=300,
    char_dim=25,
    char_filters=50,
    char_kernel=5,
    fc=500,
    classes=2,
):
    """FITN's parameters without the word and character embedding matrices, by hand."""
    d_e, d_h, d_m = word + char_filters, 2 * hidden_size, memory_size
    total = char_kernel * char_dim * char_filters + char_filters  # ChConv
    total += _lstm(d_e, hidden_size) + (rounds - 1) * _lstm(d_e + d_h, hidden_size)  # Eq. 2-3
    total += d_h * d_m + d_m + (rounds - 1) * ((d_h + d_m) * d_m + d_m)  # Eq. 6-7
    total += rounds * (d_m + 1)  # Eq. 8
    total += rounds * (4 * d_h * d_h + d_h)  # Eq. 12-13
    total += 2 * (d_e + d_h) * fc + fc + fc * classes + classes  # Eq. 16-17, FFN
    return total


@pytest.mark.parametrize(
    "hidden_size,memory_size,expected",
    [
        (100, 100, 2_521_405),  # the chosen reading: 100 per direction, d_m = 100
        (50, 100, 1_189_905),  # d_h = 100 in total
        (100, 50, 2_476_105),
        (100, 200, 2_642_005),
    ],
)
def test_parameter_count_at_the_paper_quora_settings(hidden_size, memory_size, expected):
    """Paper (Table 1): 2.5M. The reading used (100 LSTM units per direction, d_m = 100)
    is the nearest to it of those listed; all exclude the word embedding (a vocabulary-
    sized matrix the paper cannot be counting) and the 25-d character embedding."""
    assert hand_count(hidden_size, memory_size) == expected
    chars = 70
    model = build_fitn(1000, chars, 2, hidden_size=hidden_size, memory_size=memory_size)
    assert model.count_params() == expected + 1000 * 300 + chars * 25
    assert count_parameters(model) == expected + chars * 25


def test_paper_reading_is_nearest_2_5m_of_those_considered():
    counts = {(h, m): hand_count(h, m) for h in (50, 100) for m in (50, 100, 200)}
    paper = paper_values.value("fitn_qi2022", "Table 1", "FITN") * 1e6
    assert min(counts, key=lambda k: abs(counts[k] - paper)) == (100, 100)
    assert (FITN_DEFAULTS["hidden_size"], FITN_DEFAULTS["memory_size"]) == (100, 100)


# ------------------------------------------------------------------------ layers and options
def test_memory_attention_never_concatenates_the_memory():
    """Eq. 7's ``w_m [Mbar; M]`` is computed as ``M W_m + Mbar W_g``: a concat of width
    d + d_m never appears in the graph (it would be the widest tensor)."""
    h1, h2 = keras.Input((None, 8)), keras.Input((None, 8))
    m1, m2 = keras.Input((None, 1)), keras.Input((None, 1))
    memory = keras.Input((None, None, 6))
    a1, a2, new = MemoryBasedAttention("mem", 6, has_memory=True)(h1, h2, m1, m2, memory=memory)
    assert tuple(new.shape) == (None, None, None, 6)
    layer = MemoryBasedAttention("mem", 6, has_memory=True)
    fn = tf.function(lambda *x: layer(*x[:4], memory=x[4]))
    graph = fn.get_concrete_function(
        tf.TensorSpec([2, 3, 8]),
        tf.TensorSpec([2, 4, 8]),
        tf.TensorSpec([2, 3, 1]),
        tf.TensorSpec([2, 4, 1]),
        tf.TensorSpec([2, 3, 4, 6]),
    ).graph
    widths = [
        op.outputs[0].shape[-1]
        for op in graph.get_operations()
        if op.type == "ConcatV2" and op.outputs[0].shape.rank == 4
    ]
    assert 14 not in widths


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(attention="cosine"), "attention must be one of"),
        (dict(connection="highway"), "connection must be one of"),
        (dict(activation="swish"), "activation must be one of"),
        (dict(rounds=0), "rounds must be an integer"),
        (dict(dropout=1.0), "dropout must be in"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_fitn(WORDS, CHARS, CLASSES, **kwargs)


def test_char_cnn_needs_the_character_vocabulary_size():
    with pytest.raises(ValueError, match="char_vocab_size"):
        build_fitn(WORDS, None, CLASSES)
    build_fitn(
        WORDS,
        None,
        CLASSES,
        char_cnn=False,
        **{k: v for k, v in TINY.items() if not k.startswith("char")},
    )


def test_layer_configs_round_trip():
    for layer in (
        MemoryBasedAttention("wdot", 7, activation="tanh"),
        MemoryBasedAttention("mem", 9, has_memory=True),
        BlockOutput(12, activation="sigmoid"),
        OAMixedConnection("residual"),
    ):
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config
    with pytest.raises(ValueError, match="has_memory needs"):
        MemoryBasedAttention("inter", has_memory=True)


def test_keras_file_and_get_config_round_trips(tmp_path):
    model = build(seed=5, attention="mem", connection="oa_mixed")
    assert_round_trips(model, tiny_batch(seed=5), tmp_path / "fitn.keras")


def test_symbolic_and_eager_calls_agree():
    assert_calls_agree(build(seed=6), tiny_batch(seed=6), atol=1e-5)


def test_spec_declares_the_paper_recipe_and_builds():
    spec = get_spec("fitn")
    assert spec.training["optimizer"] == "adam" and spec.training["lr"] == 1e-3
    assert set(spec.features) == {"word_ids", "char_ids"}
    assert {k: p.default for k, p in spec.hparams.items()} == FITN_DEFAULTS
    assert spec.hparams["attention"].choices == FITN_ATTENTIONS
    assert spec.hparams["connection"].choices == FITN_CONNECTIONS
    model = spec.build(2, {"word_ids": 50, "char_ids": 20}, None, **{**FITN_DEFAULTS, **TINY})
    assert model.output.shape == (None, 2)


@pytest.mark.slow
def test_a_few_updates_lower_the_loss_on_a_fixed_batch():
    keras.utils.set_random_seed(0)
    model = build_fitn(WORDS, CHARS, CLASSES, **{**TINY, "dropout": 0.0})
    history = train_on_fixed_batch(
        model,
        tiny_batch(seed=1),
        np.array([0, 1, 2, 1], "int32"),
        keras.optimizers.Adam(1e-2),
        updates=30,
        jit_compile=False,
    )
    assert history[-1]["loss_task"] < 0.5 * history[0]["loss_task"]
