"""Weight-normalised dense and 1-D convolution layers, as in the RE2 release.

The authors' TensorFlow release normalises every dense and convolution kernel (never the
embedding) with weight normalisation (Salimans & Kingma, 2016) and no data-dependent
initialisation:

    W = V / max(||V||, 1e-7) * g

where the norm runs over every kernel axis but the last (the output-unit axis), ``g`` has one
entry per output unit and starts at one, ``V ~ Normal(0, gain / sqrt(fan_in))`` (He
initialisation; ``fan_in`` is the product of all kernel dims but the last) and the bias starts
at zero. ``gain`` is ``sqrt(2)`` for layers followed by GeLU/ReLU and 1 for linear layers.

These layers are shared by every architecture in ``re2_tf``.
"""

import math

import keras
from keras import ops

from re2_tf.layers.activations import get_activation

#: Floor on the kernel norm: ``W = V / max(||V||, NORM_EPSILON) * g`` (the release's value).
NORM_EPSILON = 1e-7


def default_gain(activation):
    """He-initialisation gain: ``sqrt(2)`` before a (Ge/Re)LU, 1 for a linear layer."""
    return math.sqrt(2.0) if activation is not None else 1.0


def weight_normalize(v, g, axes):
    """Return ``v / max(||v||_axes, 1e-7) * g``.

    Args:
        v: direction tensor, any float dtype, output units on the last axis.
        g: magnitude vector, shape ``[v.shape[-1]]``.
        axes: the axes the norm is taken over (all but the last).
    """
    squared = ops.sum(ops.square(v), axis=axes, keepdims=True)
    inverse_norm = ops.rsqrt(ops.maximum(squared, NORM_EPSILON**2))
    return v * inverse_norm * g


class _WeightNormBase(keras.layers.Layer):
    """Shared arguments and weights of the weight-normalised layers."""

    def __init__(self, units, activation=None, gain=None, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(f"units must be a positive integer, got {units!r}")
        self.units = int(units)
        self.activation = activation
        self._activation_fn = get_activation(activation)
        self.gain = float(gain) if gain is not None else default_gain(activation)
        self.use_bias = bool(use_bias)

    def _make_weights(self, kernel_shape):
        fan_in = math.prod(kernel_shape[:-1])
        # ``autocast=False``: under a mixed-precision policy ``V`` and ``g`` are read as
        # float32, the norm is taken in float32 and only the effective kernel is cast to the
        # compute dtype (:meth:`_compute_kernel`).
        self.kernel_v = self.add_weight(
            name="kernel_v",
            shape=kernel_shape,
            initializer=keras.initializers.RandomNormal(stddev=self.gain / math.sqrt(fan_in)),
            autocast=False,
        )
        self.kernel_g = self.add_weight(
            name="kernel_g", shape=(self.units,), initializer="ones", autocast=False
        )
        self.bias = (
            self.add_weight(name="bias", shape=(self.units,), initializer="zeros")
            if self.use_bias
            else None
        )

    @property
    def kernel(self):
        """The effective kernel ``W = V / max(||V||, 1e-7) * g`` (same shape as ``V``)."""
        axes = tuple(range(len(self.kernel_v.shape) - 1))
        return weight_normalize(self.kernel_v, self.kernel_g, axes)

    def _compute_kernel(self):
        """:attr:`kernel`, computed in float32, in the layer's compute dtype."""
        return ops.cast(self.kernel, self.compute_dtype)

    def _finish(self, y):
        if self.bias is not None:
            y = y + self.bias
        return self._activation_fn(y)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units, activation=self.activation, gain=self.gain, use_bias=self.use_bias
        )
        return config


@keras.saving.register_keras_serializable(package="re2_tf")
class WeightNormDense(_WeightNormBase):
    """Fully-connected layer with a weight-normalised kernel (the release's ``dense``).

    ``y = act(x W + b)`` with ``W = V / max(||V||, 1e-7) * g``, the norm of each output
    column taken over the input axis.

    Args:
        units: int, output width.
        activation: ``None`` (linear), ``"gelu"`` (tanh approximation) or ``"relu"``.
            The release uses GeLU for every dense layer that has an activation.
        gain: float, He-initialisation gain; default ``sqrt(2)`` with an activation and
            ``1`` without.
        use_bias: bool, add a zero-initialised bias (default True).

    Call arguments:
        inputs: float tensor ``[..., fan_in]``.

    Returns:
        float tensor ``[..., units]``, same dtype as ``inputs``.

    Reference:
        Salimans & Kingma (2016); RE2 paper §3.2 ("normalized by weight normalization");
        original release's ``dense`` helper.
    """

    def build(self, input_shape):
        fan_in = input_shape[-1]
        if fan_in is None:
            raise ValueError("WeightNormDense needs a known last input dimension.")
        self._make_weights((int(fan_in), self.units))

    def call(self, inputs):
        return self._finish(ops.matmul(inputs, self._compute_kernel()))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)


@keras.saving.register_keras_serializable(package="re2_tf")
class WeightNormConv1D(_WeightNormBase):
    """1-D convolution over time with a weight-normalised kernel (the release's ``conv1d``).

    Stride 1, ``same`` padding, so the output keeps the input length. The kernel has shape
    ``[kernel_size, fan_in, filters]``; each filter's norm is taken over its
    ``kernel_size * fan_in`` entries.

    Args:
        filters: int, number of output channels.
        kernel_size: int, temporal width of the kernel (RE2: 3).
        activation: ``None``, ``"relu"`` (the release's encoder) or ``"gelu"``.
        gain: float, He-initialisation gain; default ``sqrt(2)`` with an activation.
        use_bias: bool, add a zero-initialised bias (default True).

    Call arguments:
        inputs: float tensor ``[batch, length, fan_in]``. Positions outside the text must
            already be zeroed by the caller (the encoder multiplies by the padding mask),
            so padding acts exactly like the convolution's own zero padding.

    Returns:
        float tensor ``[batch, length, filters]``.

    Reference:
        RE2 paper §2 ("vanilla multi-layer convolutional networks with same padding");
        original release's ``conv1d`` helper.
    """

    def __init__(self, filters, kernel_size=3, activation=None, gain=None, use_bias=True, **kwargs):
        super().__init__(filters, activation=activation, gain=gain, use_bias=use_bias, **kwargs)
        if int(kernel_size) <= 0:
            raise ValueError(f"kernel_size must be a positive integer, got {kernel_size!r}")
        self.kernel_size = int(kernel_size)

    @property
    def filters(self):
        return self.units

    def build(self, input_shape):
        fan_in = input_shape[-1]
        if fan_in is None:
            raise ValueError("WeightNormConv1D needs a known last input dimension.")
        self._make_weights((self.kernel_size, int(fan_in), self.units))

    def call(self, inputs):
        y = ops.conv(
            inputs, self._compute_kernel(), strides=1, padding="same", data_format="channels_last"
        )
        return self._finish(y)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config["filters"] = config.pop("units")
        config["kernel_size"] = self.kernel_size
        return config
