r"""``re2-prepare``: turn a downloaded benchmark into the prepared layout re2_tf trains on (a
thin layer over :func:`re2_tf.data.prepare.prepare`, which describes the output).

    re2-prepare --dataset=snli    --input=downloads/snli_1.0.zip
    re2-prepare --dataset=wikiqa  --input=downloads/WikiQACorpus.zip --output=data/wikiqa
    re2-prepare --dataset=trecqa  --input=downloads/TrecQA   # dir holding train/ clean-dev/ ...
    re2-prepare --dataset=snli --learning_check --input=data/snli --output=<snli check dir>
    python -m re2_tf.cli.prepare ...                          # the same

``--input`` is the downloaded ``.zip`` or the directory it was extracted to; ``--output``
defaults to ``data/<dataset>`` of the repository. ``--learning_check`` instead splits an
already prepared directory (``--input``) into a learning check: train on its dev file, select
on the first half of its test file, score the second half
(:func:`re2_tf.data.prepare.learning_check`; ``--output`` required). Prints the pairs
written per split. A missing input or raw file, or malformed raw data, ends the command with
one line ``re2-prepare: error: <message>``, exit status 1.
"""

from __future__ import annotations

from pathlib import Path

from absl import flags

from re2_tf.cli.common import run_command
from re2_tf.data.datasets import default_data_dir
from re2_tf.data.prepare import PREPARABLE, learning_check, prepare

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_enum(
        "dataset", None, list(PREPARABLE), "Dataset to prepare.", flag_values=flag_values
    )
    flags.DEFINE_string(
        "input",
        None,
        "Downloaded archive (.zip) or its extracted directory.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "output", None, "Output directory (default: data/<dataset>).", flag_values=flag_values
    )
    flags.DEFINE_bool("lower", True, "Lower-case the written texts.", flag_values=flag_values)
    flags.DEFINE_integer(
        "sample_train",
        8000,
        "sample: first N lines of SNLI dev -> train.",
        lower_bound=1,
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "sample_test",
        2000,
        "sample: first N lines of SNLI test -> test.",
        lower_bound=1,
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "learning_check",
        False,
        "Split the prepared --input into a learning check (train = its dev file, dev/test = "
        "the halves of its test file).",
        flag_values=flag_values,
    )
    flags.mark_flags_as_required(["dataset", "input"], flag_values=flag_values)


def main(argv):
    """Prepare ``--dataset`` from ``--input`` into ``--output``."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")

    if not Path(FLAGS.input).exists():
        raise FileNotFoundError(f"--input: no such file or directory {FLAGS.input}")
    if FLAGS.learning_check:
        if not FLAGS.output:
            raise flags.Error("--output: where to write the learning check")
        counts = learning_check(FLAGS.input, FLAGS.output)
        print(f"{FLAGS.dataset} learning check: {counts} -> {FLAGS.output}")
        return
    output = FLAGS.output or default_data_dir(FLAGS.dataset)
    counts = prepare(
        FLAGS.dataset,
        FLAGS.input,
        output,
        lower=FLAGS.lower,
        sample_train=FLAGS.sample_train,
        sample_test=FLAGS.sample_test,
    )
    print(f"{FLAGS.dataset}: {counts} -> {output}")


def run(argv=None):
    """Console-script entry point (``re2-prepare``)."""
    run_command(main, define_flags, program="re2-prepare", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
