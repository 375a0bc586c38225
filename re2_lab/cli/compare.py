r"""``python -m re2_lab.cli.compare``: the
five models on the same data and passes, one task at a time, then one table.

    python -m re2_lab.cli.compare --task=snli_check --data_dir=<SNLI learning-check dir> --jobs=2
    python -m re2_lab.cli.compare --task=wikiqa --data_dir=<prepared wikiqa>
    python -m re2_lab.cli.compare --measure --snli_dir=<SNLI learning-check dir>   # speed, memory
    python -m re2_lab.cli.compare                                                 # the table only

Tasks: ``snli_check`` (train on the SNLI dev file, select on half of SNLI test, score the other
half; 3 seeds), ``quora_check`` (the same with Quora's files; 1 seed), ``wikiqa`` (MAP and MRR
as trec_eval; 1 seed, cut from 3 for every model alike to fit the CPU budget), ``trecqa``
(clean dev/test; 1 seed). Each model trains with its own recipe
(``configs/<model>/<task>.flags`` or its preset for the dataset); the same ``--data_dir``,
``--epochs`` (5), ``--eval_per_samples`` (2,560) and ``--embeddings=`` for all
(:mod:`re2_lab.compare`), which do not make the budgets equal: what each run had (updates,
pairs or triples seen, dev evaluations) is read from its ``train.log``
(:func:`re2_lab.compare.budget_report`) and written beside the table. A comparison is a
sweep over ``--model`` (:mod:`re2_lab.sweep`): run ``k`` of a model is
``<out>/<task>/model-<m>/seed<k>``, its record ``<records>/<task>/model-<m>/seed<k>``; the
same command resumes and a recorded run is never retrained. ``--jobs=N`` trains N runs at a
time (``--threads=<cores / N>`` each unless ``--threads`` is given; two commands side by side
can each take ``--jobs=1 --threads=1``).

Writes ``<records>/comparison.md`` (the table, then the budget table and its note),
``comparison.json`` (with every run's budget under ``"budgets"``) and, with the plot extra,
``comparison.png`` (the SNLI check's held-out accuracy against latency, one point per model),
for every model with records and those of ``--models``.
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
    from re2_lab.compare import TASKS, model_names

    flags.DEFINE_enum(
        "task", None, list(TASKS), "Task to train (none: only the table).", flag_values=flag_values
    )
    flags.DEFINE_string("data_dir", None, "The task's data directory.", flag_values=flag_values)
    flags.DEFINE_list(
        "models",
        list(model_names()),
        "Models to train or measure; the table shows them and every model with records.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "seeds",
        0,
        "Seeds per model (0: the task's: 3 or 1).",
        lower_bound=0,
        flag_values=flag_values,
    )
    flags.DEFINE_integer("epochs", 5, "Passes over the training data.", flag_values=flag_values)
    flags.DEFINE_integer(
        "eval_per_samples", 2560, "Evaluate every this many samples.", flag_values=flag_values
    )
    flags.DEFINE_integer("jobs", 1, "Runs at a time.", lower_bound=1, flag_values=flag_values)
    flags.DEFINE_integer(
        "threads",
        0,
        "Intra-op threads of each run (0: cores / --jobs, or TensorFlow's default at one job).",
        lower_bound=0,
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "out", "checkpoints/compare", "Directory of the run directories.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "records",
        "docs/runs/compare",
        "Directory of the records and table.",
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "measure",
        False,
        "Measure latency, serving and training speed, memory.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "snli_dir", None, "SNLI learning-check directory for --measure.", flag_values=flag_values
    )


def main(argv):
    """Train the task's missing runs, measure if asked, write and print the table."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    from re2_lab import compare, sweep

    records = Path(FLAGS.records)
    failed = []
    if FLAGS.task:
        if not FLAGS.data_dir:
            raise flags.Error("--data_dir: the task's data directory")
        cells = compare.cells(
            FLAGS.task, FLAGS.models, data_dir=FLAGS.data_dir, epochs=FLAGS.epochs
        )
        seeds = range(1, (FLAGS.seeds or compare.TASKS[FLAGS.task].seeds) + 1)
        args = compare.common_args(
            FLAGS.data_dir, epochs=FLAGS.epochs, eval_per_samples=FLAGS.eval_per_samples
        )
        statuses = sweep.run_sweep(
            args,
            cells,
            seeds,
            Path(FLAGS.out) / FLAGS.task,
            records=records / FLAGS.task,
            jobs=FLAGS.jobs,
            threads=FLAGS.threads,
        )
        failed = [(c, s, st) for c, s, st in statuses if st.startswith("failed")]
    if FLAGS.measure:
        if not FLAGS.snli_dir:
            raise flags.Error("--snli_dir: the SNLI learning-check directory (training speed)")
        compare.measure(FLAGS.models, records, FLAGS.snli_dir)
    records.mkdir(parents=True, exist_ok=True)
    shown = compare.shown_models(records, FLAGS.models)
    table, summary = compare.report(records, shown)
    budget, _ = compare.budget_report(records, shown)
    (records / "comparison.md").write_text(table + "\n\n" + budget + "\n")
    (records / "comparison.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table + "\n\n" + budget)
    try:
        compare.plot(summary, "snli_check", "test/acc", records / "comparison.png")
    except (ImportError, KeyError) as error:
        print(f"no plot: {error}")
    for cell, seed, status in failed:
        print(f"{cell.label} seed {seed} {status}")
    return 1 if failed else 0


def run(argv=None):
    """Console-script entry point (``python -m re2_lab.cli.compare``)."""
    run_command(main, define_flags, program="python -m re2_lab.cli.compare", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
