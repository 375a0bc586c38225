"""Start-up of a command: TensorFlow's import notices kept off the terminal, and no Keras
in a command that only serves exports.

TensorFlow 2.21 prints its start-up notices (oneDNN, CUDA probing, CPU features) from C++
before ``absl::InitializeLog()``, so ``TF_CPP_MIN_LOG_LEVEL`` does not silence them. When a
process was started as one of re2_tf's commands (``re2-<command>`` or
``python -m re2_tf.cli.<command>``, :func:`started_as_command`), ``import re2_tf`` imports
TensorFlow with file descriptor 2 pointed at ``/dev/null`` and restores it right after;
Python exceptions of the import are re-raised with stderr restored. A process that imports
re2_tf as a library keeps TensorFlow's notices: a library does not hide its user's stderr.
``--verbose`` on the command line keeps them too.

``import tensorflow`` imports Keras (TensorFlow's ``__init__`` imports
``keras.src.optimizers``, which loads all of Keras) although a
SavedModel written by :mod:`re2_tf.serving.export` runs without it. In a process started as
one of :data:`EXPORT_ONLY_COMMANDS` (``re2-predict``), TensorFlow is imported without that
import (:func:`import_tensorflow` with ``keras=False``), and ``import re2_tf`` does not
import ``re2_tf.layers`` and ``re2_tf.models`` (Keras, keras-hub): they are imported when
first used (``re2_tf.layers``), and ``tf.keras`` or ``import keras`` still loads Keras in
full.

This module imports nothing heavy: it runs before TensorFlow is imported.
"""

import os
import sys

__all__ = [
    "EXPORT_ONLY_COMMANDS",
    "command_name",
    "exports_only",
    "import_tensorflow",
    "quiet_tensorflow_import",
    "started_as_command",
]

#: Commands (``re2-<name>``) that only load exports, never a Keras model.
EXPORT_ONLY_COMMANDS = ("predict",)

#: Commands that also run as ``python -m re2_tf.<name>`` (``re2_tf/train.py``, ...).
ALIAS_MODULES = ("train", "analyze", "benchmark")

#: The module TensorFlow's ``__init__`` imports to load Keras eagerly (TensorFlow 2.21).
_KERAS_EAGER_IMPORT = "keras.src.optimizers"


def command_name(argv=None, orig_argv=None) -> str | None:
    """The command this process was started as (``"predict"`` for ``re2-predict`` or
    ``python -m re2_tf.cli.predict``; ``"benchmark"`` for ``python -m re2_tf.benchmark``), or
    ``None`` when it is not an re2_tf command."""
    argv = sys.argv if argv is None else argv
    orig_argv = getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv
    if argv and os.path.basename(argv[0]).startswith("re2-"):
        return os.path.basename(argv[0])[len("re2-") :]
    for i, arg in enumerate(orig_argv[:-1]):
        if arg == "-m":
            module = orig_argv[i + 1]
            if module.startswith("re2_tf.cli."):
                return module[len("re2_tf.cli.") :]
            alias = module[len("re2_tf.") :]
            return alias if module.startswith("re2_tf.") and alias in ALIAS_MODULES else None
    return None


def started_as_command(argv=None, orig_argv=None) -> bool:
    """True when this process is an re2_tf command: ``sys.argv[0]`` names a console
    script ``re2-*``, or the interpreter ran ``-m re2_tf.cli.<command>``."""
    return command_name(argv, orig_argv) is not None


def exports_only(argv=None, orig_argv=None) -> bool:
    """True when this process is one of :data:`EXPORT_ONLY_COMMANDS`."""
    return command_name(argv, orig_argv) in EXPORT_ONLY_COMMANDS


def import_tensorflow(quiet=True, keras=True) -> None:
    """Import TensorFlow; a no-op once it is imported.

    Args:
        quiet: point file descriptor 2 at ``/dev/null`` during the import and a probe of
            the devices (which logs the CUDA notices); Python exceptions propagate with
            stderr restored.
        keras: let TensorFlow import Keras eagerly, as it does by default. ``False`` makes
            that one import fail during ``import tensorflow`` (TensorFlow skips it); Keras
            is then imported on first use (``tf.keras``, ``import keras``).
    """
    if "tensorflow" in sys.modules:
        return
    blocked = not keras and _KERAS_EAGER_IMPORT not in sys.modules
    if blocked:
        sys.modules[_KERAS_EAGER_IMPORT] = None  # its import raises ImportError
    try:
        if quiet:
            _quietly_import_tensorflow()
        else:
            # lazy: this is the command's quiet TensorFlow import itself
            import tensorflow  # noqa: F401
    finally:
        if blocked and sys.modules.get(_KERAS_EAGER_IMPORT, 0) is None:
            del sys.modules[_KERAS_EAGER_IMPORT]


def quiet_tensorflow_import() -> None:
    """Import TensorFlow (and probe its devices, which logs the CUDA notices) with file
    descriptor 2 pointed at ``/dev/null``; a no-op once TensorFlow is imported."""
    import_tensorflow(quiet=True, keras=True)


def _quietly_import_tensorflow():
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        # lazy: this is the command's quiet TensorFlow import itself
        import tensorflow as tf

        tf.config.list_physical_devices()
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
