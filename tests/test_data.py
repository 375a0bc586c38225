"""Tests for readers, tokenisers, vocabulary, embeddings, registry and re2_tf.data.prepare."""

import csv
import gzip
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from re2_tf import metrics as metrics_lib
from re2_tf.data import datasets, embeddings, readers, tokenization
from re2_tf.data.prepare import prepare
from re2_tf.data.vocab import Vocab

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RAW = FIXTURES / "raw"


# ----------------------------------------------------------------------------- readers
def test_read_snli_jsonl_drops_unlabelled():
    examples, dropped = readers.read_snli_jsonl(RAW / "snli_1.0" / "snli_1.0_train.jsonl")
    assert dropped == 1  # the 4th line has gold label "-"
    assert [e.label for e in examples] == [0, 1, 2]
    assert examples[0].text1 == "A person on a horse jumps over a broken down airplane."
    assert examples[1].pair_id == "2n"


def test_read_scitail_jsonl_and_tsv_agree():
    jsonl = readers.read_scitail_jsonl(RAW / "SciTailV1.1/snli_format/scitail_1.0_train.txt")
    tsv = readers.read_scitail_tsv(RAW / "SciTailV1.1/tsv_format/scitail_1.0_train.tsv")
    assert [e.label for e in jsonl] == [1, 0]  # neutral, entailment
    assert jsonl == tsv


def test_read_quora_and_wikiqa():
    quora = readers.read_quora_tsv(RAW / "Quora_question_pair_partition/train.tsv")
    assert [(e.label, e.pair_id) for e in quora] == [(1, "101"), (0, "102")]
    assert quora[0].text1 == "How can I stop my depression ?"
    wikiqa = readers.read_wikiqa_txt(RAW / "WikiQACorpus/WikiQA-dev.txt")
    # Questions numbered from 1 by consecutive runs ("pm" and "PM" differ), docs from 0.
    assert [(e.qid, e.docid, e.label) for e in wikiqa] == [
        ("1", "0", 0),
        ("1", "1", 1),
        ("2", "0", 0),
        ("3", "0", 1),
        ("3", "1", 0),
    ]
    ref = (RAW / "WikiQACorpus/WikiQA-dev.ref").read_text().split("\n")[:-1]
    assert [f"{e.qid} 0 {e.docid} {e.label}" for e in wikiqa] == ref


@pytest.mark.parametrize(
    "content, fmt, line, message",
    [
        ("a\tb\t0\na\tb\n", "processed", 2, "expected 3"),
        ("a\tb\t0\na\tb\tx\n", "processed", 2, "unknown label"),
        (
            '{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}\n{"sentence1": \n',
            "snli_jsonl",
            2,
            "invalid JSON",
        ),
        (
            '{"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}\n',
            "snli_jsonl",
            1,
            "unknown label",
        ),
        ('{"sentence1": "a", "gold_label": "neutral"}\n', "scitail_jsonl", 1, "sentence2"),
        (
            '{"sentence1": "a", "sentence2": "b", "gold_label": "contradiction"}\n',
            "scitail_jsonl",
            1,
            "unknown label",
        ),
        ("p\th\tentails\np\th\tentailment\n", "scitail_tsv", 2, "unknown label"),
        ("1\tq1\tq2\t7\n1\tq1\tq2\n", "quora_tsv", 2, "expected 4"),
        ("q\ts\t1\nq\ts\t2\n", "wikiqa_txt", 2, "unknown label"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, content, fmt, line, message):
    path = tmp_path / "broken.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"broken\.txt:{line}: .*{message}"):
        readers.read_file(path, fmt)


def test_malformed_fixture_file():
    with pytest.raises(ValueError, match=r"bad_processed\.txt:3: expected 3"):
        readers.read_processed(FIXTURES / "bad_processed.txt")
    with pytest.raises(ValueError, match=r":2: label 1 out of range"):
        readers.read_processed(FIXTURES / "bad_processed.txt", num_classes=1)


# ---------------------------------------------------------------------------- tokenisers
def test_scitail_tokenizer_hand_worked():
    tok = tokenization.get_tokenizer("scitail")
    # TweetTokenizer: Earth's | rotation | isn't | " | slow | " | / | fast | ; | it's | ...
    # then - . # " / -> space, clitics split off, spaces collapsed, case kept.
    assert tok("Earth's rotation isn't \"slow\"/fast; it's about 24 hours.") == [
        "Earth",
        "'s",
        "rotation",
        "is",
        "n't",
        "slow",
        "fast",
        ";",
        "it",
        "'s",
        "about",
        "24",
        "hours",
    ]
    # "#1" is one Tweet token (hashtag); '#' becomes a space; rock-band splits on '-'.
    assert tok("Wasn't it the #1 rock-band?") == [
        "Was",
        "n't",
        "it",
        "the",
        "1",
        "rock",
        "band",
        "?",
    ]
    assert tokenization.get_tokenizer("scitail", lower=True)("The 'Big' cat") == [
        "the",
        "big",
        "cat",
    ]


def test_snli_tokenizer_hand_worked():
    tok = tokenization.get_tokenizer("snli")
    # PTB tokens, lower-cased, single-character punctuation removed, `` '' kept.
    assert tok('Two women, holding "to-go" packages, aren\'t talking.') == [
        "two",
        "women",
        "holding",
        "``",
        "to-go",
        "''",
        "packages",
        "are",
        "n't",
        "talking",
    ]
    # Sentence split keeps abbreviations ("mr.") but separates a sentence-final period.
    assert tok("Mr. Smith's dog runs. It is fast!") == [
        "mr.",
        "smith",
        "'s",
        "dog",
        "runs",
        "it",
        "is",
        "fast",
    ]


def test_tokenizer_registry():
    assert tokenization.get_tokenizer("whitespace")("How  do I ?") == ["How", "do", "I", "?"]
    assert tokenization.get_tokenizer("whitespace", lower=True)("A B") == ["a", "b"]
    assert set(tokenization.TOKENIZERS) == {"whitespace", "scitail", "snli"}
    with pytest.raises(KeyError):
        tokenization.get_tokenizer("bert")


def test_scitail_tokenizer_reproduces_release_test_split(shared_data):
    original = shared_data / "scitail/original_text/scitail_test_felipessalvatore_dev.csv"
    processed = shared_data / "scitail/re2_processed/test.txt"
    if not original.exists() or not processed.exists():
        pytest.skip("SciTail test files not staged")
    with open(original, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    reference = readers.read_processed(processed)
    assert len(rows) == len(reference) == 2126
    tok = tokenization.get_tokenizer("scitail")
    matches = sum(
        " ".join(tok(r["premise"])) == ref.text1 and " ".join(tok(r["hypothesis"])) == ref.text2
        for r, ref in zip(rows, reference)
    )
    label_names = {"entailment": 0, "not_entailment": 1}
    assert [label_names[r["label"]] for r in rows] == [ref.label for ref in reference]
    assert matches == 2126  # data/README.md: "2,126/2,126 pairs"


def test_wikiqa_ids_match_corpus_refs(shared_data):
    for split in ("train", "dev", "test"):
        examples = readers.read_wikiqa_txt(shared_data / f"wikiqa/WikiQA-{split}.txt")
        ref = (shared_data / f"wikiqa/WikiQA-{split}.ref").read_text().splitlines()
        assert [f"{e.qid} 0 {e.docid} {e.label}" for e in examples] == ref
    # data/README.md: the filtered sets keep dev 122 and test 237 questions.
    for split, questions in (("dev", 122), ("test", 237)):
        ref = (shared_data / f"wikiqa/WikiQA-{split}-filtered.ref").read_text().splitlines()
        assert len({line.split()[0] for line in ref}) == questions


def test_shared_processed_files_read(shared_data):
    # Published split sizes (data README): SNLI dev 9,842; SciTail dev 1,304; Quora dev 10,000.
    for name, size, classes in (("snli", 9842, 3), ("scitail", 1304, 2), ("quora", 10000, 2)):
        examples = readers.read_processed(
            shared_data / f"{name}/re2_processed/dev.txt", num_classes=classes
        )
        assert len(examples) == size


# ------------------------------------------------------------------------------- vocab
def test_vocab_build_rule_and_order():
    tokens = "The cat sat on the mat . the cat ran".split()
    # lower-cased counts: the 3, cat 2, sat/on/mat/./ran 1. min_df=2 keeps the, cat;
    # "mat" has a vector; "dog" has a vector but is not in the data -> not added.
    vocab = Vocab.build(tokens, min_df=2, pretrained_words={"mat", "dog"})
    assert vocab.tokens == ["<PAD>", "<UNK>", "the", "cat", "mat"]
    assert vocab.encode(["The", "mat", "dog"]) == [2, 4, 1]
    assert vocab.decode([0, 1, 3]) == ["<PAD>", "<UNK>", "cat"]
    # ties in count are ordered by the word: a(2) b(2) c(1)
    assert Vocab.build("b a b a c".split(), min_df=1).tokens[2:] == ["a", "b", "c"]
    assert Vocab.build("A a".split(), min_df=2, lower=False).tokens == ["<PAD>", "<UNK>"]
    # a {token: count} mapping is accepted as well (counts merged after lower-casing)
    assert Vocab.build({"The": 1, "the": 1, "x": 1}, min_df=2).tokens[2:] == ["the"]


def test_vocab_save_load(tmp_path):
    vocab = Vocab(["the", "cat", "ünïcode"])
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    assert path.read_text(encoding="utf-8") == "<PAD>\n<UNK>\nthe\ncat\nünïcode\n"
    assert Vocab.load(path) == vocab
    path.write_text("<PAD>\n<UNK>\nthe\nthe\n", encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate"):
        Vocab.load(path)
    path.write_text("the\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must start with"):
        Vocab.load(path)


# -------------------------------------------------------------------------- embeddings
EXPECTED_LOWER = np.array(
    [  # vocab <PAD> <UNK> the dog cat mat bird; see glove_tiny.txt
        [0, 0, 0],
        [0, 0, 0],
        [0.1, 0.2, 0.3],  # "the" (line 1) wins over "The" (line 2)
        [0.1, -2, 3],  # "Dog" (line 5) wins over "dog" (line 6)
        [-1.0, 0.5, 2.5],
        [0, 0, 1],
        [0, 0, 0],  # "bird": no vector
    ],
    dtype=np.float32,
)


def _glove_variants(tmp_path):
    plain = FIXTURES / "glove_tiny.txt"
    gz = tmp_path / "glove_tiny.txt.gz"
    with open(plain, "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    zipped = tmp_path / "glove_tiny.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.write(plain, "glove_tiny.txt")
    return [plain, gz, zipped]


def test_load_embeddings_plain_gz_zip(tmp_path):
    vocab = Vocab(["the", "dog", "cat", "mat", "bird"])
    for path in _glove_variants(tmp_path):
        matrix = embeddings.load_embeddings(path, vocab)
        assert matrix.dtype == np.float32 and matrix.shape == (7, 3)
        np.testing.assert_allclose(matrix, EXPECTED_LOWER)
        # ". . ." (a word with spaces) is skipped, not an error.
        assert embeddings.load_glove_words(path) == {"the", "cat", "dog", "mat"}
    cased = embeddings.load_embeddings(FIXTURES / "glove_tiny.txt", vocab, lower=False)
    np.testing.assert_allclose(cased[2:4], [[0.1, 0.2, 0.3], [8, 8, 8]])
    assert embeddings.load_glove_words(FIXTURES / "glove_tiny.txt", lower=False) == {
        "the",
        "The",
        "cat",
        "Dog",
        "dog",
        "mat",
    }


def test_words_with_spaces_are_counted_and_reported(tmp_path, caplog):
    # 840B has lines such as "at&t co <300 values>": the word is everything but the last D
    # fields. They can never match a token, so they are skipped -- and counted in the log.
    path = tmp_path / "spaced.txt"
    path.write_text("the 0.1 0.2 0.3\nat&t co 1 2 3\ncat 4 5 6\n. . . 7 7 7\n")
    with caplog.at_level("WARNING"):
        assert embeddings.load_glove_words(path) == {"the", "cat"}
    assert "skipped 2 lines whose word contains spaces" in caplog.text
    assert "'at&t co'" in caplog.text and "'. . .'" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        matrix = embeddings.load_embeddings(path, Vocab(["at&t", "cat", "."]))
    # "at&t" and "." are not read from the spaced lines: their rows stay zero.
    np.testing.assert_array_equal(matrix[2:], [[0, 0, 0], [4, 5, 6], [0, 0, 0]])
    assert "skipped 2 lines" in caplog.text


def test_fasttext_vec_header_is_the_dimension_not_a_word(tmp_path):
    # FITN's vectors are fastText .vec files: "<count> <dim>" on the first line.
    path = tmp_path / "tiny.vec"
    path.write_text("3 2\nthe 1 2\n2 3 4\ncat 5 6\n")
    matrix = embeddings.load_embeddings(path, Vocab(["the", "cat", "2", "3"]))
    np.testing.assert_array_equal(matrix[2:], [[1, 2], [5, 6], [3, 4], [0, 0]])
    assert embeddings.load_glove_words(path) == {"the", "2", "cat"}
    with pytest.raises(ValueError, match=r"tiny\.vec:1: header gives dim 2, expected 3"):
        embeddings.load_glove_words(path, dim=3)


def test_malformed_vectors(tmp_path):
    vocab = Vocab(["a", "b"])
    short = tmp_path / "short.txt"
    short.write_text("a 1 2 3\nb 1 2\n")
    with pytest.raises(ValueError, match=r"short\.txt:2: expected 3 values"):
        embeddings.load_embeddings(short, vocab)
    with pytest.raises(ValueError, match=r"short\.txt:2:"):
        embeddings.load_glove_words(short)
    text = tmp_path / "text.txt"
    text.write_text("a 1 2 3\nb 1 x 3\n")
    with pytest.raises(ValueError, match=r"text\.txt:2: non-numeric"):
        embeddings.load_embeddings(text, vocab)
    bad_zip = tmp_path / "two.zip"
    with zipfile.ZipFile(bad_zip, "w") as z:
        z.writestr("a.txt", "a 1\n")
        z.writestr("b.txt", "b 1\n")
    with pytest.raises(ValueError, match="exactly one"):
        embeddings.load_glove_words(bad_zip)


def test_vocab_and_embeddings_cache(tmp_path):
    train_tokens = "the dog the cat rare".split()
    cache = tmp_path / "run"
    vocab, matrix = embeddings.vocab_and_embeddings(
        train_tokens, embeddings_path=str(FIXTURES / "glove_tiny.txt"), cache_dir=cache, min_df=2
    )
    # the(2) by count, then dog(1), cat(1) because they have vectors; "rare" dropped.
    assert vocab.tokens == ["<PAD>", "<UNK>", "the", "cat", "dog"]
    np.testing.assert_allclose(matrix[2:], [[0.1, 0.2, 0.3], [-1.0, 0.5, 2.5], [0.1, -2, 3]])
    assert sorted(p.name for p in cache.iterdir()) == ["embeddings.npy", "vocab.txt"]
    # Second call is served from the cache (the vectors file is not even opened).
    vocab2, matrix2 = embeddings.vocab_and_embeddings(
        [], embeddings_path=str(tmp_path / "missing.txt"), cache_dir=cache
    )
    assert vocab2 == vocab
    np.testing.assert_array_equal(matrix2, matrix)


# ---------------------------------------------------------------------------- registry
def test_registry():
    expected = {
        "snli": (("entailment", "neutral", "contradiction"), "acc", "snli"),
        "scitail": (("entailment", "neutral"), "acc", "scitail"),
        "quora": (("not_duplicate", "duplicate"), "acc", "whitespace"),
        "wikiqa": (("incorrect", "correct"), "mrr", "whitespace"),
        "sample": (("entailment", "neutral", "contradiction"), "acc", "snli"),
        "sample_ranking": (("incorrect", "correct"), "mrr", "snli"),
    }
    for name, (labels, metric, tokenizer) in expected.items():
        spec = datasets.get_dataset(name)
        assert (spec.label_names, spec.metric, spec.tokenizer) == (labels, metric, tokenizer)
        assert tokenizer in tokenization.TOKENIZERS
    assert datasets.get_dataset("wikiqa").ranking
    assert datasets.get_dataset("sample_ranking").ranking
    assert datasets.get_dataset("sample_ranking").watch_metrics == ("map",)
    with pytest.raises(KeyError):
        datasets.get_dataset("mnli")


def test_bundled_sample():
    sample = REPO / "data" / "sample"
    # The figures of data/sample/README.md's table (pairs, bytes, labels per class).
    loaded = {s: datasets.load_split("sample", sample, s) for s in datasets.SPLITS}
    assert {s: len(ex) for s, ex in loaded.items()} == {"train": 8000, "dev": 1842, "test": 2000}
    sizes = {s: (sample / f"{s}.txt").stat().st_size for s in datasets.SPLITS}
    assert sizes == {"train": 896_845, "dev": 207_030, "test": 225_786}
    assert round(sum(sizes.values()) / 1e6, 1) == 1.3  # README: "a 1.3 MB excerpt"
    assert {s: np.bincount([e.label for e in ex]).tolist() for s, ex in loaded.items()} == {
        "train": [2717, 2613, 2670],
        "dev": [612, 622, 608],
        "test": [690, 660, 650],
    }
    readme = (sample / "README.md").read_text()
    assert "CC BY-SA 4.0" in readme and "Bowman" in readme


SAMPLE_RANKING = REPO / "data" / "sample_ranking"


def test_sample_ranking_is_regenerated_byte_for_byte(tmp_path):
    """data/sample_ranking is exactly what its generator writes from data/sample."""
    counts = prepare("sample_ranking", REPO / "data" / "sample", tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    bundled = sorted(p.name for p in SAMPLE_RANKING.iterdir() if p.name != "README.md")
    assert written == bundled
    for name in written:
        assert (tmp_path / name).read_bytes() == (SAMPLE_RANKING / name).read_bytes(), name
    # data/sample_ranking/README.md's table.
    assert {s: (c["questions"], c["pairs"], c["correct"]) for s, c in counts.items()} == {
        "train": (2506, 9967, 2717),
        "dev": (569, 2279, 612),
        "test": (626, 2489, 690),
    }
    assert {s: (c["dropped_questions"], c["dropped_pairs"]) for s, c in counts.items()} == {
        "train": (198, 539),
        "dev": (47, 132),
        "test": (50, 137),
    }


def _expected_random(labels):
    """Expected RR and AP of a uniformly random order of one question's 0/1 ``labels``:
    P(first correct at k) = C(n-k, r-1) / C(n, r); E[AP] = (1/n) sum_k (1 + (k-1)(r-1)/(n-1))/k
    (the k-th position is relevant with probability r/n, and then r-1 of the other n-1
    candidates are relevant at random)."""
    from math import comb

    n, r = len(labels), sum(labels)
    rr = sum(comb(n - k, r - 1) / comb(n, r) / k for k in range(1, n + 1))
    ap = sum((1 + (k - 1) * (r - 1) / (n - 1)) / k for k in range(1, n + 1)) / n
    return rr, ap


def test_bundled_sample_ranking():
    """The loaded splits against data/sample_ranking/README.md: questions, candidates per
    question, correct per question, every question scored, the .ref files, and the
    expected scores of a random order."""
    from collections import Counter

    readme = (SAMPLE_RANKING / "README.md").read_text()
    assert "CC BY-SA 4.0" in readme and "Bowman" in readme
    expected = {
        "train": ({2: 5, 3: 72, 4: 2420, 6: 2, 7: 7}, {1: 2302, 2: 197, 3: 7}),
        "dev": ({3: 13, 4: 550, 6: 2, 7: 4}, {1: 526, 2: 43}),
        "test": ({2: 1, 3: 22, 4: 600, 7: 3}, {1: 565, 2: 58, 3: 3}),
    }
    snli = {s: datasets.load_split("sample", REPO / "data" / "sample", s) for s in datasets.SPLITS}
    for split in datasets.SPLITS:
        examples = datasets.load_split("sample_ranking", SAMPLE_RANKING, split)
        groups = {}
        for ex in examples:
            groups.setdefault(ex.qid, []).append(ex)
        sizes = Counter(len(g) for g in groups.values())
        correct = Counter(sum(ex.label for ex in g) for g in groups.values())
        assert (dict(sizes), dict(correct)) == expected[split], split
        # Every entailed SNLI pair is a correct candidate of its premise's question.
        assert sorted((e.text1, e.text2) for e in examples if e.label == 1) == sorted(
            (e.text1, e.text2) for e in snli[split] if e.label == 0
        )
        labels = [ex.label for ex in examples]
        qids = [ex.qid for ex in examples]
        docids = [ex.docid for ex in examples]
        oracle = metrics_lib.ranking_metrics(qids, docids, labels, [float(y) for y in labels])
        assert oracle == {"map": 1.0, "mrr": 1.0, "num_questions": len(groups)}
        if split != "train":
            ref = metrics_lib.read_trec_ref(SAMPLE_RANKING / f"{split}.ref")
            assert {q: dict(d) for q, d in ref.items()} == {
                q: {ex.docid: ex.label for ex in g} for q, g in groups.items()
            }
            rr, ap = zip(*(_expected_random([ex.label for ex in g]) for g in groups.values()))
            figures = f"MRR {sum(rr) / len(rr):.4f} / MAP {sum(ap) / len(ap):.4f} on {split}"
            assert figures in " ".join(readme.split()), figures


def test_build_sample_ranking_hand_worked():
    from re2_tf.data.prepare import build_sample_ranking

    P = readers.PairExample
    pairs = [
        P("p1", "a", 0),
        P("p1", "b", 2),
        P("p2", "c", 1),  # no entailed hypothesis: dropped
        P("p3", "d", 1),
        P("p3", "e", 0),
        P("p4", "f", 0),
        P("p4", "a", 2),
    ]
    built, counts = build_sample_ranking(pairs)
    assert counts == {"questions": 3, "correct": 3, "dropped_questions": 1, "dropped_pairs": 1}
    # Kept groups p1, p3, p4 (Q = 3); question i's distractor is hypothesis i mod n_j of
    # group j = (i + 1) mod 3: Q1 (p1) <- p3[0] "d"; Q2 (p3) <- p4[1] "a"; Q3 (p4) <- p1[0]
    # "a" is one of its own, so the next group: p3[0] "d".
    assert [(e.qid, e.docid, e.text1, e.text2, e.label) for e in built] == [
        ("Q1", "Q1-0", "p1", "a", 1),
        ("Q1", "Q1-1", "p1", "b", 0),
        ("Q1", "Q1-2", "p1", "d", 0),
        ("Q2", "Q2-0", "p3", "d", 0),
        ("Q2", "Q2-1", "p3", "e", 1),
        ("Q2", "Q2-2", "p3", "a", 0),
        ("Q3", "Q3-0", "p4", "f", 1),
        ("Q3", "Q3-1", "p4", "a", 0),
        ("Q3", "Q3-2", "p4", "d", 0),
    ]
    with pytest.raises(ValueError, match="need >= 2 premises"):
        build_sample_ranking(pairs[:2])


WIKIQA_PREPARED = (
    "who wrote hamlet ?\thamlet is a tragedy .\t0\n"
    "what is a pm ?\tpm may mean afternoon .\t0\n"
    "what is a pm ?\ta prime minister leads a government .\t1\n"
)


def test_wikiqa_split_without_ids_is_an_error_not_a_regrouping(tmp_path):
    # Lines 2-3 were "What is a pm ?" and "What is a PM ?" in the corpus: two questions that
    # lower-casing made identical. Regrouping the text would merge them; the .ids file keeps
    # them apart, and without it loading fails and says how to make it.
    (tmp_path / "dev.txt").write_text(WIKIQA_PREPARED)
    with pytest.raises(
        FileNotFoundError,
        match=r"dev\.ids not found.*re2-prepare "
        r"--dataset=wikiqa",
    ):
        datasets.load_split("wikiqa", tmp_path, "dev")
    (tmp_path / "dev.ids").write_text("1\t0\n2\t0\n3\t0\n")
    dev = datasets.load_split("wikiqa", tmp_path, "dev")
    assert [(e.qid, e.docid, e.label) for e in dev] == [("1", "0", 0), ("2", "0", 0), ("3", "0", 1)]
    (tmp_path / "dev.ids").write_text("1\t0\n2\t0\n")
    with pytest.raises(ValueError, match=r"dev\.ids: 2 lines but .*dev\.txt has 3 pairs"):
        datasets.load_split("wikiqa", tmp_path, "dev")


def test_load_file_for_a_run_takes_ids_from_the_sibling_file_and_checks_labels(tmp_path):
    wikiqa = datasets.get_dataset("wikiqa")
    path = tmp_path / "test.txt"
    path.write_text(WIKIQA_PREPARED)
    with pytest.raises(
        ValueError,
        match=r"test\.txt: processed lines carry no question ids"
        r".*test\.ids",
    ):
        datasets.load_file(path, "processed", wikiqa)
    (tmp_path / "test.ids").write_text("1\t0\n2\t0\n3\t0\n")
    assert [e.qid for e in datasets.load_file(path, "processed", wikiqa)] == ["1", "2", "3"]
    # without a spec (any dataset) nothing is required
    assert [e.qid for e in datasets.load_file(path, "processed")] == [None] * 3
    path.write_text(WIKIQA_PREPARED + "q\ta\t2\n")
    with pytest.raises(ValueError, match=r"test\.txt:4: label 2 is not one of wikiqa's labels"):
        datasets.load_file(path, "processed", wikiqa)
    # Raw formats report the file's own line: line 2 ("-") is dropped by the reader.
    snli = tmp_path / "snli.jsonl"
    snli.write_text(
        "".join(
            f'{{"sentence1": "a", "sentence2": "b", "gold_label": "{g}"}}\n'
            for g in ("neutral", "-", "contradiction")
        )
    )
    with pytest.raises(ValueError, match=r"snli\.jsonl:3: label 2 is not one of scitail's"):
        datasets.load_file(snli, "snli_jsonl", datasets.get_dataset("scitail"))


def test_load_file_tokenises_raw_formats():
    examples = datasets.load_file(
        RAW / "SciTailV1.1/snli_format/scitail_1.0_dev.txt", "scitail_jsonl"
    )
    assert examples == [
        readers.PairExample("was n't it the 1 rock band ?", "it was a rock band", 0)
    ]
    quora = datasets.load_file(RAW / "Quora_question_pair_partition/dev.tsv", "quora_tsv")
    assert quora[0].text1 == "How do I learn Python ?"  # as distributed; vocab lower-cases


# ----------------------------------------------------------------------------- prepare
PREPARED = {  # expected prepared files, worked out by hand from tests/fixtures/raw
    "snli": {
        "train": [
            "a person on a horse jumps over a broken down airplane\t"
            "a person is outdoors on a horse\t0",
            "two women holding `` to-go '' packages are n't talking\t"
            "the sisters are hugging goodbye\t1",
            "children smiling and waving at camera\tthe kids are frowning\t2",
        ],
        "dev": ["mr. smith 's dog runs it is fast\ta dog runs\t0"],
        "test": ["a man plays\tnobody plays\t2"],
    },
    "scitail": {
        "train": [
            "based on the list provided of the uses of substances 1 7 , estimate the ph\t"
            "if a substance has a ph value greater than 7 , that indicates that it is base\t1",
            "earth 's rotation is n't slow fast ; it 's about 24 hours\t"
            "the earth rotates once every day\t0",
        ],
        "dev": ["was n't it the 1 rock band ?\tit was a rock band\t0"],
        "test": [
            "if one or two base pairs are changed ( mutated ) , the embryo fails\t"
            "embryos develop\t1"
        ],
    },
    "quora": {
        "train": [
            "how can i stop my depression ?\twhat can i do to stop being depressed ?\t1",
            "is honey a viable alternative to sugar for diabetics ?\thow would you compare "
            "the united states ' euthanasia laws to denmark ?\t0",
        ],
        "dev": ["how do i learn python ?\twhat is the best way to learn python ?\t1"],
        "test": ["why is the sky blue ?\twhy is grass green ?\t0"],
    },
    "wikiqa": {
        "test": [
            "where is paris ?\tparis is in france .\t1",
            "where is paris ?\tparis is a city .\t0",
        ],
    },
}
RAW_DIRS = {
    "snli": "snli_1.0",
    "scitail": "SciTailV1.1",
    "quora": "Quora_question_pair_partition",
    "wikiqa": "WikiQACorpus",
}


def _zip_dir(directory: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                z.write(path, Path(directory.name) / path.relative_to(directory))
        z.writestr(f"__MACOSX/{directory.name}/._junk", "not a data file")
    return archive


@pytest.mark.parametrize("dataset", sorted(PREPARED))
@pytest.mark.parametrize("as_zip", [False, True])
def test_prepare(tmp_path, dataset, as_zip):
    source = RAW / RAW_DIRS[dataset]
    if as_zip:
        source = _zip_dir(source, tmp_path / "download.zip")
    out = tmp_path / "out"
    prepare(dataset, source, out)
    for split, lines in PREPARED[dataset].items():
        assert (out / f"{split}.txt").read_text(encoding="utf-8").splitlines() == lines
    loaded = {s: datasets.load_split(dataset, out, s) for s in datasets.SPLITS}
    if dataset == "wikiqa":
        dev = loaded["dev"]
        # "What is a pm ?" / "What is a PM ?" become identical text but keep their own qids.
        assert [(e.qid, e.docid) for e in dev] == [
            ("1", "0"),
            ("1", "1"),
            ("2", "0"),
            ("3", "0"),
            ("3", "1"),
        ]
        assert (out / "dev.ref").read_text() == "1 0 0 0\n1 0 1 1\n3 0 0 1\n3 0 1 0\n"
        assert datasets.ref_file("wikiqa", out, "test") == out / "test.ref"


def test_prepare_counts_and_reports_pairs_with_an_empty_text(tmp_path, caplog):
    # SNLI's tokeniser removes one-character punctuation, so "." and ". !" become empty.
    source = tmp_path / "snli_1.0"
    source.mkdir()
    splits = {
        "train": [("A man .", "."), ("Dogs run .", "Dogs move ."), (". !", ",")],
        "dev": [("A cat .", "A pet .")],
        "test": [("?", "A man sleeps .")],
    }
    for split, pairs in splits.items():
        (source / f"snli_1.0_{split}.jsonl").write_text(
            "".join(
                f'{{"sentence1": "{a}", "sentence2": "{b}", "gold_label": "neutral"}}\n'
                for a, b in pairs
            )
        )
    with caplog.at_level("INFO", logger="absl"):
        counts = prepare("snli", source, tmp_path / "out")
    assert counts == {
        "train": {"pairs": 3, "empty_text_pairs": 2},
        "dev": {"pairs": 1, "empty_text_pairs": 0},
        "test": {"pairs": 1, "empty_text_pairs": 1},
    }
    assert (
        "snli train: 3 pairs, 2 with an empty text after tokenisation (lines [1, 3])" in caplog.text
    )
    assert "snli dev: 1 pairs, 0 with an empty text" in caplog.text
    assert "snli test: 1 pairs, 1 with an empty text after tokenisation (lines [1])" in caplog.text
    # kept, not dropped
    assert (tmp_path / "out/train.txt").read_text().splitlines()[2] == "\t\t1"


def test_prepare_scitail_tsv_fallback(tmp_path):
    source = tmp_path / "SciTailV1.1"
    shutil.copytree(RAW / "SciTailV1.1" / "tsv_format", source / "tsv_format")
    prepare("scitail", source, tmp_path / "out")
    for split, lines in PREPARED["scitail"].items():
        assert (tmp_path / "out" / f"{split}.txt").read_text().splitlines() == lines


def test_prepare_sample_cut(tmp_path):
    source = tmp_path / "snli"
    source.mkdir()
    (source / "dev.txt").write_text("".join(f"d{i}\th\t{i % 3}\n" for i in range(5)))
    (source / "test.txt").write_text("".join(f"t{i}\th\t{i % 3}\n" for i in range(4)))
    counts = prepare("sample", source, tmp_path / "out", sample_train=3, sample_test=2)
    assert counts == {
        s: {"pairs": n, "empty_text_pairs": 0} for s, n in (("train", 3), ("dev", 2), ("test", 2))
    }
    assert (tmp_path / "out/dev.txt").read_text() == "d3\th\t0\nd4\th\t1\n"
    assert (tmp_path / "out/test.txt").read_text() == "t0\th\t0\nt1\th\t1\n"


# ----------------------------------------------------------------------------- TrecQA
# A hand-made castorini split: (question id, question, candidate, label) per pair.
TRECQA_ROWS = [
    ("1.5", "what is crips ' gang color ?", "the crips wear blue .", 1),
    ("1.5", "what is crips ' gang color ?", "gangs fight in prisons .", 0),
    ("1.5", "what is crips ' gang color ?", "blue is their color .", 0),
    ("32.1", "what do practitioners of wicca worship ?", "wicca is nature worship .", 1),
    ("32.1", "what do practitioners of wicca worship ?", "wicca comes from old english .", 0),
    ("32.1", "what do practitioners of wicca worship ?", "they worship nature .", 1),
]


def _write_trecqa_split(directory: Path, rows=TRECQA_ROWS, boundary=True) -> Path:
    """Writes ``rows`` in the castorini layout; ``boundary.txt``/``numrels.txt`` (optional)
    without a final newline, as in the shared copy's ``train/``."""
    directory.mkdir(parents=True)
    for name, column in (("a.toks", 1), ("b.toks", 2), ("sim.txt", 3), ("id.txt", 0)):
        (directory / name).write_text("".join(f"{row[column]}\n" for row in rows))
    if boundary:
        starts = [i for i, row in enumerate(rows) if i == 0 or rows[i - 1][0] != row[0]]
        ends = starts[1:] + [len(rows)]
        (directory / "boundary.txt").write_text("\n".join(map(str, starts + [len(rows)])))
        (directory / "numrels.txt").write_text(
            "\n".join(str(sum(row[3] for row in rows[a:b])) for a, b in zip(starts, ends))
        )
    return directory


def test_read_trecqa_dir(tmp_path):
    split = _write_trecqa_split(tmp_path / "clean-dev")
    examples = readers.read_trecqa_dir(split)
    assert [(e.qid, e.docid, e.label, e.line) for e in examples] == [
        ("1.5", "0", 1, 1),
        ("1.5", "1", 0, 2),
        ("1.5", "2", 0, 3),
        ("32.1", "0", 1, 4),
        ("32.1", "1", 0, 5),
        ("32.1", "2", 1, 6),
    ]
    assert [(e.text1, e.text2) for e in examples] == [(r[1], r[2]) for r in TRECQA_ROWS]
    # boundary.txt / numrels.txt are optional
    bare = readers.read_trecqa_dir(_write_trecqa_split(tmp_path / "bare", boundary=False))
    assert bare == examples
    # --file evaluation: the directory is the "file"; ids come with it, texts kept as stored
    spec = datasets.get_dataset("trecqa")
    assert readers.read_file(split, "trecqa_dir") == examples
    assert datasets.load_file(split, "trecqa_dir", spec) == examples


def _trecqa_break(directory: Path, name: str, line: int, value: str | None) -> None:
    """Replaces (``value``) or deletes (``None``) 1-based ``line`` of ``directory/name``."""
    lines = (directory / name).read_text().split("\n")
    if value is None:
        del lines[line - 1]
    else:
        lines[line - 1] = value
    (directory / name).write_text("\n".join(lines))


@pytest.mark.parametrize(
    "name, line, value, error_file, error_line, message",
    [
        ("b.toks", 6, None, "b.toks", 6, "missing line: b.toks has 5 lines but a.toks has 6"),
        ("id.txt", 3, None, "id.txt", 6, "missing line: id.txt has 5 lines but a.toks has 6"),
        ("sim.txt", 2, "2", "sim.txt", 2, "unknown label '2'"),
        ("sim.txt", 5, "yes", "sim.txt", 5, "unknown label 'yes'"),
        ("a.toks", 2, "", "a.toks", 2, "empty line"),
        ("b.toks", 4, "   ", "b.toks", 4, "empty line"),
        ("id.txt", 6, "1.5", "id.txt", 6, "question id '1.5' reappears"),
        ("boundary.txt", 2, "2", "boundary.txt", 2, "2 disagrees with id.txt: expected 3"),
        ("numrels.txt", 2, "1", "numrels.txt", 2, "1 disagrees with sim.txt: expected 2"),
        ("numrels.txt", 2, None, "numrels.txt", 2, "missing line: expected 2 lines"),
    ],
)
def test_trecqa_malformed_split_names_file_and_line(
    tmp_path, name, line, value, error_file, error_line, message
):
    split = _write_trecqa_split(tmp_path / "clean-test")
    _trecqa_break(split, name, line, value)
    with pytest.raises(
        ValueError,
        match=rf"clean-test/{re.escape(error_file)}:{error_line}: "
        rf"{re.escape(message)}",
    ):
        readers.read_trecqa_dir(split)


def test_trecqa_missing_file_or_not_a_directory(tmp_path):
    split = _write_trecqa_split(tmp_path / "train")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        readers.read_trecqa_dir(split / "a.toks")
    (split / "sim.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"train/sim\.txt not found"):
        readers.read_trecqa_dir(split)


def test_trecqa_registry_and_trec_eval_scoring(tmp_path):
    spec = datasets.get_dataset("trecqa")
    assert (spec.label_names, spec.metric, spec.tokenizer, spec.ranking, spec.watch_metrics) == (
        ("incorrect", "correct"),
        "map",
        "whitespace",
        True,
        ("mrr",),
    )
    assert datasets.FORMAT_TOKENIZERS["trecqa_dir"] is None
    examples = readers.read_trecqa_dir(_write_trecqa_split(tmp_path / "clean-dev"))
    # Hand-worked trec_eval values. 1.5: ranked incorrect (.9), correct (.2), incorrect (.1)
    # -> AP 1/2, RR 1/2. 32.1: correct (.9), incorrect (.8), correct (.1) -> AP (1 + 2/3)/2,
    # RR 1. Both questions have a correct and an incorrect candidate, so none is dropped.
    scores = [0.2, 0.9, 0.1, 0.9, 0.8, 0.1]
    result = metrics_lib.ranking_metrics(
        [e.qid for e in examples], [e.docid for e in examples], [e.label for e in examples], scores
    )
    assert result["num_questions"] == 2
    assert result["map"] == pytest.approx((1 / 2 + 5 / 6) / 2)
    assert result["mrr"] == pytest.approx((1 / 2 + 1) / 2)


@pytest.mark.parametrize("as_zip", [False, True])
def test_prepare_trecqa(tmp_path, as_zip):
    source = tmp_path / "TrecQA"
    for name in ("train", "clean-dev", "clean-test"):  # no raw sets: they are optional
        _write_trecqa_split(source / name)
    if as_zip:
        source = _zip_dir(source, tmp_path / "TrecQA.zip")
    out = tmp_path / "out"
    counts = prepare("trecqa", source, out)
    assert counts == {
        s: {"pairs": 6, "empty_text_pairs": 0, "questions": 2} for s in ("train", "dev", "test")
    }
    assert (out / "dev.txt").read_text().splitlines() == [
        f"{r[1]}\t{r[2]}\t{r[3]}" for r in TRECQA_ROWS
    ]
    assert (out / "dev.ids").read_text() == "1.5\t0\n1.5\t1\n1.5\t2\n32.1\t0\n32.1\t1\n32.1\t2\n"
    expected = readers.read_trecqa_dir(_write_trecqa_split(tmp_path / "expected"))
    for split in datasets.SPLITS:
        assert datasets.load_split("trecqa", out, split) == expected
    assert not (out / "raw_dev.txt").exists()
    with pytest.raises(
        FileNotFoundError,
        match=r"no directory holding TrecQA split directories "
        r"train/, clean-dev/, clean-test/",
    ):
        shutil.rmtree(tmp_path / "TrecQA" / "clean-test")
        prepare("trecqa", tmp_path / "TrecQA", tmp_path / "out2")


# pairs (as distributed: the castorini TrecQA files' line counts) and questions (the clean
# sets of Rao et al., 2016: 65 dev and 68 test questions; train/raw derived from numrels.txt /
# boundary.txt in the test) per castorini split -> prepared split name.
TRECQA_SHARED = {
    "train": ("train", 4718, None),
    "clean-dev": ("dev", 1117, 65),
    "clean-test": ("test", 1442, 68),
    "raw-dev": ("raw_dev", 1148, None),
    "raw-test": ("raw_test", 1517, None),
}


def test_trecqa_shared_split_sizes_and_prepared_reload(shared_data, tmp_path):
    root = shared_data / "trecqa"
    counts = prepare("trecqa", root, tmp_path / "out")
    read = {}
    for name, (split, pairs, questions) in TRECQA_SHARED.items():
        examples = read[name] = readers.read_trecqa_dir(root / name)
        # question counts independent of the reader: numrels.txt has one line per question,
        # boundary.txt one per question plus the final pair count
        numrels = (root / name / "numrels.txt").read_text().split()
        boundary = (root / name / "boundary.txt").read_text().split()
        assert len(boundary) == len(numrels) + 1 and int(boundary[-1]) == pairs
        if questions is not None:
            assert len(numrels) == questions
        assert len(examples) == pairs
        assert len({e.qid for e in examples}) == len(numrels)
        assert counts[split] == {"pairs": pairs, "empty_text_pairs": 0, "questions": len(numrels)}
        # texts are kept as stored; the prepared split reloads to the same pairs and ids
        assert datasets.load_split("trecqa", tmp_path / "out", split) == examples
        assert [(e.text1, e.text2) for e in examples] == list(
            zip(
                (root / name / "a.toks").read_text(encoding="utf-8").splitlines(),
                (root / name / "b.toks").read_text(encoding="utf-8").splitlines(),
            )
        )
    for clean in ("clean-dev", "clean-test"):
        # every clean question has a correct and an incorrect candidate: ranking_metrics'
        # filter drops none, so its MAP/MRR are trec_eval's over all questions
        by_question = {}
        for e in read[clean]:
            by_question.setdefault(e.qid, []).append(e.label)
        assert all(0 < sum(v) < len(v) for v in by_question.values())
        # and the raw set, so filtered, is exactly the clean set
        raw = {}
        for e in read[clean.replace("clean", "raw")]:
            raw.setdefault(e.qid, []).append(e)
        assert [
            e
            for group in raw.values()
            if 0 < sum(e.label for e in group) < len(group)
            for e in group
        ] == read[clean]


def test_learning_check_splits_dev_into_train_and_test_into_halves(tmp_path):
    from re2_tf.data.prepare import learning_check

    prepared = tmp_path / "prepared"
    prepared.mkdir()
    (prepared / "dev.txt").write_text("a\tb\t0\nc\td\t1\n")
    (prepared / "test.txt").write_text("e\tf\t0\ng\th\t1\ni\tj\t2\n")  # 3 lines: 1 + 2
    counts = learning_check(prepared, tmp_path / "check")
    assert counts == {"train": {"pairs": 2}, "dev": {"pairs": 1}, "test": {"pairs": 2}}
    assert (tmp_path / "check" / "train.txt").read_text() == "a\tb\t0\nc\td\t1\n"
    assert (tmp_path / "check" / "dev.txt").read_text() == "e\tf\t0\n"
    assert (tmp_path / "check" / "test.txt").read_text() == "g\th\t1\ni\tj\t2\n"
    (prepared / "test.txt").write_text("e\tf\t0\n")
    with pytest.raises(ValueError, match="test.txt has fewer than 2 lines"):
        learning_check(prepared, tmp_path / "again")
    (prepared / "dev.txt").unlink()
    with pytest.raises(FileNotFoundError, match="learning check: no .*dev.txt"):
        learning_check(prepared, tmp_path / "again")


def test_snli_learning_check_has_the_documented_sizes(shared_data, tmp_path):
    # 9,842 / 4,912 / 4,912 pairs (docstring of learning_check; the README's comparison)
    from re2_tf.data.prepare import learning_check

    counts = learning_check(shared_data / "snli" / "re2_processed", tmp_path)
    assert [counts[s]["pairs"] for s in ("train", "dev", "test")] == [9842, 4912, 4912]


# ----------------------------------------------------------------------------- fingerprint
def test_fingerprint_is_sha256sum_of_the_split_files_in_order(tmp_path):
    """`fingerprint` = sha256 of what `sha256sum` prints for the split files that exist, in
    the order train, dev, test and .txt, .ids, .ref: computed here by hand with hashlib on a
    tiny directory, with a file that is not a split's (README.md, raw_dev.txt) left out."""
    import hashlib

    files = {
        "train.txt": b"a b\tc d\t1\n",
        "train.ids": b"q1\t0\n",
        "dev.txt": b"e\tf\t0\n",
        "dev.ref": b"q2 0 0 0\n",
        "test.txt": b"g\th\t1\n",
        "README.md": b"not data\n",
        "raw_dev.txt": b"x\ty\t0\n",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    order = ["train.txt", "train.ids", "dev.txt", "dev.ref", "test.txt"]
    listing = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in order)
    expected = hashlib.sha256(listing.encode()).hexdigest()
    assert datasets.fingerprint(tmp_path) == expected
    # where the directory is does not matter; a changed byte does
    moved = shutil.copytree(tmp_path, tmp_path.parent / "elsewhere")
    assert datasets.fingerprint(moved) == expected
    (moved / "dev.ref").write_bytes(b"q2 0 0 1\n")
    assert datasets.fingerprint(moved) != expected
    # named splits: only theirs, in the order given
    raw = f"{hashlib.sha256(files['raw_dev.txt']).hexdigest()}  raw_dev.txt\n"
    first = f"{hashlib.sha256(files['train.txt']).hexdigest()}  train.txt\n"
    first += f"{hashlib.sha256(files['train.ids']).hexdigest()}  train.ids\n"
    assert datasets.fingerprint(tmp_path, ("raw_dev", "train")) == (
        hashlib.sha256((raw + first).encode()).hexdigest()
    )


def test_fingerprint_of_a_directory_without_split_files_is_an_error(tmp_path):
    (tmp_path / "README.md").write_text("no splits\n")
    with pytest.raises(FileNotFoundError, match="none of train.txt, dev.txt, test.txt"):
        datasets.fingerprint(tmp_path)
