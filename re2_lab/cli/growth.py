"""``python -m re2_lab.cli.growth``: how every model's default export's latency and peak memory
grow with text length (10 to 400 words) and batch size (1 to 512), and the cost model fitted to
them (:mod:`re2_lab.growth`).

    python -m re2_lab.cli.growth --out=docs/runs/growth/growth.jsonl \\
        --plot=docs/figures/cost_growth.png

Resumable: the points already in ``--out`` are not timed again. Prints the fitted table.
"""

from __future__ import annotations

from absl import flags

from re2_tf.cli.common import run_command
from re2_tf.models.spec import model_names

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_list(
        "models",
        list(model_names()),
        "Models (each with all its benchmark variants; default: every registered one).",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "out", "docs/runs/growth/growth.jsonl", "The record (JSON lines).", flag_values=flag_values
    )
    flags.DEFINE_list(
        "lengths",
        ["10", "15", "25", "35", "50", "100", "200", "400"],
        "Words per text of the length sweep (batch 8).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "batches",
        ["1", "8", "64", "512"],
        "Pairs per batch of the batch sweep (20 words).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "threads", 2, "Intra-op threads of every timed process.", flag_values=flag_values
    )
    flags.DEFINE_string("plot", None, "Also draw the figure here (PNG).", flag_values=flag_values)
    flags.DEFINE_bool(
        "measure", True, "Time the missing points (false: only the table).", flag_values=flag_values
    )


def _integers(name, values):
    try:
        numbers = [int(v) for v in values]
    except ValueError as error:
        raise flags.Error(f"--{name}: whole numbers, got {','.join(values)}") from error
    if any(n < 1 for n in numbers):
        raise flags.Error(f"--{name}: each at least 1, got {','.join(values)}")
    return tuple(numbers)


def main(argv):
    """Time the missing points, print the fitted table, draw the figure if asked."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    lengths = _integers("lengths", FLAGS.lengths)
    batches = _integers("batches", FLAGS.batches)
    from re2_lab import growth  # lazy: flags are defined (and --help answered) without TensorFlow

    if FLAGS.measure:
        growth.measure(
            FLAGS.models, FLAGS.out, lengths=lengths, batches=batches, threads=FLAGS.threads
        )
    points = growth.read_points(FLAGS.out)
    if not points:
        raise OSError(f"{FLAGS.out}: no points recorded")
    print(growth.markdown(points))
    if FLAGS.plot:
        growth.plot(points, FLAGS.plot)


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.growth``)."""
    run_command(main, define_flags, program="python -m re2_lab.cli.growth", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
