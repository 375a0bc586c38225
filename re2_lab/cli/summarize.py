r"""``python -m re2_lab.cli.summarize``: mean ± std over seeds from finished runs,
wherever they were trained (a
thin layer over :func:`re2_lab.results.collect` and :func:`re2_tf.runs.summarize_results`).

    python -m re2_lab.cli.summarize checkpoints/wikiqa-re2                 # a --repeats=3 run
    python -m re2_lab.cli.summarize runs/a/seed1 runs/b/seed2 runs/c/seed3  # runs trained apart
    python -m re2_lab.cli.summarize docs/runs/bert_matchlstm-wikiqa/bert    # recorded results.json
    python -m re2_lab.cli.summarize ...                    # the same
    python -m re2_lab.cli.summarize --update_docs=README.md,docs/re2.md  # the pages' tables

Each argument is a run directory (its ``results.json``), the directory of a ``--repeats``
run (every ``seed<k>/results.json`` under it), or a file in ``results.json`` format. Prints
the same Markdown table as ``re2-train --repeats`` (sample standard deviation, ``runs`` = how
many runs have that metric) and, with ``--output``, writes the summary as JSON. Seeds trained
in separate processes, sessions or machines can so be reported together; a seed given twice
is an error, since it would count one run twice. A missing result or a repeated seed ends the
command with one line ``python -m re2_lab.cli.summarize: error: <message>``, exit status 1.

``--update_docs`` rewrites every table of the named Markdown files that is marked as
generated from records (``<!-- generated: ... -->``, :mod:`re2_lab.doc_tables`), and prints how
many changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from absl import flags

from re2_tf.cli.common import run_command

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string("output", None, "Write the summary as JSON here.", flag_values=flag_values)
    flags.DEFINE_list(
        "update_docs",
        [],
        "Markdown files whose generated tables to rewrite from the records.",
        flag_values=flag_values,
    )


def main(argv):
    """Print the table of the runs named by the arguments."""
    from re2_lab.results import collect
    from re2_tf import runs

    if FLAGS.update_docs:
        from re2_lab import doc_tables

        for path in FLAGS.update_docs:
            changed = doc_tables.update(path)
            print(f"{path}: {changed} generated table{'s' if changed != 1 else ''} changed")
        if len(argv) < 2:
            return 0
    if len(argv) < 2:
        raise flags.Error("give run directories or results.json files")
    results = collect(argv[1:])
    table, summary = runs.summarize_results(results)
    seeds = ", ".join(str(r.get("seed")) for r in results)
    print(f"{len(results)} run{'s' if len(results) != 1 else ''} (seeds {seeds}):\n{table}")
    if FLAGS.output:
        Path(FLAGS.output).write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def run(argv=None):
    """Console-script entry point (``python -m re2_lab.cli.summarize``)."""
    run_command(
        main, define_flags, program="python -m re2_lab.cli.summarize", doc=__doc__, argv=argv
    )


if __name__ == "__main__":
    run()
