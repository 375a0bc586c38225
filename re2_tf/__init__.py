"""re2_tf: RE2 and related sentence-pair matching architectures as Keras 3 models."""

__version__ = "0.1.0"
