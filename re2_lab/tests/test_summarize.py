"""Mean ± std over seeds (re2_tf.runs.summarize_results, python -m re2_lab.cli.summarize), checked
on hand-worked numbers."""

import json
import subprocess
import sys

import pytest

from re2_lab.results import collect
from re2_tf import runs


def _result(seed, dev, test=None):
    splits = {"dev": dev}
    if test is not None:
        splits["test"] = test
    return {"seed": seed, "best_step": 100 * seed, "splits": splits}


def _write(path, result):
    path.mkdir(parents=True, exist_ok=True)
    (path / runs.RESULTS_FILE).write_text(json.dumps(result))
    return path


def test_mean_and_sample_std_by_hand():
    results = [
        _result(1, {"map": 0.70, "mrr": 0.70, "questions": 126}, {"map": 0.5}),
        _result(2, {"map": 0.80, "mrr": 0.90, "questions": 126}, {"map": 0.6}),
        _result(3, {"map": 0.75, "questions": 126}),  # no mrr, no test split
    ]
    table, summary = runs.summarize_results(results)
    # map: mean 0.75; deviations -0.05, 0.05, 0 -> sample variance 0.005/2 -> std 0.05.
    assert summary["dev/map"]["mean"] == pytest.approx(0.75, abs=1e-12)
    assert summary["dev/map"]["std"] == pytest.approx(0.05, abs=1e-12)
    assert summary["dev/map"]["seeds"] == [1, 2, 3]
    # mrr over the two runs that have it: mean 0.8, std sqrt(0.02 / 1).
    assert summary["dev/mrr"]["mean"] == pytest.approx(0.8, abs=1e-12)
    assert summary["dev/mrr"]["std"] == pytest.approx(0.1414213562, abs=1e-9)
    assert summary["dev/mrr"]["values"] == [0.70, 0.90]
    assert summary["test/map"]["mean"] == pytest.approx(0.55, abs=1e-12)
    assert "dev/questions" not in summary  # a count, not a metric
    assert table.splitlines() == [
        "| split | metric | mean ± std | runs |",
        "|---|---|---|---|",
        "| dev | map | 0.7500 ± 0.0500 | 3 |",
        "| dev | mrr | 0.8000 ± 0.1414 | 2 |",
        "| test | map | 0.5500 ± 0.0707 | 2 |",
    ]


def test_one_run_has_no_spread():
    table, summary = runs.summarize_results([_result(4, {"acc": 0.6})])
    assert summary["dev/acc"] == {"mean": 0.6, "std": None, "values": [0.6], "seeds": [4]}
    assert table.splitlines()[-1] == "| dev | acc | 0.6000 ± — | 1 |"


def test_bad_results_are_named():
    with pytest.raises(ValueError, match="No results"):
        runs.summarize_results([])
    with pytest.raises(ValueError, match="no 'splits'"):
        runs.summarize_results([{"dev/map": {"mean": 0.7}}])


def test_collect_reads_runs_repeats_and_files(tmp_path):
    repeats = tmp_path / "repeats"
    _write(repeats / "seed1", _result(1, {"map": 0.7}))
    _write(repeats / "seed10", _result(10, {"map": 0.9}))
    _write(repeats / "seed2", _result(2, {"map": 0.8}))
    # The --repeats summary beside the seeds is not read as a run.
    (repeats / runs.RESULTS_FILE).write_text(json.dumps({"dev/map": {"mean": 0.8}}))
    single = _write(tmp_path / "single", _result(3, {"map": 0.6}))
    loose = tmp_path / "seed5.json"
    loose.write_text(json.dumps(_result(5, {"map": 0.5})))
    results = collect([repeats, single, loose])
    assert [r["seed"] for r in results] == [1, 2, 10, 3, 5]

    with pytest.raises(ValueError, match="seed 3 appears twice"):
        collect([single, single / runs.RESULTS_FILE])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no results.json"):
        collect([tmp_path / "empty"])
    with pytest.raises(ValueError, match="give its directory"):
        collect([repeats / runs.RESULTS_FILE])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        collect([broken])


@pytest.mark.slow
def test_cli_prints_table_and_writes_json(tmp_path):
    _write(tmp_path / "a", _result(1, {"map": 0.70}))
    _write(tmp_path / "b", _result(2, {"map": 0.80}))
    out = tmp_path / "summary.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "re2_lab.cli.summarize",
            str(tmp_path / "a"),
            str(tmp_path / "b"),
            f"--output={out}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "2 runs (seeds 1, 2):" in done.stdout
    assert "| dev | map | 0.7500 ± 0.0707 | 2 |" in done.stdout
    assert json.loads(out.read_text())["dev/map"]["values"] == [0.70, 0.80]
    missing = subprocess.run(
        [sys.executable, "-m", "re2_lab.cli.summarize", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"python -m re2_lab.cli.summarize: error: {tmp_path / 'c'}: no such file or directory"
    ]
