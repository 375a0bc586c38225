"""Activations used by the RE2 release.

Reference: the release swaps ReLU for GeLU in every dense layer and uses the tanh
approximation ``0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))`` (Hendrycks & Gimpel,
2016); the encoder's convolutions keep ReLU.
"""

from keras import ops


def gelu(x):
    """Tanh-approximated GeLU, elementwise; same shape and dtype as ``x``."""
    return ops.gelu(x, approximate=True)


def relu(x):
    """ReLU, elementwise."""
    return ops.relu(x)


def linear(x):
    return x


_ACTIVATIONS = {None: linear, "linear": linear, "gelu": gelu, "relu": relu}


def get_activation(name):
    """Map ``None``/``"linear"``/``"gelu"``/``"relu"`` to a function.

    Raises:
        ValueError: for any other name.
    """
    try:
        return _ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown activation {name!r}; expected one of None, 'linear', 'gelu', 'relu'."
        ) from None
