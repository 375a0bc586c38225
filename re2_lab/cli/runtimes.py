"""``python -m re2_lab.cli.runtimes``: every model's default path (what ``re2-export`` chooses
and ``re2-predict`` serves) first, beside the same network as a SavedModel with and without
XLA, in TFLite, ONNX Runtime and OpenVINO, at Table 5's shape and at batch 512, with the
model's floors and the outputs' agreement (:func:`re2_lab.runtimes.report`).

    python -m re2_lab.cli.runtimes --all_variants --json_out=docs/runs/runtimes/runtimes.json

The record is written after each model; run again with the same ``--json_out`` and settings
and the models already in it are kept (a killed run continues). Needs the ``openvino`` and
``onnx`` extras.
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
    flags.DEFINE_list(
        "shapes",
        ["8x20", "512x20"],
        "Shapes timed, <batch>x<words per text>.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "batches",
        100,
        "Timed batches at batch <= 64 (batches // 20, at least 5, above).",
        flag_values=flag_values,
    )
    flags.DEFINE_enum(
        "inputs",
        "drawn",
        ["drawn", "fixed"],
        "What each timing process is fed: drawn, fresh draws of the Table 5 inputs as "
        "re2-bench and the serving choice time them (a packed-pair model's first 4 batches "
        "cycled); fixed, the first 4 batches cycled for every model (to continue a record "
        "made so).",
        flag_values=flag_values,
    )
    flags.DEFINE_enum(
        "figure",
        "median",
        ["median", "least"],
        "A path's figure from its rounds' medians: their median, as the serving choice makes "
        "a candidate's; least, the least of them (to continue a record made so).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "threads", 2, "Intra-op threads of every timed process.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "json_out", None, "Also write the record as JSON here.", flag_values=flag_values
    )
    flags.DEFINE_list(
        "redo",
        [],
        "Variants of the --json_out record measured again, each in place of its own rows.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "redo_reason",
        None,
        "Why --redo's variants are measured again (recorded with them, shown in the header).",
        flag_values=flag_values,
    )


def main(argv):
    """Measure and print the runtimes table."""
    from re2_lab import runtimes  # lazy: flags are defined (and --help answered) without TensorFlow
    from re2_tf.serving.runtimes import MissingPackageError

    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
        shapes = [tuple(int(x) for x in s.split("x")) for s in FLAGS.shapes]
        if any(len(s) != 2 or min(s) < 1 for s in shapes):
            raise ValueError
    except ValueError:
        raise flags.Error(f"--shapes: expected <batch>x<length>, got {FLAGS.shapes}") from None
    resume = runtimes.load(FLAGS.json_out) if FLAGS.json_out else None
    try:
        record = runtimes.report(
            FLAGS.models,
            threads=FLAGS.threads,
            shapes=shapes,
            batches=FLAGS.batches,
            all_variants=FLAGS.all_variants,
            resume=resume,
            redo=FLAGS.redo,
            redo_reason=FLAGS.redo_reason,
            inputs=FLAGS.inputs,
            figure=f"{FLAGS.figure} of rounds",
            argv=sys.argv[1:],
            save=(lambda r: write_record(FLAGS.json_out, r)) if FLAGS.json_out else None,
        )
    except MissingPackageError as error:  # an optional runtime to install: one line
        raise OSError(str(error)) from error
    print(runtimes.table(record))
    if FLAGS.json_out:
        write_record(FLAGS.json_out, record)


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.runtimes``)."""
    run_command(
        main, define_flags, program="python -m re2_lab.cli.runtimes", doc=__doc__, argv=argv
    )


if __name__ == "__main__":
    run()
