"""The files a user of a released package expects: the licence the metadata names, a citation
file naming this version and the papers implemented, a changelog entry for this version, and
the PEP 561 marker, all shipped in the wheel."""

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import re2_tf

REPO = Path(__file__).resolve().parents[1]


def test_licence_is_the_apache_2_text_the_metadata_names():
    project = (REPO / "pyproject.toml").read_text().split("[project]", 1)[1].split("\n[", 1)[0]
    assert 'license = "Apache-2.0"' in project.splitlines()
    assert 'license-files = ["LICENSE"]' in project.splitlines()
    text = (REPO / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    # the nine sections of the terms, in order, and their end
    headings = re.findall(r"^\s+(\d)\. ([A-Z][a-z]+(?: [a-z]+)*)", text, flags=re.M)
    assert [n for n, _ in headings][:9] == [str(n) for n in range(1, 10)]
    assert "END OF TERMS AND CONDITIONS" in text


def test_citation_names_this_version_and_the_five_papers():
    text = (REPO / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", text, flags=re.M)
    assert re.search(rf'^version: "{re.escape(re2_tf.__version__)}"$', text, flags=re.M)
    titles = re.findall(r'^  - type: .*\n    title: "(.*)"$', text, flags=re.M)
    papers = sorted((REPO.parent / "shared" / "papers").glob("*.md"))
    if not papers:
        pytest.skip("../shared/papers not available: the titles are checked against the papers")
    assert len(titles) == len(papers) == 5
    # each title is the title of one paper: in its first lines (other papers cite some)
    heads = [" ".join(p.read_text()[:600].lower().split()) for p in papers]
    for title in titles:
        assert sum(title.lower() in head for head in heads) == 1, title


def test_citation_is_valid_yaml_with_the_fields_cff_requires():
    yaml = pytest.importorskip("yaml", reason="PyYAML reads CITATION.cff")
    record = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert {"cff-version", "message", "title", "authors"} <= set(record)
    for reference in record["references"]:
        assert {"type", "title", "authors", "year"} <= set(reference)


def test_changelog_has_an_entry_for_this_version():
    text = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(re2_tf.__version__)} - \d{{4}}-\d\d-\d\d$", text, re.M)


def test_the_readme_is_an_entry_point_of_at_most_250_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)


def test_package_is_typed():
    assert (REPO / "re2_tf" / "py.typed").is_file()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from the checkout (``pip wheel``, no dependencies)."""
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True,
        timeout=600,
    )
    (built,) = out.glob("re2_tf-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_ships_licence_and_type_marker(wheel):
    """A wheel built from the checkout holds ``re2_tf/py.typed`` and the licence text."""
    names = zipfile.ZipFile(wheel).namelist()
    assert "re2_tf/py.typed" in names
    # the library alone: the lab (re2_lab/) and the tests are not in it
    assert {n.split("/")[0] for n in names if not n.startswith("re2_tf-")} == {"re2_tf"}
    licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert len(licence) == 1
    assert zipfile.ZipFile(wheel).read(licence[0]).decode() == (REPO / "LICENSE").read_text()


#: Run in the fresh virtual environment, outside the checkout: the model object of the run
#: trained there predicts two pairs; prints where re2_tf was imported from and the records.
PREDICT_THROUGH_MATCHER = """
import json, sys
import re2_tf
matcher = re2_tf.Matcher.from_run(sys.argv[1])
records = matcher.predict([("A man plays a guitar.", "A man is making music."),
                           ("A dog runs in a field.", "A cat sleeps on a sofa.")])
print(json.dumps({"file": re2_tf.__file__, "records": records}))
"""


@pytest.mark.slow
def test_a_wheel_installed_outside_the_checkout_trains_on_the_bundled_sample(wheel, tmp_path):
    """The wheel, installed in a fresh virtual environment and run from a directory outside
    the checkout, trains RE2 on ``--dataset=sample`` (the sample is package data) and predicts
    through :class:`re2_tf.Matcher`."""
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    names = zipfile.ZipFile(wheel).namelist()
    for split in ("train", "dev", "test"):
        assert f"re2_tf/data/bundled/sample/{split}.txt" in names
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=1200)
    train = subprocess.run(
        [
            venv / "bin" / "re2-train",
            "--model=re2",
            "--dataset=sample",
            "--epochs=1",
            "--max_samples=256",
            "--eval_per_samples=128",
            "--embedding_dim=8",
            "--hidden_size=8",
            "--blocks=1",
            "--enc_layers=1",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert train.returncode == 0, train.stderr[-3000:]
    run_dir = work / "checkpoints" / "sample-re2"
    assert (run_dir / "best.keras").is_file() and (run_dir / "results.json").is_file()
    predicted = subprocess.run(
        [python, "-c", PREDICT_THROUGH_MATCHER, str(run_dir)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = json.loads(predicted.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).resolve().is_relative_to(venv.resolve())
    assert len(out["records"]) == 2
    for record in out["records"]:
        probabilities = record["probabilities"]
        assert set(probabilities) == {"entailment", "neutral", "contradiction"}
        assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-5)
        assert record["label"] == max(probabilities, key=probabilities.get)
