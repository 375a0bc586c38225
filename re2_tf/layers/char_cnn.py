"""Character-level convolution of a word (DRCN Eq. 1 ``Char-Conv``)."""

import keras
from keras import ops

from re2_tf.layers.masking import masked_max


@keras.saving.register_keras_serializable(package="re2_tf")
class CharCNN(keras.layers.Layer):
    """Character representation of every word: embed characters, convolve, max-pool.

    For a word with character ids ``c_1 .. c_W`` (0 = padding character)::

        e_k = dropout(E_char[c_k]) * [c_k != 0]               # [W, char_embedding_dim]
        u_k = ReLU(sum_{j} e_{k + j - (kernel_size-1)//2} K_j + b)   # 'same' convolution
        c   = max_{k : c_k != 0} u_k                          # [filters]

    Padding characters are zero vectors before the convolution (so a word's representation
    does not depend on how many padding characters follow it) and are excluded from the
    max-pool; a padding word (no character) gets the zero vector.

    Readings chosen where the DRCN paper is silent (it gives only "randomly initialized
    character embeddings" of 16 dimensions, "a convolutional network with the max-pooling
    operation" and a 32-d output): one convolution of width ``kernel_size`` (default 5, the
    width of DIIN's character convolution, from which DRCN takes its exact-match feature),
    ``'same'`` zero padding, ReLU, max over the word's real characters. The dropout is the
    paper's "dropout after the character embedding layer" (keep 0.5), applied to the 16-d
    character embeddings. The character embedding matrix is not L2-regularised (the paper
    excludes embedding matrices); the convolution kernel gets ``l2`` (``l2 * sum(K**2)``,
    Keras' ``L2``).

    Args:
        vocab_size: int, number of character ids (0 = padding, 1 = unknown).
        embedding_dim: int, character embedding width (paper: 16).
        filters: int, output width (paper: 32).
        kernel_size: int >= 1, convolution width in characters.
        dropout_rate: float in [0, 1), dropout on the character embeddings (paper: 0.5).
        l2: float >= 0, L2 factor on the convolution kernel (paper: 1e-6).

    Call arguments:
        inputs: int ``[batch, length, max_word_length]`` character ids (0 = padding).
        training: bool, enables dropout.

    Returns:
        float32 ``[batch, length, filters]``.

    Raises:
        ValueError: a size below 1 or a dropout rate outside [0, 1).

    Reference: DRCN paper (Kim et al., AAAI 2019), "Word Representation Layer" and
    "Implementation Details".

    Example:

    ```python
    layer = CharCNN(vocab_size=50, embedding_dim=16, filters=32)
    layer(np.array([[[5, 6, 0], [0, 0, 0]]], "int32")).shape  # (1, 2, 32)
    ```
    """

    def __init__(
        self,
        vocab_size,
        embedding_dim=16,
        filters=32,
        kernel_size=5,
        dropout_rate=0.5,
        l2=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("vocab_size", vocab_size),
            ("embedding_dim", embedding_dim),
            ("filters", filters),
            ("kernel_size", kernel_size),
        ):
            if int(value) < 1:
                raise ValueError(f"CharCNN {name} must be >= 1, got {value!r}")
        if not 0.0 <= float(dropout_rate) < 1.0:
            raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate!r}")
        self.vocab_size = int(vocab_size)
        self.embedding_dim = int(embedding_dim)
        self.filters = int(filters)
        self.kernel_size = int(kernel_size)
        self.dropout_rate = float(dropout_rate)
        self.l2 = float(l2)
        self.char_embedding = keras.layers.Embedding(
            self.vocab_size, self.embedding_dim, dtype=self.dtype_policy, name="char_embedding"
        )
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.conv = keras.layers.Conv1D(
            self.filters,
            self.kernel_size,
            padding="same",
            activation="relu",
            kernel_regularizer=keras.regularizers.L2(self.l2) if self.l2 else None,
            dtype=self.dtype_policy,
            name="conv",
        )

    def build(self, input_shape):
        self.char_embedding.build((None, None))
        self.conv.build((None, None, self.embedding_dim))

    def call(self, inputs, training=None):
        shape = ops.shape(inputs)
        batch, length, width = shape[0], shape[1], shape[2]
        chars = ops.reshape(inputs, (-1, width))  # [batch*length, W]
        mask = ops.expand_dims(ops.cast(ops.not_equal(chars, 0), self.compute_dtype), -1)
        embedded = self.dropout(self.char_embedding(chars), training=training) * mask
        features = self.conv(embedded)  # [batch*length, W, F]
        pooled = masked_max(features, mask, axis=1)  # [batch*length, F]
        return ops.reshape(pooled, (batch, length, self.filters))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.filters)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            embedding_dim=self.embedding_dim,
            filters=self.filters,
            kernel_size=self.kernel_size,
            dropout_rate=self.dropout_rate,
            l2=self.l2,
        )
        return config
