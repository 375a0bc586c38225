"""re2_tf: RE2 and related sentence-pair matching architectures as Keras 3 models.

Importing re2_tf imports TensorFlow with its start-up notices (oneDNN, CUDA probing) kept
off the terminal: under TF 2.21 they are written by C++ logging before any environment
setting can silence them, so the import runs with file descriptor 2 pointed at /dev/null.
Python exceptions raised by the import are re-raised after stderr is restored.
"""

import os
import sys

__version__ = "0.1.0"


def _import_tensorflow_quietly():
    if "tensorflow" in sys.modules or os.environ.get("RE2_TF_VERBOSE_TF_IMPORT"):
        import tensorflow  # noqa: F401
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf

        tf.config.list_physical_devices()  # device probing logs its CUDA notices here
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


_import_tensorflow_quietly()
