"""A ``.keras`` file of each of the five models says what built it: a fresh Python process that
imports only ``keras``, ``numpy`` and ``re2_tf.models`` (which registers every custom object)
loads it with ``keras.saving.load_model(path)``
-- no ``custom_objects``, the file alone (outside any run directory) -- and gets the same
network: the same outputs on a fixed batch (every weight random, biases, gains and
temperatures included) and the same hyper-parameters (``get_config``)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
from weights import randomize_weights

from re2_tf.models import build_drcn, build_fitn, build_match_srnn, build_re2, get_spec

WORDS, CHARS, CLASSES, BERT_VOCAB = 30, 12, 3, 40
CLS, SEP = 2, 3


def word_ids(rng, lengths, width):
    ids = np.zeros((len(lengths), width), "int32")
    for row, n in enumerate(lengths):
        ids[row, :n] = rng.integers(1, WORDS, n)
    return ids


def text_batch(rng, chars=False, exact_match=False):
    """Four pairs, padding in both texts (one text fills its width); with ``chars``,
    ``[batch, words, 4]`` character ids zero at padding words and after each word's length;
    with ``exact_match``, 0/1 flags on the real words."""
    batch = {"text1": word_ids(rng, [5, 2, 4, 1], 5), "text2": word_ids(rng, [3, 1, 4, 2], 4)}
    for side in ("text1", "text2"):
        ids = batch[side]
        if chars:
            lengths = rng.integers(1, 5, ids.shape) * (ids > 0)
            batch[f"{side}_chars"] = np.where(
                np.arange(4) < lengths[..., None], rng.integers(1, CHARS, (*ids.shape, 4)), 0
            ).astype("int32")
        if exact_match:
            batch[f"{side}_exact_match"] = ((rng.random(ids.shape) < 0.5) * (ids > 0)).astype(
                "float32"
            )
    return batch


def bert_batch(rng):
    """Four packed pairs ``[CLS] a [SEP] b [SEP]`` with segment ids and padding."""
    rows = [(3, 2), (1, 4), (0, 2), (2, 0)]  # (|a|, |b|); an empty a, an empty b
    width = max(a + b + 3 for a, b in rows) + 1
    batch = {
        k: np.zeros((len(rows), width), "int32")
        for k in ("token_ids", "segment_ids", "padding_mask")
    }
    for r, (a, b) in enumerate(rows):
        tokens = [CLS, *rng.integers(4, BERT_VOCAB, a), SEP, *rng.integers(4, BERT_VOCAB, b), SEP]
        batch["token_ids"][r, : len(tokens)] = tokens
        batch["segment_ids"][r, a + 2 : len(tokens)] = 1
        batch["padding_mask"][r, : len(tokens)] = 1
    return batch


def tiny_bert_matchlstm(**options):
    pytest.importorskip("keras_hub")
    from re2_tf.layers.bert_backbone import BertBackbone
    from re2_tf.models import build_bert_matchlstm

    backbone = BertBackbone(
        vocabulary_size=BERT_VOCAB,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
        dropout=0.1,
        hidden_activation="gelu",
    )
    return build_bert_matchlstm(
        CLASSES,
        backbone=backbone,
        match_units=5,
        cnn_filters=3,
        cnn_windows="1,2",
        dropout=0.2,
        **options,
    )


#: name -> (build the tiny model with non-default hyper-parameters, its batch).
MODELS = {
    "re2": (
        lambda: build_re2(
            WORDS,
            CLASSES,
            embedding_dim=4,
            hidden_size=4,
            blocks=2,
            enc_layers=2,
            alignment="identity",
            fusion="simple",
            connection="residual",
            prediction="symmetric",
        ),
        lambda rng: text_batch(rng),
    ),
    "drcn": (
        lambda: build_drcn(
            WORDS,
            CHARS,
            CLASSES,
            **get_spec("drcn").tiny,
            num_layers=3,
            autoencoder_layers="2,3",
        ),
        lambda rng: text_batch(rng, chars=True, exact_match=True),
    ),
    "fitn": (
        lambda: build_fitn(WORDS, CHARS, CLASSES, **get_spec("fitn").tiny, rounds=2),
        lambda rng: text_batch(rng, chars=True),
    ),
    "match_srnn": (
        lambda: build_match_srnn(WORDS, CLASSES, **get_spec("match_srnn").tiny, bidirectional=True),
        lambda rng: text_batch(rng),
    ),
    "bert_matchlstm": (tiny_bert_matchlstm, bert_batch),
    "bert_matchlstm-cnn-pooled": (
        lambda: tiny_bert_matchlstm(head="cnn", cls_output="pooled"),
        bert_batch,
    ),
}

LOADER = textwrap.dedent("""
    import json, sys, traceback
    import keras, numpy, re2_tf.models

    for job in json.loads(sys.argv[1]):
        try:
            model = keras.saving.load_model(job["model"])
            batch = dict(numpy.load(job["batch"]))
            numpy.save(job["outputs"], numpy.asarray(model(batch, training=False)))
            with open(job["config"], "w") as f:
                json.dump(model.get_config(), f, sort_keys=True, default=repr)
        except Exception:
            with open(job["error"], "w") as f:
                f.write(traceback.format_exc())
""")


def config_json(model):
    return json.loads(json.dumps(model.get_config(), sort_keys=True, default=repr))


@pytest.fixture(scope="module")
def loaded_elsewhere(tmp_path_factory):
    """``{name: (in-process outputs, in-process config, fresh-process outputs, config)}``:
    each model built, every weight randomised, saved to ``<tmp>/<name>/m.keras``, and loaded
    by one fresh process (cwd elsewhere) that runs it on the same batch."""
    root = tmp_path_factory.mktemp("keras_files")
    expected, jobs = {}, []
    for seed, (name, (build, make_batch)) in enumerate(MODELS.items()):
        if name.startswith("bert"):
            try:
                import keras_hub  # noqa: F401
            except ImportError:
                continue
        keras.utils.set_random_seed(seed)
        model = build()
        randomize_weights(model, seed)
        batch = make_batch(np.random.default_rng(seed))
        directory = root / name
        directory.mkdir()
        model.save(directory / "m.keras")
        np.savez(directory / "batch.npz", **batch)
        expected[name] = (np.asarray(model(batch, training=False)), config_json(model))
        jobs.append(
            {
                "name": name,
                "model": str(directory / "m.keras"),
                "batch": str(directory / "batch.npz"),
                "outputs": str(directory / "outputs.npy"),
                "config": str(directory / "config.json"),
                "error": str(directory / "error.txt"),
            }
        )
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = subprocess.run(
        [sys.executable, "-c", LOADER, json.dumps(jobs)],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = {}
    for job in jobs:
        if Path(job["error"]).exists():  # reported by the model's own test
            results[job["name"]] = Path(job["error"]).read_text()
        else:
            results[job["name"]] = (
                *expected[job["name"]],
                np.load(job["outputs"]),
                json.loads(Path(job["config"]).read_text()),
            )
    return results


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_fresh_process_rebuilds_the_model_from_its_keras_file(loaded_elsewhere, name):
    if name not in loaded_elsewhere:
        pytest.skip("keras_hub is not installed")
    result = loaded_elsewhere[name]
    assert not isinstance(result, str), f"{name}: load_model failed in a fresh process:\n{result}"
    outputs, config, loaded_outputs, loaded_config = result
    assert outputs.shape == (4, CLASSES) and np.std(outputs) > 1e-3, name  # not degenerate
    np.testing.assert_allclose(loaded_outputs, outputs, rtol=1e-6, atol=1e-6, err_msg=name)
    assert loaded_config == config, name


def test_import_re2_tf_works_without_keras_hub_and_still_loads_the_others(tmp_path):
    # keras-hub is optional: with it blocked, ``import re2_tf.models`` succeeds, registers no BERT
    # backbone, and a saved RE2 model still loads.
    keras.utils.set_random_seed(0)
    model = build_re2(WORDS, CLASSES, embedding_dim=4, hidden_size=4, blocks=1)
    model.save(tmp_path / "re2.keras")
    script = textwrap.dedent(f"""
        import sys
        sys.modules["keras_hub"] = None          # as if not installed
        import keras, re2_tf.models
        assert keras.saving.get_registered_object("re2_tf>BertBackbone") is None
        keras.saving.load_model({str(tmp_path / "re2.keras")!r})
        print("ok")
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
