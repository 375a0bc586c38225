"""Match-SRNN model: an independent NumPy forward pass (embedding, neural tensor network,
spatial GRU cell by cell, linear score) for each output and direction, padding invariance of
the true corner, the parameter count by hand, serialisation, symbolic = eager, the spec
(task loss chosen by a hyper-parameter) and learning with each task loss."""

import keras
import match_srnn_numpy_reference as ref
import numpy as np
import pytest
from model_scaffolding import assert_calls_agree, assert_round_trips, train_on_fixed_batch
from weights import randomize_weights

from re2_tf.models import count_parameters, get_spec
from re2_tf.models.match_srnn import MATCH_SRNN_DEFAULTS, MATCH_SRNN_LOSSES, build_match_srnn
from re2_tf.training.losses import output_kind

WORDS, CLASSES = 30, 3
TINY = get_spec("match_srnn").tiny
# Unequal lengths, padding in both texts, one text filling its padded width, an empty text.
TEXT1 = np.array(
    [[3, 4, 5, 6, 0], [7, 8, 0, 0, 0], [9, 10, 11, 12, 13], [2, 0, 0, 0, 0], [5, 6, 7, 0, 0]],
    "int32",
)
TEXT2 = np.array(
    [[14, 15, 16, 0], [17, 0, 0, 0], [5, 4, 3, 2], [0, 0, 0, 0], [8, 9, 0, 0]], "int32"
)


def tiny_batch():
    return {"text1": TEXT1, "text2": TEXT2}


def build(seed=0, **options):
    keras.utils.set_random_seed(seed)
    model = build_match_srnn(WORDS, CLASSES, **{**TINY, **options})
    randomize_weights(model, seed)  # every weight, biases and embeddings included
    return model


def weights_of(model, layer_name):
    return {w.name: w.numpy() for w in model.get_layer(layer_name).weights}


def reference(model, batch, bidirectional):
    """Logits/score from the NumPy reference with ``model``'s weights (float64)."""
    table = model.get_layer("embedding").embeddings.numpy().astype(np.float64)
    lengths1 = (batch["text1"] > 0).sum(1)
    lengths2 = (batch["text2"] > 0).sum(1)
    s = ref.neural_tensor_network(
        weights_of(model, "neural_tensor_network"), table[batch["text1"]], table[batch["text2"]]
    )
    h, _ = ref.spatial_gru(weights_of(model, "spatial_gru"), s, lengths1, lengths2)
    if bidirectional:
        back, _ = ref.spatial_gru(
            weights_of(model, "spatial_gru_backward"), s, lengths1, lengths2, go_backwards=True
        )
        h = np.concatenate([h, back], axis=1)
    head = [layer for layer in model.layers if layer.name in ("logits", "score")][0]
    kernel, bias = (w.numpy().astype(np.float64) for w in head.weights)
    return h @ kernel + bias


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("loss", ["softmax_cross_entropy", "pairwise_hinge"])
def test_keras_matches_numpy_reference(loss, bidirectional):
    model = build(seed=3, loss=loss, bidirectional=bidirectional)
    batch = tiny_batch()
    got = model(batch, training=False).numpy()
    want = reference(model, batch, bidirectional)
    assert got.shape == ((5, CLASSES) if loss == "softmax_cross_entropy" else (5, 1))
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    # The reference is not trivial: pairs differ, and the empty pair is the output bias.
    assert np.ptp(want[:3], axis=0).max() > 1e-2
    head = model.get_layer("logits" if loss == "softmax_cross_entropy" else "score")
    np.testing.assert_allclose(got[3], head.weights[1].numpy(), atol=1e-6)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_appending_padding_changes_no_output(bidirectional):
    model = build(seed=4, bidirectional=bidirectional)
    batch = tiny_batch()
    padded = {"text1": np.pad(TEXT1, [[0, 0], [0, 3]]), "text2": np.pad(TEXT2, [[0, 0], [0, 6]])}
    np.testing.assert_allclose(
        model(padded, training=False), model(batch, training=False), atol=1e-5
    )


def hand_count(words, dim, slices, hidden, outputs, bidirectional=False):
    """Parameters by hand: embedding ``V d``; neural tensor ``c d^2 + 2 d c + c``; spatial GRU
    reset ``(3H + c) 3H + 3H``, update ``(3H + c) 4H + 4H``, ``W`` ``c H``, ``U`` ``3H H``,
    ``b`` ``H`` (twice when bidirectional); linear score ``(H or 2H) outputs + outputs``."""
    ntn = slices * dim * dim + 2 * dim * slices + slices
    gru = (
        (3 * hidden + slices) * 3 * hidden
        + 3 * hidden
        + (3 * hidden + slices) * 4 * hidden
        + 4 * hidden
        + slices * hidden
        + 3 * hidden * hidden
        + hidden
    )
    directions = 2 if bidirectional else 1
    return (words * dim, ntn + directions * gru + directions * hidden * outputs + outputs)


@pytest.mark.parametrize(
    "options,outputs",
    [
        ({}, 3),
        ({"bidirectional": True}, 3),
        ({"loss": "pairwise_hinge"}, 1),
        ({"loss": "squared_error", "bidirectional": True}, 1),
    ],
)
def test_parameter_count_at_the_paper_settings(options, outputs):
    # The paper's widths (Sec. 6.1): 50-d embeddings, c = 10, H = 10.
    model = build_match_srnn(1000, 3, **options)
    embedding, rest = hand_count(1000, 50, 10, 10, outputs, options.get("bidirectional", False))
    assert count_parameters(model) == rest
    assert count_parameters(model, include_embedding=True) == embedding + rest
    if options == {}:
        assert rest == 29_323  # 26,010 tensor + 3,280 spatial GRU + 33 output


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"loss": "hinge"}, "loss must be one of"),
        ({"dropout": 1.0}, "dropout"),
        ({"embeddings": np.zeros((5, 4))}, "embeddings must have shape"),
        ({"slices": 0}, "slices"),
        ({"hidden_size": 0}, "units"),
    ],
)
def test_bad_options_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_match_srnn(WORDS, CLASSES, **kwargs)


def test_pretrained_vectors_set_the_embedding_and_its_width():
    vectors = np.random.default_rng(0).normal(size=(WORDS, 7)).astype("float32")
    model = build_match_srnn(WORDS, CLASSES, embeddings=vectors, slices=2, hidden_size=2)
    np.testing.assert_array_equal(model.get_layer("embedding").embeddings.numpy(), vectors)


def test_keras_file_and_get_config_round_trips(tmp_path):
    model = build(seed=5, bidirectional=True, loss="pairwise_hinge")
    assert_round_trips(model, tiny_batch(), tmp_path / "match_srnn.keras")


def test_symbolic_and_eager_calls_agree():
    assert_calls_agree(build(seed=6, bidirectional=True), tiny_batch(), atol=1e-5, xla=True)


def test_spec_declares_the_paper_recipe_and_the_loss_chooses_the_output():
    spec = get_spec("match_srnn")
    assert spec.training["optimizer"] == "adagrad"
    assert set(spec.features) == {"word_ids"}
    assert spec.defaults() == MATCH_SRNN_DEFAULTS
    assert spec.hparams["loss"].choices == MATCH_SRNN_LOSSES
    assert spec.task_loss_name() == "softmax_cross_entropy" and output_kind(spec) == "logits"
    assert spec.task_loss_name({"loss": "pairwise_hinge"}) == "pairwise_hinge"
    assert output_kind(spec, {"loss": "pairwise_hinge"}) == "score"
    assert output_kind(spec, {"loss": "squared_error"}) == "score"
    assert spec.presets["wikiqa"]["loss"] == "pairwise_hinge"
    model = spec.build(
        2, {"word_ids": 50}, None, **{**spec.defaults(), **TINY, "loss": "pairwise_hinge"}
    )
    assert model.output.shape == (None, 1)


@pytest.mark.parametrize("loss", MATCH_SRNN_LOSSES)
def test_a_few_updates_lower_each_task_loss_on_a_fixed_batch(loss):
    keras.utils.set_random_seed(0)
    model = build_match_srnn(WORDS, CLASSES, loss=loss, **TINY)
    batch = tiny_batch()
    if loss == "pairwise_hinge":  # rows: (query, positive) vs (query, negative)
        negative = {"text1": TEXT1, "text2": np.roll(TEXT2, 1, axis=0)}
        x, y = {"positive": batch, "negative": negative}, np.zeros(5, "int32")
    elif loss == "squared_error":
        x, y = batch, np.array([0.2, 0.9, 0.5, 0.0, 0.7], "float32")
    else:
        x, y = batch, np.array([0, 1, 2, 1, 0], "int32")
    history = train_on_fixed_batch(
        model, x, y, keras.optimizers.Adam(3e-2), updates=40, jit_compile=False, task_loss=loss
    )
    assert history[-1]["loss_task"] < 0.5 * history[0]["loss_task"]


@pytest.mark.slow  # the component benchmark, traced three ways
def test_component_benchmark_prints_every_row_with_consistent_speed_ups():
    # The benchmark's own check (both scans agree, outputs and gradients) runs inside it.
    from re2_tf.models.match_srnn import benchmark_spatial_gru_scans

    table = benchmark_spatial_gru_scans(
        batch=2, batches=2, warmup=1, sizes=(4,), train_batch=3, train_batches=1
    )
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    assert [(r[0].strip(), r[1].strip(), r[2].strip()) for r in rows] == [
        ("4×4", "2", "graph"),
        ("4×4", "2", "XLA"),
        ("4×4", "3", "graph, forward + backward"),
    ]
    for row in rows:
        wave, cell, speed_up = float(row[3]), float(row[4]), float(row[5].strip(" ×"))
        assert wave > 0 and cell > 0
        # Printed to 2 decimals (ms) and 1 decimal (speed-up): compare within rounding.
        assert speed_up == pytest.approx(cell / wave, rel=0.05, abs=0.06)
