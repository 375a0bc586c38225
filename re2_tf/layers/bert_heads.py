"""Aggregation layers over BERT's final hidden states for the head variants of Shao et al.
(2019): ``h_0`` (:class:`FirstTokenState`, Section 3.1), BERT+AVG (:class:`MaskedMeanPooling`)
and BERT+CNN (:class:`MultiWindowCNN`), Section 3.4."""

import keras
from keras import ops

from re2_tf.layers.masking import masked_max


def _float_mask(mask, dtype):
    """``[batch, length, 1]`` float mask (1 on tokens) from ``[batch, length]`` or
    ``[batch, length, 1]`` of any dtype."""
    mask = ops.convert_to_tensor(mask)
    if len(mask.shape) == 2:
        mask = ops.expand_dims(mask, -1)
    return ops.cast(ops.not_equal(mask, ops.zeros((), mask.dtype)), dtype)


@keras.saving.register_keras_serializable(package="re2_tf")
class FirstTokenState(keras.layers.Layer):
    """``h_0``: the final hidden state of the first token (``[CLS]``) of a packed input.

    Call arguments:
        inputs: float ``[batch, length, d]`` (length >= 1).

    Returns:
        float ``[batch, d]``, ``inputs[:, 0]``.

    Reference: Shao et al. 2019, Section 3.1 ("the final hidden state of the first token,
    h_0, corresponding to the special token [CLS]"); Devlin et al. 2019, Section 3.

    Example:

    ```python
    h_0 = FirstTokenState()(bert_outputs["sequence_output"])   # [batch, hidden]
    ```
    """

    def call(self, inputs):
        return inputs[:, 0]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])


@keras.saving.register_keras_serializable(package="re2_tf")
class MaskedMeanPooling(keras.layers.Layer):
    """Mean of the states over each text's true tokens (BERT+AVG, Shao et al. 2019, Section
    3.4.1)::

        f_avg = (sum_t mask_t h_t) / (sum_t mask_t)           # 0 if the row has no token

    Reading chosen: the paper says "sum all final hidden states directly" but names the
    variant AVG; the mean is taken (a sum would scale with the text's length). Which states
    are averaged (the whole packed pair, ``[CLS]`` and ``[SEP]`` included, or not) is the
    caller's choice through the mask. No weights.

    Call arguments:
        inputs: float ``[batch, length, dim]``.
        inputs_mask: ``[batch, length, 1]`` or ``[batch, length]`` (float, int or bool),
            non-zero on tokens.

    Returns:
        float ``[batch, dim]`` (``inputs``' dtype); 0 for a row without tokens (no NaN).

    Reference: Shao et al., "Aggregating Bidirectional Encoder Representations Using
    MatchLSTM for Sequence Matching", 2019, Section 3.4.1 ("Average Layer").

    Example:

    ```python
    f_avg = MaskedMeanPooling()(hidden, padding_mask)   # [batch, L, 768] -> [batch, 768]
    ```
    """

    def call(self, inputs, inputs_mask):
        mask = _float_mask(inputs_mask, inputs.dtype)
        total = ops.sum(ops.where(mask > 0, inputs, ops.zeros((), inputs.dtype)), axis=1)
        count = ops.sum(mask, axis=1)
        return total / ops.maximum(count, ops.ones((), count.dtype))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@keras.saving.register_keras_serializable(package="re2_tf")
class MultiWindowCNN(keras.layers.Layer):
    """Convolutions of several window sizes with max-over-time pooling over the true tokens
    (BERT+CNN, Shao et al. 2019, Section 3.4.2, Eq. 5).

    For each window size ``l`` and text of ``n`` true tokens ``v_1 .. v_n`` (``[d]`` each)::

        z^l_i = g(sum_(k=0..l-1) v_(i+k) W^l[k] + b^l)        i = 1 .. n - l + 1    # [filters]
        f^l   = max_i z^l_i                                   (0 if n < l)
        f     = [f^(l_1) ; f^(l_2) ; ...]                     # [len(window_sizes) * filters]

    Readings chosen: only windows lying wholly inside the true tokens count (the paper's
    ``z_1 .. z_(n-l+1)``); a text shorter than ``l`` has no window of that size and gets 0
    there (:func:`re2_tf.layers.masking.masked_max`'s convention). ``g`` is ReLU by default
    (the paper says only "a non-linear function"). Padding values are zeroed before the
    convolution, so they never reach a window that counts.

    Weights (created in ``build``): for each ``l`` in ``window_sizes``, ``kernel_<l>``
    ``[l, d, filters]`` (``W^l``, ``W^l[k]`` acting on the ``k``-th position of the window)
    and ``bias_<l>`` ``[filters]``. That is ``sum_l filters (l d + 1)`` parameters.

    Args:
        filters: int >= 1, filters per window size.
        window_sizes: sequence of distinct ints >= 1 (default ``(1, 2, 3)``).
        activation: Keras activation for ``g`` (default ``"relu"``).
        kernel_initializer: default ``"glorot_uniform"``.
        bias_initializer: default ``"zeros"``.

    Call arguments:
        inputs: float ``[batch, length, d]``.
        inputs_mask: ``[batch, length, 1]`` or ``[batch, length]`` (float, int or bool),
            non-zero on tokens (tokens first, padding after).

    Returns:
        float ``[batch, len(window_sizes) * filters]``, the pooled features in the order of
        ``window_sizes``.

    Raises:
        ValueError: ``filters`` below 1; an empty, repeated or non-positive window size;
            ``inputs`` of unknown width.

    Reference: Shao et al., "Aggregating Bidirectional Encoder Representations Using
    MatchLSTM for Sequence Matching", 2019, Section 3.4.2 ("Convolutional
    Layer", Eq. 5); Kim, "Convolutional Neural Networks for Sentence Classification", 2014.

    Example:

    ```python
    f_cnn = MultiWindowCNN(filters=100, window_sizes=(1, 2, 3))(hidden, padding_mask)
    # [batch, L, 768] -> [batch, 300]
    ```
    """

    def __init__(
        self,
        filters,
        window_sizes=(1, 2, 3),
        activation="relu",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(filters) < 1:
            raise ValueError(f"filters must be >= 1, got {filters!r}")
        window_sizes = tuple(int(size) for size in window_sizes)
        if not window_sizes or min(window_sizes) < 1 or len(set(window_sizes)) != len(window_sizes):
            raise ValueError(f"window_sizes must be distinct ints >= 1, got {window_sizes!r}")
        self.filters = int(filters)
        self.window_sizes = window_sizes
        self.activation = keras.activations.serialize(keras.activations.get(activation))
        self._activation_fn = keras.activations.get(activation)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                f"inputs must be [batch, length, dim] with a known dim, got shape {input_shape}"
            )
        dim = int(input_shape[-1])
        self.kernels, self.biases = [], []
        for size in self.window_sizes:
            self.kernels.append(
                self.add_weight(
                    name=f"kernel_{size}",
                    shape=(size, dim, self.filters),
                    initializer=self.kernel_initializer,
                )
            )
            self.biases.append(
                self.add_weight(
                    name=f"bias_{size}", shape=(self.filters,), initializer=self.bias_initializer
                )
            )

    def call(self, inputs, inputs_mask):
        mask = _float_mask(inputs_mask, inputs.dtype)  # [batch, length, 1]
        inputs = ops.where(mask > 0, inputs, ops.zeros((), inputs.dtype))
        length = ops.sum(mask, axis=1, keepdims=True)  # [batch, 1, 1]
        positions = ops.cast(ops.arange(ops.shape(inputs)[1]), inputs.dtype)[None, :, None]
        pooled = []
        for size, kernel, bias in zip(self.window_sizes, self.kernels, self.biases):
            # Right-pad by size - 1 so every start position has a window (output width =
            # length); the windows that count are those starting at i <= n - size (0-based).
            padded = ops.pad(inputs, [(0, 0), (0, size - 1), (0, 0)])
            z = self._activation_fn(
                ops.conv(padded, ops.cast(kernel, inputs.dtype), strides=1, padding="valid")
                + ops.cast(bias, inputs.dtype)
            )
            whole = ops.cast(positions <= length - size, inputs.dtype)
            pooled.append(masked_max(z, whole, axis=1))
        return ops.concatenate(pooled, axis=-1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], len(self.window_sizes) * self.filters)

    def get_config(self):
        config = super().get_config()
        config.update(
            filters=self.filters,
            window_sizes=list(self.window_sizes),
            activation=self.activation,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
        )
        return config
