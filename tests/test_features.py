"""Tests for re2_tf.data.features: hand-worked examples, save/load, SavedModel, real data."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
from dev_files import real_dev_pairs

from re2_tf.data import features as F
from re2_tf.data.text import whitespace_tokenize
from re2_tf.data.vocab import Vocab


def _graph(featurizer, directory, texts1, texts2):
    """Runs the in-graph path on raw texts tokenised in-graph (case kept)."""
    module = featurizer.graph(directory)
    return {
        k: v.numpy()
        for k, v in module(
            whitespace_tokenize(tf.constant(texts1), lower=False),
            whitespace_tokenize(tf.constant(texts2), lower=False),
        ).items()
    }


def _assert_agree(featurizer, graph_out, pairs):
    """Every pair's Python arrays, padded with the spec's pad value, == its graph row."""
    specs = {s.name: s for s in featurizer.specs()}
    graph_out = dict(graph_out)
    graph_cuts = graph_out.pop(F.TRUNCATED_KEY, None)  # packed pairs: pieces cut, per pair
    assert set(graph_out) == set(specs)
    expected = {name: np.full_like(graph_out[name], spec.pad_value) for name, spec in specs.items()}
    python_cuts = []
    for i, (text1, text2) in enumerate(pairs):
        before = featurizer.stats["truncated_tokens"]
        python = featurizer.python(text1.split(), text2.split())
        python_cuts.append(featurizer.stats["truncated_tokens"] - before)
        assert set(python) == set(specs)
        for name, value in python.items():
            assert value.dtype == np.dtype(specs[name].dtype), name
            assert value.shape[1:] == specs[name].inner_shape, name
            expected[name][i, : len(value)] = value
    for name, value in expected.items():
        assert graph_out[name].dtype == value.dtype, name
        equal = (graph_out[name] == value).reshape(len(pairs), -1).all(axis=1)
        bad = np.flatnonzero(~equal)
        assert equal.sum() == len(pairs), (
            f"{name}: {len(bad)}/{len(pairs)} pairs differ, first {pairs[bad[0]]!r}"
        )
    if graph_cuts is not None:
        assert graph_cuts.dtype == np.int32 and graph_cuts.tolist() == python_cuts


# ------------------------------------------------------------------------------- word ids
def test_word_ids_hand_worked(tmp_path):
    words = F.WordIds.from_vocab(Vocab(["the", "cat"], lower=True))
    assert words.save(tmp_path) == ["vocab.txt"]
    assert (tmp_path / "vocab.txt").read_text() == "<PAD>\n<UNK>\nthe\ncat\n"
    out = words.python(["The", "CAT", "dog", "the"], [])
    assert out["text1"].tolist() == [2, 3, 1, 2] and out["text1"].dtype == np.int32
    assert out["text2"].shape == (0,) and out["text2"].dtype == np.int32
    pairs = [("The CAT dog the", ""), ("", "cat"), ("   ", "a the")]
    graph = _graph(words, tmp_path, *zip(*pairs))
    assert graph["text1"].tolist() == [[2, 3, 1, 2], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert graph["text2"].tolist() == [[0, 0], [3, 0], [1, 2]]
    _assert_agree(words, graph, pairs)


def test_word_ids_case_sensitive_vocab(tmp_path):
    words = F.WordIds.from_vocab(Vocab(["the", "The"], lower=False))
    words.save(tmp_path)
    assert words.python(["The", "the", "THE"], [])["text1"].tolist() == [3, 2, 1]
    assert _graph(words, tmp_path, ["The the THE"], [""])["text1"].tolist() == [[3, 2, 1]]


# ------------------------------------------------------------------------------- char ids
def test_char_ids_hand_worked(tmp_path):
    chars = F.CharIds(max_word_length=4, min_count=2)
    chars.fit(["aab", "b", "c", "Ab"])  # counts: b 3, a 2, c 1, A 1 -> a, b kept (b first)
    assert chars.save(tmp_path) == ["chars.txt"]
    assert (tmp_path / "chars.txt").read_text() == "<PAD>\n<UNK>\nb\na\n"
    out = chars.python(["abc", "babba", "Ab"], [])
    assert out["text1_chars"].tolist() == [[3, 2, 1, 0], [2, 3, 2, 2], [1, 2, 0, 0]]
    assert out["text1_chars"].dtype == np.int32
    assert out["text2_chars"].shape == (0, 4)
    assert chars.stats == {"words": 3, "truncated_words": 1}  # "babba" lost its last "a"
    pairs = [("abc babba Ab", ""), ("", "aaaaaaa b")]
    graph = _graph(chars, tmp_path, *zip(*pairs))
    assert graph["text1_chars"].shape == (2, 3, 4) and graph["text2_chars"].shape == (2, 2, 4)
    _assert_agree(chars, graph, pairs)
    assert chars.stats == {"words": 3 + 5, "truncated_words": 1 + 2}


def test_char_ids_lower_and_code_points(tmp_path):
    chars = F.CharIds(max_word_length=3, lower=True)
    chars.fit(["Ab", "e\u0301😀"])  # decomposed "é": e + U+0301, two code points
    assert chars.vocab.tokens[2:] == ["a", "b", "e", "\u0301", "😀"]
    chars.save(tmp_path)
    out = chars.python(["AB", "e\u0301😀x"], [])["text1_chars"]  # "x" is cut off
    assert out.tolist() == [[2, 3, 0], [4, 5, 6]] and chars.stats["truncated_words"] == 1
    pairs = [("AB e\u0301😀x 😀😀😀😀 \u00e9 İ", "ΣΑΣ")]
    _assert_agree(chars, _graph(chars, tmp_path, *zip(*pairs)), pairs)


def test_char_ids_errors(tmp_path):
    with pytest.raises(ValueError, match="max_word_length"):
        F.CharIds(max_word_length=0)
    with pytest.raises(ValueError, match="char_ids: no vocabulary"):
        F.CharIds().python(["a"], [])
    (tmp_path / "chars.txt").write_text("<PAD>\n<UNK>\na\na\n")
    with pytest.raises(ValueError, match=r"chars\.txt.*duplicate"):
        F.load_featurizer(tmp_path, "char_ids", F.CharIds().get_config())
    (tmp_path / "chars.txt").write_text("<PAD>\n<UNK>\na\n\n")
    with pytest.raises(ValueError, match=r"chars\.txt:4: invalid token"):
        F.load_featurizer(tmp_path, "char_ids", F.CharIds().get_config())


# ---------------------------------------------------------------------------- exact match
def test_exact_match_hand_worked(tmp_path):
    match = F.ExactMatch()
    out = match.python(["The", "cat", "sat", "the", "Σας"], ["THE", "dog", "σας", "Straße"])
    assert out["text1_exact_match"].tolist() == [1.0, 0.0, 0.0, 1.0, 1.0]
    assert out["text2_exact_match"].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert out["text1_exact_match"].dtype == np.float32
    empty = match.python([], ["a"])
    assert empty["text1_exact_match"].shape == (0,)
    assert empty["text2_exact_match"].tolist() == [0.0]
    # Row 1 shares "dog" with row 0's text2 and row 2's text1 only: no match across pairs.
    pairs = [
        ("The cat sat the Σας", "THE dog σας Straße STRASSE"),
        ("dog", "cat"),
        ("", "dog"),
        ("dog", ""),
        ("", ""),
        ("a a", "A"),
    ]
    graph = _graph(match, tmp_path, *zip(*pairs))
    assert graph["text1_exact_match"][1].tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]
    assert graph["text2_exact_match"][0].tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert graph["text1_exact_match"][5].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    _assert_agree(match, graph, pairs)


# ---------------------------------------------------------------------------- packed pair
def _round_robin_reference(len_a, len_b, budget):
    """Hands out the budget one token at a time, a first, skipping a full segment."""
    keep = [0, 0]
    lengths = (len_a, len_b)
    turn = 0
    while budget > 0 and keep != list(lengths):
        if keep[turn] < lengths[turn]:
            keep[turn] += 1
            budget -= 1
        turn = 1 - turn
    return tuple(keep)


def test_round_robin_lengths():
    assert F.round_robin_lengths(3, 4, 5) == (3, 2)
    assert F.round_robin_lengths(1, 10, 5) == (1, 4)
    grid = [(len_a, len_b) for len_a in range(9) for len_b in range(9)]
    for budget in range(12):
        expected = [_round_robin_reference(len_a, len_b, budget) for len_a, len_b in grid]
        assert [F.round_robin_lengths(a, b, budget) for a, b in grid] == expected
        len_a, len_b = tf.unstack(tf.constant(grid, tf.int64), axis=1)  # graph path
        keep_a, keep_b = F.round_robin_lengths(len_a, len_b, budget)
        assert list(zip(keep_a.numpy().tolist(), keep_b.numpy().tolist())) == expected


def test_packed_pair_hand_worked(tmp_path):
    tokenizer = F.WholeWordTokenizer(min_count=2)
    # counts (lower-cased): a 3, b 2, c 1 -> ids <PAD> 0, <UNK> 1, <CLS> 2, <SEP> 3, a 4, b 5
    tokenizer.fit(["a", "A", "a", "b", "B", "c"])
    packed = F.PackedPair(tokenizer, max_length=8)
    assert packed.save(tmp_path) == ["whole_word_vocab.txt"]
    assert (tmp_path / "whole_word_vocab.txt").read_text() == "<PAD>\n<UNK>\n<CLS>\n<SEP>\na\nb\n"
    out = packed.python(["A", "c"], ["b"])
    assert out["token_ids"].tolist() == [2, 4, 1, 3, 5, 3]
    assert out["segment_ids"].tolist() == [0, 0, 0, 0, 1, 1]
    assert out["padding_mask"].tolist() == [1] * 6
    assert packed.stats == {"pairs": 1, "truncated_pairs": 0, "truncated_tokens": 0}
    # 6 + 3 tokens, budget 5: a keeps 3, b keeps 2 -> 4 tokens cut.
    out = packed.python("a b a b a b".split(), "c c b".split())
    assert out["token_ids"].tolist() == [2, 4, 5, 4, 3, 1, 1, 3]
    assert out["segment_ids"].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert packed.stats == {"pairs": 2, "truncated_pairs": 1, "truncated_tokens": 4}
    empty = packed.python([], [])
    assert empty["token_ids"].tolist() == [2, 3, 3] and empty["segment_ids"].tolist() == [0, 0, 1]
    pairs = [
        ("A c", "b"),
        ("a b a b a b", "c c b"),
        ("", ""),
        ("", "a b c d e f g h"),
        ("x y z", ""),
    ]
    graph = _graph(packed, tmp_path, *zip(*pairs))
    assert graph["token_ids"].shape == (5, 8)
    assert graph["token_ids"][2].tolist() == [2, 3, 3, 0, 0, 0, 0, 0]
    assert graph["padding_mask"][2].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    _assert_agree(packed, graph, pairs)
    with pytest.raises(ValueError, match="max_length must be >= 3"):
        F.PackedPair(tokenizer, max_length=2)


# ---------------------------------------------------------------- save / load, SavedModel
def _fitted(tokens):
    featurizers = [
        F.WordIds.from_vocab(Vocab.build(tokens, min_df=2)),
        F.CharIds(max_word_length=5, min_count=2, lower=True),
        F.ExactMatch(),
        F.PackedPair(F.WholeWordTokenizer(min_count=2, lower=False), max_length=9),
    ]
    for featurizer in featurizers:
        featurizer.fit(tokens)
    return featurizers


PAIRS = [
    ("A man plays a guitar", "A man is playing music"),
    ("", "nobody"),
    ("Extraordinarily long words", "a a a A"),
    ("the man", ""),
]
TOKENS = [t for pair in PAIRS for text in pair for t in text.split()]


def test_save_load_round_trip(tmp_path):
    for featurizer in _fitted(TOKENS):
        directory = tmp_path / featurizer.kind
        directory.mkdir()
        names = featurizer.save(directory)
        assert sorted(p.name for p in directory.iterdir()) == sorted(names)
        config = json.loads(json.dumps(featurizer.get_config()))
        loaded = F.load_featurizer(directory, featurizer.kind, config)
        assert type(loaded) is type(featurizer) and loaded.get_config() == config
        assert loaded.specs() == featurizer.specs()
        for text1, text2 in PAIRS:
            a, b = (
                featurizer.python(text1.split(), text2.split()),
                loaded.python(text1.split(), text2.split()),
            )
            assert a.keys() == b.keys()
            for name in a:
                np.testing.assert_array_equal(a[name], b[name])
    with pytest.raises(KeyError, match="unknown featurizer 'nope'"):
        F.load_featurizer(tmp_path, "nope", {})


def test_graph_modules_survive_saved_model(tmp_path):
    vocab_dir = tmp_path / "run"
    vocab_dir.mkdir()
    featurizers = _fitted(TOKENS)
    for featurizer in featurizers:
        featurizer.save(vocab_dir)

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.modules = [f.graph(vocab_dir) for f in featurizers]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def __call__(self, text1, text2):
            tokens1 = whitespace_tokenize(text1, lower=False)
            tokens2 = whitespace_tokenize(text2, lower=False)
            return {k: v for m in self.modules for k, v in m(tokens1, tokens2).items()}

    tf.saved_model.save(Serving(), str(tmp_path / "saved"))
    shutil.rmtree(vocab_dir)  # the tables must now read the copied assets
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    out = {k: v.numpy() for k, v in loaded(*map(tf.constant, zip(*PAIRS))).items()}
    empty = [("", " "), ("\t", "")]  # a batch without any token
    out_empty = {k: v.numpy() for k, v in loaded(*map(tf.constant, zip(*empty))).items()}
    assert out_empty["text1_chars"].shape == (2, 0, 5)
    for featurizer in featurizers:
        _assert_agree(featurizer, {s.name: out[s.name] for s in featurizer.specs()}, PAIRS)
        _assert_agree(featurizer, {s.name: out_empty[s.name] for s in featurizer.specs()}, empty)


# ------------------------------------------------------------------------------ real data
@pytest.mark.slow  # every pair of every real dev file, each featuriser
def test_python_and_graph_agree_on_real_dev_files(shared_data, tmp_path):
    for name, pairs in real_dev_pairs(shared_data).items():
        tokens = [t for pair in pairs for text in pair for t in text.split()]
        words = F.WordIds.from_vocab(Vocab.build(tokens, min_df=2))
        chars = F.CharIds(min_count=5)  # default width 16, case kept
        packed = F.PackedPair(F.WholeWordTokenizer(min_count=2), max_length=32)
        directory = tmp_path / name
        directory.mkdir()
        for featurizer in (words, chars, F.ExactMatch(), packed):
            featurizer.fit(tokens)
            featurizer.save(directory)
            module = featurizer.graph(directory)  # eager: cheaper than tracing per file
            for begin in range(0, len(pairs), 1000):
                batch = pairs[begin : begin + 1000]
                texts1, texts2 = (tf.constant(t) for t in zip(*batch))
                graph = {
                    k: v.numpy()
                    for k, v in module(
                        whitespace_tokenize(texts1, lower=False),
                        whitespace_tokenize(texts2, lower=False),
                    ).items()
                }
                _assert_agree(featurizer, graph, batch)  # asserts == on every pair
        # Each Python path saw every pair once; caps and unknowns were exercised.
        assert chars.stats["words"] == len(tokens) and packed.stats["pairs"] == len(pairs)
        assert chars.stats["truncated_words"] > 0 and packed.stats["truncated_pairs"] > 0, name
        assert any(words.vocab.index(t) == 1 for t in tokens), name
        assert any(t not in chars.vocab for token in tokens for t in token), name


def test_lookup_tables_never_share_contents_across_modules(tmp_path):
    # Named tables take their shared name from the Asset's repr (its address); once a module
    # is freed, a new one at the same address silently reused the old vocabulary.
    import gc

    for i in range(20):
        directory = tmp_path / str(i)
        directory.mkdir()
        words = F.WordIds.from_vocab(Vocab([f"w{i}", "x"]))
        words.save(directory)
        ids = _graph(words, directory, [f"w{i} x"], ["x"])["text1"].tolist()
        assert ids == [[2, 3]], i
        gc.collect()
