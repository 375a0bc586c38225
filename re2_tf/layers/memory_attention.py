"""Memory-based attention (FITN Mem-Att, Qi et al. 2022, Sec. 2.2.2, Eq. 4-13) and the
attention variants of its Table 2 (Eq. 18)."""

import math

import keras
from keras import ops

from re2_tf.layers.masking import two_way_attention

#: Attention variants (FITN Eq. 18 and Table 2): ``mem`` (Mem-Att, Eq. 4-9), ``inter``
#: (Inter-Att: the current interaction matrix only), ``dot`` (Dot-Att ``S T^T / sqrt(d)``),
#: ``wdot`` (wDot-Att ``S W T^T / sqrt(d)``).
FITN_ATTENTIONS = ("mem", "inter", "dot", "wdot")

#: Activations ``f`` of FITN (the paper does not name it).
FITN_ACTIVATIONS = ("relu", "tanh", "sigmoid", "gelu", "linear")


def _activation(name):
    if name not in FITN_ACTIVATIONS:
        raise ValueError(f"activation must be one of {FITN_ACTIVATIONS}, got {name!r}")
    return keras.activations.get(name)


@keras.saving.register_keras_serializable(package="re2_tf")
class MemoryBasedAttention(keras.layers.Layer):
    """One round of FITN's memory-based attention (or an Eq. 18 variant) over two texts.

    With ``H_s`` ``[m, d]`` and ``H_t`` ``[n, d]`` the round's BiLSTM states (``d`` = the
    BiLSTM output width, the paper's ``d_h``) and ``f`` the activation::

        M_ij     = H_s_i * H_t_j                                      Eq. 4-5, [m, n, d]
        Mbar_ij  = f(M_ij W_m + Mbar^{l-1}_ij W_g + b_m)   (mem, l > 0)  Eq. 6-7, [m, n, d_m]
        Mbar_ij  = f(M_ij W_m + b_m)                       (mem, l = 0; inter)
        Att_ij   = f(Mbar_ij . w_p + b_p)                                Eq. 8
        Att_ij   = H_s_i . H_t_j / sqrt(d)                 (dot)          Eq. 18
        Att_ij   = H_s_i W H_t_j / sqrt(d)                 (wdot)         Eq. 18
        A_s_i    = sum_j softmax_j(Att_ij) H_t_j                          Eq. 9
        A_t_j    = sum_i softmax_i(Att_ij) H_s_i           (Eq. 9 for T, the same map)

    Eq. 7 multiplies one matrix ``w_m`` by ``[Mbar^{l-1}; M^l]``; here it is split into its
    two blocks ``W_g`` (rows for ``Mbar^{l-1}``) and ``W_m`` (rows for ``M^l``) so the
    ``[m, n, d + d_m]`` concatenation is never materialised (the same function and the
    same parameter count). The widest tensor is ``M`` itself, ``[batch, m, n, d]``
    (``Mbar`` is ``d_m`` wide).

    Softmaxes are masked (:func:`re2_tf.layers.masking.two_way_attention`): no weight falls
    on padding, and a text facing an empty text gets ``A = 0``. ``Mbar`` at pairs involving
    a padding position is computed but never read by a real pair (each ``(i, j)`` of the
    memory depends only on ``(i, j)`` of the previous one), so padding changes no output.

    Readings chosen where the paper is silent (no code is public): ``f`` is one activation
    for Eq. 7 and Eq. 8 (default ReLU; the model passes its ``activation``); ``d_m``
    defaults to 100 (the paper's "hidden size of each layer" in the interaction module;
    with 100 LSTM units per direction this lands the paper's 2.5M parameters, see
    ``re2_tf/models/fitn.py``); ``d`` in Eq. 18 is the width of ``H``; the T side uses the
    same attention map normalised over ``i``.

    Args:
        attention: one of :data:`FITN_ATTENTIONS`.
        memory_size: int >= 1, ``d_m`` (``mem`` and ``inter``).
        has_memory: bool, ``mem`` only: whether this round receives ``Mbar^{l-1}`` (False
            in round 0).
        activation: ``f``, one of ``relu``, ``tanh``, ``sigmoid``, ``gelu``, ``linear``.

    Call arguments:
        h1: float ``[batch, m, d]``, ``H_s``.
        h2: float ``[batch, n, d]``, ``H_t``.
        mask1, mask2: float ``[batch, m, 1]``, ``[batch, n, 1]``, 1 on tokens.
        memory: float ``[batch, m, n, d_m]``, ``Mbar^{l-1}`` (required iff ``has_memory``).
        return_attention_scores: bool; also return the two softmaxed maps.

    Returns:
        ``(A_s [batch, m, d], A_t [batch, n, d])``, followed for ``mem`` by the new memory
        ``Mbar^l`` ``[batch, m, n, d_m]``, and with ``return_attention_scores`` by
        ``over_t`` (softmax over ``j``, axis 2) and ``over_s`` (softmax over ``i``, axis 1),
        each ``[batch, m, n]``.

    Raises:
        ValueError: an unknown variant or activation, ``memory_size < 1``, ``has_memory``
            without ``mem``, or a ``memory`` given or missing against ``has_memory``.

    Reference: Qi et al., "All Information is Valuable: Question Matching over Full
    Information Transmission Network", Findings of NAACL 2022, Eq. 4-9 and 18, Table 2.

    Example:

    ```python
    att = MemoryBasedAttention("mem", memory_size=100, has_memory=False)
    a1, a2, memory = att(h1, h2, mask1, mask2)     # h1 [b, m, 200], h2 [b, n, 200]
    ```
    """

    def __init__(
        self, attention="mem", memory_size=100, has_memory=False, activation="relu", **kwargs
    ):
        super().__init__(**kwargs)
        if attention not in FITN_ATTENTIONS:
            raise ValueError(f"attention must be one of {FITN_ATTENTIONS}, got {attention!r}")
        if int(memory_size) < 1:
            raise ValueError(f"memory_size must be >= 1, got {memory_size!r}")
        if has_memory and attention != "mem":
            raise ValueError("has_memory needs attention='mem'")
        self.attention = attention
        self.memory_size = int(memory_size)
        self.has_memory = bool(has_memory)
        self.activation = activation
        self._f = _activation(activation)

    def build(self, h1_shape, h2_shape=None, *args, **kwargs):
        d = int(h1_shape[-1])
        if self.attention in ("mem", "inter"):
            self.interaction_kernel = self.add_weight(
                name="interaction_kernel", shape=(d, self.memory_size), initializer="glorot_uniform"
            )
            if self.has_memory:
                self.memory_kernel = self.add_weight(
                    name="memory_kernel",
                    shape=(self.memory_size, self.memory_size),
                    initializer="glorot_uniform",
                )
            self.memory_bias = self.add_weight(
                name="memory_bias", shape=(self.memory_size,), initializer="zeros"
            )
            self.pool_kernel = self.add_weight(
                name="pool_kernel", shape=(self.memory_size,), initializer="glorot_uniform"
            )
            self.pool_bias = self.add_weight(name="pool_bias", shape=(), initializer="zeros")
        elif self.attention == "wdot":
            self.kernel = self.add_weight(name="kernel", shape=(d, d), initializer="glorot_uniform")
        self.built = True

    def call(self, h1, h2, mask1, mask2, memory=None, return_attention_scores=False):
        if (memory is not None) != self.has_memory:
            raise ValueError(
                f"memory must be given exactly when has_memory=True (has_memory={self.has_memory})"
            )
        new_memory = None
        d = h1.shape[-1]
        if self.attention in ("mem", "inter"):
            interaction = ops.expand_dims(h1, 2) * ops.expand_dims(h2, 1)  # M, [b, m, n, d]
            pre = ops.matmul(interaction, self.interaction_kernel) + self.memory_bias
            if memory is not None:
                pre = pre + ops.matmul(memory, self.memory_kernel)
            mbar = self._f(pre)  # [b, m, n, d_m]
            scores = self._f(ops.einsum("bijk,k->bij", mbar, self.pool_kernel) + self.pool_bias)
            if self.attention == "mem":
                new_memory = mbar
        elif self.attention == "dot":
            scores = ops.matmul(h1, ops.transpose(h2, (0, 2, 1))) / math.sqrt(d)
        else:
            scores = ops.matmul(
                ops.matmul(h1, self.kernel), ops.transpose(h2, (0, 2, 1))
            ) / math.sqrt(d)
        a1, a2, over_s, over_t = two_way_attention(scores, h1, h2, mask1, mask2)
        out = (a1, a2) + ((new_memory,) if new_memory is not None else ())
        if return_attention_scores:
            out = out + (over_t, over_s)
        return out

    def get_config(self):
        config = super().get_config()
        config.update(
            attention=self.attention,
            memory_size=self.memory_size,
            has_memory=self.has_memory,
            activation=self.activation,
        )
        return config


@keras.saving.register_keras_serializable(package="re2_tf")
class BlockOutput(keras.layers.Layer):
    """The output of a FITN round from the states and their attentive representation.

    With ``H`` and ``A`` ``[len, d]`` (FITN Eq. 10-13)::

        U = [H; A; (H + A) / 2; H - A]          [len, 4d]
        O = f(U W_f + b_f)                      [len, units]   (W_f shared by S and T)

    The paper gives ``W_f`` as ``4 d_h x d_h``: ``units`` defaults to the input width.
    Outputs at padding positions are set to 0 (they are never read by a real position:
    pooling and attention are masked, and the next round's BiLSTM skips them).

    Args:
        units: int >= 1 or None (None: the width of ``H``).
        activation: ``f`` (default ReLU; the paper does not name it).

    Call arguments:
        h: float ``[batch, len, d]``.
        a: float ``[batch, len, d]``.
        mask: float ``[batch, len, 1]``, 1 on tokens.

    Returns:
        float ``[batch, len, units]``.

    Raises:
        ValueError: ``units < 1`` or an unknown activation.

    Reference: Qi et al., Findings of NAACL 2022, Eq. 10-13.

    Example:

    ```python
    out = BlockOutput()(h, a, mask)   # [b, len, 200] -> [b, len, 200]
    ```
    """

    def __init__(self, units=None, activation="relu", **kwargs):
        super().__init__(**kwargs)
        if units is not None and int(units) < 1:
            raise ValueError(f"units must be >= 1, got {units!r}")
        self.units = None if units is None else int(units)
        self.activation = activation
        self._f = _activation(activation)

    def build(self, h_shape, *args, **kwargs):
        d = int(h_shape[-1])
        units = self.units or d
        self.kernel = self.add_weight(
            name="kernel", shape=(4 * d, units), initializer="glorot_uniform"
        )
        self.bias = self.add_weight(name="bias", shape=(units,), initializer="zeros")
        self.built = True

    def call(self, h, a, mask):
        u = ops.concatenate([h, a, (h + a) / 2.0, h - a], axis=-1)
        return self._f(ops.matmul(u, self.kernel) + self.bias) * ops.cast(mask, h.dtype)

    def compute_output_shape(self, h_shape, *args, **kwargs):
        return tuple(h_shape[:-1]) + (self.units or h_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, activation=self.activation)
        return config
