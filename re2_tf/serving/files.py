"""The files (and the converters' signature) of an export directory, named once: what
:mod:`re2_tf.serving.export` writes and :mod:`re2_tf.serving.predictor` and
:mod:`re2_tf.serving.runtimes` read. Imports nothing, so loading an export never imports the
code that writes one (or Keras)."""

__all__ = ["EXPORT_CONFIG_FILE", "PORTABLE_SIGNATURE", "TFLITE_FILE"]

#: The export's settings (``assets/<it>``): signatures, labels, tokeniser, limits, precision.
EXPORT_CONFIG_FILE = "export_config.json"
#: The LiteRT model of a ``--format=tflite`` export.
TFLITE_FILE = "model.tflite"
#: The signature other runtimes' converters read where an export has it (the same function
#: as ``serving_ids`` in a form of its own for them; :mod:`re2_tf.serving.export`).
PORTABLE_SIGNATURE = "serving_ids_portable"
