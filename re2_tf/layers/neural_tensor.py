"""Match-SRNN's word-interaction tensor: a neural tensor network over all word pairs."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="re2_tf")
class NeuralTensorNetwork(keras.layers.Layer):
    """Word-level interaction vectors ``s_ij`` between every word of one text and every word
    of the other (Match-SRNN, Section 4.1).

    With ``u_i`` ``[d]`` the vector of word ``i`` of the first text and ``v_j`` ``[d]`` that of
    word ``j`` of the second, for each slice ``k = 1 .. c``::

        s_ij[k] = F(u_i^T T[k] v_j + W[:, k] . [u_i; v_j] + b[k])

    with ``T`` ``[c, d, d]`` (one bilinear form per slice), ``W`` ``[2d, c]`` (rows ``0..d-1``
    act on ``u_i``, rows ``d..2d-1`` on ``v_j``), ``b`` ``[c]`` and ``F`` the activation
    (ReLU in the paper). All ``m * n`` pairs are computed at once with two einsums and two
    matmuls, no loop over positions.

    Readings chosen where the paper is loose:

    - the paper's equation writes ``F(u^T T v + W [u; v]) + b``, the bias outside the
      rectifier; the project reads it as the usual NTN ``F(u^T T v + W [u; v] + b)`` (Socher
      et al., 2013), so the bias can move the ReLU's threshold;
    - ``W`` acts on the concatenation ``[u_i; v_j]`` as in the paper's equation, i.e. the
      two words get separate linear weights (the authors' C++ code shares one vector between
      the two words; that is the special case ``W[:d] == W[d:]``).

    No mask: every cell, padding included, gets a value (finite for finite inputs); the
    spatial GRU (:class:`re2_tf.layers.spatial_gru.SpatialGRU`) ignores cells outside each
    pair's true lengths.

    Weights (created in ``build``):
        tensor: ``[c, d, d]``, the slices ``T[k]``.
        kernel: ``[2d, c]``, the linear part ``W``.
        bias: ``[c]``.

    Args:
        slices: int >= 1, the number ``c`` of tensor slices, i.e. the width of ``s_ij``
            (paper: 10).
        activation: a Keras activation name or function for ``F`` (default ``"relu"``, the
            paper's rectifier).
        tensor_initializer: initializer of ``tensor`` (default ``"glorot_uniform"``).
        kernel_initializer: initializer of ``kernel`` (default ``"glorot_uniform"``).
        bias_initializer: initializer of ``bias`` (default ``"zeros"``).

    Call arguments:
        u: float ``[batch, m, d]``, the word vectors of the first text.
        v: float ``[batch, n, d]``, the word vectors of the second text.

    Returns:
        float ``[batch, m, n, c]``: ``s_ij`` at ``[:, i, j, :]``.

    Raises:
        ValueError: ``slices`` below 1; ``u`` and ``v`` of different widths (checked when
            both widths are known).

    Reference: Wan et al., "Match-SRNN: Modeling the Recursive Matching Structure with
    Spatial RNN", IJCAI 2016, Section 4.1; Socher et al., "Reasoning with neural tensor
    networks for knowledge base completion", NIPS 2013.

    Example:

    ```python
    ntn = NeuralTensorNetwork(slices=10)
    s = ntn(u, v)  # u [batch, m, 50], v [batch, n, 50] -> s [batch, m, n, 10]
    ```
    """

    def __init__(
        self,
        slices=10,
        activation="relu",
        tensor_initializer="glorot_uniform",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(slices) < 1:
            raise ValueError(f"slices must be >= 1, got {slices!r}")
        self.slices = int(slices)
        self.activation = keras.activations.serialize(keras.activations.get(activation))
        self._activation_fn = keras.activations.get(activation)
        self.tensor_initializer = keras.initializers.get(tensor_initializer)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, input_shape):
        dim = input_shape[-1]
        if dim is None:
            raise ValueError(f"the word vectors' width must be known, got shape {input_shape}")
        dim = int(dim)
        self.tensor = self.add_weight(
            name="tensor", shape=(self.slices, dim, dim), initializer=self.tensor_initializer
        )
        self.kernel = self.add_weight(
            name="kernel", shape=(2 * dim, self.slices), initializer=self.kernel_initializer
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.slices,), initializer=self.bias_initializer
        )

    def call(self, u, v):
        dim = self.tensor.shape[-1]
        if u.shape[-1] != dim or v.shape[-1] != dim:
            raise ValueError(f"u and v must both be {dim} wide, got {u.shape} and {v.shape}")
        # u_i^T T[k]: [batch, m, c, d]; then (u_i^T T[k]) . v_j: [batch, m, n, c].
        left = ops.einsum("bmd,kde->bmke", u, ops.cast(self.tensor, u.dtype))
        bilinear = ops.einsum("bmke,bne->bmnk", left, v)
        kernel = ops.cast(self.kernel, u.dtype)
        linear_u = ops.matmul(u, kernel[:dim])  # [batch, m, c]
        linear_v = ops.matmul(v, kernel[dim:])  # [batch, n, c]
        logits = (
            bilinear
            + ops.expand_dims(linear_u, 2)
            + ops.expand_dims(linear_v, 1)
            + ops.cast(self.bias, u.dtype)
        )
        return self._activation_fn(logits)

    def compute_output_shape(self, u_shape, v_shape=None):
        n = v_shape[1] if v_shape is not None else None
        return (u_shape[0], u_shape[1], n, self.slices)

    def get_config(self):
        config = super().get_config()
        config.update(
            slices=self.slices,
            activation=self.activation,
            tensor_initializer=keras.initializers.serialize(self.tensor_initializer),
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
        )
        return config
