"""``python -m re2_lab.cli.runtimes``: every model's default export beside the same network in
TFLite, ONNX Runtime and OpenVINO, with the Table 5 protocol and the outputs' agreement
(:func:`re2_lab.runtimes.report`).

    python -m re2_lab.cli.runtimes --json_out=docs/runs/runtimes/runtimes.json

Needs the ``openvino`` and ``onnx`` extras.
"""

from __future__ import annotations

import sys

from absl import flags

from re2_tf.cli.common import run_command, write_record
from re2_tf.models.spec import model_names

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_list(
        "models",
        list(model_names()),
        "Models (each its first benchmark variant; default: every registered one).",
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "all_variants",
        False,
        "Time every benchmark variant of each model (RE2: 1, 2 and 3 blocks), not only its first.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer("batch", 8, "Pairs per timed batch.", flag_values=flag_values)
    flags.DEFINE_integer("length", 20, "Tokens per text.", flag_values=flag_values)
    flags.DEFINE_integer("batches", 100, "Timed batches.", flag_values=flag_values)
    flags.DEFINE_integer(
        "warmup", 10, "Untimed batches after the first call.", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "threads", 2, "Intra-op threads of every timed process.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "json_out", None, "Also write the record as JSON here.", flag_values=flag_values
    )


def main(argv):
    """Measure and print the runtimes table."""
    from re2_lab import runtimes  # lazy: flags are defined (and --help answered) without TensorFlow
    from re2_tf.serving.runtimes import MissingPackageError

    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
        record = runtimes.report(
            FLAGS.models,
            threads=FLAGS.threads,
            batch=FLAGS.batch,
            length=FLAGS.length,
            batches=FLAGS.batches,
            warmup=FLAGS.warmup,
            all_variants=FLAGS.all_variants,
            argv=sys.argv[1:],
        )
    except MissingPackageError as error:  # an optional runtime to install: one line
        raise OSError(str(error)) from error
    print(runtimes.markdown(record))
    if FLAGS.json_out:
        write_record(FLAGS.json_out, record)


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.runtimes``)."""
    run_command(
        main, define_flags, program="python -m re2_lab.cli.runtimes", doc=__doc__, argv=argv
    )


if __name__ == "__main__":
    run()
