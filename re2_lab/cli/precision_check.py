r"""Accuracy change of reduced-precision exports on real dev files (a thin layer over
:func:`re2_lab.precision.compare_precisions`, which describes the measurement).

    python -m re2_lab.cli.precision_check --run_dir=checkpoints/sample-re2 --out=/tmp/precision
    python -m re2_lab.cli.precision_check --run_dir=<BERT+MatchLSTM run on WikiQA> \
        --files=wikiqa_dev=<prepared wikiqa>/dev.txt --exports=savedmodel_fp32,savedmodel_bf16

Prints the report as JSON. An unknown export name, a malformed or missing ``--files`` entry
or a missing run directory ends the command with one line
``re2-precision-check: error: <message>``, exit status 1, before anything is exported.
"""

from __future__ import annotations

import json

from absl import flags

from re2_lab.precision import EXPORTS, compare_precisions, parse_files
from re2_tf.cli.common import run_command

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string(
        "run_dir", "checkpoints/sample-re2", "A trained run directory.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "out",
        None,
        "Directory for the exports (default: a temporary one).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "files",
        None,
        "name=path of labelled prepared files to score (default: "
        "data/sample/dev.txt and, when present, ../shared's SNLI dev file).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "exports",
        list(EXPORTS),
        f"Exports to compare with Keras: {list(EXPORTS)}.",
        flag_values=flag_values,
    )


def main(argv):
    """Export, predict, compare; print the report."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    files = parse_files(FLAGS.files) if FLAGS.files else None
    report = compare_precisions(FLAGS.run_dir, files, FLAGS.exports, FLAGS.out)
    print(json.dumps(report, indent=1))


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.precision_check``)."""
    run_command(main, define_flags, program="re2-precision-check", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
