r"""``re2-export``: export a trained run as a SavedModel or a TFLite file (a thin layer over
:func:`re2_tf.serving.run_export.export_run`).

    re2-export --run_dir=checkpoints/snli --export_dir=exports/snli   # --precision=auto
    re2-export --run_dir=... --export_dir=... --precision=measure  # time fp32 against bf16
    re2-export --run_dir=... --export_dir=... --precision=fp32
    re2-export --run_dir=... --export_dir=... --format=tflite --precision=int8
    re2-export --run_dir=... --export_dir=... --serving=savedmodel  # measure no other runtime
    python -m re2_tf.cli.export ...                        # the same

Prints the export directory, and on stderr the precision ``--precision=auto`` (the default:
from the CPU's units, building nothing else) or ``--precision=measure`` (exports and times
both) chose and why (:mod:`re2_tf.serving.auto_precision`), and the runtime ``re2-predict``
will serve it through: ``--serving=auto`` (the default) times the SavedModel against
TensorFlow without XLA, a bfloat16 SavedModel of the same weights, LiteRT and the other
installed CPU runtimes (OpenVINO, ONNX Runtime) and keeps the fastest whose labels agree on the
run's dev pairs (:mod:`re2_tf.serving.serving_choice`). The export's signatures, assets
and errors are described in :mod:`re2_tf.serving.export`. A missing run directory or an
unsupported format/precision ends the command with one line ``re2-export: error: <message>``
(exit status 1).
"""

from __future__ import annotations

import json
import sys

import tensorflow as tf
from absl import flags, logging

from re2_tf.cli.common import run_command
from re2_tf.data.text import IN_GRAPH_TOKENIZERS
from re2_tf.serving.export import DEFAULT_LENGTH_BUCKETS, DEFAULT_MAX_LENGTH, EXPORT_CONFIG_FILE
from re2_tf.serving.run_export import export_run

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string(
        "run_dir",
        None,
        "Run directory (config.json, vocab.txt, best.keras).",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "export_dir", None, "Output directory (replaced if it exists).", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "format", "savedmodel", ["savedmodel", "tflite"], "Export format.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "precision",
        "auto",
        ["auto", "measure", "fp32", "bf16", "int8"],
        "auto: chosen from what is known without measuring (fp32; the reason names the CPU's "
        "bf16 units); measure: export fp32 and bf16, time both on this CPU and keep bf16 only "
        "if it is faster with the same labels on the run's dev pairs (slow: several exports; "
        "re2_tf.serving.auto_precision); fp32; bf16 (savedmodel) or int8 dynamic-range "
        "quantisation (tflite).",
        flag_values=flag_values,
    )
    flags.DEFINE_enum(
        "serving",
        "auto",
        ["auto", "savedmodel"],
        "The runtime the export is served by (a SavedModel export): auto times the SavedModel "
        "against TensorFlow without XLA, a bfloat16 SavedModel (bfloat16 units), LiteRT and "
        "every other installed CPU runtime (OpenVINO f32/bf16, ONNX Runtime) and keeps the "
        "fastest whose labels agree on the run's dev pairs (nothing to time without them; "
        "re2_tf.serving.serving_choice); savedmodel: TensorFlow, nothing measured.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "tokenizer",
        None,
        "In-graph tokeniser (default: the run's): " + ", ".join(sorted(IN_GRAPH_TOKENIZERS)),
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "max_length",
        DEFAULT_MAX_LENGTH,
        "Tokens kept per text; longer texts are truncated.",
        lower_bound=1,
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "length_buckets",
        [str(b) for b in DEFAULT_LENGTH_BUCKETS],
        "Lengths XLA inputs are padded to (max_length is always one).",
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "xla", True, "Save the model function XLA-compiled (jit_compile).", flag_values=flag_values
    )
    flags.mark_flags_as_required(["run_dir", "export_dir"], flag_values=flag_values)


def main(argv):
    """Export ``--run_dir`` to ``--export_dir`` and print the directory."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
        buckets = [int(b) for b in FLAGS.length_buckets]
    except ValueError:
        raise flags.Error(
            f"--length_buckets: expected integers, got {','.join(FLAGS.length_buckets)}"
        ) from None

    logging.set_verbosity(logging.WARNING)  # SavedModel writing logs every asset at INFO
    tf.get_logger().setLevel("ERROR")
    kwargs = dict(
        fmt=FLAGS.format,
        precision=FLAGS.precision,
        serving=FLAGS.serving,
        max_length=FLAGS.max_length,
        length_buckets=buckets,
        xla=FLAGS.xla,
    )
    if FLAGS.tokenizer:
        kwargs["tokenizer"] = FLAGS.tokenizer
    export_dir = export_run(FLAGS.run_dir, FLAGS.export_dir, **kwargs)
    config = json.loads((export_dir / "assets" / EXPORT_CONFIG_FILE).read_text())
    choice = config.get("precision_choice")
    if choice:
        how = "measured" if choice.get("measured") else "not measured"
        print(f"precision {choice['chosen']} ({how}): {choice['reason']}", file=sys.stderr)
    choice = config.get("serving_choice")
    if choice:
        how = "measured" if choice.get("measured") else "not measured"
        print(
            f"serving {choice['backend']} {choice['precision']} ({how}): {choice['reason']}",
            file=sys.stderr,
        )
    print(export_dir)


def run(argv=None):
    """Console-script entry point (``re2-export``)."""
    run_command(main, define_flags, program="re2-export", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
