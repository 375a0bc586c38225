"""What the papers' analysis figures share: the registry, the run record a caption cites, and
writing a figure as a PNG with its data beside it.

A model's paper figures are a :class:`FigureSet` registered by its module under
:mod:`re2_lab.figures` (``re2.py``, ``drcn.py``, ``fitn.py``, ``match_srnn.py``): the runs it
reads (:class:`FigureRun`: the trained run directory, its committed record under
``docs/runs/`` and the command that trains it), the sweeps whose records it plots
(:class:`FigureSweep`: a sweep flagfile and its records) and ``make(runs, out_dir) ->
[Figure]``. ``python -m re2_lab.cli.paper_figures`` (:mod:`re2_lab.cli.paper_figures`) defines one
``--<key>_run`` / ``--<key>_record`` flag pair per run and one ``--<key>_records`` flag per
sweep from the registry and never names a model itself.
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path

from re2_lab.budget import STOPS

__all__ = [
    "FIGURE_SETS",
    "Figure",
    "FigureRun",
    "FigureSet",
    "FigureSweep",
    "HeldOutPair",
    "MissingRun",
    "RunRecord",
    "held_out_pair",
    "load_record",
    "pair_overlap",
    "register",
    "run_caption",
    "write_figure",
]


@dataclasses.dataclass(frozen=True)
class FigureRun:
    """One trained run a figure set reads.

    Attributes:
        key: flag prefix (``--<key>_run``, ``--<key>_record``).
        run_dir: default trained run directory (``best.keras``, featurisers).
        record: default record directory (``results.json``, ``flags.txt``, ``train.log``).
        command: the command that trains it (named when the run is missing).
        about: one line on what the run is (help text and caption), e.g. which data.
    """

    key: str
    run_dir: str
    record: str
    command: str
    about: str = ""


@dataclasses.dataclass(frozen=True)
class FigureSweep:
    """A sweep whose records a figure plots (no trained model needed).

    Attributes:
        key: flag prefix (``--<key>_records``).
        flagfile: the sweep's flagfile, repository-relative (its ``--grid``, ``--seeds`` and
            ``--records``: :func:`re2_lab.doc_tables.sweep_config`).
        command: the command that runs it (named when it has no records yet).
        about: one line on what the sweep is (help text and caption).
    """

    key: str
    flagfile: str
    command: str
    about: str = ""


@dataclasses.dataclass(frozen=True)
class FigureSet:
    """A model's paper figures: ``make(runs, out_dir) -> [Figure | str]`` with ``runs``
    ``{key: (run_dir, RunRecord or None)}`` for every :class:`FigureRun` in ``runs`` (``None``:
    no record) and ``{key: Path}`` (the records directory) for every :class:`FigureSweep` in
    ``sweeps``; a figure whose run is absent is a ``str`` in the list, the message of
    :func:`need`'s :class:`MissingRun`, and the others are still made."""

    name: str
    runs: tuple
    make: Callable
    doc: str = ""
    sweeps: tuple = ()


@dataclasses.dataclass
class Figure:
    """One written figure: ``png`` and ``json`` paths and its caption."""

    name: str
    png: Path
    json: Path
    caption: str


class MissingRun(FileNotFoundError):
    """A figure's run (trained directory or record) does not exist; the message names it and
    the command that trains it."""


#: ``{name: FigureSet}``, filled by the modules of :mod:`re2_lab.figures`.
FIGURE_SETS: dict[str, FigureSet] = {}


def register(figure_set: FigureSet) -> FigureSet:
    """Add ``figure_set`` to :data:`FIGURE_SETS` (once per name; run keys unique overall)."""
    if figure_set.name in FIGURE_SETS and FIGURE_SETS[figure_set.name] is not figure_set:
        raise ValueError(f"figure set {figure_set.name!r} is registered twice")
    keys = {
        r.key for s in FIGURE_SETS.values() if s is not figure_set for r in (*s.runs, *s.sweeps)
    }
    own = [r.key for r in (*figure_set.runs, *figure_set.sweeps)]
    clash = (keys & set(own)) | {k for k in own if own.count(k) > 1}
    if clash:
        raise ValueError(f"run keys {sorted(clash)} are already registered")
    FIGURE_SETS[figure_set.name] = figure_set
    return figure_set


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """A run's committed record (``docs/runs/...``), what a caption cites.

    Attributes:
        record: the record directory as given (repository-relative in the captions).
        model: ``--model`` of ``flags.txt``.
        seed: ``results.json``'s ``seed``.
        data_dir: ``--data_dir`` of ``flags.txt``.
        epochs: ``--epochs`` (passes over the training pairs).
        passes: the passes the run made: ``epochs``, or for a run ``--max_samples`` cut short
            the ``P`` of its log's ``training stops after N updates (P of E passes ...)``
            (a float to two decimals).
        training_pairs: the ``training on N`` count of ``train.log``.
        triples: the ``N ranking triples`` count of ``train.log`` (a pairwise-loss run trains
            on (question, right, wrong) triples built from those pairs), else ``None``.
        test: ``results.json``'s ``splits.test`` metrics (``{"acc": float, ...}``).
        settings: ``{flag: value}`` of ``flags.txt`` (without the leading ``--``).
    """

    record: str
    model: str
    seed: int
    data_dir: str
    epochs: int
    training_pairs: int
    test: dict
    settings: dict
    triples: int | None = None
    passes: float | int | None = None

    def to_json(self) -> dict:
        return {
            "record": self.record,
            "model": self.model,
            "seed": self.seed,
            "data_dir": self.data_dir,
            "epochs": self.epochs,
            "training_pairs": self.training_pairs,
            "triples": self.triples,
            "passes": self.passes,
            "test": dict(self.test),
        }


def _flags(text):
    settings = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("--"):
            continue
        name, _, value = line[2:].partition("=")
        if not _ and name.startswith("no"):
            settings[name[2:]] = "false"
        else:
            settings[name] = value if _ else "true"
    return settings


def load_record(record) -> RunRecord:
    """Read a run's record directory.

    Args:
        record: directory with ``results.json``, ``flags.txt`` and ``train.log``.

    Returns:
        :class:`RunRecord`.

    Raises:
        MissingRun: a file is missing. ValueError: ``train.log`` has no ``training on N``.
    """
    record_dir = Path(record)
    files = [record_dir / n for n in ("results.json", "flags.txt", "train.log")]
    absent = [str(f) for f in files if not f.exists()]
    if absent:
        raise MissingRun(f"no record: {', '.join(absent)} missing")
    results = json.loads(files[0].read_text())
    settings = _flags(files[1].read_text())
    log = files[2].read_text()
    counts = re.findall(r"training on (\d+)", log)
    triples = re.findall(r"(\d+) ranking triples", log)
    if not counts:
        raise ValueError(f"{files[2]}: no 'training on N' line")
    stops = [found["passes"] for found in STOPS.finditer(log)]
    epochs = int(settings["epochs"])
    return RunRecord(
        record=str(record),
        model=settings.get("model", ""),
        seed=int(results["seed"]),
        data_dir=settings.get("data_dir", ""),
        epochs=epochs,
        training_pairs=int(counts[0]),
        test=dict(results["splits"]["test"]),
        settings=settings,
        triples=int(triples[0]) if triples else None,
        passes=float(stops[-1]) if stops else epochs,
    )


def cited(record: RunRecord) -> tuple:
    """The test metrics a caption cites: ``("map", "mrr")`` for a ranking run (WikiQA),
    else ``("acc",)``."""
    return ("map", "mrr") if "map" in record.test else ("acc",)


def run_caption(record: RunRecord, about: str = "") -> str:
    """The caption sentence naming the run: its record, data, budget and test metrics
    (:func:`cited`, 4 places), e.g. ``Run: docs/runs/... (re2, seed 1): data snli, 5 passes
    over 9,842 training pairs; test acc 0.5949.`` followed by ``about`` (the data directory
    itself is a path on the machine that trained it: the JSON keeps it, captions do not)."""
    metrics = ", ".join(
        f"{k.upper() if k != 'acc' else k} {record.test[k]:.4f}" for k in cited(record)
    )
    budget = f"{record.training_pairs:,} training pairs"
    if record.triples is not None:
        budget = f"{record.triples:,} ranking triples from {budget}"
    text = (
        f"Run: {record.record} ({record.model}, seed {record.seed}): "
        f"data {record.settings.get('dataset', '?')}, "
        f"{record.passes if record.passes is not None else record.epochs} passes over "
        f"{budget}; test {metrics}."
    )
    return f"{text} {about}".strip()


@dataclasses.dataclass(frozen=True)
class HeldOutPair:
    """A held-out pair a figure is drawn on, standing in for a paper's example.

    Attributes:
        text1, text2: the pair as stored in the split file.
        label: its gold label's name.
        split: the split file it was read from (``test.txt`` of the run's data directory).
        line: its 1-based line in that file.
        paper: the paper's example it stands in for, ``(text1, text2)``.
        overlap: the selection score, :func:`pair_overlap` with the paper's example.
    """

    text1: str
    text2: str
    label: str
    split: str
    line: int
    paper: tuple
    overlap: float

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def caption(self) -> str:
        """Where the pair comes from and why it, for a caption."""
        return (
            f'held-out pair "{self.text1}" / "{self.text2}" (gold {self.label}; line '
            f"{self.line:,} of the learning check's {self.split}: the second half of SNLI test, "
            "which the run neither trained nor selected on). It stands in for the paper's "
            f'pair "{self.paper[0]}" / "{self.paper[1]}", which is in SNLI dev, this run\'s '
            "training data, and not in its held-out half: of the held-out pairs with the "
            "same gold label, the one sharing the most words with it (word-set overlap "
            f"{self.overlap:.3f})"
        )


def _words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def pair_overlap(pair, paper):
    """Mean over the two texts of the Jaccard overlap of their lower-cased word sets (letters
    and digits), ``pair`` against ``paper``, both ``(text1, text2)``: a float in [0, 1]."""
    scores = []
    for ours, theirs in zip(pair, paper):
        a, b = _words(ours), _words(theirs)
        scores.append(len(a & b) / len(a | b) if a | b else 0.0)
    return sum(scores) / len(scores)


def held_out_pair(run_dir, paper, label, split="test"):
    """The pair of gold ``label`` in the run's held-out ``split`` that shares the most words
    with the paper's example ``paper`` (:func:`pair_overlap`; the first in the file on a tie).

    Args:
        run_dir: a trained run (its ``config.json`` names its data and label names).
        paper: ``(text1, text2)``, the paper's example.
        label: the gold label's name (one of the run's).
        split: the split name (the learning check's held-out half is ``test``).

    Returns:
        :class:`HeldOutPair`.

    Raises:
        ValueError: ``label`` is not one of the run's, or the split has no pair with it.
        FileNotFoundError: as :func:`re2_tf.runs.load_examples`.
    """
    from re2_tf.runs import load_examples

    spec, examples = load_examples(run_dir, split)
    if label not in spec.label_names:
        raise ValueError(f"label {label!r} is not one of the run's {list(spec.label_names)}")
    wanted = spec.label_names.index(label)
    best = None
    for example in examples:
        if example.label != wanted:
            continue
        score = pair_overlap((example.text1, example.text2), paper)
        if best is None or score > best[0]:
            best = (score, example)
    if best is None:
        raise ValueError(f"no {label} pair in the run's {split} split")
    score, example = best
    return HeldOutPair(
        example.text1, example.text2, label, f"{split}.txt", example.line, tuple(paper), score
    )


def write_figure(out_dir, name, figure, data, caption) -> Figure:
    """Save ``figure`` (matplotlib) as ``<out_dir>/<name>.png`` (100 dpi) and ``data`` with
    the caption as ``<out_dir>/<name>.json`` (``{"caption": ..., **data}``); close it."""
    from matplotlib import pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    png, path = out_dir / f"{name}.png", out_dir / f"{name}.json"
    figure.savefig(png, dpi=100)
    plt.close(figure)
    path.write_text(
        json.dumps({"caption": caption, **data}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return Figure(name, png, path, caption)


def wrap(text, width=110):
    """``text`` wrapped for a figure title."""
    return "\n".join(textwrap.wrap(text, width))


def pyplot():
    """matplotlib's pyplot on the Agg backend (ImportError names the ``plot`` extra)."""
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError(
            "the paper figures need matplotlib: pip install 're2_tf[plot]'"
        ) from error
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def need(runs, key, figure_set):
    """``(run_dir, RunRecord)`` of ``key``; :class:`MissingRun` naming the run directory,
    record and training command when the run directory or its record is absent."""
    run = next(r for r in figure_set.runs if r.key == key)
    run_dir, record = runs.get(key, (run.run_dir, None))
    if record is None or not (Path(run_dir) / "best.keras").exists():
        raise MissingRun(
            f"{figure_set.name}: run {key!r} missing (run dir {run_dir}, record "
            f"{run.record}); train it with: {run.command}"
        )
    return run_dir, record
