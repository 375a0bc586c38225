"""The papers' analysis figures, made from recorded runs (``python -m
re2_lab.cli.paper_figures --out=docs/figures``; :mod:`re2_lab.cli.paper_figures`).

Each model's figures are a module here that registers a :class:`~re2_lab.figures.base.FigureSet`
(:data:`FIGURE_SETS`): :mod:`re2_lab.figures.re2` (RE2 Figures 2 and 3: occlusion sensitivity,
case study), :mod:`re2_lab.figures.drcn` (DRCN's attention-map figures for its two examples,
DRCN and its residual-connection ablation), :mod:`re2_lab.figures.fitn` (FITN Figure 4: accuracy
against the inference rounds, from its sweep's records) and :mod:`re2_lab.figures.match_srnn`
(Match-SRNN Figure 5: ``h_ij`` and the back-traced gate path on a WikiQA pair).
:func:`paper_figures` makes every figure whose run exists and reports the others.
"""

from __future__ import annotations

from pathlib import Path

from re2_lab.doc_tables import REPO, sweep_config
from re2_lab.figures.base import (
    FIGURE_SETS,
    Figure,
    FigureRun,
    FigureSet,
    FigureSweep,
    MissingRun,
    load_record,
)

__all__ = [
    "FIGURE_SETS",
    "Figure",
    "FigureRun",
    "FigureSet",
    "FigureSweep",
    "MissingRun",
    "paper_figures",
]


def _register_all():
    from re2_lab.figures import drcn, fitn, match_srnn, re2  # noqa: F401  (each registers its set)


def paper_figures(out_dir, runs=None, sets=None, sweeps=None):
    """Make every registered figure set's figures.

    Args:
        out_dir: directory of the PNGs and their ``.json`` (created).
        runs: ``{key: (run_dir, record_dir)}`` overriding a set's default
            :class:`~re2_lab.figures.base.FigureRun` directories.
        sets: names of the sets to make (default: all).
        sweeps: ``{key: records_dir}`` overriding a
            :class:`~re2_lab.figures.base.FigureSweep`'s records (default: its flagfile's
            ``--records``, in this checkout).

    Returns:
        ``(figures, missing)``: the :class:`~re2_lab.figures.base.Figure` s written and one
        message per figure not made, naming its absent run directory or record and the command
        that trains it.
    """
    _register_all()
    runs = dict(runs or {})
    figures, missing = [], []
    for name, figure_set in FIGURE_SETS.items():
        if sets is not None and name not in sets:
            continue
        resolved = {}
        for run in figure_set.runs:
            run_dir, record_dir = runs.get(run.key, (run.run_dir, run.record))
            try:
                record = load_record(record_dir)
            except MissingRun:
                record = None
            if record is not None and not (Path(run_dir) / "best.keras").exists():
                record = None
            resolved[run.key] = (run_dir, record)
        for sweep in figure_set.sweeps:
            records = (sweeps or {}).get(sweep.key)
            resolved[sweep.key] = Path(records or REPO / sweep_config(sweep.flagfile)[2])
        for item in figure_set.make(resolved, out_dir):
            (figures if isinstance(item, Figure) else missing).append(item)
    return figures, missing


_register_all()
