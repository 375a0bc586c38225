"""The sweep runner (re2_lab/sweep.py, ``python -m re2_lab.cli.sweep``): the grid syntax by hand-
worked cells, the summary's mean ± std against hand arithmetic, and a tiny grid on the bundled
sample that is killed and resumed without retraining a finished run (slow tier)."""

import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from re2_lab.sweep import Cell, parse_grid, plot_summary, summarize_sweep

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"


def test_grid_is_the_union_of_products_in_order():
    cells = parse_grid("blocks=1,2;enc_layers=2 | blocks=2;enc_layers=1,2")
    assert [c.settings for c in cells] == [
        (("blocks", "1"), ("enc_layers", "2")),
        (("blocks", "2"), ("enc_layers", "2")),
        (("blocks", "2"), ("enc_layers", "1")),
    ]  # blocks=2, enc_layers=2 is in both products: once
    assert cells[0].name == "blocks-1_enc_layers-2"
    assert cells[0].args() == ["--blocks=1", "--enc_layers=2"]
    assert cells[2].label == "blocks=2, enc_layers=1"
    # RE2's Table 7: 5 + 5 cells sharing one
    assert len(parse_grid("blocks=1,2,3,4,5;enc_layers=2 | blocks=2;enc_layers=1,2,3,4,5")) == 9
    assert parse_grid("") == [Cell(())]
    assert parse_grid("enc_in=true,false")[1].name == "enc_in-false"
    assert parse_grid("embeddings=/a b/c.txt")[0].name == "embeddings--a-b-c.txt"


@pytest.mark.parametrize(
    "grid, message",
    [
        ("blocks", "is not name=v1,v2"),
        ("blocks=", "is not name=v1,v2"),
        ("blocks=1,,2", "is not name=v1,v2"),
        ("=1", "is not name=v1,v2"),
        ("blocks=1;blocks=2", "blocks is given twice"),
    ],
)
def test_malformed_grid_names_the_part(grid, message):
    with pytest.raises(ValueError, match=message):
        parse_grid(grid)


def _write(directory, **files):
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_text(json.dumps(content))


def _result(seed, dev, test, step):
    return {"seed": seed, "best_step": step, "splits": {"dev": {"acc": dev}, "test": {"acc": test}}}


def test_summary_mean_and_sample_std_by_hand(tmp_path):
    a, b = parse_grid("blocks=1,2")
    out, records = tmp_path / "out", tmp_path / "records"
    runs = [(0.5, 0.7, 1, 30), (0.6, 0.8, 2, 90), (0.7, 0.9, 3, None)]
    for seed, (dev, test, minutes, cpu) in enumerate(runs, 1):
        times = {"seconds": 60 * minutes, "spans": [60 * minutes]}
        if cpu is not None:  # seed 3: recorded before CPU time was kept
            times.update(cpu_seconds=cpu, cpu_spans=[cpu])
        _write(
            out / a.name / f"seed{seed}",
            **{"results.json": _result(seed, dev, test, 10 * seed)},
            **{"wall_time.json": times},
        )
    # b: seed 1 only in the records, and a stale run directory the record takes precedence over
    _write(records / b.name / "seed1", **{"results.json": _result(1, 0.25, 0.5, 7)})
    _write(out / b.name / "seed1", **{"results.json": _result(1, 0.0, 0.0, 1)})
    table, summary = summarize_sweep([a, b], [1, 2, 3], out, records=records)
    # by hand: mean 0.6, deviations -0.1, 0, 0.1 -> sum of squares 0.02 / (3 - 1) -> std 0.1
    first, second = summary["cells"]
    assert first["metrics"]["dev/acc"]["mean"] == pytest.approx(0.6)
    assert first["metrics"]["dev/acc"]["std"] == pytest.approx(0.1)
    assert first["metrics"]["test/acc"]["mean"] == pytest.approx(0.8)
    assert first["best_steps"] == [10, 20, 30] and first["seeds"] == [1, 2, 3]
    assert second["metrics"]["test/acc"] == {"mean": 0.5, "std": None, "values": [0.5]}
    rows = table.splitlines()
    assert first["cpu_seconds"] == [30, 90, None]
    assert rows[0] == (
        "| cell | runs | dev/acc | test/acc | best update | wall time (min) | CPU time (min) |"
    )
    # wall: (1 + 2 + 3) / 3 = 2.0 min; CPU: the two recorded, (30 + 90) / 2 s = 1.0 min
    assert rows[2] == (
        "| blocks=1 | 3/3 | 0.6000 ± 0.1000 | 0.8000 ± 0.1000 | 10, 20, 30 | 2.0 | 1.0 |"
    )
    assert rows[3] == "| blocks=2 | 1/3 | 0.2500 ± — | 0.5000 ± — | 7 |  |  |"


def test_summary_times_use_the_runs_own_count_and_mark_lower_bounds(tmp_path):
    (cell,) = parse_grid("blocks=3")
    records = tmp_path / "records"
    restored = "Restored training state at update 20 from backup\n"
    # seed 1: the run's own count over its attempts (an attempt killed with the sweep
    # included), which the summary takes over the one span the sweep timed
    _write(
        records / cell.name / "seed1",
        **{"results.json": _result(1, 0.5, 0.5, 20)},
        **{"wall_time.json": {"seconds": 60, "spans": [60], "cpu_seconds": 30,
                              "cpu_spans": [30], "run_seconds": 300, "run_cpu_seconds": 150}},
    )  # fmt: skip
    (records / cell.name / "seed1" / "train.log").write_text(restored)
    # seed 2: recorded before runs counted their time; its log shows two attempts and the
    # sweep timed one, so 600 s wall / 450 s CPU is a lower bound
    _write(
        records / cell.name / "seed2",
        **{"results.json": _result(2, 0.5, 0.5, 40)},
        **{"wall_time.json": {"seconds": 600, "spans": [600], "cpu_seconds": 450,
                              "cpu_spans": [450]}},
    )  # fmt: skip
    (records / cell.name / "seed2" / "train.log").write_text("start\n" + restored)
    table, summary = summarize_sweep([cell], [1, 2], None, records=records)
    (entry,) = summary["cells"]
    assert entry["wall_seconds"] == [300, 600] and entry["cpu_seconds"] == [150, 450]
    assert entry["times_complete"] == [True, False]
    # (300 + 600) / 2 s = 7.5 min; (150 + 450) / 2 s = 5.0 min, both at least that
    assert table.splitlines()[2].endswith("| 20, 40 | ≥ 7.5 | ≥ 5.0 |")
    # with seed 2's second attempt timed too, its sum is complete
    (records / cell.name / "seed2" / "wall_time.json").write_text(
        json.dumps({"seconds": 660, "spans": [600, 60], "cpu_seconds": 480,
                    "cpu_spans": [450, 30]})
    )  # fmt: skip
    table, _ = summarize_sweep([cell], [1, 2], None, records=records)
    assert table.splitlines()[2].endswith("| 20, 40 | 8.0 | 5.2 |")


def test_plot_is_a_png_per_cell_with_error_bars(tmp_path):
    pytest.importorskip("matplotlib")
    summary = {
        "cells": [
            {"cell": "blocks=1", "metrics": {"test/acc": {"mean": 0.6, "std": 0.1}}},
            {"cell": "blocks=2", "metrics": {"test/acc": {"mean": 0.7, "std": None}}},
        ]
    }
    plot_summary(summary, "test/acc", tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(KeyError, match="no cell has the metric 'dev/f1'"):
        plot_summary(summary, "dev/f1", tmp_path / "q.png")


def _sweep(*args, **kwargs):
    return [sys.executable, "-m", "re2_lab.cli.sweep", *args]


def test_a_bad_grid_name_is_one_line_before_anything_trains(tmp_path):
    proc = subprocess.run(
        _sweep("--model=re2", "--dataset=sample", "--grid=blockz=1", f"--out={tmp_path / 'o'}"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert (
        line.startswith("python -m re2_lab.cli.sweep: error: cell blockz=1:")
        and "blockz" in line[30:]
    )
    assert not (tmp_path / "o").exists()


def _tiny_data(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    train = (SAMPLE / "train.txt").read_text().splitlines()[:48]
    dev = (SAMPLE / "dev.txt").read_text().splitlines()
    (data / "train.txt").write_text("\n".join(train) + "\n")
    (data / "dev.txt").write_text("\n".join(dev[:24]) + "\n")
    (data / "test.txt").write_text("\n".join(dev[24:48]) + "\n")
    return data


@pytest.mark.slow
def test_a_killed_sweep_resumes_without_retraining_a_finished_run(tmp_path):
    data, out, records = _tiny_data(tmp_path), tmp_path / "out", tmp_path / "records"
    command = _sweep(
        "--model=re2",
        "--dataset=sample",
        f"--data_dir={data}",
        "--embedding_dim=8",
        "--blocks=1",
        "--enc_layers=1",
        "--min_df=1",
        "--batch_size=8",
        "--epochs=2",
        "--grid=hidden_size=4,6",
        "--seeds=2",
        "--jobs=2",
        f"--out={out}",
        f"--records={records}",
    )
    first = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 600
    while not list(records.glob("*/seed*/results.json")):
        assert first.poll() is None and time.monotonic() < deadline, "no run finished"
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    finished = {
        p.parent: p.parent.joinpath("train.log").read_text()
        for p in records.glob("*/seed*/results.json")
    }
    assert 1 <= len(finished) < 4
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for record, log in finished.items():  # never retrained: not one line added to its log
        assert (record / "train.log").read_text() == log
    summary = json.loads((records / "summary.json").read_text())
    assert [c["cell"] for c in summary["cells"]] == ["hidden_size=4", "hidden_size=6"]
    for cell in summary["cells"]:
        assert cell["seeds"] == [1, 2]
        name = "hidden_size-" + cell["settings"]["hidden_size"]
        tests = [
            json.loads((records / name / f"seed{s}" / "results.json").read_text())["splits"][
                "test"
            ]["acc"]
            for s in (1, 2)
        ]
        assert math.isclose(cell["metrics"]["test/acc"]["mean"], statistics.mean(tests))
        assert math.isclose(cell["metrics"]["test/acc"]["std"], statistics.stdev(tests))
        for s in (1, 2):
            flags = (records / name / f"seed{s}" / "flags.txt").read_text().splitlines()
            assert f"--hidden_size={cell['settings']['hidden_size']}" in flags
            assert f"--seed={s}" in flags and "--threads=1" in flags
    # every attempt the sweep saw end has its wall and CPU time (an attempt killed with the
    # sweep has neither: a run it finished is kept, its time unknown)
    timed = [json.loads(p.read_text()) for p in records.glob("*/seed*/wall_time.json")]
    assert len(timed) >= 4 - len(finished)
    for times in timed:
        assert len(times["cpu_spans"]) == len(times["spans"]) >= 1
        assert times["cpu_seconds"] > 0 and times["seconds"] > 0
    # and every finished run has its own count, the killed attempts' time included
    for path in records.glob("*/seed*/wall_time.json"):
        times = json.loads(path.read_text())
        assert times["run_seconds"] > 0 and times["run_cpu_seconds"] > 0, path
    assert (records / "summary.png").exists() and (records / "summary.md").exists()


#: Each sweep config and its cells, counted by hand from the paper's table it runs.
SWEEP_CONFIGS = {
    "configs/re2/table7.flags": 9,  # blocks 1-5 at 2 encoder layers, encoder layers 1-5 at 2
    "configs/re2/table6.flags": 8,  # the full model and Table 6's seven changes
    "configs/drcn/ablations.flags": 6,
    "configs/fitn/table2.flags": 4,
    "configs/fitn/table3.flags": 4,
    "configs/fitn/figure4.flags": 5,  # inference rounds 1-5
    "configs/bert_matchlstm/heads.flags": 6,  # Table 1: five heads and "BERT no init"
    "configs/bert_matchlstm/wikiqa_table1.flags": 3,  # -FHS, CNN, BERT no init
}


def test_every_sweep_config_is_listed_here():
    found = {
        str(p.relative_to(REPO))
        for p in REPO.glob("configs/*/*.flags")
        if "\n--grid=" in p.read_text()
    }
    assert found == set(SWEEP_CONFIGS)


@pytest.mark.parametrize("config", sorted(SWEEP_CONFIGS))
def test_sweep_config_cells_are_valid_runs(config):
    from re2_tf.cli.train import config_from_args

    lines = (REPO / config).read_text().splitlines()
    (grid,) = [line.split("=", 1)[1] for line in lines if line.startswith("--grid=")]
    base = [line for line in lines if line.startswith("--flagfile=")]
    cells = parse_grid(grid)
    assert len(cells) == SWEEP_CONFIGS[config]
    for cell in cells:
        trained = config_from_args([*base, "--epochs=5", *cell.args(), "--run_dir=unused"])
        for name, value in cell.settings:
            assert str(trained.hparams[name]).lower() == value.lower(), (cell, name)


def _config_lines(config):
    return [line for line in (REPO / config).read_text().splitlines() if line.startswith("--")]


REUSING_CONFIGS = sorted(c for c in SWEEP_CONFIGS if any(
    line.startswith("--reuse=") for line in _config_lines(c)))  # fmt: skip


@pytest.mark.parametrize("config", REUSING_CONFIGS)
def test_a_sweep_config_that_reuses_records_matches_one_of_them(config, monkeypatch):
    """A ``--reuse`` in a sweep config promises that some cell x seed is a run already
    recorded there (its comment names which). On the records' own data (their fingerprint)
    and one thread each (``--jobs=2`` on 2 cores, as they ran), at least one cell x seed must have
    exactly a record's settings (:func:`run_key`), else the promise is false and the sweep
    silently retrains it."""
    from re2_lab.cli.sweep import OWN
    from re2_lab.sweep import _recorded_runs, run_args, run_key

    monkeypatch.chdir(REPO)
    lines = _config_lines(config)
    values = {line[2:].split("=", 1)[0]: line.split("=", 1)[1] for line in lines}
    train_args = [line for line in lines if line[2:].split("=", 1)[0] not in OWN]
    recorded = _recorded_runs(values["reuse"].split(","))
    assert recorded, config
    fingerprints = {key["data_fingerprint"] for key, _ in recorded}  # the records' data
    keys = [key for key, _ in recorded]  # dicts of settings
    matched = [
        (cell.label, seed)
        for fingerprint in sorted(fingerprints)
        for cell in parse_grid(values["grid"])
        for seed in range(1, int(values["seeds"]) + 1)
        if run_key([*run_args(cell, train_args, 1), f"--seed={seed}"], fingerprint) in keys
    ]
    assert matched, f"{config}: no cell x seed is a run recorded in {values['reuse']}"


def test_a_run_recorded_elsewhere_with_the_same_settings_is_copied_not_trained(tmp_path):
    """--reuse: a cell x seed whose settings and data another record holds is copied (with
    where from), wherever that record's data directory was (another path, the same files:
    the fingerprint its results.json names); one differing in a computed setting, in the
    seed, or in the data (another fingerprint, or none recorded) is trained. The
    "interpreter" given is `false`, so a run that is trained fails at once instead of
    training."""
    import hashlib

    from re2_lab.sweep import run_key, run_sweep
    from re2_tf.data.datasets import BUNDLED

    sample = hashlib.sha256(
        "".join(
            f"{hashlib.sha256((BUNDLED / 'sample' / n).read_bytes()).hexdigest()}  {n}\n"
            for n in ("train.txt", "dev.txt", "test.txt")
        ).encode()
    ).hexdigest()
    base = ["--model=re2", "--dataset=sample", "--epochs=1", "--threads=1"]

    def record(name, seed, fingerprint):
        directory = tmp_path / "other" / name / f"seed{seed}"
        directory.mkdir(parents=True)
        flags = [*base, "--blocks=2", f"--seed={seed}", "--data_dir=/elsewhere/sample"]
        (directory / "flags.txt").write_text(
            "\n".join([*flags, "--run_dir=elsewhere", "--noprogress"]) + "\n"
        )
        result = _result(seed, 0.5, 0.4, 7)
        if fingerprint:
            result["data"] = {"dataset": "sample", "fingerprint": fingerprint}
        (directory / "results.json").write_text(json.dumps(result))
        return directory

    other = record("model-re2", 1, sample)
    record("other-data", 2, "0" * 64)  # blocks=2 seed 2 on other data
    record("unknown-data", 2, None)  # and on data it does not name
    # what a run computes ignores where it writes, where its data is and its progress line
    assert run_key([*base, "--blocks=2", "--seed=1", "--progress=false"], sample) == run_key(
        [f"--flagfile={other / 'flags.txt'}"], sample
    )
    assert run_key([*base, "--blocks=2", "--seed=1"], sample) != run_key(
        [*base, "--blocks=2", "--seed=1"], "0" * 64
    )
    assert run_key([*base, "--blocks=3", "--seed=1"]) != run_key([*base, "--blocks=2", "--seed=1"])
    cells = parse_grid("blocks=2,3")
    statuses = run_sweep(
        base,
        cells,
        [1, 2],
        tmp_path / "out",
        records=tmp_path / "records",
        reuse=[tmp_path / "other"],
        python=shutil.which("false"),
        log=lambda line: None,
    )
    by = {(c.label, s): st.split(":")[0] for c, s, st in statuses}
    assert by == {
        ("blocks=2", 1): "reused",
        ("blocks=2", 2): "failed",  # recorded on other data, or on data not named
        ("blocks=3", 1): "failed",  # another setting
        ("blocks=3", 2): "failed",
    }
    copied = tmp_path / "records" / "blocks-2" / "seed1"
    assert json.loads((copied / "results.json").read_text())["best_step"] == 7
    assert (copied / "reused_from.txt").read_text() == f"{other}\n"
