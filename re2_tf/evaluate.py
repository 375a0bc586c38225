r"""Score a run's best checkpoint on a split or any file.

    python -m re2_tf.evaluate --run_dir=checkpoints/sample-re2                 # dev and test
    python -m re2_tf.evaluate --run_dir=checkpoints/sample-re2 --splits=test
    python -m re2_tf.evaluate --run_dir=checkpoints/wikiqa-re2 \
        --file=WikiQA-test.txt --format=wikiqa_txt
    python -m re2_tf.evaluate --run_dir=checkpoints/wikiqa-re2 \
        --file=data/wikiqa/test.txt --format=processed      # ids from data/wikiqa/test.ids

Prints every metric of the run's dataset (accuracy; F1 and ROC-AUC for two classes; MAP and
MRR over the filtered question set for WikiQA) and, with ``--output``, writes them as JSON.
The labels of ``--file`` must be class ids of the run (an error names the file and line of
any other); for WikiQA, a ``--file`` without question ids (any format but ``wikiqa_txt``)
takes them from its sibling ``.ids`` file (see ``re2_tf.data.datasets.load_file``).
"""

import dataclasses
import json
import sys
from pathlib import Path

from absl import app, flags

import re2_tf  # noqa: F401  (quiet TensorFlow import)
from re2_tf import runs
from re2_tf.data import datasets

from re2_tf.evaluation import evaluate, format_metrics

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "Run directory written by re2_tf.train.", required=True)
flags.DEFINE_string("data_dir", None, "Prepared data directory (default: the run's --data_dir flag).")
flags.DEFINE_list("splits", ["dev", "test"], "Splits of the prepared data directory to score.")
flags.DEFINE_string("file", None, "Score this file instead of splits.")
flags.DEFINE_enum("format", "processed", sorted(datasets.FORMAT_TOKENIZERS), "Format of --file.")
flags.DEFINE_integer("batch_size", 256, "Pairs per prediction batch.")
flags.DEFINE_string("output", None, "Write the metrics as JSON here.")


def _run_data_dir(run_dir):
    """The --data_dir the run was trained with, from its flags.txt."""
    flags_file = Path(run_dir) / runs.FLAGS_FILE
    if flags_file.exists():
        for line in flags_file.read_text().splitlines():
            if line.startswith("--data_dir="):
                return line.split("=", 1)[1]
    return None


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    config = runs.load_config(FLAGS.run_dir)
    spec = dataclasses.replace(datasets.get_dataset(config.dataset),
                               label_names=tuple(config.label_names))
    try:  # bad data is reported as its message (file and line), not a traceback
        if FLAGS.file:
            sets = {FLAGS.file: datasets.load_file(FLAGS.file, FLAGS.format, spec)}
        else:
            data_dir = (FLAGS.data_dir or _run_data_dir(FLAGS.run_dir)
                        or datasets.default_data_dir(spec.name))
            sets = {split: datasets.load_split(spec.name, data_dir, split)
                    for split in FLAGS.splits}
    except (OSError, ValueError) as error:
        sys.exit(f"re2_tf.evaluate: {error}")
    featurizers = runs.load_featurizers(FLAGS.run_dir)
    network = runs.load_best_model(FLAGS.run_dir)
    results = {}
    for name, examples in sets.items():
        results[name] = evaluate(network, spec, examples, featurizers, FLAGS.batch_size)
        print(f"{name} ({len(examples)} pairs): {format_metrics(results[name])}")
    if FLAGS.output:
        Path(FLAGS.output).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    app.run(main)
