"""re2_tf.serving.predictor and re2-predict: TSV / JSON-lines input from a file or stdin, JSON-lines
output, bad input.

Policy under test: every input line yields one output line, or one error naming file and line.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from weights import randomize_weights

from re2_tf.data.features import WordIds
from re2_tf.data.tokenization import get_tokenizer
from re2_tf.data.vocab import Vocab
from re2_tf.matcher import Matcher
from re2_tf.models import build_re2
from re2_tf.serving.export import export_model
from re2_tf.serving.predictor import InputError, Predictor, read_pairs

LABELS = ["entailment", "neutral", "contradiction"]
#: The command in a fresh process costs a TensorFlow start-up per call. The default suite runs
#: it on files, stdin, a malformed line, invalid UTF-8 in a file and a SavedModel served
#: without Keras; the slow tier on the other cases, JSON lines' details and the flags' errors
#: (``read_pairs`` and ``Predictor`` are checked in-process on every case below). Read by
#: tests/conftest.py; the single-case tests carry the mark themselves.
TIERS = {
    "test_cli_invalid_utf8_is_an_error_naming_file_and_line": ({"file": None}, "slow"),
    "test_cli_serves_a_savedmodel_without_keras": ({"whitespace": None}, "slow"),
}
WORDS = "a man woman dog is sleeping running in the park two people".split()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    keras.utils.set_random_seed(3)
    vocab = Vocab(WORDS)
    model = build_re2(len(vocab), 3, embedding_dim=8, blocks=1, enc_layers=1, hidden_size=8)
    randomize_weights(model, 3)
    head = model.get_layer("prediction").dense_2
    head.kernel_g.assign(head.kernel_g * 10.0)
    root = tmp_path_factory.mktemp("predict")
    exports = {
        tok: export_model(
            model,
            root / tok,
            featurizers=[WordIds(vocab)],
            label_names=LABELS,
            backend="re2_folded",
            tokenizer=tok,
            max_length=16,
            length_buckets=[8],
        )
        for tok in ("whitespace", "snli")
    }
    return model, vocab, exports, root


def _reference(model, vocab, pairs, tokenizer):
    tok = get_tokenizer(tokenizer, lower=True)
    probs = []
    for t1, t2 in pairs:
        # an empty text is an all-padding row, as in training
        ids = [np.asarray([vocab.encode(tok(t))[:16] or [0]], np.int32) for t in (t1, t2)]
        probs.append(tf.nn.softmax(model({"text1": ids[0], "text2": ids[1]})).numpy()[0])
    return np.asarray(probs)


def _served(predictor, pairs):
    """``(records, truncated)`` as ``re2-predict`` writes them (probabilities to 6 decimals)."""
    return Matcher.from_predictor(predictor)._records(list(pairs), digits=6)


def test_read_pairs_formats_and_errors():
    assert read_pairs(["a\tb\t1\n", "\t\n", "c\td\n"]) == [
        {"text1": "a", "text2": "b"},
        {"text1": "", "text2": ""},
        {"text1": "c", "text2": "d"},
    ]
    assert read_pairs(['{"text1": "a", "text2": "b", "id": 7}']) == [
        {"text1": "a", "text2": "b", "id": 7}
    ]
    with pytest.raises(InputError, match=r"f:2: expected text1<TAB>text2"):
        read_pairs(["a\tb", "no tab here"], "f")
    with pytest.raises(InputError, match=r"f:1: invalid JSON"):
        read_pairs(["{oops"], "f", fmt="jsonl")
    with pytest.raises(
        InputError,
        match=r"f:1: expected text1<TAB>text2, found no tab \(nor a "
        r"JSON object",
    ):
        read_pairs(["{oops"], "f")
    with pytest.raises(InputError, match=r"f:2: invalid JSON"):
        read_pairs(['{"text1": "a", "text2": "b"}', "a\tb"], "f")
    with pytest.raises(InputError, match=r"f:1: expected an object with string fields"):
        read_pairs(['{"text1": "a", "text2": 3}'], "f")
    with pytest.raises(InputError, match=r"f:1: expected an object with string fields"):
        read_pairs(['["a", "b"]'], "f", fmt="jsonl")
    with pytest.raises(InputError, match=r"f:1: .*unpaired surrogate"):
        read_pairs(['{"text1": "\\ud800", "text2": "b"}'], "f")


def test_read_pairs_one_pair_per_line():
    # Bytes as from a file opened "rb": only \n (or \r\n) ends a line; a bare \r is data.
    assert read_pairs([b"a\rb\tc\r\n", b"d\te\n"]) == [
        {"text1": "a\rb", "text2": "c"},
        {"text1": "d", "text2": "e"},
    ]
    # A leading UTF-8 BOM is dropped (TSV and JSON lines), only at the start of line 1.
    bom = "\ufeff".encode("utf-8")
    assert read_pairs([bom + b"a\tb\n", bom + b"c\td\n"]) == [
        {"text1": "a", "text2": "b"},
        {"text1": "\ufeffc", "text2": "d"},
    ]
    assert read_pairs([bom + b'{"text1": "a", "text2": "b"}\n']) == [{"text1": "a", "text2": "b"}]
    # Auto-detection picks JSON lines only for a JSON object; a TSV text may start with "{".
    assert read_pairs([b"{not json\tb\n", b'{"x": 1}\tc\n']) == [
        {"text1": "{not json", "text2": "b"},
        {"text1": '{"x": 1}', "text2": "c"},
    ]
    with pytest.raises(InputError, match=r"f:1: expected text1<TAB>text2"):
        read_pairs(['{"text1": "a", "text2": "b"}\n'], "f", fmt="tsv")
    # Invalid UTF-8 and blank or whitespace-only lines are errors naming file and line.
    with pytest.raises(InputError, match=r"^f:2: invalid UTF-8 at byte 1$"):
        read_pairs([b"a\tb\n", b"c\xff\td\n"], "f")
    for blank in (b"\n", b"  \n", b"\r\n", b" \r\n"):
        with pytest.raises(InputError, match=r"^f:2: blank line"):
            read_pairs([b"a\tb\n", blank, b"c\td\n"], "f")
    with pytest.raises(InputError, match=r"^f:1: blank line"):
        read_pairs([b"\n", b'{"text1": "a", "text2": "b"}\n'], "f")


@pytest.mark.parametrize(
    "tokenizer,mode", [("whitespace", "graph"), ("snli", "python"), ("snli", "graph")]
)
def test_predictor_matches_keras(setup, tokenizer, mode):
    model, vocab, exports, _ = setup
    pairs = [
        ("A man is sleeping.", "a woman is running"),
        ("", "?"),
        ("dog dog " * 5000, "Ünï 東京"),
        ("two people in the park", "a dog"),
    ]
    predictor = Predictor(exports[tokenizer], tokenize="auto", batch_size=3)
    assert predictor.tokenize == ("graph" if tokenizer == "whitespace" else "python")
    predictor = Predictor(exports[tokenizer], tokenize=mode, batch_size=3)
    got, cut = predictor.run([p[0] for p in pairs], [p[1] for p in pairs])
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, _reference(model, vocab, pairs, tokenizer), atol=1e-5)
    np.testing.assert_array_equal(
        predictor.probabilities([p[0] for p in pairs], [p[1] for p in pairs]), got
    )
    assert cut.tolist() == [0, 0, 10_000 - 16, 0]  # "dog dog " * 5000 is 10,000 tokens
    out, truncated = _served(
        predictor, [{"text1": a, "text2": b, "id": i} for i, (a, b) in enumerate(pairs)]
    )
    assert truncated == 1 and [o["id"] for o in out] == [0, 1, 2, 3]
    assert all(o["label"] in LABELS and set(o["probabilities"]) == set(LABELS) for o in out)


def test_input_fields_named_like_outputs_are_kept(setup):
    predictor = Predictor(setup[2]["whitespace"], batch_size=2)
    pairs = [
        {
            "text1": "a man",
            "text2": "a dog",
            "label": "gold",
            "probabilities": [1, 0],
            "input_label": "taken",
            "id": 3,
        },
        {"text1": "", "text2": "", "label": None},
    ]
    (first, second), _ = _served(predictor, pairs)
    assert first["label"] in LABELS and set(first["probabilities"]) == set(LABELS)
    assert {k: v for k, v in first.items() if k not in ("label", "probabilities")} == {
        "input_input_label": "gold",
        "input_probabilities": [1, 0],
        "input_label": "taken",
        "id": 3,
    }
    assert second["input_label"] is None and second["label"] in LABELS


def test_batch_size_must_be_positive(setup):
    for bad in (0, -1):
        with pytest.raises(ValueError, match="batch_size must be >= 1"):
            Predictor(setup[2]["whitespace"], batch_size=bad)


def _cli(args, stdin=None):
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.predict", *args],
        input=stdin,
        capture_output=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    )


def test_cli_file_and_stdin(setup, tmp_path):
    _, _, exports, _ = setup
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("a man is sleeping\ta woman\t0\nthe dog\t\n", encoding="utf-8")
    proc = _cli([f"--export_dir={exports['snli']}", f"--input={tsv}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 2 and lines[0]["label"] in LABELS
    np.testing.assert_allclose(sum(lines[0]["probabilities"].values()), 1.0, atol=1e-5)
    assert f"{tsv}: 2 pairs predicted, 0 truncated to max_length=16" in proc.stderr
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


def test_cli_every_line_yields_one_output_line(setup, tmp_path):
    # BOM on line 1, a bare CR inside a text, a text starting with "{", a lone tab (two empty
    # texts) and a long text: one output line each, equal to the in-process prediction of the
    # pairs as written (BOM dropped, CR kept); --output into a missing folder creates it.
    _, _, exports, _ = setup
    pairs = [
        ("a man is sleeping", "a woman"),
        ("a dog\rin the park", "two people"),
        ("{a dog}", "the park"),
        ("", ""),
        (" ".join(["dog"] * 20), "a man"),
    ]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_bytes(b"\xef\xbb\xbf" + b"".join(f"{a}\t{b}\r\n".encode() for a, b in pairs))
    out = tmp_path / "new" / "folder" / "out.jsonl"
    proc = _cli([f"--export_dir={exports['whitespace']}", f"--input={tsv}", f"--output={out}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    expected = Predictor(exports["whitespace"]).probabilities(*map(list, zip(*pairs)))
    assert len(got) == len(pairs)
    np.testing.assert_allclose(
        [[g["probabilities"][n] for n in LABELS] for g in got], expected, atol=1e-5
    )
    assert [g["label"] for g in got] == [LABELS[i] for i in expected.argmax(1)]
    assert f"{tsv}: 5 pairs predicted, 1 truncated to max_length=16 tokens" in proc.stderr


@pytest.mark.slow  # a fresh process per case (TIERS)
def test_cli_jsonl_bom_and_colliding_fields(setup):
    _, _, exports, _ = setup
    jsonl = '\ufeff{"text1": "a man", "text2": "a dog", "label": "neutral", "probabilities": 1}\n'
    proc = _cli([f"--export_dir={exports['whitespace']}", "--input=-"], stdin=jsonl)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(proc.stdout)
    assert record["input_label"] == "neutral" and record["input_probabilities"] == 1
    assert record["label"] in LABELS and set(record["probabilities"]) == set(LABELS)


@pytest.mark.parametrize("where", ["file", "stdin", "file-graph"])
def test_cli_invalid_utf8_is_an_error_naming_file_and_line(setup, tmp_path, where):
    _, _, exports, _ = setup
    data = b"a man\ta dog\n" + b"caf\xe9\tthe park\n"
    args = [f"--export_dir={exports['whitespace']}"]
    if where == "stdin":
        proc = _cli(args + ["--input=-"], stdin=data)
        source = "<stdin>"
    else:
        source = tmp_path / "latin1.tsv"
        source.write_bytes(data)
        graph = ["--tokenize=graph"] if where == "file-graph" else []
        proc = _cli(args + [f"--input={source}", *graph])
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"error: {source}:2: invalid UTF-8 at byte 3" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # a fresh process per case (TIERS)
def test_cli_blank_line_is_an_error_naming_file_and_line(setup, tmp_path):
    _, _, exports, _ = setup
    tsv = tmp_path / "gap.tsv"
    tsv.write_text("a man\ta dog\n   \nthe park\ttwo people\n", encoding="utf-8")
    proc = _cli([f"--export_dir={exports['whitespace']}", f"--input={tsv}"])
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"error: {tsv}:2: blank line" in proc.stderr


@pytest.mark.slow  # a fresh process per case (TIERS)
def test_cli_bad_flags_and_output_are_clear_errors(setup, tmp_path):
    _, _, exports, _ = setup
    for bad in ("0", "-1"):
        proc = _cli(
            [f"--export_dir={exports['whitespace']}", "--input=-", f"--batch_size={bad}"],
            stdin="a\tb\n",
        )
        assert proc.returncode == 1 and proc.stdout == ""
        assert f"flag --batch_size={bad}: {bad} is not a positive integer" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = _cli(
        [f"--export_dir={exports['whitespace']}", "--input=-", f"--output={tmp_path}"],
        stdin="a\tb\n",
    )  # a directory
    assert proc.returncode == 1 and f"error: [Errno 21] Is a directory: '{tmp_path}'" in proc.stderr


# ------------------------------------------------------------------- ranking, predict()
QUERY = "a man is sleeping in the park"
CANDIDATES = [
    "a dog is running",
    "two people in the park",
    "a woman is sleeping",
    "a dog is running",
    "the man is sleeping",
    "park park park",
]


@pytest.fixture(scope="module")
def score_model_exports(tmp_path_factory):
    """A tiny score model (one float per pair, like Match-SRNN's ranking head) and its
    SavedModel export."""
    keras.utils.set_random_seed(5)
    vocab = Vocab(WORDS)
    inputs = {n: keras.Input((None,), dtype="int32", name=n) for n in ("text1", "text2")}
    embed = keras.layers.Embedding(len(vocab), 8, mask_zero=True)
    pool = keras.layers.GlobalAveragePooling1D()
    pair = keras.layers.Concatenate()([pool(embed(inputs["text1"])), pool(embed(inputs["text2"]))])
    score = keras.layers.Dense(1)(keras.layers.Dense(8, activation="tanh")(pair))
    model = keras.Model(inputs, score)
    root = tmp_path_factory.mktemp("score")
    common = dict(
        featurizers=[WordIds(vocab)],
        label_names=["0", "1"],
        backend="keras",
        output="score",
        tokenizer="whitespace",
        max_length=16,
        length_buckets=[8],
    )
    return model, vocab, {"savedmodel": export_model(model, root / "savedmodel", **common)}


def _keras_scores(model, vocab, query, candidates):
    """The Keras model's score of each (query, candidate), one pair at a time."""
    encode = lambda text: np.asarray([vocab.encode(text.split())], np.int32)  # noqa: E731
    return [
        float(np.ravel(model({"text1": encode(query), "text2": encode(c)}))[0]) for c in candidates
    ]


def test_rank_orders_candidates_by_the_models_score(score_model_exports):
    model, vocab, exports = score_model_exports
    expected = _keras_scores(model, vocab, QUERY, CANDIDATES)
    order = sorted(range(len(CANDIDATES)), key=lambda i: expected[i], reverse=True)
    predictor = Matcher.from_predictor(Predictor(exports["savedmodel"], batch_size=4))
    ranked = predictor.rank(QUERY, CANDIDATES, return_documents=True)
    assert [r["corpus_id"] for r in ranked] == order
    assert [r["text"] for r in ranked] == [CANDIDATES[i] for i in order]
    np.testing.assert_allclose(
        [r["score"] for r in ranked], [expected[i] for i in order], atol=1e-4
    )
    # candidates 0 and 3 are the same text: equal scores keep the candidates' order
    assert [r["corpus_id"] for r in ranked if r["text"] == CANDIDATES[0]] == [0, 3]
    top = predictor.rank(QUERY, CANDIDATES, top_k=2, return_documents=False)
    assert top == [{"corpus_id": r["corpus_id"], "score": r["score"]} for r in ranked[:2]]
    assert len(predictor.rank(QUERY, CANDIDATES, top_k=100)) == len(CANDIDATES)
    assert "text" not in predictor.rank(QUERY, CANDIDATES)[0]  # CrossEncoder.rank's default


def test_rank_of_a_classification_export_uses_a_class_probability(setup):
    model, vocab, exports, _ = setup
    predictor = Matcher.from_predictor(Predictor(exports["whitespace"]))
    with pytest.raises(ValueError, match=r"has 3 classes .*pass positive=<label name>"):
        predictor.rank(QUERY, CANDIDATES)
    expected = _reference(model, vocab, [(QUERY, c) for c in CANDIDATES], "whitespace")[:, 0]
    ranked = predictor.rank(QUERY, CANDIDATES, positive="entailment")
    assert [r["corpus_id"] for r in ranked] == sorted(
        range(len(CANDIDATES)), key=lambda i: expected[i], reverse=True
    )
    np.testing.assert_allclose(
        [r["score"] for r in ranked], sorted(expected, reverse=True), atol=1e-5
    )
    assert predictor.rank(QUERY, CANDIDATES, positive=0) == ranked
    with pytest.raises(ValueError, match="positive='yes' is not a label"):
        predictor.rank(QUERY, CANDIDATES, positive="yes")


def test_rank_errors(score_model_exports):
    predictor = Matcher.from_predictor(Predictor(score_model_exports[2]["savedmodel"]))
    with pytest.raises(ValueError, match="candidates is empty"):
        predictor.rank(QUERY, [])
    with pytest.raises(ValueError, match=r"candidates\[1\] must be a str, got int"):
        predictor.rank(QUERY, ["a dog", 3])
    with pytest.raises(ValueError, match="query must be a str, got NoneType"):
        predictor.rank(None, ["a dog"])
    with pytest.raises(ValueError, match="candidates must be a list of str, not one string"):
        predictor.rank(QUERY, "a dog")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="top_k must be an int >= 1 or None"):
            predictor.rank(QUERY, ["a dog"], top_k=bad)


def test_predict_function_takes_tuples_dicts_an_export_or_a_predictor(setup):
    from re2_tf.inference import predict

    exports = setup[2]
    pairs = [("a man is sleeping", "a woman"), {"text1": "the dog", "text2": "", "id": 7}]
    as_dicts = [{"text1": "a man is sleeping", "text2": "a woman"}, pairs[1]]
    predictor = Predictor(exports["whitespace"])
    expected = _served(predictor, as_dicts)[0]
    assert predict(exports["whitespace"], pairs) == expected
    assert predict(predictor, pairs) == expected and expected[1]["id"] == 7
    assert predict(exports["whitespace"], pairs, batch_size=1) == expected
    with pytest.raises(ValueError, match=r"pairs\[0\]: expected a \(text1, text2\) pair"):
        predict(predictor, [("only one",)])
    with pytest.raises(ValueError, match=r"pairs\[1\]: text1 and text2 must both be str"):
        predict(predictor, [("a", "b"), {"text1": "a"}])
    with pytest.raises(ValueError, match="already loaded"):
        predict(predictor, pairs, batch_size=2)
    with pytest.raises(FileNotFoundError, match="is not a re2_tf export"):
        predict(setup[3] / "nowhere", pairs)


# ------------------------------------------------------------------ time to first answer
FRESH_PREDICT = """
import json, runpy, sys
sys.argv = ["re2-predict", *sys.argv[1:]]  # as the console script starts it
try:
    runpy.run_module("re2_tf.cli.predict", run_name="__main__")
except SystemExit as exit:
    code = exit.code
heavy = ("keras", "keras_hub", "tensorflow_text", "re2_tf.layers", "re2_tf.models")
loaded = [name for name in heavy if name in sys.modules]
import re2_tf  # the models are still there, imported on first use
import keras
from re2_tf.models import build_re2
model = re2_tf.models.build_re2(5, 3, embedding_dim=2, hidden_size=2, blocks=1, enc_layers=1)
print(json.dumps({"exit": code, "loaded": loaded, "params": model.count_params(),
                  "same": build_re2 is re2_tf.models.build_re2,
                  "keras_layer": type(keras.layers.Dense(2)).__name__}), file=sys.stderr)
"""


@pytest.mark.parametrize("tokenizer", ["whitespace", "snli"])
def test_cli_serves_a_savedmodel_without_keras(setup, tmp_path, tokenizer):
    """re2-predict imports neither Keras nor keras-hub, TF Text or re2_tf's models (issue 24:
    time to first answer); its answers are the library Predictor's; Keras and the models
    still import on first use in that process."""
    _, _, exports, _ = setup
    pairs = [("a man is sleeping", "a woman"), ("two dogs", "")]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            FRESH_PREDICT,
            f"--export_dir={exports[tokenizer]}",
            f"--input={tsv}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["exit"] == 0, proc.stderr[-2000:]
    assert report["loaded"] == []
    assert report["same"] is True and report["keras_layer"] == "Dense"
    assert (
        report["params"]
        == build_re2(5, 3, embedding_dim=2, hidden_size=2, blocks=1, enc_layers=1).count_params()
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = _served(Predictor(exports[tokenizer]), [{"text1": a, "text2": b} for a, b in pairs])
    assert [line["label"] for line in lines] == [r["label"] for r in expected[0]]
    for line, record in zip(lines, expected[0]):
        assert list(line["probabilities"]) == LABELS
        np.testing.assert_allclose(
            list(line["probabilities"].values()),
            list(record["probabilities"].values()),
            atol=2e-6,
        )


TEXT_OP_LOAD = """
import json, sys
path, sys.argv = sys.argv[1], ["re2-predict"]  # a library process imports keras-hub and TF Text
from re2_tf.serving.predictor import load_saved_model
before = "tensorflow_text" in sys.modules
loaded = load_saved_model(path)
out = loaded(__import__("tensorflow").constant(["Ａ", "ｃａｔ"]))
print(json.dumps({"before": before, "after": "tensorflow_text" in sys.modules,
                  "out": [t.decode() for t in out.numpy()]}))
"""


def test_tensorflow_text_is_imported_only_for_a_savedmodel_that_needs_its_ops(tmp_path):
    tensorflow_text = pytest.importorskip("tensorflow_text")

    class Normalize(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, text):
            return tensorflow_text.normalize_utf8(text, "NFKC")  # op NormalizeUTF8

    tf.saved_model.save(Normalize(), str(tmp_path / "saved"))
    proc = subprocess.run(
        [sys.executable, "-c", TEXT_OP_LOAD, str(tmp_path / "saved")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "before": False,
        "after": True,
        "out": ["A", "cat"],
    }


def test_features_are_the_word_ids_padded_to_the_longest_text(setup):
    _, vocab, exports, _ = setup
    predictor = Predictor(exports["snli"], tokenize="python")
    features = predictor.features(["a man is sleeping", "dog"], ["a woman", ""])
    # by hand: the vocabulary's ids, padded with 0 to the batch's longest text
    ids = {w: vocab.encode([w])[0] for w in ("a", "man", "is", "sleeping", "dog", "woman")}
    assert features["text1"].tolist() == [
        [ids["a"], ids["man"], ids["is"], ids["sleeping"]],
        [ids["dog"], 0, 0, 0],
    ]
    assert features["text2"].tolist() == [[ids["a"], ids["woman"]], [0, 0]]
    assert features["text1"].dtype == np.int32
    with pytest.raises(ValueError, match="1 text1 but 2 text2"):
        predictor.features(["a"], ["b", "c"])
    with pytest.raises(ValueError, match='tokenize="python"'):
        Predictor(exports["whitespace"], tokenize="graph").features(["a"], ["b"])
