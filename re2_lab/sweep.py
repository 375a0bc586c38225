"""Sweeps: a grid of settings x seeds, each cell and seed one ordinary ``re2-train`` run.

A sweep is a plain process runner, not a search: every cell is trained to its end with the
run's own evaluation and selection, in its own run directory (so a killed sweep resumes cell
by cell -- each run resumes from its own backup -- and a finished run is never retrained), and
the summary is mean ± sample std over seeds. KerasTuner and Optuna drive *searches* (a tuner
that picks the next trial from the last ones, trials that live in the tuner's own directory
and oracle state); a paper's ablation table is a fixed grid whose cells must be reproducible
by one ``re2-train`` command each, which neither gives, so this module runs the grid itself
(our choice) and leaves searches to those libraries.

Grid syntax (``--grid``): ``name=v1,v2;name2=w1,w2`` is the product of the value lists (here
four cells); ``|`` joins such products into one grid (a union, a cell listed twice counted
once). RE2's Table 7 (blocks 1-5 at 2 encoder layers, encoder layers 1-5 at 2 blocks):
``blocks=1,2,3,4,5;enc_layers=2 | blocks=2;enc_layers=1,2,3,4,5`` (nine cells). A name is any
``re2-train`` flag (``--helpfull`` there lists them), a value its command-line spelling
(``enc_in=false``).

Files: ``<out>/<cell>/seed<k>/`` is run ``k`` of a cell (``<cell>`` = its settings,
``blocks-2_enc_layers-3``); with ``records``, each finished run's ``results.json``,
``train.log``, ``flags.txt`` and ``wall_time.json`` are copied to ``<records>/<cell>/seed<k>/``
as it finishes, and a run whose record exists counts as finished even where its run
directory is gone (a record is committed; a run directory is not).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "NOT_COMPUTED",
    "Cell",
    "RECORD_FILES",
    "parse_grid",
    "plot_summary",
    "run_key",
    "run_sweep",
    "summarize_sweep",
]

#: The files of a finished run that a record keeps (wall_time.json is the sweep's own).
RECORD_FILES = ("results.json", "train.log", "flags.txt", "wall_time.json")
WALL_TIME_FILE = "wall_time.json"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Cell:
    """One grid cell: its settings in grid order (``(("blocks", "2"), ("enc_layers", "3"))``)
    and ``base``, arguments put before the sweep's common ones (a comparison's per-model
    flagfile, which the common ``--epochs`` then overrides); ``after``, arguments put after
    them and the settings (a comparison's per-model budget flags, which override the common
    ones); neither ``base`` nor ``after`` is in the name."""

    settings: tuple
    base: tuple = ()
    after: tuple = ()

    @property
    def name(self) -> str:
        """Directory name: ``blocks-2_enc_layers-3`` (in values, what is not a letter, digit,
        ``.``, ``_``, ``+`` or ``-`` becomes ``-``)."""
        return "_".join(f"{k}-{re.sub(r'[^A-Za-z0-9._+-]', '-', v)}" for k, v in self.settings)

    @property
    def label(self) -> str:
        """``blocks=2, enc_layers=3``: for tables and plots."""
        return ", ".join(f"{k}={v}" for k, v in self.settings)

    def args(self) -> list:
        """``["--blocks=2", "--enc_layers=3"]``."""
        return [f"--{k}={v}" for k, v in self.settings]


def parse_grid(text: str) -> list:
    """The cells of ``text`` (syntax in the module docstring), in order of first appearance.

    Args:
        text: str, e.g. ``"blocks=1,2;enc_layers=2 | blocks=2;enc_layers=1,3"``.

    Returns:
        list of :class:`Cell`; an empty ``text`` is one cell with no settings (the base run).

    Raises:
        ValueError: naming the part that is not ``name=v1,v2``, an empty value, or a name
            given twice in one product.
    """
    cells = {}
    for product in (text or "").split("|"):
        axes = []
        for part in filter(None, (p.strip() for p in product.split(";"))):
            name, sep, values = part.partition("=")
            name = name.strip().lstrip("-")
            values = [v.strip() for v in values.split(",")]
            if not sep or not _NAME.match(name) or "" in values:
                raise ValueError(
                    f"grid part {part!r} is not name=v1,v2,... (e.g. blocks=1,2,3); "
                    f"products are joined by ';', alternatives by '|'"
                )
            if name in dict(axes):
                raise ValueError(f"grid part {part!r}: {name} is given twice in one product")
            axes.append((name, values))
        for combo in itertools.product(*(values for _, values in axes)):
            cell = Cell(tuple(zip((name for name, _ in axes), combo)))
            cells.setdefault(cell, None)
    return list(cells) or [Cell(())]


def _finished(run_dir: Path, record_dir) -> bool:
    return (run_dir / "results.json").exists() or bool(
        record_dir and (record_dir / "results.json").exists()
    )


def _record(run_dir: Path, record_dir: Path):
    record_dir.mkdir(parents=True, exist_ok=True)
    for name in RECORD_FILES:
        if (run_dir / name).exists():
            shutil.copy2(run_dir / name, record_dir / name)


def _add_wall_time(run_dir: Path, seconds: float, cpu_seconds: float):
    path = run_dir / WALL_TIME_FILE
    old = json.loads(path.read_text()) if path.exists() else {}
    spans = [*old.get("spans", []), round(seconds, 1)]
    record = {"seconds": round(sum(spans), 1), "spans": spans}
    # CPU seconds (user + system) of each attempt's process tree: unlike wall time, not
    # inflated while the run waits (paused, or sharing cores with other work). Unknown for
    # an attempt recorded before they were kept.
    if len(old.get("cpu_spans", [])) == len(old.get("spans", [])):
        cpu_spans = [*old.get("cpu_spans", []), round(cpu_seconds, 1)]
        record.update(cpu_seconds=round(sum(cpu_spans), 1), cpu_spans=cpu_spans)
    # The run's own count over all its attempts, killed ones included up to their last
    # saved state (ReleaseRoutine's ``seconds`` / ``cpu_seconds``): the sweep sees only
    # the attempts that ended while it ran.
    from re2_tf import runs

    state_path = run_dir / runs.STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    if state.get("seconds"):
        record.update(run_seconds=state["seconds"], run_cpu_seconds=state.get("cpu_seconds"))
    path.write_text(json.dumps(record) + "\n")


def _attempts(directory: Path):
    """How many processes trained the run in ``directory``: 1 + the resumptions its
    ``train.log`` names (``None`` without a log)."""
    from re2_tf import runs

    log_path = directory / runs.LOG_FILE
    if not log_path.exists():
        return None
    return 1 + log_path.read_text().count(runs.RESTORED_MESSAGE)


def _run_times(directory: Path):
    """``(wall seconds, CPU seconds, complete)`` of the finished run recorded in
    ``directory`` (a time not recorded is ``None``).

    The run's own count (``run_seconds``, over every attempt) when its ``wall_time.json``
    has it; otherwise the sum of the attempts the sweep timed, with ``complete`` false when
    the run's ``train.log`` shows more attempts than were timed (an attempt killed with its
    sweep: the sum is then a lower bound)."""
    wall = directory / WALL_TIME_FILE
    times = json.loads(wall.read_text()) if wall.exists() else {}
    if times.get("run_seconds"):
        return times["run_seconds"], times.get("run_cpu_seconds"), True
    attempts = _attempts(directory)
    complete = attempts is None or attempts <= len(times.get("spans", []))
    return times.get("seconds"), times.get("cpu_seconds"), complete


def _run_counting_cpu(command, stderr):
    """Run ``command``; return ``(exit status, CPU seconds)``: user + system time of the
    process and the children it waited for (``os.wait4``'s resource usage)."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


#: Settings that name where a run is and how it reports, not what it computes: two runs that
#: differ only in these train the same weights.
NOT_COMPUTED = ("explicit", "run_dir", "progress", "log_per_samples")


def run_args(cell, train_args, threads=0):
    """``re2-train`` arguments of ``cell``'s runs, before ``--seed`` and ``--run_dir``: the
    cell's base, ``train_args``, the cell's settings, its ``after``, and
    ``--threads=<threads>`` unless ``threads`` is 0 or ``train_args`` set it (list of str)."""
    args = [*cell.base, *train_args, *cell.args(), *cell.after]
    if threads and not any(a.startswith("--threads=") for a in train_args):
        args.append(f"--threads={threads}")
    return args


def run_key(args, fingerprint=None):
    """What a ``re2-train <args>`` run computes: its :class:`re2_tf.TrainConfig` as a dict
    without :data:`NOT_COMPUTED` and without ``data_dir`` (where the data is), with
    ``data_fingerprint``: ``fingerprint``, the data's
    (:func:`re2_tf.runs.data_identity`, a sha256 hex str, or None when not known). Two runs
    with equal keys and a known fingerprint are the same run, wherever their data was."""
    import dataclasses

    from re2_tf.train_flags import config_from_args

    config = dataclasses.asdict(config_from_args([*args, "--run_dir=unused"]))
    key = {k: v for k, v in config.items() if k not in NOT_COMPUTED and k != "data_dir"}
    return {**key, "data_fingerprint": fingerprint}


def _data_fingerprint(args, cache):
    """The fingerprint of the data a ``re2-train <args>`` run reads
    (:func:`re2_tf.runs.data_identity`), each directory hashed once per ``cache`` dict;
    None when the directory holds no data (such a run is trained, and says what is
    missing)."""
    from re2_tf import runs
    from re2_tf.train_flags import config_from_args

    config = config_from_args([*args, "--run_dir=unused"])
    where = (str(config.resolved_data_dir.resolve()), runs.data_splits(config))
    if where not in cache:
        try:
            cache[where] = runs.data_identity(config)["fingerprint"]
        except FileNotFoundError:
            cache[where] = None
    return cache[where]


def _recorded_runs(reuse):
    """``[(run_key, record dir)]`` of every finished record (``.../seed<k>/results.json`` with
    its ``flags.txt``) under the ``reuse`` directories, in path order, keyed on the data
    fingerprint its ``results.json`` records (``data``); a record without one (its data
    unknown), or whose flags this version no longer reads, is left out."""
    from absl import flags

    found = []
    for root in reuse:
        for flags_file in sorted(Path(root).glob("**/seed*/flags.txt")):
            results_file = flags_file.parent / "results.json"
            if not results_file.exists():
                continue
            fingerprint = (json.loads(results_file.read_text()).get("data") or {}).get(
                "fingerprint"
            )
            if not fingerprint:
                continue
            try:
                key = run_key([f"--flagfile={flags_file}"], fingerprint)
            except (flags.Error, ValueError):
                continue
            found.append((key, flags_file.parent))
    return found


def run_sweep(
    train_args,
    cells,
    seeds,
    out,
    *,
    records=None,
    jobs=1,
    threads=0,
    reuse=(),
    python=sys.executable,
    log=print,
):
    """Train every cell x seed not yet finished, ``jobs`` ``re2-train`` processes at a time.

    Args:
        train_args: list of str, ``re2-train`` arguments common to every run (flagfiles
            expanded or not; ``--seed`` and ``--run_dir`` are set per run, after them).
        cells: list of :class:`Cell` (:func:`parse_grid`).
        seeds: iterable of int seeds.
        out: directory of the run directories (``<out>/<cell>/seed<k>``).
        records: optional directory of the records (module docstring), None for none.
        jobs: processes at a time (int >= 1).
        threads: ``--threads`` given to each run (0: TensorFlow's default, or
            ``cores // jobs`` when ``jobs > 1``); not set when ``train_args`` set it.
        reuse: directories of other sweeps' or comparisons' records; a run not yet recorded
            whose settings one of them holds already (same seed, every setting equal but
            :data:`NOT_COMPUTED`, and the same data: the fingerprint of the run's
            ``--data_dir`` equal to the one the record's ``results.json`` names, wherever
            either directory is; :func:`run_key`) is not trained: its record is copied, with
            ``reused_from.txt`` naming where from (needs ``records``). A record that names
            no fingerprint is not reused.
        python: the interpreter to run ``re2_tf.cli.train`` with.
        log: called with one line per started, finished or failed run.

    Returns:
        list of ``(cell, seed, status)``, status ``"done"`` (trained now), ``"kept"``
        (finished before), ``"reused"`` (recorded elsewhere, copied) or ``"failed: <last line
        of its stderr>"``.

    A run that fails does not stop the others; its stderr is in ``<run>.stderr``. Each run's
    times are in its ``wall_time.json``: ``seconds`` summed over the attempts this function
    saw end (``spans``), beside their CPU seconds (``cpu_seconds``: user + system time, which
    a pause or other work on the same cores does not inflate); and ``run_seconds`` /
    ``run_cpu_seconds``, the run's own count over all its attempts, an attempt killed with
    the sweep included up to its last saved state (see
    :class:`re2_tf.training.routine.ReleaseRoutine`). Summaries use the run's own count.
    """
    out, seeds = Path(out), list(seeds)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if not threads and jobs > 1:
        threads = max(1, (os.cpu_count() or 1) // jobs)
    todo, statuses = [], {}
    recorded = None  # the reuse directories' runs, read once when first needed
    fingerprints = {}  # data directory -> its fingerprint, hashed once
    for cell in cells:
        for seed in seeds:
            run_dir = out / cell.name / f"seed{seed}"
            record_dir = Path(records) / cell.name / f"seed{seed}" if records else None
            if _finished(run_dir, record_dir):
                if record_dir and not (record_dir / "results.json").exists():
                    _record(run_dir, record_dir)
                statuses[(cell, seed)] = "kept"
            elif reuse and record_dir and not run_dir.exists():
                if recorded is None:
                    recorded = _recorded_runs(reuse)
                args = [*run_args(cell, train_args, threads), f"--seed={seed}"]
                fingerprint = _data_fingerprint(args, fingerprints)
                key = run_key(args, fingerprint)
                source = next((path for k, path in recorded if fingerprint and k == key), None)
                if source is None:
                    todo.append((cell, seed, run_dir, record_dir))
                    continue
                _record(source, record_dir)
                (record_dir / "reused_from.txt").write_text(f"{source}\n")
                log(f"reused {cell.label or '(base)'} seed {seed}: {source}")
                statuses[(cell, seed)] = "reused"
            else:
                todo.append((cell, seed, run_dir, record_dir))

    def train(job):
        cell, seed, run_dir, record_dir = job
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        command = [python, "-m", "re2_tf.cli.train", *run_args(cell, train_args, threads)]
        command += [f"--seed={seed}", f"--run_dir={run_dir}", "--progress=false"]
        log(f"start {cell.label or '(base)'} seed {seed}: {run_dir}")
        started = time.perf_counter()
        stderr = run_dir.parent / f"seed{seed}.stderr"
        with open(stderr, "w") as err:
            returncode, cpu_seconds = _run_counting_cpu(command, err)
        if run_dir.exists():
            _add_wall_time(run_dir, time.perf_counter() - started, cpu_seconds)
        if returncode != 0 or not (run_dir / "results.json").exists():
            lines = [line for line in stderr.read_text().splitlines() if line.strip()]
            status = f"failed: {lines[-1] if lines else f'exit status {returncode}'}"
        else:
            status = "done"
            if record_dir:
                _record(run_dir, record_dir)
        log(f"{status} {cell.label or '(base)'} seed {seed}")
        return (cell, seed), status

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        statuses.update(pool.map(train, todo))
    return [(cell, seed, statuses[(cell, seed)]) for cell in cells for seed in seeds]


def _load(run_dir: Path, record_dir):
    for directory in filter(None, (record_dir, run_dir)):
        if (directory / "results.json").exists():
            result = json.loads((directory / "results.json").read_text())
            return result, *_run_times(directory)
    return None, None, None, True


def summarize_sweep(cells, seeds, out, *, records=None, columns=None):
    """Mean ± sample std over seeds of every metric of every cell, from the finished runs.

    Args:
        cells, seeds, out, records: as :func:`run_sweep` (a record is read before a run
            directory); ``out=None`` reads the records alone.
        columns: ``["<split>/<metric>", ...]`` to show in the table, in that order (default:
            every metric the runs recorded, in the order first met); the summary keeps them
            all.

    Returns:
        ``(markdown, summary)``: a table with one row per cell (``| cell | runs |
        <split>/<metric> ... | best update | wall time (min) | CPU time (min) |``, four
        decimals, ``mean ± std`` with std the sample standard deviation over seeds
        (``ddof=1``), ``—`` where fewer than two runs have the metric; the times are means
        over the runs that recorded them: wall time counts any wait, CPU time is user +
        system time of the run's processes; ``≥`` marks a mean that includes a lower bound,
        a run recorded before runs counted their own time whose log shows an attempt the
        sweep did not time) and ``{"cells": [{"cell", "settings", "seeds", "metrics":
        {"<split>/<metric>": {"mean", "std", "values"}}, "best_steps", "wall_seconds",
        "cpu_seconds", "times_complete"}]}`` (runs not finished are left out and counted in
        ``runs``; a time not recorded is ``None``; ``times_complete`` is false for a lower
        bound).

    Raises:
        ValueError: a ``columns`` entry that runs were found for but none recorded, naming it
            and the recorded ones.
    """
    from re2_tf import runs

    seeds = list(seeds)
    rows, keys = [], {}
    for cell in cells:
        found = []
        for seed in seeds:
            record_dir = Path(records) / cell.name / f"seed{seed}" if records else None
            run_dir = Path(out) / cell.name / f"seed{seed}" if out is not None else None
            result, seconds, cpu_seconds, complete = _load(run_dir, record_dir)
            if result is not None:
                found.append((seed, result, seconds, cpu_seconds, complete))
        entry = {
            "cell": cell.label,
            "settings": dict(cell.settings),
            "seeds": [seed for seed, *_ in found],
            "metrics": {},
            "best_steps": [r.get("best_step") for _, r, *_ in found],
            "wall_seconds": [s for _, _, s, _, _ in found],
            "cpu_seconds": [c for _, _, _, c, _ in found],
            "times_complete": [complete for *_, complete in found],
        }
        if found:
            _, summary = runs.summarize_results([r for _, r, *_ in found])
            for key, value in summary.items():
                entry["metrics"][key] = {k: value[k] for k in ("mean", "std", "values")}
                keys.setdefault(key, None)
        rows.append(entry)
    if columns is not None:
        unknown = [c for c in columns if c not in keys]
        if keys and unknown:
            raise ValueError(f"no run recorded {', '.join(unknown)}; recorded: {', '.join(keys)}")
        keys = dict.fromkeys(columns)
    header = ["cell", "runs", *keys, "best update", "wall time (min)", "CPU time (min)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for entry in rows:
        cells_text = [entry["cell"] or "(base)", f"{len(entry['seeds'])}/{len(seeds)}"]
        for key in keys:
            metric = entry["metrics"].get(key)
            if metric is None:
                cells_text.append("")
            elif metric["std"] is None:
                cells_text.append(f"{metric['mean']:.4f} ± —")
            else:
                cells_text.append(f"{metric['mean']:.4f} ± {metric['std']:.4f}")
        cells_text.append(", ".join(str(s) for s in entry["best_steps"]))
        for name in ("wall_seconds", "cpu_seconds"):
            known = [
                (s, complete)
                for s, complete in zip(entry[name], entry["times_complete"])
                if s is not None
            ]
            mean = sum(s for s, _ in known) / len(known) / 60 if known else None
            bound = "" if all(complete for _, complete in known) else "≥ "
            cells_text.append(f"{bound}{mean:.1f}" if known else "")
        lines.append("| " + " | ".join(cells_text) + " |")
    return "\n".join(lines), {"cells": rows}


def pyplot(what):
    """``matplotlib.pyplot`` on the Agg backend (the ``plot`` extra).

    Raises:
        ImportError: ``"<what> needs matplotlib: pip install 're2_tf[plot]'"``.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(f"{what} needs matplotlib: pip install 're2_tf[plot]'") from error
    return plt


def plot_summary(summary, metric, path):
    """A PNG of ``metric`` (``"test/acc"``) per cell: mean with error bars of one sample std
    over seeds (matplotlib, the ``plot`` extra). Cells are on the x axis in grid order.

    Raises:
        ImportError: saying to install ``re2_tf[plot]`` when matplotlib is missing.
        KeyError: when no cell has ``metric``.
    """
    plt = pyplot("the sweep's plot")
    points = [
        (entry["cell"] or "(base)", entry["metrics"][metric])
        for entry in summary["cells"]
        if metric in entry["metrics"]
    ]
    if not points:
        raise KeyError(f"no cell has the metric {metric!r}")
    labels = [label for label, _ in points]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(points) + 2), 3.6))
    ax.errorbar(
        range(len(points)),
        [m["mean"] for _, m in points],
        yerr=[m["std"] or 0.0 for _, m in points],
        fmt="o",
        capsize=4,
    )
    ax.set_xticks(range(len(points)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"{metric} (mean ± std over seeds)")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
