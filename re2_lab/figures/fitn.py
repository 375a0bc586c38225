"""FITN's Figure 4 (Qi et al. 2022, §3.3.3, "Impact of the Inference Rounds"): accuracy against
the number of inference rounds, 1 to 5, drawn from the records of the sweep
``configs/fitn/figure4.flags`` (no trained model is loaded).

The paper plots Quora dev and test accuracy of single runs trained on Quora's 380k training
pairs with fastText vectors; the text reads the curve as rising with the rounds, more slowly as
they grow. Ours is the Quora learning check (train on the Quora dev file, select on the first
half of Quora test, score the second half) with random trainable embeddings, and each point is
the mean over the recorded seeds with an error bar of one sample standard deviation
(:func:`re2_lab.sweep.summarize_sweep`, the same figures as ``docs/fitn.md``'s table).
"dev" here is the selection half, where the best checkpoint is picked, so it is optimistic;
"test" is the held-out half.
"""

from __future__ import annotations

import dataclasses

from re2_lab.doc_tables import REPO, sweep_config
from re2_lab.figures.base import (
    FigureSet,
    FigureSweep,
    MissingRun,
    load_record,
    pyplot,
    register,
    write_figure,
)

__all__ = ["figure4"]

SWEEP = FigureSweep(
    key="fitn_figure4",
    flagfile="configs/fitn/figure4.flags",
    command="python -m re2_lab.cli.sweep --flagfile=configs/fitn/figure4.flags "
    "--data_dir=<Quora learning-check dir> --jobs=2",
    about="FITN on the Quora learning check (trained on the Quora dev file, random trainable "
    "embeddings, selected on the first half of Quora test, scored on the second half), not "
    "the paper's Quora model (380k training pairs, fastText).",
)

SPLITS = (("dev", "selection half (dev)"), ("test", "held-out half (test)"))


def _shown(path, root):
    """``path`` relative to ``root`` when inside it (captions name records as the repository
    does), else as given."""
    from pathlib import Path

    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def figure4(records, out_dir, flagfile=SWEEP.flagfile, root=REPO):
    """FITN Figure 4 from the sweep's records.

    Args:
        records: the sweep's records directory (``<cell>/seed<k>/results.json``,
            ``flags.txt``, ``train.log``; cells ``rounds-1`` ... ``rounds-5``).
        out_dir: where ``fitn_figure4.png`` and ``fitn_figure4.json`` are written.
        flagfile: the sweep flagfile (its ``--grid`` names the cells, ``--seeds`` their
            number), relative to ``root``.
        root: the checkout holding ``flagfile``.

    Returns:
        :class:`~re2_lab.figures.base.Figure`; its JSON has ``cells`` (per number of rounds:
        ``rounds``, ``seeds``, ``records`` and per split ``{"mean", "std", "values"}``, ``std``
        ``None`` for one seed) and ``runs`` (each record's seed, budget and test metrics).

    Raises:
        MissingRun: no cell has a record yet (the message names the sweep's command).
        ValueError: the records disagree on data or budget, or a cell is not ``rounds=<n>``.
    """
    from pathlib import Path

    from re2_lab import sweep
    from re2_lab.compare import format_metric

    grid, seeds, _ = sweep_config(flagfile, root)
    shown = _shown(records, root)
    cells = sweep.parse_grid(grid)
    for cell in cells:
        if {name for name, _ in cell.settings} != {"rounds"}:
            raise ValueError(f"{flagfile}: cell {cell.label!r} is not rounds=<n>")
    grid_rounds = [int(dict(cell.settings)["rounds"]) for cell in cells]
    _, summary = sweep.summarize_sweep(cells, range(1, seeds + 1), None, records=records)
    points, runs = [], []
    for cell, rounds, entry in zip(cells, grid_rounds, summary["cells"]):
        if not entry["seeds"]:
            continue
        paths = [Path(shown) / cell.name / f"seed{seed}" for seed in entry["seeds"]]
        for path in paths:
            record = load_record(Path(records) / path.relative_to(shown))
            record = dataclasses.replace(record, record=str(path))
            runs.append(
                {
                    "rounds": rounds,
                    "dataset": record.settings.get("dataset", ""),
                    **record.to_json(),
                }
            )
        points.append(
            {
                "rounds": rounds,
                "seeds": entry["seeds"],
                "records": [str(p) for p in paths],
                **{split: entry["metrics"][f"{split}/acc"] for split, _ in SPLITS},
            }
        )
    if not points:
        raise MissingRun(
            f"fitn: sweep {SWEEP.key!r} has no records in {shown}; run it with: {SWEEP.command}"
        )
    budgets = {(r["dataset"], r["epochs"], r["training_pairs"]) for r in runs}
    if len(budgets) != 1:
        raise ValueError(f"{records}: the records differ in data or budget: {sorted(budgets)}")
    _, epochs, pairs = budgets.pop()

    plt = pyplot()
    figure, ax = plt.subplots(figsize=(6.4, 4.4))
    for offset, (split, label) in zip((-0.06, 0.06), SPLITS):
        ax.errorbar(
            [p["rounds"] + offset for p in points],
            [p[split]["mean"] for p in points],
            yerr=[p[split]["std"] or 0.0 for p in points],
            fmt="o-",
            capsize=4,
            label=label,
        )
    counts = {p["rounds"]: len(p["seeds"]) for p in points}
    ax.set_xticks(grid_rounds, [f"{r}\n(n={counts.get(r, 0)})" for r in grid_rounds])
    ax.set_xlim(min(grid_rounds) - 0.5, max(grid_rounds) + 0.5)
    ax.set_xlabel("inference rounds (n: seeds recorded)")
    ax.set_ylabel("accuracy (mean ± sample std over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title("FITN Figure 4 on the Quora learning check", fontsize=10)
    figure.tight_layout()

    by_rounds = "; ".join(
        f"{p['rounds']}: {format_metric(p['test'])} ({len(p['seeds'])} seed"
        f"{'s' if len(p['seeds']) > 1 else ''})"
        for p in points
    )
    absent = [r for r in grid_rounds if r not in counts]
    caption = (
        f"FITN Figure 4: accuracy against the number of inference rounds, mean ± sample std "
        f"over the recorded seeds (n per point), on the selection half (dev, where the best "
        f"checkpoint is picked) and the held-out half (test) of Quora test. Held-out accuracy "
        f"by rounds: {by_rounds}."
        + (f" Rounds {', '.join(map(str, absent))}: no record yet." if absent else "")
        + f" Runs: {shown}/rounds-<n>/seed<k>, each {epochs} passes over {pairs:,} "
        f"training pairs. {SWEEP.about}"
    )
    data = {"flagfile": flagfile, "records": shown, "cells": points, "runs": runs}
    return write_figure(out_dir, "fitn_figure4", figure, data, caption)


def make(runs, out_dir):
    """Figure 4 from the ``fitn_figure4`` sweep's records."""
    try:
        return [figure4(runs[SWEEP.key], out_dir)]
    except MissingRun as error:
        return [str(error)]


SET = register(
    FigureSet(
        name="fitn",
        runs=(),
        sweeps=(SWEEP,),
        make=make,
        doc="FITN Figure 4 (accuracy against inference rounds, from its sweep's records)",
    )
)
