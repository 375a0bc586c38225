"""The model registry is the one list of models, and every setting is checked before anything is
written (issue 50, items 4 and 5).

A toy sixth model, registered here and nowhere else, appears in ``re2-train``'s ``--model``
help and takes its hyper-parameters as flags, in ``re2-bench``'s model list and in the tests'
model lists (the lab's lists: re2_lab/tests/test_lab_registry.py); it trains two updates
through :func:`re2_tf.fit`. The
hyper-parameter ranges declared with each :class:`~re2_tf.models.spec.HParam` are checked by
:class:`re2_tf.TrainConfig`: ``re2-train --blocks=9`` leaves no run directory, and the
corrected command is then accepted for the same ``--run_dir``.
"""

import json

import keras
import numpy as np
import pytest
from absl import flags
from registered import models, tiny
from test_train_api import _one_line_error, cli, make_data

import re2_tf
from re2_tf import ConfigError, TrainConfig
from re2_tf.models import MODEL_SPECS, model_names, registered
from re2_tf.models.re2 import build_re2
from re2_tf.models.spec import HParam, ModelSpec, check_hparam

REPO_SAMPLE_FLAGS = "configs/re2/sample.flags"


# ---------------------------------------------------------------------- a toy sixth model
def _build_toy(num_classes, vocab_sizes, embeddings=None, width=4, dropout=0.0):
    """Mean of the word vectors of each text, concatenated, then logits."""
    inputs = {
        name: keras.Input(shape=(None,), dtype="int32", name=name) for name in ("text1", "text2")
    }
    embed = keras.layers.Embedding(vocab_sizes["word_ids"], width, mask_zero=True, name="embedding")
    pool = keras.layers.GlobalAveragePooling1D(name="mean")
    pooled = [pool(embed(inputs[name])) for name in ("text1", "text2")]
    features = keras.layers.Dropout(dropout)(keras.layers.Concatenate()(pooled))
    logits = keras.layers.Dense(num_classes, name="logits")(features)
    return keras.Model(inputs=inputs, outputs=logits, name="toy")


TOY = ModelSpec(
    name="toy",
    build=_build_toy,
    hparams={
        "width": HParam(4, "Word vector width.", low=1),
        "dropout": HParam(0.0, "Drop rate on the features.", low=0, high=1, high_open=True),
    },
    features={"word_ids": {}},
    training={"optimizer": "adam", "lr_schedule": "constant", "lr": 1e-2},
    benchmark={"Toy": {"hparams": {}}},
    tiny={"width": 2},
)


@pytest.fixture
def toy():
    five = model_names()
    with registered(TOY) as spec:
        yield spec
    assert model_names() == five and "toy" not in MODEL_SPECS


def test_the_registry_lists_the_five_models_in_their_order():
    assert model_names()[:5] == ("re2", "drcn", "fitn", "match_srnn", "bert_matchlstm")


def test_a_toy_sixth_model_is_in_every_list(toy):
    from re2_tf.cli import benchmark
    from re2_tf.cli.train import config_from_args, define_flags, parse_flags

    assert model_names()[-1] == "toy"
    # re2-train: --model's help names it; its hyper-parameters are flags (range in the help)
    values = flags.FlagValues()
    define_flags(values)
    parse_flags(["re2-train", "--model=toy", "--width=3"], values)
    assert "toy" in values["model"].help and values["width"].value == 3
    assert "Range: >= 1." in values["width"].help
    assert "Range: [0, 1)." in values["dropout"].help
    config = config_from_args(["--model=toy", "--dataset=snli", "--width=3", "--run_dir=unused"])
    assert dict(config.hparams) == {"width": 3, "dropout": 0.0}
    assert config.optimizer == "adam"
    # re2-bench: --model choices
    values = flags.FlagValues()
    benchmark.define_flags(values)
    assert "toy" in values["model"].parser.enum_values
    # the tests' lists
    assert models()[-1] == "toy" and tiny("toy") == {"width": 2}


def test_the_toy_model_trains_on_the_shared_path(toy, tmp_path):
    result = re2_tf.fit(
        TrainConfig(
            model="toy",
            dataset="sample",
            data_dir=str(make_data(tmp_path)),
            run_dir=str(tmp_path / "run"),
            epochs=1,
            batch_size=8,
            eval_per_samples=16,
            min_df=1,
            progress=False,
            embeddings="",
            hparams=tiny("toy"),
        )
    )
    record = json.loads((tmp_path / "run" / "config.json").read_text())
    assert record["model"] == "toy" and record["model_kwargs"] == {"width": 2, "dropout": 0.0}
    model = keras.saving.load_model(result.best_model, compile=False)
    # 16 training pairs / batch 8 = 2 updates; the embedding is 2 wide
    assert model.get_layer("embedding").embeddings.shape[1] == 2


def test_a_spec_rejects_tiny_settings_that_are_no_hyper_parameter_or_out_of_range():
    with pytest.raises(ValueError, match="tiny setting 'depth' is no hyper-parameter"):
        ModelSpec("bad", _build_toy, TOY.hparams, {"word_ids": {}}, tiny={"depth": 2})
    with pytest.raises(ValueError, match=r"width must be an integer >= 1, got 0"):
        ModelSpec("bad", _build_toy, TOY.hparams, {"word_ids": {}}, tiny={"width": 0})


# ---------------------------------------------------------------------- ranges
def test_range_messages():
    blocks = HParam(2, "", low=1, high=5)
    assert blocks.range_error(9) == "must be an integer in [1, 5], got 9"
    assert blocks.range_error(0) == "must be an integer in [1, 5], got 0"
    assert blocks.range_error(2.0) == "must be an integer in [1, 5], got 2.0"
    assert blocks.range_error(True) == "must be an integer in [1, 5], got True"
    assert blocks.range_error(np.int64(5)) == "" and blocks.range_error(1) == ""
    rate = HParam(0.2, "", low=0, high=1, high_open=True)
    assert rate.range_error(1.0) == "must be in [0, 1), got 1.0"
    assert rate.range_error(-0.1) == "must be in [0, 1), got -0.1"
    assert rate.range_error(0) == "" and rate.range_error(0.999) == ""
    assert HParam(1.0, "", low=0).range_error(-1) == "must be >= 0, got -1"
    assert HParam(3, "").range_error(-7) == ""  # no range: anything
    with pytest.raises(ValueError, match=r"default must be an integer in \[1, 5\], got 9"):
        HParam(9, "", low=1, high=5)
    with pytest.raises(ValueError, match="a range needs a numeric default"):
        HParam("relu", "", low=1)
    with pytest.raises(ValueError, match="high_open needs a high bound"):
        HParam(1.0, "", low=0, high_open=True)


def test_the_builders_check_the_declared_ranges():
    with pytest.raises(ValueError, match=r"blocks must be an integer in \[1, 5\], got 9"):
        build_re2(10, 3, blocks=9)
    with pytest.raises(ValueError, match=r"dropout_rate must be in \[0, 1\), got 1.0"):
        build_re2(10, 3, dropout_rate=1.0)
    with pytest.raises(ValueError, match=r"fusion must be one of \('full', 'simple'\)"):
        check_hparam(MODEL_SPECS["re2"].hparams, "fusion", "none")


def _edges(hparam):
    """``(inside, outside)`` values at each declared bound of ``hparam``."""
    step = 1 if isinstance(hparam.default, int) else 0.5
    inside, outside = [], []
    if hparam.low is not None:
        inside.append(type(hparam.default)(hparam.low))
        outside.append(type(hparam.default)(hparam.low - step))
    if hparam.high is not None:
        top = type(hparam.default)(hparam.high)
        (outside if hparam.high_open else inside).append(top)
        outside.append(type(hparam.default)(hparam.high + step))
    return inside, outside


BOUNDED = [
    (model, name)
    for model in models()
    for name, hparam in MODEL_SPECS[model].hparams.items()
    if hparam.low is not None or hparam.high is not None
]


def test_the_five_models_declare_the_ranges_their_builders_checked():
    declared = {(m, n): MODEL_SPECS[m].hparams[n].range_text() for m, n in BOUNDED}
    assert declared[("re2", "blocks")] == "[1, 5]"
    assert declared[("re2", "enc_layers")] == "[1, 5]"
    assert declared[("drcn", "num_layers")] == "[1, 10]"
    assert declared[("fitn", "rounds")] == "[1, 10]"
    for model, rate in [
        ("re2", "dropout_rate"),
        ("drcn", "embedding_dropout"),
        ("drcn", "autoencoder_dropout"),
        ("drcn", "fc_dropout"),
        ("fitn", "dropout"),
        ("match_srnn", "dropout"),
        ("bert_matchlstm", "dropout"),
        ("bert_matchlstm", "bert_dropout"),
    ]:
        assert declared[(model, rate)] == "[0, 1)", (model, rate)
    assert declared[("bert_matchlstm", "max_length")] == ">= 3"  # [CLS] a [SEP] b [SEP]


@pytest.mark.parametrize("model, name", BOUNDED)
def test_train_config_checks_every_declared_range(model, name):
    hparam = MODEL_SPECS[model].hparams[name]
    inside, outside = _edges(hparam)
    for value in inside:
        assert TrainConfig(model=model, hparams={name: value}).hparams[name] == value
    for value in outside:
        with pytest.raises(ConfigError, match=rf"^hparams\.{name}: must be ") as error:
            TrainConfig(model=model, hparams={name: value})
        assert error.value.field == f"hparams.{name}"


def _refused_then_corrected(tmp_path):
    """``re2-train --blocks=9`` in a fresh process, then the corrected settings' config for the
    same ``--run_dir``."""
    from re2_tf.cli.train import config_from_args

    run_dir = tmp_path / "run"
    line = _one_line_error(
        cli(f"--flagfile={REPO_SAMPLE_FLAGS}", "--blocks=9", f"--run_dir={run_dir}")
    )
    assert line == "re2-train: error: --blocks: must be an integer in [1, 5], got 9"
    assert not run_dir.exists() and not any(tmp_path.iterdir())
    config = config_from_args(
        [f"--flagfile={REPO_SAMPLE_FLAGS}", "--blocks=3", f"--run_dir={run_dir}"]
    )
    assert config.hparams["blocks"] == 3 and config.resolved_run_dir == run_dir
    assert not run_dir.exists()
    return config


def test_an_out_of_range_flag_writes_nothing_and_the_corrected_settings_validate(tmp_path):
    _refused_then_corrected(tmp_path)


@pytest.mark.slow  # a training run
def test_the_corrected_command_trains_in_the_same_run_dir(tmp_path):
    config = _refused_then_corrected(tmp_path)
    # cut to two updates of a tiny RE2 on a cut of the sample
    small = config.replace(
        data_dir=str(make_data(tmp_path / "cut")),
        epochs=1,
        batch_size=8,
        eval_per_samples=16,
        min_df=1,
        progress=False,
        hparams=tiny("re2", blocks=3),
    )
    re2_tf.fit(small)
    record = json.loads((config.resolved_run_dir / "config.json").read_text())
    assert record["model_kwargs"]["blocks"] == 3


# ---------------------------------------------------------------------- datasets
def test_every_dataset_is_one_entry_of_each_registry():
    from re2_tf.cli.prepare import define_flags
    from re2_tf.data.datasets import DATASETS
    from re2_tf.data.prepare import PREPARATIONS

    assert set(PREPARATIONS) == set(DATASETS)
    values = flags.FlagValues()
    define_flags(values)
    assert sorted(values["dataset"].parser.enum_values) == sorted(DATASETS)
    for name, entry in PREPARATIONS.items():
        # the common path (raw files of the three splits and their reader) or a path of its own
        assert (entry.prepare is None) == (entry.read is not None), name
        assert entry.prepare is not None or set(entry.files) == {"train", "dev", "test"}, name
