"""The five-model comparison (re2_lab/compare.py, ``python -m re2_lab.cli.compare``): each model's
run keeps its recipe and takes the common budget, and the table is its records, checked against
hand-made records with hand-computed figures."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from re2_lab import compare

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"


def test_each_model_starts_from_its_flagfile_or_its_preset(tmp_path, monkeypatch):
    snli = {c.settings: c.base for c in compare.cells("snli_check")}
    assert snli[(("model", "drcn"),)] == (
        f"--flagfile={REPO / 'configs/drcn/snli_learning_check.flags'}",
    )
    for task, spec in compare.TASKS.items():  # every model has a flagfile for every task
        for cell in compare.cells(task):
            model = dict(cell.settings)["model"]
            assert cell.base == (f"--flagfile={REPO / 'configs' / model / spec.flagfile}",)
    # a model without one starts from its preset for the task's dataset
    (tmp_path / "configs" / "re2").mkdir(parents=True)
    (tmp_path / "configs" / "re2" / "wikiqa.flags").write_text("--model=re2\n")
    monkeypatch.setattr(compare, "REPO", tmp_path)
    wikiqa = {c.settings: c.base for c in compare.cells("wikiqa")}
    assert wikiqa[(("model", "drcn"),)] == ("--model=drcn", "--dataset=wikiqa")
    assert wikiqa[(("model", "re2"),)] == (f"--flagfile={tmp_path / 'configs/re2/wikiqa.flags'}",)
    assert [c.name for c in compare.cells("trecqa")] == [
        f"model-{m}" for m in compare.model_names()
    ]
    with pytest.raises(ValueError, match="unknown task 'snli'"):
        compare.cells("snli")


@pytest.mark.parametrize("task", sorted(compare.TASKS))
def test_every_run_takes_the_common_budget_and_keeps_its_recipe(task):
    from re2_tf.cli.train import config_from_args

    optimizers = {}
    for cell in compare.cells(task):
        args = [*cell.base, *compare.common_args("/data"), *cell.args(), "--run_dir=unused"]
        config = config_from_args(args)
        model = dict(cell.settings)["model"]
        assert (config.model, config.data_dir, config.epochs) == (model, "/data", 5)
        assert config.eval_per_samples == 2560 and config.embeddings in ("", None)
        assert config.eval_epoch  # every model evaluates at the pass ends
        assert config.dataset == compare.TASKS[task].dataset
        optimizers[model] = config.optimizer
    # the recipes stay the papers': DRCN's RMSProp, BERT's AdamW, RE2's Adam
    assert optimizers["drcn"] == "rmsprop" and optimizers["re2"] == "adam"
    assert optimizers["bert_matchlstm"] == "adamw"


@pytest.mark.parametrize("task", ["wikiqa", "trecqa", "snli_check"])
def test_a_model_on_ranking_triples_gets_the_pairs_budget(task, tmp_path):
    """7 training pairs (one a line, a blank line not counted): a model whose task loss trains
    on triples (Match-SRNN's pairwise hinge on the ranking tasks) gets --max_samples = 5 x 7
    and the pass cap after the common flags; the others, and every model on SNLI, get none."""
    from re2_lab.sweep import run_args
    from re2_tf.cli.train import config_from_args

    (tmp_path / "train.txt").write_text("q\ta\t1\n" * 7 + "\n")
    assert compare.training_pairs(tmp_path) == 7
    for cell in compare.cells(task, data_dir=tmp_path):
        extra = list(cell.after)
        model = dict(cell.settings)["model"]
        if model == "match_srnn" and task != "snli_check":
            assert extra == ["--max_samples=35", f"--epochs={compare.TRIPLE_EPOCHS_CAP}"]
        else:
            assert extra == [], model
        args = run_args(cell, compare.common_args(str(tmp_path)))
        config = config_from_args([*args, "--run_dir=unused"])
        assert config.max_samples == (35 if extra else 0)
        assert config.epochs == (compare.TRIPLE_EPOCHS_CAP if extra else 5)


def _write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def _hand_made_records(records):
    for seed, acc in ((1, 0.5), (2, 0.6), (3, 0.7)):
        result = {"seed": seed, "best_step": 10, "splits": {"test": {"acc": acc}}}
        _write(
            records / "snli_check/model-re2" / f"seed{seed}" / "results.json", json.dumps(result)
        )
    result = {"seed": 1, "best_step": 20, "splits": {"test": {"acc": 0.25}}}
    _write(records / "snli_check/model-drcn/seed1/results.json", json.dumps(result))
    serving = {
        "model": "re2",
        "params": 1234567,
        "median_ms": 12.34,
        "throughput_pairs_per_s": 456.7,
        "peak_rss_mib": 789.4,
        "cpu": "CPU A",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-01-02",
    }
    _write(records / "serving.jsonl", json.dumps(serving) + "\n")
    training = {"model": "re2", "mode": "one_process", "mixed_precision": "none", "cpu": "CPU B"}
    training.update(cpu_count=4, date="2026-01-03 10:00 UTC")
    _write(
        records / "training/throughput.jsonl", json.dumps(dict(training, pairs_per_s=53.21)) + "\n"
    )


def test_table_is_the_records_with_hand_computed_mean_and_std(tmp_path):
    _hand_made_records(tmp_path)
    table, summary = compare.report(tmp_path, ("re2", "drcn"))
    header, _, re2, drcn, _, machine = table.splitlines()
    assert header.startswith(
        "| model | SNLI learning check acc (seeds) | Quora learning check acc (seeds) | "
        "WikiQA MAP / MRR (seeds) | TrecQA clean MAP / MRR (seeds) | params (w/o emb.) |"
    )
    # mean 0.6; sample std sqrt((0.01 + 0 + 0.01) / 2) = 0.1; the tasks without records: —
    assert re2 == (
        "| `re2` | 0.6000 ± 0.1000 (3) | — | — | — | 1,234,567 | 12.3 | 457 | 789 | 53.2 |"
    )
    assert drcn == "| `drcn` | 0.2500 (1) | — | — | — | — | — | — | — | — |"
    assert list(summary["tasks"]) == ["snli_check", "quora_check", "wikiqa", "trecqa"]
    # the CPU of the speed columns, from both kinds of record, each with its own date
    machine, _, memory = machine.partition(" Peak serving MiB")
    assert machine == (
        "Measured: latency and serving on 2 cores of CPU A (avx2), 2026-01-02, training speed "
        "on 4 cores of CPU B (vector units unknown), 2026-01-03."
    )
    assert memory.startswith(" of `re2`: recorded before the per-process measurement, ")


def test_a_command_for_one_model_keeps_every_recorded_models_row(tmp_path):
    # `python -m re2_lab.cli.compare --models=drcn` (the table only: no --task) must not drop
    # re2's row from comparison.md: the table shows every model with a record, and the ones
    # asked for.
    _hand_made_records(tmp_path)
    assert compare.shown_models(tmp_path, ["drcn"]) == ["re2", "drcn"]
    assert compare.shown_models(tmp_path, ["fitn"]) == ["re2", "drcn", "fitn"]
    assert compare.shown_models(tmp_path / "empty", ["fitn"]) == ["fitn"]
    proc = subprocess.run(
        [sys.executable, "-m", "re2_lab.cli.compare", f"--records={tmp_path}", "--models=drcn"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split(" | ")[0] for line in (tmp_path / "comparison.md").read_text().splitlines()]
    assert rows[2:4] == ["| `re2`", "| `drcn`"]


def test_plot_is_accuracy_against_latency(tmp_path):
    pytest.importorskip("matplotlib")
    _hand_made_records(tmp_path)
    _, summary = compare.report(tmp_path, ("re2", "drcn"))
    compare.plot(summary, "snli_check", "test/acc", tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(KeyError, match="no model has both wikiqa"):
        compare.plot(summary, "wikiqa", "test/map", tmp_path / "d.png")


@pytest.mark.slow
def test_a_tiny_comparison_trains_each_model_once_and_resumes(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    train = (SAMPLE / "train.txt").read_text().splitlines()[:40]
    dev = (SAMPLE / "dev.txt").read_text().splitlines()
    (data / "train.txt").write_text("\n".join(train) + "\n")
    (data / "dev.txt").write_text("\n".join(dev[:20]) + "\n")
    (data / "test.txt").write_text("\n".join(dev[20:40]) + "\n")
    records = tmp_path / "records"
    command = [
        sys.executable,
        "-m",
        "re2_lab.cli.compare",
        "--task=snli_check",
        f"--data_dir={data}",
        "--models=re2,match_srnn",
        "--seeds=1",
        "--epochs=1",
        "--threads=1",
        f"--out={tmp_path / 'out'}",
        f"--records={records}",
    ]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    logs = {
        m: (records / f"snli_check/model-{m}/seed1/train.log").read_text()
        for m in ("re2", "match_srnn")
    }
    for model in logs:
        flags = (records / f"snli_check/model-{model}/seed1/flags.txt").read_text().splitlines()
        assert "--epochs=1" in flags and f"--model={model}" in flags and "--embeddings=" in flags
        assert "--threads=1" in flags
    rows = (records / "comparison.md").read_text().splitlines()
    for model in logs:
        # the results table's row (the budget table after it has one per model too)
        row, _budget = [r for r in rows if r.startswith(f"| `{model}` |")]
        acc = json.loads((records / f"snli_check/model-{model}/seed1/results.json").read_text())
        assert row.split(" | ")[1] == f"{acc['splits']['test']['acc']:.4f} (1)"
    again = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    for model, log in logs.items():  # recorded runs are not retrained
        assert (records / f"snli_check/model-{model}/seed1/train.log").read_text() == log


@pytest.mark.slow
def test_measure_times_the_compared_network_and_resumes(tmp_path, shared_data):
    """`measure` serves Match-SRNN at its SNLI learning-check settings (the compared network:
    29,323 parameters outside the embedding, counted by hand in tests/test_match_srnn.py),
    times it and its training, names the CPU, and measures nothing the second time."""
    from test_throughput import snli_cut

    # 600 pairs: the 2 + 2 updates of 128 stay within the first pass, every batch full
    data = snli_cut(shared_data, tmp_path / "snli", 600)
    records = tmp_path / "records"
    serving, training = compare.measure(
        ["match_srnn"], records, data, batches=3, updates=2, log=lambda line: None
    )
    ((row,),) = [serving]
    assert row["model"] == "match_srnn" and row["params"] == 29_323
    assert row["flagfile"] == "configs/match_srnn/snli_learning_check.flags"
    assert row["median_ms"] > 0 and row["throughput_pairs_per_s"] > 0
    assert row["peak_hwm_mib"] >= row["batches_hwm_mib"] >= row["loaded_hwm_mib"] > 0
    # one definition: the Table 5 inputs re2-bench times for this network
    from re2_tf import benchmarking
    from re2_tf.train_flags import config_from_flagfile

    config = config_from_flagfile(compare.REPO / row["flagfile"])
    hparams = dict(config.spec.defaults(), **dict(config.hparams))
    featurizers = benchmarking.synthetic_featurizers(config.spec, hparams, 30000)
    assert row["inputs_sha256"] == benchmarking.table5_inputs(featurizers, 8, 20).digest()
    assert row["cpu"] and row["cpu_count"] and row["date"] and "times_s" not in row
    ((speed,),) = [training]
    assert speed["model"] == "match_srnn" and speed["updates"] == 2 and speed["pairs_per_s"] > 0
    assert speed["peak_mib"] > 100  # the training process's own peak: TensorFlow loaded
    assert compare.measure(["match_srnn"], records, data, log=lambda line: None) == (
        serving,
        training,
    )
    table, _ = compare.report(records, ("match_srnn",))
    assert f"| {row['median_ms']:.1f} |" in table.splitlines()[2]


def test_memory_columns_say_whose_memory_they_are(tmp_path):
    # an old serving record (getrusage's peak_rss_mib) is shown with a note that it is not the
    # serving process's own; a new one (VmHWM: peak_hwm_mib) without; the training process's own
    # peak beside its pairs/s where recorded
    _hand_made_records(tmp_path)
    table, _ = compare.report(tmp_path, ("re2", "drcn"))
    assert "| 789 | 53.2 |" in table.splitlines()[2]
    assert "Peak serving MiB of `re2`: recorded before the per-process measurement" in table
    new = {"model": "re2", "params": 1, "median_ms": 1.0, "peak_hwm_mib": 321.6}
    _write(tmp_path / "serving.jsonl", json.dumps(new) + "\n")
    training = {"model": "re2", "mode": "one_process", "mixed_precision": "none"}
    training.update(pairs_per_s=53.21, peak_mib=1234.4)
    _write(tmp_path / "training/throughput.jsonl", json.dumps(training) + "\n")
    table, _ = compare.report(tmp_path, ("re2", "drcn"))
    header, _, re2 = table.splitlines()[:3]
    assert header.endswith("| peak serving MiB | training pairs/s (peak MiB) |")
    assert re2.endswith("| 322 | 53.2 (1,234) |") and "recorded before" not in table
