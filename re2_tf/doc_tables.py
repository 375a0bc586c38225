"""Tables in the README and ``docs/`` generated from the committed run records.

A generated table sits between two HTML comments that Markdown does not show; the first names
what generates it::

    <!-- generated: compare docs/runs/compare -->
    | model | SNLI learning check acc (seeds) | ... |
    <!-- end generated -->

Kinds (paths relative to the repository root):

- ``compare <records>``: the five-model comparison's table,
  :func:`re2_tf.training.compare.report` over ``<records>`` (``docs/runs/compare``);
- ``sweep <flagfile>``: a sweep config's summary (``configs/re2/table7.flags``): its
  ``--grid``, ``--seeds`` and ``--records`` read from the flagfile, the table of
  :func:`re2_tf.training.sweep.summarize_sweep` over the records alone.

``re2-summarize --update_docs README.md docs/*.md`` rewrites every block from the records, and
``tests/test_recorded_runs.py`` checks that each block in the README and ``docs/`` is what the
records give today (so a table cannot go stale after a new record).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["BLOCK", "blocks", "generate", "sweep_config", "update"]

REPO = Path(__file__).resolve().parents[1]
#: One generated block: ``spec`` is what follows ``generated:``, ``body`` the table.
BLOCK = re.compile(
    r"<!-- generated: (?P<spec>[^\n]*?) -->\n(?P<body>.*?)<!-- end generated -->", re.S
)


def sweep_config(flagfile, root=REPO):
    """``(grid, seeds, records)`` of a sweep flagfile (``--grid=``, ``--seeds=``,
    ``--records=`` lines; ``#`` lines are comments).

    Raises:
        ValueError: naming the flagfile, when it lacks ``--grid`` or ``--records``.
    """
    values = {}
    for line in (Path(root) / flagfile).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("--") and "=" in line:
            name, value = line[2:].split("=", 1)
            values[name] = value
    missing = [n for n in ("grid", "records") if n not in values]
    if missing:
        raise ValueError(f"{flagfile}: no --{' or --'.join(missing)} line")
    return values["grid"], int(values.get("seeds", 1)), values["records"]


def generate(spec, root=REPO):
    """The Markdown table a block's ``spec`` names (module docstring), from records alone.

    Raises:
        ValueError: an unknown kind or a malformed spec.
    """
    kind, *args = spec.split()
    root = Path(root)
    if kind == "compare" and len(args) == 1:
        from re2_tf.training import compare

        table, _ = compare.report(root / args[0])
        return table
    if kind == "sweep" and len(args) == 1:
        from re2_tf.training import sweep

        grid, seeds, records = sweep_config(args[0], root)
        table, _ = sweep.summarize_sweep(
            sweep.parse_grid(grid), range(1, seeds + 1), None, records=root / records
        )
        return table
    raise ValueError(
        f"unknown generated table {spec!r}: expected 'compare <records>' or 'sweep <flagfile>'"
    )


def blocks(text):
    """``[(spec, body)]`` of every generated block in ``text``."""
    return [(m["spec"], m["body"]) for m in BLOCK.finditer(text)]


def update(path, root=REPO):
    """Rewrite every generated block of the Markdown file ``path`` from the records.

    Returns:
        int, how many blocks changed.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    changed = 0

    def replace(match):
        nonlocal changed
        body = generate(match["spec"], root) + "\n"
        changed += body != match["body"]
        return f"<!-- generated: {match['spec']} -->\n{body}<!-- end generated -->"

    new = BLOCK.sub(replace, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return changed
