"""re2_tf.analysis / re2-analyze: the attention maps every model's spec declares, read from the
trained graph on tiny random models.

For each model: the maps equal the layer's own outputs (the builders' ``return_attention``
models with the same weights, or a direct call of the layer on its inputs in the same graph);
rows sum to 1 over the real tokens; padding gets exactly 0; the model's output is unchanged.
Match-SRNN's back-traced path is checked on a hand-made grid and on the model's own gates.
"""

import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from model_scaffolding import pair_batch
from weights import randomize_weights

from re2_tf import runs
from re2_tf.analysis import analysis_model, attention_maps, max_pool_rate, save_maps, trace_path
from re2_tf.data import features as features_lib
from re2_tf.data.vocab import Vocab
from re2_tf.models import get_spec
from re2_tf.models.drcn import build_drcn
from re2_tf.models.fitn import build_fitn
from re2_tf.models.match_srnn import build_match_srnn
from re2_tf.models.re2 import build_re2

REPO = Path(__file__).resolve().parents[1]
WORDS, CHARS, CLASSES = 30, 40, 3
TINY_DRCN = dict(get_spec("drcn").tiny, num_layers=2, autoencoder_layers="2")
TINY_FITN = dict(get_spec("fitn").tiny, rounds=2)


def tiny(name, return_attention=False, seed=0):
    if name == "re2":
        model = build_re2(
            WORDS,
            CLASSES,
            embedding_dim=6,
            hidden_size=4,
            blocks=2,
            enc_layers=1,
            return_attention=return_attention,
        )
    elif name == "drcn":
        model = build_drcn(WORDS, CHARS, CLASSES, return_attention=return_attention, **TINY_DRCN)
    elif name == "fitn":
        model = build_fitn(WORDS, CHARS, CLASSES, return_attention=return_attention, **TINY_FITN)
    else:
        model = build_match_srnn(WORDS, CLASSES, **get_spec("match_srnn").tiny)
    randomize_weights(model, seed)
    return model


def batch_for(name):
    return pair_batch(
        0, char_vocab=CHARS if name in ("drcn", "fitn") else None, exact_match=name == "drcn"
    )


def lengths(batch):
    return (batch["text1"] > 0).sum(1), (batch["text2"] > 0).sum(1)


def check_attention(maps, axis, len1, len2):
    """Each map ``[batch, len1_max, len2_max]``: sums to 1 over ``axis`` (1 rows, 2 columns)
    on the real tokens, exactly 0 at padding of either text."""
    maps = np.asarray(maps)
    for b in range(maps.shape[0]):
        m, n = len1[b], len2[b]
        assert np.all(maps[b, m:] == 0) and np.all(maps[b, :, n:] == 0)
        sums = maps[b, :m, :n].sum(axis=axis - 1)
        expected = 1.0 if min(m, n) > 0 else 0.0
        np.testing.assert_allclose(sums, expected, atol=1e-5)


# ------------------------------------------------------------- RE2, DRCN, FITN attention maps
ATTENTION = {
    # spec map name -> the builder's return_attention output (same layer output), and axis
    "re2": [
        ("block{n}_over_text1", "attention_{n}_text1", 1),
        ("block{n}_over_text2", "attention_{n}_text2", 2),
    ],
    "drcn": [
        ("layer{n}_alpha", "attention_{n}_text2", 2),
        ("layer{n}_beta", "attention_{n}_text1", 1),
    ],
    "fitn": [
        ("round{n}_over_text2", "attention_{n}_text2", 2),
        ("round{n}_over_text1", "attention_{n}_text1", 1),
    ],
}
BLOCKS = {"re2": (0, 1), "drcn": (1, 2), "fitn": (0, 1)}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_maps_are_the_layers_own_and_normalised(name):
    model = tiny(name)
    reference = tiny(name, return_attention=True)
    reference.set_weights(model.get_weights())
    batch = batch_for(name)
    out = analysis_model(model)(batch)
    ref = reference(batch)
    np.testing.assert_array_equal(out["output"], model(batch))
    len1, len2 = lengths(batch)
    assert len2.min() == 0  # an empty text is in the batch: defined, not NaN
    for template, ref_template, axis in ATTENTION[name]:
        for n in BLOCKS[name]:
            got = np.asarray(out[template.format(n=n)])
            np.testing.assert_allclose(got, ref[ref_template.format(n=n)], atol=1e-6)
            assert np.isfinite(got).all()
            check_attention(got, axis, len1, len2)


def test_appending_padding_gets_exactly_zero_weight():
    model = tiny("re2")
    batch = batch_for("re2")
    padded = dict(batch, text2=np.pad(batch["text2"], [(0, 0), (0, 3)]))
    sub = analysis_model(model)
    short, long = sub(batch), sub(padded)
    width = batch["text2"].shape[1]
    for name in ("block0_over_text1", "block1_over_text2"):
        assert np.all(np.asarray(long[name])[:, :, width:] == 0)
        np.testing.assert_allclose(long[name][:, :, :width], short[name], atol=1e-6)


def test_drcn_mean_and_max_pool_rates():
    model = tiny("drcn")
    batch = batch_for("drcn")
    out = analysis_model(model)(batch)
    # The positions are the pooling layer's own: gather its input there, get its output.
    pooling = model.get_layer("pooling")
    nodes = pooling._inbound_nodes
    probe = keras.Model(
        model.inputs, [t for node in nodes for t in (node.input_tensors[0], node.outputs[0])]
    )
    x1, pooled1, x2, pooled2 = (np.asarray(t) for t in probe(batch))
    len1, len2 = lengths(batch)
    for side, x, pooled, length in (
        ("text1", x1, pooled1, len1),
        ("text2", x2, pooled2, len2),
    ):
        positions = np.asarray(out[f"max_pool_rate_{side}"])
        for b in range(len(length)):
            if length[b] == 0:
                assert np.all(positions[b] == -1)
                np.testing.assert_array_equal(max_pool_rate(positions[b], 0), [])
                continue
            assert positions[b].max() < length[b]
            gathered = x[b, positions[b], np.arange(x.shape[2])]
            np.testing.assert_array_equal(gathered, pooled[b])
            np.testing.assert_allclose(max_pool_rate(positions[b], length[b]).sum(), 1.0)


# ------------------------------------------------------------------------------- Match-SRNN
def test_match_srnn_states_and_gates_are_the_spatial_grus():
    model = tiny("match_srnn")
    batch = batch_for("match_srnn")
    out = analysis_model(model)(batch)
    np.testing.assert_array_equal(out["output"], model(batch))
    gru = model.get_layer("spatial_gru")
    node = gru._inbound_nodes[0]
    probe = keras.Model(model.inputs, list(node.input_tensors))
    s, mask1, mask2 = probe(batch)
    corner, grid, gates = gru(s, mask1, mask2, return_grid=True, return_gates=True)
    np.testing.assert_allclose(out["h"], grid, atol=1e-6)
    np.testing.assert_allclose(out["path"], gates, atol=1e-6)
    np.testing.assert_allclose(corner, gru(s, mask1, mask2), atol=1e-6)
    gates = np.asarray(gates)
    len1, len2 = lengths(batch)
    for b in range(len(len1)):
        m, n = len1[b], len2[b]
        np.testing.assert_allclose(gates[b, :m, :n].sum(axis=2), 1.0, atol=1e-5)
        assert np.all(gates[b, m:] == 0) and np.all(gates[b, :, n:] == 0)
        assert np.all(np.asarray(grid)[b, m:] == 0)
        path = trace_path(gates[b, :m, :n, :, 0])
        check_path(path, gates[b, :m, :n, :, 0])


def check_path(path, gates):
    rows, cols = gates.shape[:2]
    if rows == 0 or cols == 0:
        assert path.shape == (0, 2)
        return
    assert tuple(path[0]) == (rows - 1, cols - 1) and tuple(path[-1]) == (0, 0)
    for (i, j), (k, m) in zip(path[:-1], path[1:]):
        step = (i - k, j - m)
        assert step in ((0, 1), (1, 0), (1, 1))  # left, top or diagonal
        allowed = {(0, 1): 1, (1, 0): 2, (1, 1): 3}
        options = [g for s, g in allowed.items() if i - s[0] >= 0 and j - s[1] >= 0]
        assert gates[i, j, allowed[step]] == max(gates[i, j, g] for g in options)


def test_trace_path_follows_the_largest_gate_on_a_hand_made_grid():
    # 3 x 3 grid of gates (input, left, top, diagonal) per cell.
    gates = np.zeros((3, 3, 4))
    gates[2, 2] = [0.1, 0.2, 0.6, 0.1]  # top -> (1, 2)
    gates[1, 2] = [0.1, 0.5, 0.2, 0.2]  # left -> (1, 1)
    gates[1, 1] = [0.0, 0.1, 0.1, 0.8]  # diagonal -> (0, 0)
    gates[0, 0] = [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_array_equal(trace_path(gates), [[2, 2], [1, 2], [1, 1], [0, 0]])
    # On the first row only "left" is possible, on the first column only "top".
    gates = np.zeros((2, 3, 4))
    gates[1, 2] = [0.0, 0.0, 0.0, 1.0]  # diagonal -> (0, 1)
    gates[0, 1] = [0.0, 0.0, 0.9, 0.1]  # top/diagonal impossible: left -> (0, 0)
    np.testing.assert_array_equal(trace_path(gates), [[1, 2], [0, 1], [0, 0]])
    assert trace_path(np.zeros((0, 4, 4))).shape == (0, 2)
    with pytest.raises(ValueError, match="rows, cols, 4"):
        trace_path(np.zeros((2, 2, 3)))


# --------------------------------------------------------------------------- BERT+MatchLSTM
def test_bert_matchlstm_attention_is_the_match_lstms():
    pytest.importorskip("keras_hub")
    from test_bert_matchlstm import LENGTHS_A, model_for, packed

    model = model_for("matchlstm")
    batch = packed()
    out = analysis_model(model)(batch)
    np.testing.assert_allclose(out["output"], model(batch), atol=1e-6)
    split = model.get_layer("split")
    probe = keras.Model(model.inputs, list(split._inbound_nodes[0].outputs))
    h_a, mask_a, h_b, mask_b = probe(batch)
    _, forward, backward = model.get_layer("match_lstm")(
        h_b, h_a, mask_b, mask_a, return_attention=True
    )
    np.testing.assert_allclose(out["forward_attention"], forward, atol=1e-6)
    np.testing.assert_allclose(out["backward_attention"], backward, atol=1e-6)
    len_a = np.asarray(LENGTHS_A)
    len_b = np.asarray(mask_b)[..., 0].sum(1).astype(int)
    for name in ("forward_attention", "backward_attention"):
        check_attention(out[name], 2, len_b, len_a)


# ------------------------------------------------------------------ from text, to files, CLI
def word_featurizers(spec, texts):
    vocab = Vocab(sorted({t for text in texts for t in text.split()}))
    featurizers = []
    for kind, options in spec.features.items():
        featurizer = features_lib.FEATURIZERS[kind].create(options, vocab)
        featurizer.fit(t for text in texts for t in text.split())
        featurizers.append(featurizer)
    return vocab, featurizers


TEXTS = ("a man sleeps on a bench", "a person rests", "")


@pytest.mark.parametrize("name", ["re2", "drcn", "fitn", "match_srnn"])
def test_attention_maps_from_text_crop_to_tokens_and_handle_an_empty_text(name):
    spec = get_spec(name)
    _, featurizers = word_featurizers(spec, TEXTS)
    model = tiny(name)
    for text2 in ("a person rests", ""):
        maps = attention_maps(
            model, TEXTS[0], text2, featurizers=featurizers, label_names=["x", "y", "z"]
        )
        assert maps.tokens == {"text1": TEXTS[0].split(), "text2": text2.split()}
        assert set(maps.prediction) == {"label", "probabilities"}
        assert abs(sum(maps.prediction["probabilities"].values()) - 1) < 1e-6
        for array_name, array in maps.arrays.items():
            assert np.isfinite(array).all(), array_name
            axes = maps.axes[array_name]
            assert array.shape[: len(axes)] == tuple(len(maps.tokens[a]) for a in axes)
        kinds = set(maps.kinds.values())
        assert kinds <= {"attention", "rate", "states", "path", "raw"}
    if name == "drcn":
        assert {"mean_alpha", "mean_beta", "max_pool_rate_text1"} <= set(maps.arrays)
    if name == "match_srnn":
        assert maps.arrays["path"].shape == (0, 2) and maps.arrays["h"].shape == (6, 0)


def test_bert_attention_maps_label_word_pieces():
    pytest.importorskip("keras_hub")
    from test_bert_matchlstm import VOCAB, model_for

    from re2_tf.data.features import PackedPair, WholeWordTokenizer

    tokenizer = WholeWordTokenizer()
    tokenizer.fit(w for text in TEXTS for w in text.split())
    assert len(tokenizer.vocab) <= VOCAB
    featurizer = PackedPair(tokenizer, max_length=16)
    maps = attention_maps(
        model_for("matchlstm"), "a man sleeps", "a person", featurizers=[featurizer]
    )
    assert len(maps.tokens["pieces_a"]) == 4 and len(maps.tokens["pieces_b"]) == 4
    assert maps.arrays["forward_attention"].shape == (4, 4)
    np.testing.assert_allclose(maps.arrays["backward_attention"].sum(1), 1.0, atol=1e-5)


def make_run(run_dir, name="re2"):
    spec = get_spec(name)
    vocab, featurizers = word_featurizers(spec, TEXTS)
    runs.save_config(
        run_dir,
        runs.RunConfig(
            model=name,
            model_kwargs={},
            dataset="snli",
            label_names=["entailment", "neutral", "contradiction"],
            features=dict(spec.features),
        ),
    )
    vocab.save(Path(run_dir) / "vocab.txt")
    for featurizer in featurizers:
        featurizer.save(run_dir)
    tiny(name).save(Path(run_dir) / runs.BEST_MODEL_FILE)


def test_a_run_directory_to_json_and_heat_maps(tmp_path):
    pytest.importorskip("matplotlib")
    make_run(tmp_path / "run")
    maps = attention_maps(tmp_path / "run", "A man sleeps", "A person rests")
    assert maps.prediction["label"] in ("entailment", "neutral", "contradiction")
    written = save_maps(maps, tmp_path / "out")
    record = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert record["tokens"]["text1"] == ["a", "man", "sleeps"]  # the run's lower-casing
    values = np.asarray(record["maps"]["block1_over_text2"]["values"])
    np.testing.assert_allclose(values, maps.arrays["block1_over_text2"], atol=1e-6)
    assert {p.name for p in written[1:]} == {f"{n}.png" for n in maps.arrays}


def test_cli_writes_files_and_a_missing_run_is_one_line(tmp_path):
    make_run(tmp_path / "run")

    def analyze(*args):
        return subprocess.run(
            [sys.executable, "-m", "re2_tf.analyze", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )

    proc = analyze(
        f"--run_dir={tmp_path / 'run'}",
        "--text1=a man sleeps",
        "--text2=",
        f"--out={tmp_path / 'out'}",
        "--noplots",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert record["maps"]["block0_over_text2"]["shape"] == [3, 0]
    proc = analyze(
        f"--run_dir={tmp_path / 'nothing'}", "--text1=a", "--text2=b", f"--out={tmp_path}/o"
    )
    lines = [line for line in proc.stderr.splitlines() if line.startswith("re2-analyze")]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("re2-analyze: error: ") and "not a re2_tf run directory" in lines[0]


def test_a_spec_without_analysis_or_an_unmatched_model_is_an_error():
    with pytest.raises(ValueError, match="matches"):
        analysis_model(tiny("re2"), "match_srnn")
    with pytest.raises(ValueError, match="featurizers"):
        attention_maps(tiny("re2"), "a", "b")
