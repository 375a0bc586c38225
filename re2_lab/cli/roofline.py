"""``python -m re2_lab.cli.roofline``: this CPU's measured peaks, and every model's latency,
throughput and training speed beside its FLOP and dependency floors
(:func:`re2_lab.roofline.report`).

    python -m re2_lab.cli.roofline --json_out=docs/runs/roofline/roofline.json

Prints the Markdown table; ``--json_out`` writes the record the docs' tables are generated from
(:mod:`re2_lab.doc_tables`).
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
        "Models (each with all its benchmark variants; default: every registered one).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "exports",
        ["savedmodel_fp32"],
        "Exports timed: savedmodel_fp32 (the default export, XLA), savedmodel_fp32_keras (RE2 "
        "without its folded forward pass), savedmodel_fp32_noxla, savedmodel_bf16, tflite_fp32, "
        "tflite_int8.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer("batch", 8, "Pairs per timed batch.", flag_values=flag_values)
    flags.DEFINE_integer("length", 20, "Tokens per text.", flag_values=flag_values)
    flags.DEFINE_integer("batches", 100, "Timed batches.", flag_values=flag_values)
    flags.DEFINE_integer(
        "throughput_batch", 512, "Batch size for throughput (0 = skip).", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "threads", 2, "Intra-op threads of every timed process.", flag_values=flag_values
    )
    flags.DEFINE_bool(
        "training",
        True,
        "Also time training (one process) against its floor.",
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "training_jit",
        False,
        "Also time each model's training XLA-compiled (--jit_compile --nodeterministic).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "profile",
        0,
        "If > 0, also profile this many calls of each SavedModel export at the "
        "timed shape (tf.profiler, fresh process): where the time goes, by op kind.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "json_out", None, "Also write the record as JSON here.", flag_values=flag_values
    )


def main(argv):
    """Measure and print the roofline table."""
    from re2_lab import roofline  # lazy: flags are defined (and --help answered) without TensorFlow

    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    record = roofline.report(
        FLAGS.models,
        exports=FLAGS.exports,
        threads=FLAGS.threads,
        batch=FLAGS.batch,
        length=FLAGS.length,
        throughput_batch=FLAGS.throughput_batch,
        batches=FLAGS.batches,
        training=FLAGS.training,
        training_jit=FLAGS.training_jit,
        profile_calls=FLAGS.profile,
        argv=sys.argv[1:],
    )
    print(roofline.markdown(record))
    if FLAGS.json_out:
        write_record(FLAGS.json_out, record)


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.roofline``)."""
    run_command(
        main, define_flags, program="python -m re2_lab.cli.roofline", doc=__doc__, argv=argv
    )


if __name__ == "__main__":
    run()
