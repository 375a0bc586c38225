"""The papers' own figures that the docs and tests compare with, from one file.

``docs/paper_values.csv`` holds one value a line: ``paper`` (the paper's file name under
``../shared/papers`` without ``.md``), ``table`` (where in the paper), ``row``, ``metric``
(with its unit), ``value`` (as printed) and ``source``: a piece of one line of the paper's
text, with every run of whitespace written as one space (the papers' tables separate cells
with tabs), that holds the value. A gap between two paper figures is computed from this file,
never typed (``re2_lab/tests/test_paper_values.py`` checks each source against the paper).
"""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["PAPER_VALUES", "load", "value"]

#: The file of paper values.
PAPER_VALUES = Path(__file__).resolve().parents[1] / "docs" / "paper_values.csv"
COLUMNS = ["paper", "table", "row", "metric", "value", "source"]


def load(path=PAPER_VALUES):
    """The rows of the paper-values file, as ``[{column: str}]`` in file order.

    Raises:
        ValueError: naming the file, when its header is not ``paper,table,row,metric,value,
            source``.
    """
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != COLUMNS:
            raise ValueError(f"{path}: header {reader.fieldnames}, expected {COLUMNS}")
        return list(reader)


def value(paper, table, row, metric=None, path=PAPER_VALUES):
    """One paper figure as a float (the unit is the row's ``metric``).

    Args:
        paper: the paper's file stem, e.g. ``"bert_matchlstm_shao2019"``.
        table: e.g. ``"Table 1"``.
        row: the row's name as the file gives it, e.g. ``"-FHS"``.
        metric: the metric's name, or its start (``"WikiQA test MRR"``); None when the row
            has one value.

    Raises:
        KeyError: when no line, or more than one, matches.
    """
    found = [
        r
        for r in load(path)
        if (r["paper"], r["table"], r["row"]) == (paper, table, row)
        and (metric is None or r["metric"].startswith(metric))
    ]
    if len(found) != 1:
        raise KeyError(f"{len(found)} paper values for {(paper, table, row, metric)} in {path}")
    return float(found[0]["value"])
