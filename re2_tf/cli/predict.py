r"""``re2-predict``: predict labels for text pairs with an export (a thin layer over
:class:`re2_tf.serving.predictor.Predictor`).

    re2-predict --export_dir=exports/snli --input=pairs.tsv > predictions.jsonl
    echo '{"text1": "A man sleeps.", "text2": "A person rests."}' | \
        re2-predict --export_dir=exports/snli --input=-
    python -m re2_tf.cli.predict ...                        # the same

``--input`` (a file, or ``-`` for stdin) holds TSV or JSON-lines pairs
(:func:`re2_tf.serving.predictor.read_pairs` describes both); the output is one JSON object
per input line, in input order, on stdout or in ``--output`` (its missing parent folders are
created)::

    {"label": "entailment", "probabilities": {"entailment": 0.91, ...}}

Every input line yields one output line, or the command stops before predicting anything
with one line on stderr, ``re2-predict: error: <input>:<line>: <reason>``, exit status 1. A
bad flag, a missing export or input file, an unwritable ``--output``, or an export that
needs TensorFlow Text when it is not installed ends it the same way. The number of pairs
truncated to the export's limits (``max_length`` tokens per text, and for BERT+MatchLSTM
``max_pair_length`` word pieces per packed pair; the export's ``truncation`` entry) is
reported on stderr.

Without ``--backend`` the command serves through the runtime the export recorded
(``serving_choice``: the fastest that agreed when ``re2-export`` measured the installed ones on
its CPU, :mod:`re2_tf.serving.serving_choice`), or its SavedModel / TFLite file.
``--backend=openvino|onnxruntime`` runs the export's ``serving_ids`` converted by
:mod:`re2_tf.serving.runtimes` (a SavedModel exported with ``--xla=false``; the converted file
is kept in ``<export_dir>/runtimes/``), tokenising in Python; a model the converter cannot
convert, or a runtime that is not installed, ends the command with one line naming the ops or
the extra to install.

Start-up: the command imports TensorFlow without Keras and loads the export's SavedModel
(:mod:`re2_tf.cli.startup`). An XLA export (the default of ``re2-export``) compiles once per
input shape; to reuse compiled shapes across calls, set
``TF_XLA_FLAGS=--tf_xla_persistent_cache_directory=<dir>`` in the environment (TensorFlow's
persistent XLA cache; the outputs are the same).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from absl import flags

from re2_tf.cli.common import run_command
from re2_tf.matcher import Matcher
from re2_tf.serving.predictor import MissingOpError, Predictor, read_pairs
from re2_tf.serving.runtimes import BACKENDS, ConversionError, MissingPackageError

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string(
        "export_dir", None, "Directory written by re2-export.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "input", "-", "TSV or JSON-lines file of pairs; '-' = stdin.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "input_format", "auto", ["auto", "tsv", "jsonl"], "Input format.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "output", "-", "Output JSON-lines file; '-' = stdout.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "tokenize",
        "auto",
        ["auto", "graph", "python"],
        "Where text is tokenised (see re2_tf.serving.predictor).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "batch_size", 64, "Pairs per model call.", lower_bound=1, flag_values=flag_values
    )
    flags.DEFINE_enum(
        "backend",
        None,
        list(BACKENDS),
        "Runtime (default: the one re2-export recorded as fastest on its CPU, else the "
        "export's format); openvino/onnxruntime convert an --xla=false "
        "SavedModel's serving_ids (re2_tf.serving.runtimes; pip install -e '.[openvino]' / "
        "'.[onnx]') and tokenise in Python; savedmodel_noxla / savedmodel_bf16: TensorFlow "
        "without XLA (the --xla=false SavedModel, float32 / bfloat16, an export's serving "
        "choice kept), savedmodel_bf16_xla: the --precision=bf16 XLA export it kept, "
        "tokenising in Python.",
        flag_values=flag_values,
    )
    flags.mark_flag_as_required("export_dir", flag_values=flag_values)


def main(argv):
    """Read ``--input``, predict every pair, write one JSON line per pair."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    source = "<stdin>" if FLAGS.input == "-" else FLAGS.input
    if FLAGS.input == "-":
        pairs = read_pairs(sys.stdin.buffer, source, FLAGS.input_format)
    else:
        with open(FLAGS.input, "rb") as f:
            pairs = read_pairs(f, source, FLAGS.input_format)
    try:
        predictor = Predictor(FLAGS.export_dir, FLAGS.tokenize, FLAGS.batch_size, FLAGS.backend)
    except (MissingOpError, MissingPackageError, ConversionError) as error:  # an installation
        raise OSError(str(error)) from error  # to complete, or a model a converter cannot take
    if FLAGS.output != "-":
        Path(FLAGS.output).parent.mkdir(parents=True, exist_ok=True)
    out = sys.stdout if FLAGS.output == "-" else open(FLAGS.output, "w", encoding="utf-8")
    try:
        records, truncated = Matcher.from_predictor(predictor)._records(pairs, digits=6)
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    # The export states its limits (re2_tf.serving.export writes "truncation"); exports made
    # before it did have one limit, max_length tokens per text.
    limits = predictor.config.get(
        "truncation", f"max_length={predictor.config['max_length']} tokens per text"
    )
    print(
        f"{source}: {len(records)} pairs predicted, {truncated} truncated to {limits}",
        file=sys.stderr,
    )
    return 0


def run(argv=None):
    """Console-script entry point (``re2-predict``)."""
    run_command(main, define_flags, program="re2-predict", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
