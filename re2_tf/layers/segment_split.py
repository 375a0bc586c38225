"""Split BERT's final hidden states of a packed pair back into the two texts (Shao et al.,
2019, Section 3.2: "we first split the final hidden state h into h^A and h^B ... according to
its position information").

Written with TensorFlow ops (``tf.gather`` with per-row offsets). With ``width="batch"`` the
output widths depend on the batch's *values* (its longest segments): under ``jit_compile=True``
XLA then takes ``segment_ids`` and ``padding_mask`` as compile-time constants and compiles one
program per distinct mask. ``width="input"`` gives both outputs the input's length, so the
compiled program depends on shapes only (what the XLA export uses, :mod:`re2_tf.serving.export`).
"""

import keras
import tensorflow as tf


def _as_bool(x):
    x = tf.convert_to_tensor(x)
    return x if x.dtype == tf.bool else tf.not_equal(x, tf.zeros([], x.dtype))


WIDTHS = ("batch", "input")


def _gather_span(hidden, start, lengths, dtype, width=None):
    """Rows ``hidden[b, start[b] : start[b] + lengths[b]]`` left-aligned and padded with zeros
    to ``width`` (default ``max(lengths)``), and their float mask ``[batch, width, 1]``."""
    if width is None:
        width = tf.maximum(tf.reduce_max(lengths), 0)
    offsets = tf.expand_dims(tf.range(width, dtype=tf.int32), 0)  # [1, width]
    inside = offsets < tf.expand_dims(lengths, 1)  # [batch, width]
    index = tf.minimum(tf.expand_dims(start, 1) + offsets, tf.shape(hidden)[1] - 1)
    index = tf.where(inside, index, tf.zeros_like(index))
    span = tf.gather(hidden, index, axis=1, batch_dims=1)  # [batch, width, d]
    span = tf.where(tf.expand_dims(inside, -1), span, tf.zeros([], span.dtype))
    return span, tf.expand_dims(tf.cast(inside, dtype), -1)


@keras.saving.register_keras_serializable(package="re2_tf")
class PairSegmentSplit(keras.layers.Layer):
    """Split the final hidden states of ``[CLS] a [SEP] b [SEP] <pad>...`` into ``h^A`` and
    ``h^B``, each left-aligned and padded to the batch's longest.

    With ``n_0`` the number of true tokens of segment 0 (``[CLS] a [SEP]``) and ``n`` the
    row's number of true tokens (``padding_mask`` non-zero)::

        |A| = max(n_0 - 1, 0)          A = h[0 : |A|]        = [CLS] a
        |B| = max(n - |A|, 0)          B = h[|A| : |A| + |B|] = [SEP] b [SEP]
        h_a[:, k] = h[:, k]            for k < |A|,  0 after
        h_b[:, k] = h[:, |A| + k]      for k < |B|,  0 after

    Reading chosen (the paper only says "according to its position information"): as in the
    first author's code, A is everything before the first ``[SEP]`` (``[CLS]`` included) and
    B is everything from the first ``[SEP]`` to the end of the true tokens (both ``[SEP]``
    included). So an empty ``a`` still gives ``A = [CLS]`` (``|A| = 1``) and an empty ``b``
    gives ``B = [SEP] [SEP]`` (``|B| = 2``). A pair truncated to fill the whole length (no
    padding) splits the same way. The layer trusts the packing (one run of segment 0 first,
    then segment 1, then padding); it does not look at token ids.

    Output widths: ``max_b |A|`` and ``max_b |B|`` with ``width="batch"`` (the default: the
    fewest MatchLSTM steps; the widths depend on the values of ``segment_ids`` and
    ``padding_mask``, so under ``jit_compile`` XLA compiles once per distinct mask), or ``L``
    for both with ``width="input"`` (the widths depend on the input's shape only: one XLA
    program per input shape). The columns beyond ``max_b |A|`` / ``max_b |B|`` are padding
    (0, mask 0), so a padding-invariant consumer (the MatchLSTM) gives the same result with
    either. No weights.

    Args:
        width: ``"batch"`` or ``"input"``, as above.

    Call arguments:
        hidden: float ``[batch, L, d]``, BERT's final hidden states.
        segment_ids: int ``[batch, L]``, 0 on ``[CLS] a [SEP]``, 1 on ``b [SEP]`` (anything on
            padding).
        padding_mask: ``[batch, L]`` (int, bool or float), non-zero on true tokens.

    Returns:
        ``(h_a, mask_a, h_b, mask_b)``: ``h_a`` float ``[batch, max |A|, d]`` and ``h_b`` float
        ``[batch, max |B|, d]`` (``hidden``'s dtype), 0 at padding; ``mask_a``, ``mask_b`` float
        ``[batch, width, 1]`` in the layer's compute dtype, 1.0 on tokens and 0.0 on padding
        (the project's mask convention, see :mod:`re2_tf.layers.masking`).

    Raises:
        ValueError: ``width`` not in :data:`WIDTHS` (at construction); ``hidden`` not of rank
            3.

    Reference: Shao et al., "Aggregating Bidirectional Encoder Representations Using
    MatchLSTM for Sequence Matching", 2019, Section 3.1 (packing) and Section
    3.2 (the split); Devlin et al., 2019 (BERT's ``[CLS] A [SEP] B [SEP]`` input).

    Example:

    ```python
    hidden = bert({"token_ids": ids, "segment_ids": seg, "padding_mask": pad})
    h_a, mask_a, h_b, mask_b = PairSegmentSplit()(hidden, seg, pad)
    s = BidirectionalMatchLSTM(300)(h_b, h_a, mask_b, mask_a)
    ```
    """

    def __init__(self, width="batch", **kwargs):
        super().__init__(**kwargs)
        if width not in WIDTHS:
            raise ValueError(f"PairSegmentSplit: width must be one of {WIDTHS}, got {width!r}")
        self.width = width

    def call(self, hidden, segment_ids, padding_mask):
        hidden = tf.convert_to_tensor(hidden)
        if hidden.shape.rank != 3:
            raise ValueError(f"hidden must be [batch, length, dim], got shape {hidden.shape}")
        tokens = _as_bool(padding_mask)
        first = tokens & tf.equal(tf.cast(segment_ids, tf.int32), 0)
        length = tf.reduce_sum(tf.cast(tokens, tf.int32), axis=1)
        length_a = tf.maximum(tf.reduce_sum(tf.cast(first, tf.int32), axis=1) - 1, 0)
        length_b = tf.maximum(length - length_a, 0)
        width = tf.shape(hidden)[1] if self.width == "input" else None
        h_a, mask_a = _gather_span(
            hidden, tf.zeros_like(length_a), length_a, self.compute_dtype, width
        )
        h_b, mask_b = _gather_span(hidden, length_a, length_b, self.compute_dtype, width)
        return h_a, mask_a, h_b, mask_b

    def compute_output_shape(self, hidden_shape):
        batch, dim = hidden_shape[0], hidden_shape[-1]
        width = hidden_shape[1] if self.width == "input" else None
        return (batch, width, dim), (batch, width, 1), (batch, width, dim), (batch, width, 1)

    def get_config(self):
        return {**super().get_config(), "width": self.width}
