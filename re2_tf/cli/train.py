r"""``re2-train``: train any registered model from flags (a thin layer over :func:`re2_tf.fit`).

    re2-train --flagfile=configs/re2/sample.flags
    re2-train --model=re2 --dataset=wikiqa --data_dir=data/wikiqa --repeats=3
    re2-train --model=drcn --dataset=snli --helpfull     # DRCN's flags, SNLI defaults shown
    python -m re2_tf.cli.train ...                        # the same

Every field of :class:`re2_tf.config.TrainConfig` is a flag of the same name, and so is every
hyper-parameter of the selected ``--model`` (``--blocks=3``). Defaults layer as the config's
do (common defaults, the model's training defaults, its preset for ``--dataset``); ``--help``
shows the layered defaults of the model and dataset given. Only the flags given on the
command line or in a flagfile are explicit settings. A run directory records the resolved
settings in ``config.json`` and the flags that rebuild them in ``flags.txt``: rerunning the
same command (or ``--flagfile=<run>/flags.txt``) resumes the run.

A mistake (unknown flag or model, a value out of range, a missing file, an unwritable run
directory, a malformed data line) ends the command with one line on stderr,
``re2-train: error: --<flag>: <what is wrong and what to do>``, exit status 1, before anything
is written; ``--verbose`` shows the traceback.
"""

from __future__ import annotations

import sys

from absl import flags

from re2_tf.api import console_handler, fit
from re2_tf.cli.common import run_command
from re2_tf.config import TrainConfig
from re2_tf.train_flags import (  # noqa: F401  (re-exported: the command's flag layer)
    _layer_defaults,
    config_from_args,
    config_from_flagfile,
    define_flags,
    define_model_flags,
    parse_flags,
)

__all__ = ["config_from_args", "define_flags", "parse_flags", "main", "run"]

FLAGS = flags.FLAGS


def main(argv):
    """Build the config from the flags and call :func:`re2_tf.fit`."""
    if len(argv) > 1:
        raise flags.Error(
            f"unexpected arguments: {' '.join(argv[1:])} (settings are --name=value flags)"
        )

    console_handler()  # the library logs; the command shows the lines on stdout
    fit(TrainConfig.from_flags(FLAGS))


def _define_for(argv, flag_values=FLAGS):
    """The common flags, and the hyper-parameter flags of the ``--model`` on the command
    line with the layered defaults (so ``--help`` lists them); a mistake in the command line
    is left for :func:`parse_flags` to report."""
    define_flags(flag_values)
    try:
        args = flag_values.read_flags_from_files(list(argv[1:]), force_gnu=False)
        _layer_defaults(args, flag_values)
    except Exception:  # noqa: BLE001  (parse_flags reports it as one line)
        pass


def run(argv=None):
    """Console-script entry point (``re2-train``)."""
    argv = list(sys.argv if argv is None else argv)
    run_command(
        main,
        lambda: _define_for(argv),
        program="re2-train",
        doc=__doc__,
        argv=argv,
        flags_parser=parse_flags,
    )


if __name__ == "__main__":
    run()
