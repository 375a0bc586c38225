"""Real training runs on ../shared's data (tens of minutes each). Marked `long`: run with
`python -m pytest -m long`. The bundled-sample runs of the README's quick start are in
tests/test_quick_start.py."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"

pytestmark = pytest.mark.long


def majority_share(path):
    labels = Counter(
        line.rsplit("\t", 1)[1].strip() for line in Path(path).read_text().splitlines()
    )
    return max(labels.values()) / sum(labels.values())


def train(*args):
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.train", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.skipif(not (SHARED / "snli").exists(), reason="../shared/data is not present")
def test_snli_learning_check(tmp_path):
    # Train on the SNLI dev file; select on one half of SNLI test, score the other half.
    data = tmp_path / "snli"
    data.mkdir()
    (data / "train.txt").write_text((SHARED / "snli/re2_processed/dev.txt").read_text())
    test = (SHARED / "snli/re2_processed/test.txt").read_text().splitlines()
    half = len(test) // 2
    (data / "dev.txt").write_text("\n".join(test[:half]) + "\n")
    (data / "test.txt").write_text("\n".join(test[half:]) + "\n")
    train(
        "--flagfile=configs/re2/snli_learning_check.flags",
        f"--data_dir={data}",
        f"--run_dir={tmp_path / 'run'}",
        "--progress=false",
    )
    results = json.loads((tmp_path / "run" / "results.json").read_text())["splits"]
    assert results["test"]["acc"] > majority_share(data / "test.txt") + 0.2
