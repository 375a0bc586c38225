"""re2_tf.predict: TSV / JSON-lines input from a file or stdin, JSON-lines output, bad input."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from re2_tf.data.tokenization import get_tokenizer
from re2_tf.data.vocab import Vocab
from re2_tf.export import export_model
from re2_tf.models import build_re2
from re2_tf.predict import InputError, Predictor, read_pairs

LABELS = ["entailment", "neutral", "contradiction"]
WORDS = "a man woman dog is sleeping running in the park two people".split()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    keras.utils.set_random_seed(3)
    vocab = Vocab(WORDS)
    model = build_re2(len(vocab), 3, embedding_dim=8, blocks=1, enc_layers=1, hidden_size=8)
    head = model.get_layer("prediction").dense_2
    head.kernel_g.assign(head.kernel_g * 100.0)
    root = tmp_path_factory.mktemp("predict")
    exports = {tok: export_model(model, root / tok, vocab_tokens=vocab.tokens, label_names=LABELS,
                                 tokenizer=tok, max_length=16, length_buckets=[8])
               for tok in ("whitespace", "snli")}
    return model, vocab, exports, root


def _reference(model, vocab, pairs, tokenizer):
    tok = get_tokenizer(tokenizer, lower=True)
    probs = []
    for t1, t2 in pairs:
        ids = [np.asarray([vocab.encode(tok(t))[:16] or [1]], np.int32) for t in (t1, t2)]
        probs.append(tf.nn.softmax(model({"text1": ids[0], "text2": ids[1]})).numpy()[0])
    return np.asarray(probs)


def test_read_pairs_formats_and_errors():
    assert read_pairs(["a\tb\t1\n", "\n", "c\td\n"]) == [
        {"text1": "a", "text2": "b"}, {"text1": "c", "text2": "d"}]
    assert read_pairs(['{"text1": "a", "text2": "b", "id": 7}']) == [
        {"text1": "a", "text2": "b", "id": 7}]
    with pytest.raises(InputError, match=r"f:2: expected text1<TAB>text2"):
        read_pairs(["a\tb", "no tab here"], "f")
    with pytest.raises(InputError, match=r"f:1: invalid JSON"):
        read_pairs(["{oops"], "f")
    with pytest.raises(InputError, match=r"string fields"):
        read_pairs(['{"text1": "a", "text2": 3}'], "f")


@pytest.mark.parametrize("tokenizer,mode", [("whitespace", "graph"), ("snli", "python"),
                                            ("snli", "graph")])
def test_predictor_matches_keras(setup, tokenizer, mode):
    model, vocab, exports, _ = setup
    pairs = [("A man is sleeping.", "a woman is running"), ("", "?"), ("dog dog " * 5000, "Ünï 東京"),
             ("two people in the park", "a dog")]
    predictor = Predictor(exports[tokenizer], tokenize="auto", batch_size=3)
    assert predictor.tokenize == ("graph" if tokenizer == "whitespace" else "python")
    predictor = Predictor(exports[tokenizer], tokenize=mode, batch_size=3)
    got = predictor.probabilities([p[0] for p in pairs], [p[1] for p in pairs])
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, _reference(model, vocab, pairs, tokenizer), atol=1e-5)
    out = list(predictor.predict([{"text1": a, "text2": b, "id": i} for i, (a, b) in enumerate(pairs)]))
    assert [o["id"] for o in out] == [0, 1, 2, 3]
    assert all(o["label"] in LABELS and set(o["probabilities"]) == set(LABELS) for o in out)


def _cli(args, stdin=None):
    return subprocess.run([sys.executable, "-m", "re2_tf.predict", *args], input=stdin,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def test_cli_file_and_stdin(setup, tmp_path):
    _, _, exports, _ = setup
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("a man is sleeping\ta woman\t0\nthe dog\t\n", encoding="utf-8")
    proc = _cli([f"--export_dir={exports['snli']}", f"--input={tsv}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(l) for l in proc.stdout.splitlines()]
    assert len(lines) == 2 and lines[0]["label"] in LABELS
    np.testing.assert_allclose(sum(lines[0]["probabilities"].values()), 1.0, atol=1e-5)
    jsonl = '{"text1": "a man", "text2": "a dog", "id": "x"}\n'
    proc = _cli([f"--export_dir={exports['whitespace']}", "--input=-"], stdin=jsonl)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["id"] == "x"


def test_cli_bad_input_is_a_clear_error(setup, tmp_path):
    _, _, exports, root = setup
    proc = _cli([f"--export_dir={exports['snli']}", "--input=-"], stdin="ok\tok\nbroken line\n")
    assert proc.returncode == 1 and "<stdin>:2: expected text1<TAB>text2" in proc.stderr
    proc = _cli([f"--export_dir={root / 'nowhere'}", "--input=-"], stdin="a\tb\n")
    assert proc.returncode == 1 and "not a re2_tf export" in proc.stderr


def test_a_tab_line_is_a_pair_of_empty_texts_and_keeps_output_aligned():
    # "\t" must yield one output line (two empty texts -> both read as <UNK>), so output line
    # i still answers input line i; a line with no tab at all is blank and skipped.
    pairs = read_pairs(["a dog\tthe park\n", "\t\n", "\n", "two people\ta man\n"])
    assert [(p["text1"], p["text2"]) for p in pairs] == [
        ("a dog", "the park"), ("", ""), ("two people", "a man")]
