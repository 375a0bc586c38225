"""Portable records: ``docs/runs`` without the paths of the machines that trained its runs.

A record's ``flags.txt`` re-runs as it is after ``re2-prepare``: its ``--data_dir`` is the
directory ``re2-prepare --dataset=<name>`` writes by default, ``data/<name>``
(``data/snli_check`` and ``data/quora_check`` for the learning checks, as the README
prepares them), and its ``--run_dir`` is relative (``checkpoints/<the record's path under
docs/runs>`` where the run's own was absolute). Its ``results.json`` names the data it was
trained on, ``"data": {"dataset": name, "fingerprint": sha256 hex}``
(:func:`re2_tf.runs.data_identity`), which is what ``--reuse`` matches
(:func:`re2_lab.sweep.run_key`).

:func:`rewrite` makes an older record so: it replaces each absolute ``--data_dir`` and
``--run_dir`` with the relative one in every text file of the record (the path prefix only,
in ``train.log`` lines too) and in the files beside the records that quote them
(``summary.json``), and adds the fingerprint, computed on the directories prepared here,
only where the pair counts the record logged (``train (N) | dev (M)``) equal the prepared
files' line counts. It changes no metric: ``results.json`` gains one key.
:func:`absolute_paths` finds what is left::

    re2-prepare --dataset=wikiqa --input=<WikiQACorpus> --output=<prepared>/wikiqa  # etc.
    python -m re2_lab.records --prepared=<prepared> [--runs=docs/runs]
    python -m re2_lab.records --check [--runs=docs/runs]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from absl import flags as absl_flags

from re2_tf import runs
from re2_tf.data import datasets
from re2_tf.train_flags import config_from_args

__all__ = ["EXEMPT", "UNFINGERPRINTED", "absolute_paths", "main", "rewrite"]

#: Files under docs/runs that keep the absolute paths they quote, and why.
EXEMPT = {
    # the verbatim output of one `.ci/run` in a fresh clone: where that clone was is part of
    # what it printed (pytest's rootdir), not a setting to re-run
    "test-tiers/ci-run.txt": "a verbatim CI transcript",
}

#: Records with a flags.txt and a results.json that name no data fingerprint, and why.
UNFINGERPRINTED = {
    "match_srnn-lcs/seed1": "a simulation on generated sequences (no --data_dir)",
}

#: An absolute path under a machine's work, scratch or home directories, or any flag whose
#: value is an absolute path.
ABSOLUTE = re.compile(r"(?<![\w.-])/(?:work|tmp|home|root)/|--[a-z_]*=/")
#: The first line of each attempt of a run: its training and selection pairs and data.
LOGGED_COUNTS = re.compile(r"train \((\d+)\) \| (\w+) \((\d+)\) from ")
#: The zero-shot experiment's lines: ``wikiqa dev (2733 pairs, ...``.
LOGGED_SPLIT = re.compile(r"^\w+ (\w+) \((\d+) pairs", re.M)
_TEXT_SUFFIXES = {".txt", ".log", ".json", ".jsonl", ".md", ".sh", ".py", ".csv", ""}


def _text_files(root: Path):
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in _TEXT_SUFFIXES:
            yield path


def absolute_paths(runs_root, exempt=EXEMPT):
    """Every line of a text file under ``runs_root`` holding an absolute path
    (:data:`ABSOLUTE`), but the ``exempt`` files (paths relative to ``runs_root``).

    Returns:
        list of ``(relative path str, line number, line)``, in path order.
    """
    root = Path(runs_root)
    found = []
    for path in _text_files(root):
        name = path.relative_to(root).as_posix()
        if name in exempt:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if ABSOLUTE.search(line):
                found.append((name, number, line))
    return found


def _flag(lines, name):
    values = [line.split("=", 1)[1] for line in lines if line.startswith(f"--{name}=")]
    return values[-1] if values else None


def _line_counts(directory: Path):
    return {path.stem: sum(1 for _ in path.open("rb")) for path in sorted(directory.glob("*.txt"))}


def _logged_counts(record: Path):
    """``{split: pairs}`` the record's log names (every attempt's must agree), or None."""
    log = record / runs.LOG_FILE
    if not log.exists():
        return None
    text = log.read_text()
    counts = {}
    for train, split, pairs in LOGGED_COUNTS.findall(text):
        for name, value in (("train", int(train)), (split, int(pairs))):
            if counts.setdefault(name, value) != value:
                return None
    if not counts:
        counts = {split: int(pairs) for split, pairs in LOGGED_SPLIT.findall(text)}
    return counts or None


def _replace_path(text, old, new):
    """``text`` with the path ``old`` (whole, or as a prefix of a longer path) as ``new``."""
    return re.sub(re.escape(old) + r"(?=$|[/\s\"',;)\]])", new, text, flags=re.M)


def _identity(flags_file: Path, dataset: str, data_dir: Path):
    """The record's :func:`re2_tf.runs.data_identity` on ``data_dir`` (its own splits); the
    train/dev/test fingerprint for flags ``re2-train`` does not read (an experiment's)."""
    try:
        config = config_from_args(
            [f"--flagfile={flags_file}", f"--data_dir={data_dir}", "--run_dir=unused"]
        )
    except (absl_flags.Error, ValueError):
        return {"dataset": dataset, "fingerprint": datasets.fingerprint(data_dir)}
    return runs.data_identity(config)


def _add_data(results_file: Path, data: dict) -> bool:
    """Add ``"data": data`` as the last key of ``results_file``, the text before it
    unchanged; False when it names other data already."""
    text = results_file.read_text()
    before = json.loads(text)
    if "data" in before:
        return before["data"] == data
    body = text.rstrip()
    if not body.endswith("}"):
        raise ValueError(f"{results_file}: not a JSON object")
    body = body[:-1].rstrip()
    new = f'{body},\n  "data": {json.dumps(data)}\n}}\n'
    after = json.loads(new)
    if after.pop("data") != data or after != before:  # every value as it was
        raise AssertionError(f"{results_file}: rewriting changed a value")
    results_file.write_text(new)
    return True


def rewrite(runs_root, prepared, *, log=print):
    """Make every record under ``runs_root`` portable (module docstring).

    Args:
        runs_root: the records' directory (``docs/runs``).
        prepared: directory holding the prepared datasets, ``<prepared>/<name>`` as
            ``re2-prepare`` writes them (``wikiqa``, ``trecqa``, ``snli_check``,
            ``quora_check``); the bundled samples are the package's own.
        log: called with one line per record changed or left without a fingerprint.

    Returns:
        ``{"rewritten": [record], "fingerprinted": [record], "unmatched": [(record,
        reason)]}``, records as paths relative to ``runs_root``.
    """
    root, prepared = Path(runs_root), Path(prepared)
    report = {"rewritten": [], "fingerprinted": [], "unmatched": []}
    data_dirs = {}  # old absolute --data_dir -> data/<name>
    for flags_file in sorted(root.rglob(runs.RUN_FLAGFILE)):
        record = flags_file.parent
        name = record.relative_to(root).as_posix()
        lines = flags_file.read_text().splitlines()
        dataset, data_dir = _flag(lines, "dataset"), _flag(lines, "data_dir")
        if not dataset or not data_dir:
            continue  # no data set (a simulation)
        logged = _logged_counts(record)
        candidates = [Path(data_dir).name] if not Path(data_dir).is_absolute() else []
        candidates += [dataset, f"{dataset}_check"]
        chosen, local = None, None
        for candidate in candidates:
            where = datasets.BUNDLED / candidate
            where = where if where.is_dir() else prepared / candidate
            counts = _line_counts(where) if where.is_dir() else {}
            if logged and counts and all(counts.get(s) == n for s, n in logged.items()):
                chosen, local = candidate, where
                break
        if chosen is None:
            chosen = Path(data_dir).name.replace("-", "_")
            reason = f"logged pairs {logged} match no prepared {' or '.join(candidates)}"
            report["unmatched"].append((name, reason))
            log(f"{name}: no fingerprint: {reason}")
        changes = {}
        if Path(data_dir).is_absolute():
            changes[data_dir] = data_dirs[data_dir] = f"data/{chosen}"
        run_dir = _flag(lines, "run_dir")
        if run_dir and Path(run_dir).is_absolute():
            changes[run_dir] = f"checkpoints/{name}"
        if changes:
            for path in sorted(p for p in record.iterdir() if p.suffix in _TEXT_SUFFIXES):
                if not path.is_file():
                    continue
                text = path.read_text()
                new = text
                for old, relative in sorted(changes.items(), key=lambda kv: -len(kv[0])):
                    new = _replace_path(new, old, relative)
                if new != text:
                    path.write_text(new)
            report["rewritten"].append(name)
            log(f"{name}: " + ", ".join(f"{o} -> {n}" for o, n in changes.items()))
        results_file = record / runs.RESULTS_FILE
        if local is not None and results_file.exists():
            if not _add_data(results_file, _identity(flags_file, dataset, local)):
                raise ValueError(f"{results_file}: names other data than {local}")
            report["fingerprinted"].append(name)
    # files beside the records that quote a run's data directory (a sweep's summary.json)
    for path in _text_files(root):
        if path.relative_to(root).as_posix() in EXEMPT:
            continue
        text = path.read_text()
        new = text
        for old, relative in sorted(data_dirs.items(), key=lambda kv: -len(kv[0])):
            new = _replace_path(new, old, relative)
        if new != text:
            path.write_text(new)
            log(f"{path.relative_to(root)}: data directories made relative")
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m re2_lab.records",
        description="Make docs/runs portable (--prepared) or list its absolute paths (--check).",
    )
    parser.add_argument("--runs", default="docs/runs", help="The records' directory.")
    parser.add_argument(
        "--prepared", help="Directory of the prepared datasets (<dir>/wikiqa, <dir>/snli_check)."
    )
    parser.add_argument("--check", action="store_true", help="Only list absolute paths.")
    args = parser.parse_args(argv)
    problem = None
    if not Path(args.runs).is_dir():
        problem = f"--runs: {args.runs} is not a directory"
    elif not args.check and not (args.prepared and Path(args.prepared).is_dir()):
        problem = "--prepared: the directory of the prepared datasets (or give --check)"
    if problem:
        print(f"{parser.prog}: error: {problem}", file=sys.stderr)
        return 1
    if not args.check:
        report = rewrite(args.runs, args.prepared)
        print(
            f"{len(report['rewritten'])} records rewritten, "
            f"{len(report['fingerprinted'])} fingerprinted, "
            f"{len(report['unmatched'])} without a fingerprint"
        )
    found = absolute_paths(args.runs)
    for name, number, line in found:
        print(f"{name}:{number}: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
