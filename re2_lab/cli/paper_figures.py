"""``python -m re2_lab.cli.paper_figures``: the papers' analysis figures from recorded runs.


    python -m re2_lab.cli.paper_figures --out=docs/figures

writes every figure of every registered figure set (:mod:`re2_lab.figures`: RE2 Figures 2 and
3, DRCN's attentive-weight figures for DRCN and its residual-connection ablation, FITN Figure
4, Match-SRNN Figure 5) as ``<out>/<figure>.png`` with ``<out>/<figure>.json`` (its data and
caption, which names the run's record, data, budget and test metrics). Each run is a flag pair
``--<key>_run`` (the trained run directory) and ``--<key>_record`` (its record under
``docs/runs/``), defaults the recorded runs; a figure drawn from a sweep's records alone (FITN
Figure 4) has ``--<key>_records``, default its flagfile's ``--records`` (``--helpfull`` lists
them all). A figure whose run or records are absent is not made: it is listed on stderr with
the run directory and the command that trains it, and the exit status is 1 (the other figures
are still written).
"""

from __future__ import annotations

import sys

from absl import flags

from re2_lab.figures import FIGURE_SETS, paper_figures
from re2_tf.cli.common import run_command

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string("out", None, "Output directory of the figures.", flag_values=flag_values)
    for figure_set in FIGURE_SETS.values():
        for run in figure_set.runs:
            flags.DEFINE_string(
                f"{run.key}_run",
                run.run_dir,
                f"{figure_set.doc}: trained run directory.",
                flag_values=flag_values,
            )
            flags.DEFINE_string(
                f"{run.key}_record",
                run.record,
                f"the record of --{run.key}_run (results.json, flags.txt, train.log).",
                flag_values=flag_values,
            )
        for sweep in figure_set.sweeps:
            flags.DEFINE_string(
                f"{sweep.key}_records",
                None,
                f"{figure_set.doc}: the sweep's records directory (default: "
                f"the --records of {sweep.flagfile}).",
                flag_values=flag_values,
            )
    flags.mark_flag_as_required("out", flag_values=flag_values)


def main(argv):
    """Every registered figure set's figures from the flags' runs."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    runs = {
        run.key: (FLAGS[f"{run.key}_run"].value, FLAGS[f"{run.key}_record"].value)
        for figure_set in FIGURE_SETS.values()
        for run in figure_set.runs
    }
    sweeps = {
        sweep.key: FLAGS[f"{sweep.key}_records"].value
        for figure_set in FIGURE_SETS.values()
        for sweep in figure_set.sweeps
    }
    try:
        figures, missing = paper_figures(FLAGS.out, runs, sweeps=sweeps)
    except ImportError as error:
        raise OSError(f"{error}: install the plot extra (matplotlib)") from error
    for figure in figures:
        print(f"wrote {figure.png} and {figure.json.name}")
    for message in missing:
        print(f"not made: {message}", file=sys.stderr)
    return 1 if missing else 0


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.paper_figures``)."""
    run_command(
        main, define_flags, program="python -m re2_lab.cli.paper_figures", doc=__doc__, argv=argv
    )


if __name__ == "__main__":
    run()
