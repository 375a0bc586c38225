r"""``re2-evaluate``: score a run's best checkpoint on splits or any file (a thin layer over
:func:`re2_tf.runs.load_examples` and :func:`re2_tf.evaluation.evaluate_examples`, the
steps of :func:`re2_tf.inference.evaluate_run`).

    re2-evaluate --run_dir=checkpoints/sample-re2                 # dev and test
    re2-evaluate --run_dir=checkpoints/sample-re2 --splits=test
    re2-evaluate --run_dir=checkpoints/wikiqa-re2 \
        --file=WikiQA-test.txt --format=wikiqa_txt
    re2-evaluate --run_dir=checkpoints/wikiqa-re2 \
        --file=data/wikiqa/test.txt --format=processed      # ids from data/wikiqa/test.ids
    python -m re2_tf.cli.evaluate ...                         # the same

Prints every metric of the run's dataset (accuracy; F1 and ROC-AUC for two classes; MAP and
MRR over the filtered question set for WikiQA) and, with ``--output``, writes them as JSON.
The labels of ``--file`` must be class ids of the run; for WikiQA, a ``--file`` without
question ids (any format but ``wikiqa_txt``) takes them from its sibling ``.ids`` file (see
``re2_tf.data.datasets.load_file``). A missing run directory or file, or a bad line (named by
file and line), ends the command with one line ``re2-evaluate: error: <message>``, exit
status 1.
"""

from __future__ import annotations

import json
from pathlib import Path

from absl import flags

from re2_tf import runs
from re2_tf.cli.common import run_command
from re2_tf.data.datasets import FORMAT_TOKENIZERS
from re2_tf.evaluation import evaluate_examples, format_metrics
from re2_tf.runs import load_examples

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string(
        "run_dir", None, "Run directory written by re2-train.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "data_dir",
        None,
        "Prepared data directory (default: the run's --data_dir flag).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "splits",
        ["dev", "test"],
        "Splits of the prepared data directory to score.",
        flag_values=flag_values,
    )
    flags.DEFINE_string("file", None, "Score this file instead of splits.", flag_values=flag_values)
    flags.DEFINE_enum(
        "format",
        "processed",
        sorted(FORMAT_TOKENIZERS),
        "Format of --file.",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "batch_size", 256, "Pairs per prediction batch.", lower_bound=1, flag_values=flag_values
    )
    flags.DEFINE_string("output", None, "Write the metrics as JSON here.", flag_values=flag_values)
    flags.mark_flag_as_required("run_dir", flag_values=flag_values)


def main(argv):
    """Score each split (or ``--file``) and print one line of metrics per set."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")

    # Every set is read first: bad data stops the command before the model is loaded.
    names = [FLAGS.file] if FLAGS.file else FLAGS.splits
    sets = {
        name: load_examples(
            FLAGS.run_dir,
            Path(name) if FLAGS.file else name,
            fmt=FLAGS.format,
            data_dir=FLAGS.data_dir,
        )
        for name in names
    }
    featurizers = runs.load_featurizers(FLAGS.run_dir)
    network = runs.load_best_model(FLAGS.run_dir)
    results = {}
    for name, (spec, examples) in sets.items():
        results[name] = evaluate_examples(network, spec, examples, featurizers, FLAGS.batch_size)
        print(f"{name} ({len(examples)} pairs): {format_metrics(results[name])}")
    if FLAGS.output:
        Path(FLAGS.output).write_text(json.dumps(results, indent=2) + "\n")


def run(argv=None):
    """Console-script entry point (``re2-evaluate``)."""
    run_command(main, define_flags, program="re2-evaluate", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
