"""MatchLSTM (Wang & Jiang, 2016) as used on top of BERT by Shao et al. (2019).

:class:`MatchLSTM` is one direction: an LSTM over text B whose input at each position is
``[h^B_i ; c_i]``, ``c_i`` an attention-weighted sum of text A computed from ``h^B_i`` and the
previous state. :class:`BidirectionalMatchLSTM` runs a forward and a backward one and
concatenates their final states.

The scan is a ``tf.while_loop`` over B's positions written with TensorFlow ops, like
:mod:`re2_tf.layers.spatial_gru`: this module needs the TensorFlow backend, like the rest of
re2_tf. It runs eagerly, in ``tf.function`` and under ``jit_compile=True`` (XLA), gradients
included.
"""

import keras
import tensorflow as tf
from keras import ops

from re2_tf.layers.masking import masked_softmax
from re2_tf.layers.recurrent import lstm_cell_update


def _dim(x, axis):
    """The static size of ``x`` along ``axis`` if known, else the dynamic one (scalar tensor)."""
    size = x.shape[axis]
    return int(size) if size is not None else tf.shape(x)[axis]


def _token_mask(mask, x):
    """bool ``[batch, length]``: True on the tokens of ``x`` ``[batch, length, dim]``.

    ``mask`` is ``[batch, length]`` or ``[batch, length, 1]`` of any dtype (non-zero / True on
    tokens); None means every position is a token."""
    if mask is None:
        return tf.ones(tf.shape(x)[:2], tf.bool)
    mask = tf.convert_to_tensor(mask)
    if mask.shape.rank == 3:
        mask = tf.squeeze(mask, axis=-1)
    if mask.dtype != tf.bool:
        mask = tf.not_equal(mask, tf.zeros([], mask.dtype))
    return mask


def _lstm_bias_initializer(bias_initializer, units, unit_forget_bias):
    """Keras' LSTM bias initialisation: ``bias_initializer`` for the four gate blocks
    ``i, f, c, o``, with 1 added to the forget block when ``unit_forget_bias``."""
    if not unit_forget_bias:
        return bias_initializer

    def initializer(shape, dtype=None):
        return ops.concatenate(
            [
                bias_initializer((units,), dtype=dtype),
                keras.initializers.Ones()((units,), dtype=dtype),
                bias_initializer((2 * units,), dtype=dtype),
            ]
        )

    return initializer


# --------------------------------------------------------------------------- one direction
@keras.saving.register_keras_serializable(package="re2_tf")
class MatchLSTM(keras.layers.Layer):
    """One-direction MatchLSTM: an LSTM over text B that attends to text A at every step
    (Shao et al. 2019, Section 3.2, Eq. 1-2; Wang & Jiang 2016, the mLSTM).

    With ``h^A_j`` ``[d_A]`` (``j = 1 .. |A|``) and ``h^B_i`` ``[d_B]`` (``i = 1 .. |B|``) the
    states of the two texts, ``s_0 = m_0 = 0`` (hidden and cell state), for
    ``i = 1 .. |B|``::

        e_ij = u^T tanh(W^A h^A_j + W^B h^B_i + W^s s_(i-1) + b)      # [|A|] logits
        a_ij = exp(e_ij) / sum_k exp(e_ik)                            # over A's tokens only
        c_i  = sum_j a_ij h^A_j                                       # [d_A]
        r_i  = [h^B_i ; c_i]                                          # [d_B + d_A]
        z    = r_i K + s_(i-1) R + b_lstm = [z_i; z_f; z_c; z_o]      # [4H]
        m_i  = sigmoid(z_f) * m_(i-1) + sigmoid(z_i) * tanh(z_c)
        s_i  = sigmoid(z_o) * tanh(m_i)

    The LSTM is Keras' ``LSTM`` cell: gate blocks in the order input, forget, cell candidate,
    output (``i, f, c, o``) in the columns of ``K``, ``R`` and ``b_lstm``; sigmoid gates,
    tanh candidate and output; with ``unit_forget_bias=True`` (default) the forget block of
    ``b_lstm`` starts at 1 (only an initialisation). The attention reads ``s_(i-1)``, the
    LSTM's hidden state (not its cell state), as Wang & Jiang's ``h^m_(k-1)``.

    ``W^A h^A_j + b`` is computed once for all ``j`` before the loop, and so are
    ``W^B h^B_i`` and ``h^B_i K[:d_B] + b_lstm`` for all ``i``; each step then does the
    state-dependent part only.

    Readings chosen where the paper is unclear:

    - Eq. 1 writes ``a_j = e_j / sum_k e_k``; it is read as the softmax of Wang & Jiang's
      MatchLSTM (raw scores can be negative and would not give weights);
    - ``b`` (the paper's ``b_e``) is one bias ``[attention_units]`` inside the tanh; ``u`` has
      no bias (a constant shift would not change the softmax);
    - the width of ``W^A``, ``W^B``, ``W^s`` (``attention_units``) is not given; it defaults
      to ``units``, as in Wang & Jiang where all hidden sizes are equal.

    **Masks.** Each text's padding is given by its mask; ``h^A`` and ``h^B`` are zeroed there
    (so even non-finite padding values do no harm). The softmax runs over A's tokens only;
    if A has no token, ``a_i = 0`` and ``c_i = 0`` (no NaN). A padding position of B does
    not update ``(s, m)``, so the returned final state is the state at B's last true token
    and appending padding to either text changes no output. A row whose B has no token
    returns the zero initial state. Masks may mark any positions (tokens need not be
    contiguous), though the data path always puts padding at the end.

    **Backward** (``go_backwards=True``): positions are read from B's last true token down
    to its first (padding still ignored); the final state is the one after the whole of B
    has been read backwards, i.e. the state at B's first token. Returned sequences stay in
    the original positions: ``sequence[:, i]`` is the backward state after reading
    ``B[i:]``.

    Weights (created in ``build``; ``H = units``, ``D = attention_units``):
        attention_kernel_a: ``[d_A, D]``, ``W^A`` (as ``h^A_j W^A`` on row vectors).
        attention_kernel_b: ``[d_B, D]``, ``W^B``.
        attention_kernel_s: ``[H, D]``, ``W^s``.
        attention_bias: ``[D]``, ``b``.
        attention_vector: ``[D]``, ``u``.
        kernel: ``[d_B + d_A, 4H]``, ``K``; rows ``0 .. d_B - 1`` act on ``h^B_i``, the rest
            on ``c_i``.
        recurrent_kernel: ``[H, 4H]``, ``R``.
        bias: ``[4H]``, ``b_lstm``.

    That is ``D (d_A + d_B + H + 2) + 4H (d_B + d_A + H + 1)`` parameters.

    Args:
        units: int >= 1, the LSTM hidden size ``H``.
        attention_units: int >= 1 or None, the width ``D`` of the attention projections;
            None (default) means ``units``.
        go_backwards: bool; read B from its last true token to its first.
        return_sequences: bool; also return the state at every position of B.
        unit_forget_bias: bool; add 1 to the forget gate's bias at initialisation (Keras'
            LSTM default).
        kernel_initializer: initializer of ``kernel``, ``attention_kernel_a``,
            ``attention_kernel_b`` and ``attention_vector`` (default ``"glorot_uniform"``).
        recurrent_initializer: initializer of the weights acting on ``s_(i-1)``:
            ``recurrent_kernel`` and ``attention_kernel_s`` (default ``"orthogonal"``).
        bias_initializer: initializer of ``bias`` and ``attention_bias`` (default
            ``"zeros"``).

    Call arguments:
        h_b: float ``[batch, len_b, d_B]``, text B (the one the LSTM runs over; BERT's
            hypothesis / answer part).
        h_a: float ``[batch, len_a, d_A]``, text A (attended to; the premise / question).
        mask_b: ``[batch, len_b]`` or ``[batch, len_b, 1]`` (float, int or bool), non-zero on
            B's tokens; None means no padding.
        mask_a: the same for A.
        return_attention: bool; also return the attention weights ``a_ij`` (for analysis).

    Returns:
        ``last`` float ``[batch, H]`` (the layer's compute dtype): the state at each row's
        last true position of B (first, when ``go_backwards``); 0 for a row whose B is
        empty. With ``return_sequences`` the tuple ``(last, sequence)``, ``sequence`` float
        ``[batch, len_b, H]`` with ``s_i`` at B's tokens and 0 at its padding. With
        ``return_attention`` a further (last) output ``attention`` float
        ``[batch, len_b, len_a]``: row ``i`` holds ``a_ij = softmax_j(e_ij)`` (Eq. 1) of
        B's position ``i``, summing to 1 over A's true positions; 0 at A's padding, and
        whole rows of 0 at B's padding or when A is empty.

    Raises:
        ValueError: ``units`` or ``attention_units`` below 1; ``h_b`` or ``h_a`` not of rank 3
            or of unknown width.

    Reference: Shao et al., "Aggregating Bidirectional Encoder Representations Using
    MatchLSTM for Sequence Matching", 2019, Section 3.2 (Eq. 1-2); Wang &
    Jiang, "Learning Natural Language Inference with LSTM", NAACL 2016 (the match-LSTM,
    mLSTM); Hochreiter & Schmidhuber (1997) for the LSTM.

    Example:

    ```python
    match = MatchLSTM(units=300)
    s_last = match(h_b, h_a, mask_b, mask_a)           # [batch, 300]
    s_last, s_all = MatchLSTM(300, go_backwards=True, return_sequences=True)(
        h_b, h_a, mask_b, mask_a)                      # [batch, 300], [batch, len_b, 300]
    ```
    """

    #: Kept in float32 where a runtime serves the rest of the network in bfloat16
    #: (:func:`re2_tf.serving.export.float32_layers`); why: docs/performance.md, "OpenVINO
    #: bfloat16 on BERT+MatchLSTM".
    serving_float32 = True

    def __init__(
        self,
        units,
        attention_units=None,
        go_backwards=False,
        return_sequences=False,
        unit_forget_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        **kwargs,
    ):
        # A float32 layer unless a dtype is given: under a mixed-precision policy the scan
        # stays in float32 (re2_tf/training/precision.py).
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        if int(units) < 1:
            raise ValueError(f"units must be >= 1, got {units!r}")
        if attention_units is not None and int(attention_units) < 1:
            raise ValueError(f"attention_units must be >= 1 or None, got {attention_units!r}")
        self.units = int(units)
        self.attention_units = self.units if attention_units is None else int(attention_units)
        self.go_backwards = bool(go_backwards)
        self.return_sequences = bool(return_sequences)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, h_b_shape, h_a_shape):
        for name, shape in (("h_b", h_b_shape), ("h_a", h_a_shape)):
            if shape is None or len(shape) != 3 or shape[-1] is None:
                raise ValueError(
                    f"{name} must be [batch, length, dim] with a known dim, got shape {shape}"
                )
        dim_b, dim_a = int(h_b_shape[-1]), int(h_a_shape[-1])
        hidden, width = self.units, self.attention_units
        self.attention_kernel_a = self.add_weight(
            name="attention_kernel_a", shape=(dim_a, width), initializer=self.kernel_initializer
        )
        self.attention_kernel_b = self.add_weight(
            name="attention_kernel_b", shape=(dim_b, width), initializer=self.kernel_initializer
        )
        self.attention_kernel_s = self.add_weight(
            name="attention_kernel_s", shape=(hidden, width), initializer=self.recurrent_initializer
        )
        self.attention_bias = self.add_weight(
            name="attention_bias", shape=(width,), initializer=self.bias_initializer
        )
        self.attention_vector = self.add_weight(
            name="attention_vector", shape=(width,), initializer=self.kernel_initializer
        )
        self.kernel = self.add_weight(
            name="kernel", shape=(dim_b + dim_a, 4 * hidden), initializer=self.kernel_initializer
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel",
            shape=(hidden, 4 * hidden),
            initializer=self.recurrent_initializer,
        )
        self.bias = self.add_weight(
            name="bias",
            shape=(4 * hidden,),
            initializer=_lstm_bias_initializer(
                self.bias_initializer, hidden, self.unit_forget_bias
            ),
        )

    def call(self, h_b, h_a, mask_b=None, mask_a=None, return_attention=False):
        dtype = self.compute_dtype
        h_b = tf.cast(tf.convert_to_tensor(h_b), dtype)
        h_a = tf.cast(tf.convert_to_tensor(h_a), dtype)
        tokens_b, tokens_a = _token_mask(mask_b, h_b), _token_mask(mask_a, h_a)
        zero = tf.zeros([], dtype)
        h_b = tf.where(tf.expand_dims(tokens_b, -1), h_b, zero)
        h_a = tf.where(tf.expand_dims(tokens_a, -1), h_a, zero)
        mask_a_float = tf.cast(tokens_a, dtype)  # [batch, len_a]

        def weight(w):
            return tf.cast(tf.convert_to_tensor(w), dtype)

        kernel = weight(self.kernel)
        dim_b = int(h_b.shape[-1])
        kernel_b, kernel_c = kernel[:dim_b], kernel[dim_b:]
        recurrent_kernel = weight(self.recurrent_kernel)
        attention_kernel_s = weight(self.attention_kernel_s)
        attention_vector = weight(self.attention_vector)
        hidden = self.units

        # Everything that does not depend on the state, for all positions at once.
        projected_a = tf.matmul(h_a, weight(self.attention_kernel_a)) + weight(
            self.attention_bias
        )  # [batch, len_a, D]
        projected_b = tf.transpose(
            tf.matmul(h_b, weight(self.attention_kernel_b)), [1, 0, 2]
        )  # [len_b, batch, D]
        inputs_b = tf.transpose(
            tf.matmul(h_b, kernel_b) + weight(self.bias), [1, 0, 2]
        )  # [len_b, batch, 4H]
        tokens = tf.expand_dims(tf.transpose(tokens_b), -1)  # [len_b, batch, 1]
        # One spare (never read) step at the end, so that XLA, which compiles the loop body
        # even when it never runs, can index these for a B of width 0.
        projected_b, inputs_b, tokens = (
            tf.pad(x, [[0, 1], [0, 0], [0, 0]]) for x in (projected_b, inputs_b, tokens)
        )

        batch, steps = _dim(h_b, 0), _dim(h_b, 1)
        # Per-step inputs are read from TensorArrays, not sliced from the captured tensors:
        # the gradient of a slice is a dense tensor of the whole input, summed over the
        # steps (O(len_b^2) work), while a TensorArray read's gradient writes one step's
        # slot. Same values, less work in the backward pass.
        projected_b, inputs_b, tokens = (
            tf.TensorArray(x.dtype, size=steps + 1, element_shape=x.shape[1:]).unstack(x)
            for x in (projected_b, inputs_b, tokens)
        )

        # Positions after the last one holding a token of any row change no state. With only
        # the last state out, the loop stops there (a run-time trip count: one compiled loop
        # serves every B width within a padded shape), the backward direction starting there.
        used = steps
        if not (self.return_sequences or return_attention):
            columns = tf.reduce_any(tokens_b, axis=0)  # [len_b]
            used = tf.maximum(tf.reduce_max(tf.where(columns, tf.range(1, steps + 1), 0)), 0)

        def body(t, state, cell, sequence, weights):
            i = used - 1 - t if self.go_backwards else t
            query = projected_b.read(i) + tf.matmul(state, attention_kernel_s)  # [batch, D]
            logits = tf.reduce_sum(
                tf.tanh(projected_a + tf.expand_dims(query, 1)) * attention_vector, axis=-1
            )  # [batch, len_a]
            attention = masked_softmax(logits, mask_a_float, axis=1)
            # [batch, d_A]
            context = tf.squeeze(tf.matmul(tf.expand_dims(attention, 1), h_a), axis=1)
            z = inputs_b.read(i) + tf.matmul(context, kernel_c) + tf.matmul(state, recurrent_kernel)
            new_state, new_cell = lstm_cell_update(z, cell)
            token = tokens.read(i)
            state = tf.where(token, new_state, state)
            cell = tf.where(token, new_cell, cell)
            if self.return_sequences:
                sequence = sequence.write(i, tf.where(token, new_state, zero))
            if return_attention:
                weights = weights.write(i, tf.where(token, attention, zero))
            return t + 1, state, cell, sequence, weights

        initial = tf.zeros(tf.stack([batch, hidden]), dtype)
        sequence = tf.zeros([], dtype)
        if self.return_sequences:
            # One spare slot, written now, so the stack is defined even for a B of width 0.
            sequence = tf.TensorArray(
                dtype, size=steps + 1, element_shape=tf.TensorShape([None, hidden])
            )
            sequence = sequence.write(steps, initial)
        weights = tf.zeros([], dtype)
        if return_attention:
            weights = tf.TensorArray(
                dtype, size=steps + 1, element_shape=tf.TensorShape([None, None])
            )
            weights = weights.write(steps, tf.zeros(tf.shape(h_a)[:2], dtype))
        _, last, _, sequence, weights = tf.while_loop(
            lambda t, *_: t < used,
            body,
            (tf.constant(0, "int32"), initial, initial, sequence, weights),
            maximum_iterations=steps,
        )
        out = (last,)
        if self.return_sequences:
            sequence = tf.transpose(sequence.stack()[:steps], [1, 0, 2])
            out += (tf.ensure_shape(sequence, [None, None, hidden]),)
        if return_attention:
            out += (tf.transpose(weights.stack()[:steps], [1, 0, 2]),)
        return out[0] if len(out) == 1 else out

    def compute_output_spec(self, h_b, h_a, mask_b=None, mask_a=None, return_attention=False):
        shapes = self.compute_output_shape(h_b.shape, h_a.shape)
        specs = [
            keras.KerasTensor(shape, dtype=self.compute_dtype)
            for shape in ([shapes] if not self.return_sequences else list(shapes))
        ]
        if return_attention:
            specs.append(
                keras.KerasTensor(
                    (h_b.shape[0], h_b.shape[1], h_a.shape[1]), dtype=self.compute_dtype
                )
            )
        return specs[0] if len(specs) == 1 else tuple(specs)

    def compute_output_shape(self, h_b_shape, h_a_shape):
        last = (h_b_shape[0], self.units)
        if not self.return_sequences:
            return last
        return last, (h_b_shape[0], h_b_shape[1], self.units)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            attention_units=self.attention_units,
            go_backwards=self.go_backwards,
            return_sequences=self.return_sequences,
            unit_forget_bias=self.unit_forget_bias,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            recurrent_initializer=keras.initializers.serialize(self.recurrent_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
        )
        return config


# --------------------------------------------------------------------------- both directions
@keras.saving.register_keras_serializable(package="re2_tf")
class BidirectionalMatchLSTM(keras.layers.Layer):
    """Bidirectional MatchLSTM over text B attending to text A: a forward and a backward
    :class:`MatchLSTM` with separate weights, final states concatenated (Shao et al. 2019,
    Section 3.2: "we add a bidirectional MatchLSTM network")::

        s_fwd = MatchLSTM(go_backwards=False)(h^B, h^A)    # state at B's last true token
        s_bwd = MatchLSTM(go_backwards=True)(h^B, h^A)     # state after reading all of B
                                                           # backwards (at B's first token)
        s     = [s_fwd ; s_bwd]

    each direction computing, for its own order of B's positions (see :class:`MatchLSTM`)::

        e_ij = u^T tanh(W^A h^A_j + W^B h^B_i + W^s s_(i-1) + b)
        a_ij = softmax_j(e_ij);  c_i = sum_j a_ij h^A_j;  s_i = LSTM([h^B_i ; c_i], s_(i-1))

    Reading chosen: the paper's ``s_|B|`` (Eq. 3) for a bidirectional MatchLSTM is read as
    the concatenation of each direction's state after it has read the whole of B (the usual
    bidirectional-RNN summary), so ``f = [s_fwd ; s_bwd ; h_0]``.

    The two directions are sublayers ``forward`` and ``backward`` (weights
    ``<name>/forward/kernel`` etc., each as listed in :class:`MatchLSTM`), so the layer has
    twice :class:`MatchLSTM`'s parameters.

    Args:
        units: int >= 1, hidden size ``H`` per direction.
        attention_units: int >= 1 or None (= ``units``), per direction.
        return_sequences: bool; also return the per-position states of both directions.
        unit_forget_bias, kernel_initializer, recurrent_initializer, bias_initializer: as in
            :class:`MatchLSTM`, for both directions.

    Call arguments:
        h_b: float ``[batch, len_b, d_B]``, text B.
        h_a: float ``[batch, len_a, d_A]``, text A.
        mask_b: ``[batch, len_b]`` or ``[batch, len_b, 1]``, non-zero on B's tokens; None
            means no padding.
        mask_a: the same for A.
        return_attention: bool; also return each direction's attention weights.

    Returns:
        float ``[batch, 2H]`` ``[s_fwd ; s_bwd]`` (0 for a row whose B is empty); with
        ``return_sequences`` the tuple ``(last, sequence)``, ``sequence`` float
        ``[batch, len_b, 2H]`` with both directions' states at each position of B
        (``[forward ; backward]``, 0 at padding). With ``return_attention`` two further
        (last) outputs, the forward and the backward direction's attention weights, each
        float ``[batch, len_b, len_a]`` as :class:`MatchLSTM` returns them.

    Raises:
        ValueError: as :class:`MatchLSTM`.

    Reference: Shao et al., "Aggregating Bidirectional Encoder Representations Using
    MatchLSTM for Sequence Matching", 2019, Section 3.2 (Eq. 1-3); Wang &
    Jiang, "Learning Natural Language Inference with LSTM", NAACL 2016.

    Example:

    ```python
    s = BidirectionalMatchLSTM(units=300)(h_b, h_a, mask_b, mask_a)   # [batch, 600]
    features = keras.layers.Concatenate()([s, h_cls])                 # f = [s ; h_0]
    ```
    """

    #: Kept in float32 where a runtime serves the rest of the network in bfloat16
    #: (:func:`re2_tf.serving.export.float32_layers`); why: docs/performance.md, "OpenVINO
    #: bfloat16 on BERT+MatchLSTM".
    serving_float32 = True

    def __init__(
        self,
        units,
        attention_units=None,
        return_sequences=False,
        unit_forget_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        **kwargs,
    ):
        # A float32 layer unless a dtype is given: under a mixed-precision policy the scan
        # stays in float32 (re2_tf/training/precision.py).
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        common = dict(
            units=units,
            attention_units=attention_units,
            return_sequences=return_sequences,
            unit_forget_bias=unit_forget_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            dtype=self.dtype_policy,
        )
        self.forward_layer = MatchLSTM(go_backwards=False, name="forward", **common)
        self.backward_layer = MatchLSTM(go_backwards=True, name="backward", **common)
        self.units = self.forward_layer.units
        self.attention_units = self.forward_layer.attention_units
        self.return_sequences = self.forward_layer.return_sequences

    def build(self, h_b_shape, h_a_shape):
        self.forward_layer.build(h_b_shape, h_a_shape)
        self.backward_layer.build(h_b_shape, h_a_shape)

    def call(self, h_b, h_a, mask_b=None, mask_a=None, return_attention=False):
        kwargs = {"return_attention": True} if return_attention else {}
        forward = self.forward_layer(h_b, h_a, mask_b, mask_a, **kwargs)
        backward = self.backward_layer(h_b, h_a, mask_b, mask_a, **kwargs)
        if not (self.return_sequences or return_attention):
            return ops.concatenate([forward, backward], axis=-1)
        out = tuple(ops.concatenate([f, b], axis=-1) for f, b in zip(forward, backward))
        if return_attention:
            out = out[:-1] + (forward[-1], backward[-1])
        return out

    def compute_output_spec(self, h_b, h_a, mask_b=None, mask_a=None, return_attention=False):
        shapes = self.compute_output_shape(h_b.shape, h_a.shape)
        shapes = [shapes] if not self.return_sequences else list(shapes)
        if return_attention:
            shapes += [(h_b.shape[0], h_b.shape[1], h_a.shape[1])] * 2
        specs = tuple(keras.KerasTensor(shape, dtype=self.compute_dtype) for shape in shapes)
        return specs[0] if len(specs) == 1 else specs

    def compute_output_shape(self, h_b_shape, h_a_shape):
        last = (h_b_shape[0], 2 * self.units)
        if not self.return_sequences:
            return last
        return last, (h_b_shape[0], h_b_shape[1], 2 * self.units)

    def get_config(self):
        config = super().get_config()
        layer = self.forward_layer
        config.update(
            units=self.units,
            attention_units=self.attention_units,
            return_sequences=self.return_sequences,
            unit_forget_bias=layer.unit_forget_bias,
            kernel_initializer=keras.initializers.serialize(layer.kernel_initializer),
            recurrent_initializer=keras.initializers.serialize(layer.recurrent_initializer),
            bias_initializer=keras.initializers.serialize(layer.bias_initializer),
        )
        return config
