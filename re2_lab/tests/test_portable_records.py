"""The records under docs/runs are portable (``re2_lab.records``): no path of the machine that
trained a run, every finished run naming the data it was trained on by fingerprint, and the
rewrite that made them so doing only that."""

import hashlib
import json
import re
import shutil
from pathlib import Path

from re2_lab import records
from re2_tf.data import datasets
from re2_tf.data.prepare import learning_check, prepare

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "docs" / "runs"
#: What a machine's path looks like (the checker's own pattern is not used here).
MACHINE_PATHS = ("/work/", "/tmp/", "/home/", "/root/")
ABSOLUTE_FLAG = re.compile(r"--[a-z_]*=/")


def _by_hand(directory, names):
    """The fingerprint from its definition: sha256 of sha256sum's listing of ``names``."""
    listing = "".join(
        f"{hashlib.sha256((Path(directory) / n).read_bytes()).hexdigest()}  {n}\n" for n in names
    )
    return hashlib.sha256(listing.encode()).hexdigest()


def _record_dirs():
    return sorted(f.parent for f in RUNS.rglob("flags.txt"))


def test_no_record_holds_an_absolute_path():
    """grep for a machine's directories and for a flag set to an absolute path, over every
    file under docs/runs but the exempt ones (each with its reason)."""
    found = []
    for path in sorted(RUNS.rglob("*")):
        name = path.relative_to(RUNS).as_posix()
        if not path.is_file() or path.suffix == ".png" or name in records.EXEMPT:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if any(p in line for p in MACHINE_PATHS) or ABSOLUTE_FLAG.search(line):
                found.append(f"{name}:{number}: {line[:120]}")
    assert not found, "\n".join(found)
    assert records.absolute_paths(RUNS) == []
    for name, reason in records.EXEMPT.items():
        assert (RUNS / name).is_file() and reason, name


def test_every_results_json_has_its_log_and_flags_beside_it():
    """No transcribed record: each results.json under docs/runs has the train.log and
    flags.txt of the run that wrote it."""
    lonely = []
    for results in sorted(RUNS.rglob("results.json")):
        absent = [n for n in ("train.log", "flags.txt") if not (results.parent / n).exists()]
        if absent:
            lonely.append(f"{results.parent.relative_to(RUNS)}: no {', '.join(absent)}")
    assert not lonely, "\n".join(lonely)


def test_every_finished_record_names_its_data_fingerprint():
    """Each results.json beside a flags.txt has ``data``: the dataset its flags name and a
    sha256 hex digest; the exceptions are listed with their reason, and are real (a record
    there has no data set)."""
    missing = []
    for record in _record_dirs():
        name = record.relative_to(RUNS).as_posix()
        if not (record / "results.json").exists():
            continue
        results = json.loads((record / "results.json").read_text())
        flags = (record / "flags.txt").read_text().splitlines()
        dataset = [f.split("=", 1)[1] for f in flags if f.startswith("--dataset=")]
        if name in records.UNFINGERPRINTED:
            assert "data" not in results and not dataset, name
            continue
        if "data" not in results:
            missing.append(name)
            continue
        assert results["data"]["dataset"] == dataset[-1], name
        assert re.fullmatch(r"[0-9a-f]{64}", results["data"]["fingerprint"]), name
    assert not missing, missing
    assert all(records.UNFINGERPRINTED.values())


def test_each_record_re_runs_from_the_prepared_default_directory():
    """A record's --data_dir is ``data/<name>`` (re2-prepare's default output, or the
    learning check's documented name), and one name means one fingerprint."""
    by_dir = {}
    for record in _record_dirs():
        flags = (record / "flags.txt").read_text().splitlines()
        data_dirs = [f.split("=", 1)[1] for f in flags if f.startswith("--data_dir=")]
        if not data_dirs:
            continue
        assert re.fullmatch(r"data/[a-z_]+", data_dirs[-1]), record
        if (record / "results.json").exists():
            data = json.loads((record / "results.json").read_text()).get("data")
            if data:
                by_dir.setdefault(data_dirs[-1], set()).add(data["fingerprint"])
    assert {d for d, prints in by_dir.items() if len(prints) > 1} == set()
    assert {"data/snli_check", "data/quora_check", "data/wikiqa", "data/trecqa"} <= set(by_dir)


def test_recorded_fingerprints_are_those_of_the_prepared_shared_data(shared_data, tmp_path):
    """Preparing WikiQA and the SNLI learning check from the staged corpora gives the
    fingerprints the records name (computed here by hand from the prepared files)."""
    prepare("wikiqa", shared_data / "wikiqa", tmp_path / "wikiqa")
    learning_check(shared_data / "snli" / "re2_processed", tmp_path / "snli_check")
    wikiqa = ["train.txt", "train.ids", "dev.txt", "dev.ids", "dev.ref"]
    wikiqa += ["test.txt", "test.ids", "test.ref"]
    expected = {
        "compare/wikiqa/model-re2/seed1": _by_hand(tmp_path / "wikiqa", wikiqa),
        "compare/snli_check/model-re2/seed1": _by_hand(
            tmp_path / "snli_check", ["train.txt", "dev.txt", "test.txt"]
        ),
    }
    for name, fingerprint in expected.items():
        results = json.loads((RUNS / name / "results.json").read_text())
        assert results["data"]["fingerprint"] == fingerprint, name


def test_a_planted_absolute_path_fails_the_check(tmp_path):
    copy = tmp_path / "runs"
    shutil.copytree(RUNS / "quick-start" / "re2-sample", copy / "quick-start" / "re2-sample")
    assert records.absolute_paths(copy) == []
    flags = copy / "quick-start" / "re2-sample" / "flags.txt"
    lines = flags.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("--data_dir="))
    lines[index] = "--data_dir=/srv/corpora/sample"
    flags.write_text("\n".join(lines) + "\n")
    log = copy / "quick-start" / "re2-sample" / "train.log"
    log.write_text(log.read_text() + "2026-01-01 00:00:00 wrote /home/someone/x.txt\n")
    found = records.absolute_paths(copy)
    assert [(n, i) for n, i, _ in found] == [
        ("quick-start/re2-sample/flags.txt", index + 1),
        ("quick-start/re2-sample/train.log", len(log.read_text().splitlines())),
    ]
    assert records.main(["--check", f"--runs={copy}"]) == 1


def _plant_record(root, dataset, data_dir, run_dir, logged):
    record = root / "exp" / "seed1"
    record.mkdir(parents=True)
    flags = ["--model=re2", f"--dataset={dataset}", f"--data_dir={data_dir}"]
    flags += [f"--run_dir={run_dir}", "--seed=1"]
    (record / "flags.txt").write_text("\n".join(flags) + "\n")
    (record / "train.log").write_text(
        f"2026-01-01 00:00:00 Starting re2 run {run_dir} (seed 1); {logged} from {data_dir}\n"
        f"2026-01-01 00:00:01 Restored training state at update 2 from {run_dir}/backup\n"
    )
    results = '{\n  "seed": 1,\n  "best_step": 2,\n  "splits": {"dev": {"acc": 0.1234567891}}\n}\n'
    (record / "results.json").write_text(results)
    return record, results


def test_rewrite_makes_paths_relative_and_adds_the_fingerprint(tmp_path):
    """An absolute --data_dir becomes data/<name>, an absolute --run_dir
    checkpoints/<record>, in flags.txt and train.log (the prefix only); results.json keeps
    its text and gains the data's fingerprint, that of the bundled sample here (its logged
    pair counts are the files' line counts: 8000 and 1842)."""
    record, before = _plant_record(
        tmp_path / "runs", "sample", "/work/x/sample", "/tmp/r/run", "train (8000) | dev (1842)"
    )
    report = records.rewrite(tmp_path / "runs", tmp_path, log=lambda line: None)
    assert report["fingerprinted"] == ["exp/seed1"] and report["unmatched"] == []
    flags = (record / "flags.txt").read_text().splitlines()
    assert "--data_dir=data/sample" in flags and "--run_dir=checkpoints/exp/seed1" in flags
    assert (record / "train.log").read_text().splitlines() == [
        "2026-01-01 00:00:00 Starting re2 run checkpoints/exp/seed1 (seed 1); train (8000) | "
        "dev (1842) from data/sample",
        "2026-01-01 00:00:01 Restored training state at update 2 from checkpoints/exp/seed1/backup",
    ]
    after = (record / "results.json").read_text()
    assert after.startswith(before[: before.rindex("}")].rstrip())
    sample = datasets.BUNDLED / "sample"
    fingerprint = _by_hand(sample, ["train.txt", "dev.txt", "test.txt"])
    assert json.loads(after)["data"] == {"dataset": "sample", "fingerprint": fingerprint}
    assert json.loads(after)["splits"]["dev"]["acc"] == 0.1234567891
    # again: nothing changes
    records.rewrite(tmp_path / "runs", tmp_path, log=lambda line: None)
    assert (record / "results.json").read_text() == after


def test_rewrite_writes_no_fingerprint_where_the_logged_counts_differ(tmp_path):
    """A record whose log names other pair counts than the prepared directory's files gets
    relative paths but no fingerprint, and is reported."""
    prepared = tmp_path / "prepared" / "wikiqa"
    prepared.mkdir(parents=True)
    for split, n in (("train", 3), ("dev", 2), ("test", 2)):
        (prepared / f"{split}.txt").write_text("a\tb\t0\n" * n)
    record, before = _plant_record(
        tmp_path / "runs", "wikiqa", "/work/wikiqa", "checkpoints/w", "train (4) | dev (2)"
    )
    report = records.rewrite(tmp_path / "runs", tmp_path / "prepared", log=lambda line: None)
    assert report["fingerprinted"] == [] and [n for n, _ in report["unmatched"]] == ["exp/seed1"]
    assert (record / "results.json").read_text() == before
    assert "--data_dir=data/wikiqa" in (record / "flags.txt").read_text().splitlines()
    assert records.absolute_paths(tmp_path / "runs") == []


def test_the_records_command_needs_its_prepared_directory(tmp_path, capsys):
    assert records.main([f"--runs={tmp_path}"]) == 1
    assert capsys.readouterr().err == (
        "python -m re2_lab.records: error: --prepared: the directory of the prepared "
        "datasets (or give --check)\n"
    )
    assert records.main([f"--runs={tmp_path / 'none'}", "--check"]) == 1


def test_the_index_names_every_measurement_record():
    """docs/runs/README.md names each JSON record the measurement directories hold (the ones
    whose files the index lists by name), so none is committed without saying what it is and
    which command made it."""
    index = (RUNS / "README.md").read_text()
    unnamed = [
        path.relative_to(RUNS).as_posix()
        for directory in ("roofline", "runtimes", "serving-choice", "training-profile")
        for path in sorted((RUNS / directory).glob("*.json"))
        if f"`{path.name}`" not in index
    ]
    assert not unnamed, f"not in docs/runs/README.md: {unnamed}"
