r"""``python -m re2_lab.cli.sweep``: train a
grid of settings x seeds, each run an ordinary ``re2-train`` run, and summarise it as mean ±
sample std over seeds.

    python -m re2_lab.cli.sweep --flagfile=configs/re2/snli_learning_check.flags \
        --data_dir=<dir> --grid="blocks=1,2,3;enc_layers=1,2" --seeds=3 --jobs=2 \
        --out=checkpoints/sweeps/re2-blocks --records=docs/runs/re2-blocks
    python -m re2_lab.cli.sweep --flagfile=configs/re2/table7.flags --data_dir=<dir>  # a sweep

Every flag that is not the sweep's own (below) goes to each run as it is: ``--model``,
``--flagfile``, ``--epochs``, ``--data_dir``, any hyper-parameter. A flagfile may hold the
sweep's flags too (``configs/re2/table7.flags``).

Grid syntax (``--grid``): ``name=v1,v2;name2=w1,w2`` is the product of the value lists;
``|`` joins products into one grid, a cell listed twice counted once. RE2's Table 7 (blocks
1-5 at 2 encoder layers, encoder layers 1-5 at 2 blocks) is
``blocks=1,2,3,4,5;enc_layers=2 | blocks=2;enc_layers=1,2,3,4,5``: nine cells. Names are
``re2-train`` flags, values their command-line spelling (``enc_in=false``); every cell's
settings are checked before anything trains.

Run ``k`` of a cell is ``<out>/<cell>/seed<k>``; the same command again resumes: a finished
run (its ``results.json``, or its record under ``--records``) is never retrained, and an
unfinished one resumes from its last backup. ``--jobs=N`` trains N runs at a time, each with
``--threads=<cores / N>`` unless you give ``--threads``. ``--reuse=<records dirs>`` copies a
run that another sweep or comparison already recorded with the same seed and settings instead
of training it again (RE2's Table 7 cell of 3 blocks is the comparison's RE2 run). Written to
``--records`` (else
``--out``): ``summary.md``, ``summary.json`` and ``summary.png`` (the ``--metric`` per cell with
error bars of one std over seeds; needs the ``plot`` extra). Exit status 1 when a run failed
(its stderr is ``<out>/<cell>/seed<k>.stderr``); the others still train.
"""

from __future__ import annotations

import json
from pathlib import Path

from absl import flags

from re2_tf.cli.common import run_command

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS
OWN = (
    "grid", "seeds", "jobs", "out", "records", "reuse", "metric", "train", "verbose", "helpfull"
)  # fmt: skip


def define_flags(flag_values=FLAGS):
    """The sweep's own flags (defined when it runs, never at import)."""
    flags.DEFINE_string(
        "grid",
        "",
        "Settings to sweep: name=v1,v2;name2=w1 is a product, '|' joins products "
        "(e.g. 'blocks=1,2,3,4,5;enc_layers=2 | blocks=2;enc_layers=1,2,3,4,5'). "
        "Empty: one cell, the base run.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "seeds", 1, "Seeds per cell: 1..N.", lower_bound=1, flag_values=flag_values
    )
    flags.DEFINE_integer("jobs", 1, "Runs at a time.", lower_bound=1, flag_values=flag_values)
    flags.DEFINE_string("out", None, "Directory of the run directories.", flag_values=flag_values)
    flags.DEFINE_string(
        "records",
        None,
        "Directory that keeps each finished run's results.json, train.log, flags.txt and "
        "wall_time.json, and the summary (a run recorded here is never retrained).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "reuse",
        [],
        "Record directories of other sweeps or comparisons: a run they already hold (same "
        "seed and settings) is copied into --records instead of trained.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "metric",
        None,
        "<split>/<metric> of the plot (default: the first test-split metric).",
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "train", True, "Train what is missing (else only summarise).", flag_values=flag_values
    )


def _name(arg):
    name = arg[2:].split("=", 1)[0] if arg.startswith("--") else ""
    return name[2:] if name.startswith("no") and name[2:] in OWN else name


def parse(argv, flag_values=FLAGS):
    """absl parser: expand flagfiles, parse the sweep's own flags, and return
    ``[program, *the runs' arguments]`` (every other argument, in order)."""
    args = flag_values.read_flags_from_files(list(argv[1:]), force_gnu=False)
    own = [a for a in args if _name(a) in OWN]
    flag_values([argv[0], *own])
    return [argv[0], *(a for a in args if _name(a) not in OWN)]


def main(argv):
    """Check every cell's settings, train what is missing, write and print the summary."""
    from re2_lab import sweep
    from re2_tf.cli.train import config_from_args

    if not FLAGS.out:
        raise flags.Error("--out: give the directory of the sweep's run directories")
    train_args = argv[1:]
    cells = sweep.parse_grid(FLAGS.grid)
    for cell in cells:
        try:
            config_from_args([*train_args, *cell.args(), "--run_dir=unused"])
        except (flags.Error, ValueError) as error:
            raise ValueError(f"cell {cell.label or '(base)'}: {error}") from None
    seeds = range(1, FLAGS.seeds + 1)
    failed = []
    if FLAGS.train:
        statuses = sweep.run_sweep(
            train_args,
            cells,
            seeds,
            FLAGS.out,
            records=FLAGS.records,
            jobs=FLAGS.jobs,
            reuse=FLAGS.reuse,
        )
        failed = [(c, s, st) for c, s, st in statuses if st.startswith("failed")]
    target = Path(FLAGS.records or FLAGS.out)
    target.mkdir(parents=True, exist_ok=True)
    table, summary = sweep.summarize_sweep(cells, seeds, FLAGS.out, records=FLAGS.records)
    summary["grid"], summary["train_args"] = FLAGS.grid, train_args
    (target / "summary.md").write_text(table + "\n")
    (target / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table)
    metrics = [k for entry in summary["cells"] for k in entry["metrics"]]
    metric = FLAGS.metric or next((k for k in metrics if k.startswith("test")), None)
    if metric:
        try:
            sweep.plot_summary(summary, metric, target / "summary.png")
            print(f"plot of {metric}: {target / 'summary.png'}")
        except ImportError as error:
            print(f"no plot: {error}")
    for cell, seed, status in failed:
        print(f"{cell.label or '(base)'} seed {seed} {status}")
    return 1 if failed else 0


def run(argv=None):
    """Console-script entry point (``python -m re2_lab.cli.sweep``)."""
    run_command(
        main,
        define_flags,
        program="python -m re2_lab.cli.sweep",
        doc=__doc__,
        argv=argv,
        flags_parser=parse,
    )


if __name__ == "__main__":
    run()
