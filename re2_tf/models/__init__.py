"""Model builders: one module per architecture. Each returns a Keras functional model."""

from re2_tf.models.re2 import RE2_DEFAULTS, build_re2, count_parameters

MODELS = {"re2": build_re2}

__all__ = ["MODELS", "RE2_DEFAULTS", "build_re2", "count_parameters"]
