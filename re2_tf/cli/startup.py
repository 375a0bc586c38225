"""Start-up of a command: TensorFlow's import notices kept off the terminal.

TensorFlow 2.21 prints its start-up notices (oneDNN, CUDA probing, CPU features) from C++
before ``absl::InitializeLog()``, so ``TF_CPP_MIN_LOG_LEVEL`` does not silence them. When a
process was started as one of re2_tf's commands (``re2-<command>`` or
``python -m re2_tf.cli.<command>``, :func:`started_as_command`), ``import re2_tf`` imports
TensorFlow with file descriptor 2 pointed at ``/dev/null`` and restores it right after;
Python exceptions of the import are re-raised with stderr restored. A process that imports
re2_tf as a library keeps TensorFlow's notices: a library does not hide its user's stderr.
``--verbose`` on the command line keeps them too.

This module imports nothing heavy: it runs before TensorFlow is imported.
"""

import os
import sys

__all__ = ["started_as_command", "quiet_tensorflow_import"]


def started_as_command(argv=None, orig_argv=None) -> bool:
    """True when this process is an re2_tf command: ``sys.argv[0]`` names a console
    script ``re2-*``, or the interpreter ran ``-m re2_tf.cli.<command>``."""
    argv = sys.argv if argv is None else argv
    orig_argv = getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv
    if argv and os.path.basename(argv[0]).startswith("re2-"):
        return True
    for i, arg in enumerate(orig_argv[:-1]):
        if arg == "-m":
            return orig_argv[i + 1].startswith("re2_tf.cli.")
    return False


def quiet_tensorflow_import() -> None:
    """Import TensorFlow (and probe its devices, which logs the CUDA notices) with file
    descriptor 2 pointed at ``/dev/null``; a no-op once TensorFlow is imported."""
    if "tensorflow" in sys.modules:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf

        tf.config.list_physical_devices()
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
