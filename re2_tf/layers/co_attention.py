"""DRCN's co-attention with cosine similarity (paper Eq. 5)."""

import keras
from keras import ops

from re2_tf.layers.masking import two_way_attention


def l2_normalize(x, epsilon=1e-12):
    """``x / sqrt(max(sum(x**2), epsilon))`` along the last axis (``tf.math.l2_normalize``'s
    formula). A zero vector stays zero, with a finite gradient."""
    squares = ops.sum(ops.square(x), axis=-1, keepdims=True)
    return x * ops.rsqrt(ops.maximum(squares, ops.cast(epsilon, x.dtype)))


@keras.saving.register_keras_serializable(package="re2_tf")
class CoAttention(keras.layers.Layer):
    """Co-attentive features of two texts from the cosine similarity of their states.

    With ``h_p`` ``[I, d]`` and ``h_q`` ``[J, d]`` the recurrent features of the two texts
    (DRCN Eq. 5)::

        e_ij      = cos(h_p_i, h_q_j)
        alpha_ij  = softmax_j(e_ij)          over the real positions j of q
        a_p_i     = sum_j alpha_ij h_q_j
        beta_ij   = softmax_i(e_ij)          over the real positions i of p
        a_q_j     = sum_i beta_ij h_p_i

    The paper writes only ``a_p``; ``a_q`` is its mirror image (the same ``e``, normalised
    over the other axis), so the two texts are treated alike. The cosine is
    ``u_i . v_j`` with ``u = h / sqrt(max(|h|^2, epsilon))`` (the same for ``v``), so a zero
    state (a padding position) has similarity 0 and no NaN gradient. No weights, no
    temperature: cosines lie in [-1, 1], as in the paper.

    Call arguments:
        p: float ``[batch, len_p, dim]``.
        q: float ``[batch, len_q, dim]``.
        p_mask: float ``[batch, len_p, 1]``, 1 on tokens.
        q_mask: float ``[batch, len_q, 1]``, 1 on tokens.
        return_attention_scores: bool; if True also return ``alpha`` and ``beta``.

    Returns:
        ``(a_p [batch, len_p, dim], a_q [batch, len_q, dim])``, and with
        ``return_attention_scores`` also ``(alpha, beta)``, both ``[batch, len_p, len_q]``:
        ``alpha`` sums to 1 over axis 2 (positions of q), ``beta`` over axis 1 (positions
        of p). No weight falls on padding; rows of ``alpha`` at padding positions of ``p``
        and columns of ``beta`` at padding positions of ``q`` are zero, and when the other
        text is empty (all padding) the attentive feature is 0 (see
        :func:`re2_tf.layers.masking.masked_softmax`).

    Args:
        epsilon: float > 0, floor on the squared norm in the cosine.

    Reference: DRCN paper (Kim et al., AAAI 2019), "Densely-connected Co-attentive
    networks", Eq. 5.

    Example:

    ```python
    a_p, a_q = CoAttention()(h_p, h_q, p_mask, q_mask)
    ```
    """

    def __init__(self, epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        if not float(epsilon) > 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
        self.epsilon = float(epsilon)

    def call(self, p, q, p_mask, q_mask, return_attention_scores=False):
        similarity = ops.matmul(
            l2_normalize(p, self.epsilon), ops.transpose(l2_normalize(q, self.epsilon), (0, 2, 1))
        )
        a_p, a_q, beta, alpha = two_way_attention(similarity, p, q, p_mask, q_mask)
        if return_attention_scores:
            return a_p, a_q, alpha, beta
        return a_p, a_q

    def get_config(self):
        config = super().get_config()
        config.update(epsilon=self.epsilon)
        return config
