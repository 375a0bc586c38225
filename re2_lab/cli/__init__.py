"""The lab's commands (``python -m re2_lab.cli.<name>``): one module per command, each a thin
layer over a lab module, written like the library's (:func:`re2_tf.cli.common.run_command`).

A process started as one of them imports TensorFlow here, quietly (as the library's commands
do, :mod:`re2_tf.cli.startup`), before its command module is imported; ``--verbose`` keeps
TensorFlow's start-up notices.
"""

import sys

from re2_tf.cli import startup

_ARGV = getattr(sys, "orig_argv", [])
if "-m" in _ARGV[:-1] and _ARGV[_ARGV.index("-m") + 1].startswith("re2_lab.cli."):
    startup.import_tensorflow(quiet="--verbose" not in sys.argv)
