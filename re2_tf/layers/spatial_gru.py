"""Match-SRNN's spatial GRU, scanned as a wavefront over anti-diagonals.

:class:`SpatialGRU` is the layer; :func:`cell_by_cell_spatial_gru` is a slow one-cell-per-step
scan with the same weights, kept for the speed benchmark and the tests only.

The scans are ``tf.while_loop``s (the grid is collected in a ``tf.TensorArray``) over
tensors whose sizes may be dynamic, written with TensorFlow ops; this module needs the
TensorFlow backend, like the rest of re2_tf. Both scans run eagerly, in ``tf.function`` and
under ``jit_compile=True`` (XLA), gradients included.
"""

import keras
import tensorflow as tf
from keras import ops


# --------------------------------------------------------------------------- helpers
def _dim(x, axis):
    """The static size of ``x`` along ``axis`` if known, else the dynamic one (scalar tensor)."""
    size = x.shape[axis]
    return int(size) if size is not None else tf.shape(x)[axis]


def _lengths(mask, x, axis):
    """int32 ``[batch]``: the number of tokens of each text (non-zero mask entries; the
    whole width ``x.shape[axis]`` when ``mask`` is None)."""
    if mask is None:
        return tf.fill([tf.shape(x)[0]], tf.cast(tf.shape(x)[axis], "int32"))
    mask = tf.convert_to_tensor(mask)
    if mask.shape.rank == 3:
        mask = tf.squeeze(mask, axis=-1)
    if mask.dtype != tf.bool:
        mask = tf.not_equal(mask, tf.zeros([], mask.dtype))
    return tf.reduce_sum(tf.cast(mask, "int32"), axis=1)


def _reverse_prefixes(x, lengths, axis):
    """Reverse each row's first ``lengths[b]`` entries of ``x`` along ``axis`` (1 or 2),
    leaving the padding after them in place. An involution."""
    position = tf.expand_dims(tf.range(tf.shape(x)[axis], dtype="int32"), 0)
    lengths = tf.expand_dims(lengths, 1)
    index = tf.where(position < lengths, lengths - 1 - position, position)
    return tf.gather(x, index, axis=axis, batch_dims=1)


def _true_cells(s, lengths1, lengths2):
    """bool ``[batch, m, n]``: cell ``(i, j)`` (0-based) lies inside the pair's lengths."""
    rows = tf.reshape(tf.range(tf.shape(s)[1]), [1, -1, 1]) < tf.reshape(lengths1, [-1, 1, 1])
    cols = tf.reshape(tf.range(tf.shape(s)[2]), [1, 1, -1]) < tf.reshape(lengths2, [-1, 1, 1])
    return rows & cols


def _skew(x):
    """``[B, M, N, F]`` -> ``[B, M, M + N - 1, F]`` with ``out[:, i, i + j] = x[:, i, j]`` and
    zeros elsewhere: column ``k`` of the result holds anti-diagonal ``i + j = k``, indexed by
    ``i``.

    Row ``i`` padded to ``N + M`` and laid end to end puts ``x[i, j]`` at flat position
    ``i (N + M) + j = i (N + M - 1) + (i + j)``, so reading the same buffer with rows of
    ``N + M - 1`` shifts row ``i`` right by ``i``.
    """
    b, m, n, f = (_dim(x, a) for a in range(4))
    x = tf.pad(x, [[0, 0], [0, 0], [0, m], [0, 0]])
    x = tf.reshape(x, [b, m * (n + m), f])[:, : m * (n + m - 1)]
    return tf.reshape(x, [b, m, n + m - 1, f])


def _unskew(x, n):
    """Inverse of :func:`_skew`: ``[B, M, M + n - 1, F]`` -> ``[B, M, n, F]`` with
    ``out[:, i, j] = x[:, i, i + j]``."""
    b, m, k, f = (_dim(x, a) for a in range(4))
    x = tf.pad(tf.reshape(x, [b, m * k, f]), [[0, 0], [0, m], [0, 0]])
    return tf.reshape(x, [b, m, k + 1, f])[:, :, :n]


# --------------------------------------------------------------------------- layer
@keras.saving.register_keras_serializable(package="re2_tf")
class SpatialGRU(keras.layers.Layer):
    """Spatial (2-D) GRU over a word-interaction tensor; returns the state at each pair's
    true bottom-right corner (Match-SRNN, Section 4.2, Eq. 3).

    With ``s_ij`` ``[c]`` the interaction of word ``i`` of the first text and word ``j`` of
    the second (1-based), ``H`` the hidden size, ``sigmoid`` the logistic function and
    ``h_(0,*) = h_(*,0) = 0``::

        q    = [h_(i-1,j); h_(i,j-1); h_(i-1,j-1); s_ij]     # [3H + c]: top, left, diag, input
        r    = sigmoid(q W^(r) + b^(r)) = [r_l; r_t; r_d]    # [3H]
        z    = q W^(z) + b^(z) = [z_i; z_l; z_t; z_d]        # [4H]
        z_p <- exp(z_p) / (exp(z_i) + exp(z_l) + exp(z_t) + exp(z_d))   # per unit; p = i, l, t, d
        h'   = tanh(s_ij W + (r * [h_(i,j-1); h_(i-1,j); h_(i-1,j-1)]) U + b)
        h_ij = z_l * h_(i,j-1) + z_t * h_(i-1,j) + z_d * h_(i-1,j-1) + z_i * h'

    Note the two orders: ``q`` stacks (top, left, diagonal), while the reset vector
    ``[r_l; r_t; r_d]`` multiplies (left, top, diagonal), as in the paper's Eq. 3.
    ``reset_gates=False`` fixes ``r = 1`` (the paper's LCS simulation, Section 5.2) and
    creates no reset weights.

    Weights (created in ``build``; ``c`` = width of ``s``, ``H`` = ``units``):
        reset_kernel: ``[3H + c, 3H]``, rows in ``q``'s order (top, left, diagonal, input),
            column blocks ``r_l, r_t, r_d``. Only with ``reset_gates=True``.
        reset_bias: ``[3H]``, blocks ``r_l, r_t, r_d``. Only with ``reset_gates=True``.
        update_kernel: ``[3H + c, 4H]``, rows in ``q``'s order, column blocks in the gate
            order ``z_i, z_l, z_t, z_d`` (input, left, top, diagonal).
        update_bias: ``[4H]``, blocks ``z_i, z_l, z_t, z_d``.
        input_kernel: ``[c, H]``, ``W``.
        recurrent_kernel: ``[3H, H]``, ``U``; row blocks act on ``r_l * h_(i,j-1)``,
            ``r_t * h_(i-1,j)``, ``r_d * h_(i-1,j-1)``.
        bias: ``[H]``, ``b``.

    **Wavefront.** Cell ``(i, j)`` depends only on cells of the two previous anti-diagonals
    ``i + j - 1`` and ``i + j - 2``, so the scan runs ``m + n - 1`` sequential steps (``m``,
    ``n`` the padded widths) in one ``tf.while_loop``, each computing a whole anti-diagonal
    of the whole batch with three matmuls; with only the corners asked for, it stops after
    the anti-diagonal ``max_b (m_b + n_b) - 2`` that holds the last pair's corner (a run-time
    trip count: trailing padding costs no steps). Layout (0-based ``i``, ``j``; ``k = i + j``):

    - before the loop, ``s`` with a true-cell mask and a corner mask appended (``c + 2``
      channels) is *skewed*: anti-diagonal ``k`` becomes a slab indexed by ``i`` (cell
      ``(i, k - i)``), with a boundary row prepended to every pair, giving ``[m + n - 1,
      batch * (m + 1), c + 2]``;
    - states are *unit-major*: diagonal ``k`` is kept flat as ``D_k``
      ``[H, 1 + batch * (m + 1)]``: a leading zero column, then for each pair a boundary
      column (``h_(0,*)``, always 0) followed by columns ``i = 0 .. m - 1``. In that layout
      the cell above ``(i, k - i)`` is the previous column of ``D_(k-1)``, the cell to its
      left the same column of ``D_(k-1)``, and its diagonal neighbour the previous column
      of ``D_(k-2)``: ``top = D_(k-1)[:, :-1]``, ``left = D_(k-1)[:, 1:]``,
      ``diagonal = D_(k-2)[:, :-1]``, no gather. Every elementwise op of a step then runs
      along the ``batch * (m + 1)`` rows, the axis a compiler vectorises, not along the
      ``H`` units;
    - each step's slab enters through one product with the input rows of the gate kernels
      and ``W`` (transposed, with two identity rows that pass the masks through exactly),
      plus the biases; the step's slab is read one step ahead and carried, so that no
      elementwise op of the step indexes the stacked slabs (under XLA that indexing, fused
      into each op, keeps it from vectorising);
    - entries outside each pair's true cells (boundary rows, cells with ``j < 0`` or
      ``j >= n_b``, rows ``i >= m_b``) are multiplied by 0, which gives the zero boundary
      and keeps padding finite. The loop carries ``D_(k-1)``, ``D_(k-2)`` and a corner
      accumulator; the grid is collected (``tf.TensorArray``) only when asked for and
      un-skewed after the loop.

    The layout was chosen from XLA profiles and A/B timings (``docs/performance.md``,
    Match-SRNN).

    Each step covers ``batch * (m + 1)`` rows of which only the cells on the diagonal are
    real, so the wavefront does up to about twice the arithmetic of a cell-by-cell scan
    (``(m + n - 1) (m + 1)`` rows vs ``m n`` cells) in ``m + n - 1`` steps instead of
    ``m n``: it is built for where the cost per sequential step dominates (measured in
    ``docs/match_srnn.md``).

    **Masks and corners.** Each text's length is its number of tokens; padding must come
    after the tokens (anywhere after them: any number of padding positions). A cell is a
    true cell when ``i <= m_b`` and ``j <= n_b`` for the pair's lengths ``m_b``, ``n_b``.
    True cells depend on true cells only (``h_ij`` reads only smaller ``i``, ``j``), and
    ``s`` is zeroed outside them (so even non-finite padding values do no harm): appending
    padding to either text changes no true cell and no corner. The corner returned is the
    state at ``(m_b, n_b)``, read on the anti-diagonal where that cell is computed, not the
    padded corner ``(m, n)``. A pair with an empty text has no true cell; its corner is 0.

    **Backward scan** (``go_backwards=True``, for Bi-Match-SRNN): each pair's true prefixes
    of both texts are reversed (positions ``1 .. m_b`` and ``1 .. n_b``; padding stays in
    place), the same scan runs, and its corner is read at ``(m_b, n_b)`` of the reversed
    grid, i.e. the state that has seen the whole pair starting from its bottom-right
    corner. The returned grid is mapped back to the original positions: cell ``(i, j)``
    holds the backward state of the suffixes ``S1[i:m_b]``, ``S2[j:n_b]``.

    Args:
        units: int >= 1, the hidden size ``H`` (paper: 10; 1 in the LCS simulation).
        reset_gates: bool; False fixes ``r = 1`` (the LCS simulation).
        go_backwards: bool; scan from each pair's true bottom-right corner.
        kernel_initializer: initializer of ``reset_kernel``, ``update_kernel`` and
            ``input_kernel`` (default ``"glorot_uniform"``).
        recurrent_initializer: initializer of ``recurrent_kernel`` (default
            ``"orthogonal"``).
        bias_initializer: initializer of the biases (default ``"zeros"``).

    Call arguments:
        s: float ``[batch, m, n, c]``, the interactions ``s_ij`` (e.g. from
            :class:`re2_tf.layers.neural_tensor.NeuralTensorNetwork`, or the indicator
            ``1[x_i = y_j]`` with ``c = 1`` in the LCS simulation).
        mask1: ``[batch, m]`` or ``[batch, m, 1]`` (float, int or bool), non-zero on the
            tokens of the first text; None means no padding.
        mask2: ``[batch, n]`` or ``[batch, n, 1]``, the same for the second text.
        return_grid: bool; also return every state.
        return_gates: bool; also return every cell's update gates (for analysis: the
            paper's Section 6.2 back-traced path, :func:`re2_tf.analysis.trace_path`).

    Returns:
        ``corner`` float ``[batch, H]``, the state at each pair's ``(m_b, n_b)`` (0 for a
        pair with an empty text); with ``return_grid`` the tuple ``(corner, grid)``, ``grid``
        float ``[batch, m, n, H]`` with ``h_ij`` (0-based ``[:, i-1, j-1]``) at the true
        cells and 0 elsewhere; with ``return_gates`` a further (last) output ``gates``
        float ``[batch, m, n, 4, H]``: the softmaxed update gates ``z_i, z_l, z_t, z_d``
        (input, left, top, diagonal; Eq. 3) of every cell, summing to 1 over axis 3 at the
        true cells, 0 elsewhere. With ``go_backwards`` the gates are mapped back to the
        original positions like ``grid``, but "left", "top" and "diagonal" keep the
        backward scan's meaning (the cell to the right, below, below-right).

    Raises:
        ValueError: ``units`` below 1; ``s`` not of rank 4 or of unknown width ``c``.

    Reference: Wan et al., "Match-SRNN: Modeling the Recursive Matching Structure with
    Spatial RNN", IJCAI 2016, Section 4.2 (Eq. 3), Section 5.2 and Section 6.1
    (Bi-Match-SRNN).

    Example:

    ```python
    s = NeuralTensorNetwork(10)(u, v)                     # [batch, m, n, 10]
    h_mn = SpatialGRU(10)(s, mask1, mask2)                # [batch, 10]
    h_bwd = SpatialGRU(10, go_backwards=True)(s, mask1, mask2)
    h_mn, grid = SpatialGRU(1, reset_gates=False)(s, mask1, mask2, return_grid=True)
    ```
    """

    #: While True, the wavefront loop hands the older diagonal on as a computed value
    #: (``max(x, x)``, the same tensor) rather than passing the loop's own input on: LiteRT's
    #: ``WHILE`` (like OpenVINO's CPU ``Loop``) lets an output that is another position's
    #: input read that position's new value. The TFLite export sets it while it traces
    #: (:func:`re2_tf.serving.export.litert_loop_form`); docs/performance.md, "LiteRT".
    litert_loop_form = False

    def __init__(
        self,
        units=10,
        reset_gates=True,
        go_backwards=False,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        **kwargs,
    ):
        # A float32 layer unless a dtype is given: under a mixed-precision policy the
        # recurrence over m + n - 1 wavefronts stays in float32 (re2_tf/training/precision.py).
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        if int(units) < 1:
            raise ValueError(f"units must be >= 1, got {units!r}")
        self.units = int(units)
        self.reset_gates = bool(reset_gates)
        self.go_backwards = bool(go_backwards)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ValueError(f"s must be [batch, m, n, c] with a known c, got shape {input_shape}")
        channels, hidden = int(input_shape[-1]), self.units
        if self.reset_gates:
            self.reset_kernel = self.add_weight(
                name="reset_kernel",
                shape=(3 * hidden + channels, 3 * hidden),
                initializer=self.kernel_initializer,
            )
            self.reset_bias = self.add_weight(
                name="reset_bias", shape=(3 * hidden,), initializer=self.bias_initializer
            )
        self.update_kernel = self.add_weight(
            name="update_kernel",
            shape=(3 * hidden + channels, 4 * hidden),
            initializer=self.kernel_initializer,
        )
        self.update_bias = self.add_weight(
            name="update_bias", shape=(4 * hidden,), initializer=self.bias_initializer
        )
        self.input_kernel = self.add_weight(
            name="input_kernel", shape=(channels, hidden), initializer=self.kernel_initializer
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel",
            shape=(3 * hidden, hidden),
            initializer=self.recurrent_initializer,
        )
        self.bias = self.add_weight(name="bias", shape=(hidden,), initializer=self.bias_initializer)

    # ------------------------------------------------------------------ shared
    def _prepare(self, s, mask1, mask2):
        """``s`` zeroed outside each pair's true cells (and reversed within them when
        ``go_backwards``), and the lengths ``m_b``, ``n_b`` (int32 ``[batch]``)."""
        s = tf.convert_to_tensor(s)
        if s.dtype != self.compute_dtype and s.dtype.is_floating:
            s = tf.cast(s, self.compute_dtype)
        lengths1, lengths2 = _lengths(mask1, s, 1), _lengths(mask2, s, 2)
        s = tf.where(
            tf.expand_dims(_true_cells(s, lengths1, lengths2), -1), s, tf.zeros([], s.dtype)
        )
        if self.go_backwards:
            s = _reverse_prefixes(_reverse_prefixes(s, lengths1, 1), lengths2, 2)
        return s, lengths1, lengths2

    # ------------------------------------------------------------------ wavefront scan
    def _wavefront_weights(self, dtype):
        """The weights rearranged for the wavefront step, where the three neighbour states
        are always stacked in ``q``'s order (top, left, diagonal):

        - ``hidden_gate_kernel`` ``[3H, G]`` and ``input_gate_kernel`` ``[c, G]``: the rows
          of ``[W^(r) | W^(z)]`` acting on the states and on ``s_ij``; ``gate_bias`` ``[G]``
          (``G = 7H``, or ``4H`` without reset gates; the update columns stay gate-major,
          ``z_i, z_l, z_t, z_d``). The reset columns are permuted to ``r_t, r_l, r_d``, so
          that ``r' * [top; left; diagonal]`` holds the same products as the paper's
          ``r * [left; top; diagonal]``, in ``q``'s order;
        - ``recurrent_kernel`` ``[3H, H]``: ``U`` with its row blocks permuted the same way;
          ``input_kernel`` ``[c, H]`` and ``bias`` ``[H]``.
        """
        hidden = self.units

        def cast(w):
            return ops.cast(ops.convert_to_tensor(w), dtype)

        def swap_first_two_blocks(w, axis):  # blocks of H: (l, t, rest) -> (t, l, rest)
            blocks = (
                (w[hidden : 2 * hidden], w[:hidden], w[2 * hidden :])
                if axis == 0
                else (w[..., hidden : 2 * hidden], w[..., :hidden], w[..., 2 * hidden :])
            )
            return ops.concatenate(blocks, axis)

        gate_kernel, gate_bias = cast(self.update_kernel), cast(self.update_bias)
        if self.reset_gates:
            gate_kernel = ops.concatenate(
                [swap_first_two_blocks(cast(self.reset_kernel), 1), gate_kernel], 1
            )
            gate_bias = ops.concatenate(
                [swap_first_two_blocks(cast(self.reset_bias), 0), gate_bias], 0
            )
        recurrent = swap_first_two_blocks(cast(self.recurrent_kernel), 0)
        return (
            gate_kernel[: 3 * hidden],
            gate_kernel[3 * hidden :],
            gate_bias,
            recurrent,
            cast(self.input_kernel),
            cast(self.bias),
        )

    def call(self, s, mask1=None, mask2=None, return_grid=False, return_gates=False):
        s, lengths1, lengths2 = self._prepare(s, mask1, mask2)
        (hidden_gate_kernel, input_gate_kernel, gate_bias, recurrent_kernel, input_kernel, bias) = (
            self._wavefront_weights(s.dtype)
        )
        batch, m, n, channels = _dim(s, 0), _dim(s, 1), _dim(s, 2), int(s.shape[-1])
        hidden = self.units
        gates_width = int(gate_bias.shape[0])
        steps = m + n - 1
        # Per cell: s_ij, then 1 on the pair's true cells and 1 on its corner (m_b, n_b) only.
        true = tf.expand_dims(_true_cells(s, lengths1, lengths2), -1)  # [batch, m, n, 1]
        rows = tf.reshape(tf.range(m), [1, -1, 1, 1]) == tf.reshape(lengths1 - 1, [-1, 1, 1, 1])
        cols = tf.reshape(tf.range(n), [1, 1, -1, 1]) == tf.reshape(lengths2 - 1, [-1, 1, 1, 1])
        packed = tf.concat([s, tf.cast(true, s.dtype), tf.cast(rows & cols, s.dtype)], axis=-1)
        # Skew (column k = anti-diagonal k, indexed by i), prepend a boundary row to every
        # pair, and flatten: step k reads a [batch * (m + 1), c + 2] slab.
        packed = tf.pad(_skew(packed), [[0, 0], [1, 0], [0, 0], [0, 0]])
        packed = tf.reshape(
            tf.transpose(packed, [2, 0, 1, 3]), [steps, batch * (m + 1), channels + 2]
        )
        # Read per step from a TensorArray, not sliced from the captured tensor: a slice's
        # gradient is a dense tensor of all the steps, summed over the steps. One
        # spare step at the end, read by the last step but never used, so that the array is
        # not empty when m or n is 0 (XLA compiles the loop body even when it never runs).
        steps = tf.maximum(steps, 0) if isinstance(steps, tf.Tensor) else max(steps, 0)
        packed = tf.pad(packed[:steps], [[0, 1], [0, 0], [0, 0]])
        packed = tf.TensorArray(s.dtype, size=steps + 1, element_shape=packed.shape[1:]).unstack(
            packed
        )
        # Everything that depends on s_ij only comes from one product per step, unit-major:
        # [input rows of the gate kernels | W]^T (biases added after), and two identity rows
        # that carry the true-cell and corner masks through exactly (1 * 1 + 0 * s = 1).
        input_kernel = tf.concat([input_gate_kernel, input_kernel], axis=1)  # [c, G + H]
        input_kernel = tf.concat(
            [
                tf.pad(tf.transpose(input_kernel), [[0, 0], [0, 2]]),
                tf.pad(tf.constant([[1, 0], [0, 1]], s.dtype), [[0, 0], [channels, 0]]),
            ],
            axis=0,
        )  # [G + H + 2, c + 2]
        input_bias = tf.expand_dims(tf.pad(tf.concat([gate_bias, bias], 0), [[0, 2]]), 1)
        # The other kernels transposed once, for products on unit-major states.
        hidden_gate_kernel = tf.transpose(hidden_gate_kernel)  # [G, 3H]
        recurrent_kernel = tf.transpose(recurrent_kernel)  # [H, 3H]

        # Diagonal k is kept unit-major and flat as [H, 1 + batch * (m + 1)]: a leading
        # zero column, then per pair its boundary column h_(0,*) (always 0) and columns
        # i = 0 .. m - 1 holding cell (i, k - i), 0 outside the pair's true cells. In that
        # layout the state above a cell is the previous column of diagonal k - 1, the one to
        # its left the same column.
        def body(k, step, previous, before, corner, grid):
            top, left, diagonal = previous[:, :-1], previous[:, 1:], before[:, :-1]
            q = tf.concat([top, left, diagonal], axis=0)  # [3H, rows]
            # The slab is row-major [rows, c + 2]; the product reads it transposed.
            step = tf.matmul(input_kernel, step, transpose_b=True) + input_bias
            input_gates, input_candidate, true, corner_cell = tf.split(
                step, [gates_width, hidden, 1, 1], axis=0
            )
            gates = tf.matmul(hidden_gate_kernel, q) + input_gates
            # One split (one op) into the reset gates and the four update gates.
            if self.reset_gates:
                reset, z_i, z_l, z_t, z_d = tf.split(gates, [3 * hidden] + [hidden] * 4, 0)
                neighbours = tf.sigmoid(reset) * q
            else:
                z_i, z_l, z_t, z_d = tf.split(gates, 4, 0)
                neighbours = q
            # SoftmaxByRow across the four gates of each unit, folded into the mixture:
            # h = sum_p e_p x_p / sum_p e_p with e_p = exp(z_p - max_p z_p). (Elementwise
            # ops: a softmax over an axis of size 4 is much slower.)
            top_logit = tf.maximum(tf.maximum(z_i, z_l), tf.maximum(z_t, z_d))
            e_i, e_l, e_t, e_d = (tf.exp(z_p - top_logit) for z_p in (z_i, z_l, z_t, z_d))
            candidate = tf.tanh(tf.matmul(recurrent_kernel, neighbours) + input_candidate)
            h = (e_i * candidate + e_l * left + e_t * top + e_d * diagonal) / (
                e_i + e_l + e_t + e_d
            )
            h = h * true
            corner = corner + h * corner_cell
            if collect:
                written = [h] if return_grid else []
                if return_gates:
                    total = e_i + e_l + e_t + e_d
                    written += [e_p / total * true for e_p in (e_i, e_l, e_t, e_d)]
                grid = grid.write(k, tf.concat(written, axis=0))
            # The next step's slab is read here and carried, rather than read where it is
            # used: XLA would fuse that dynamic slice into every elementwise op of the
            # step, and the per-element index load it brings keeps them from vectorising.
            following = packed.read(k + 1)
            if self.litert_loop_form:
                previous = tf.maximum(previous, previous)
            return k + 1, following, tf.concat([zero, h], axis=1), previous, corner, grid

        zero = tf.zeros([hidden, 1], s.dtype)
        empty = tf.zeros([hidden, 1 + batch * (m + 1)], s.dtype)
        grid = tf.zeros([], s.dtype)
        collect = return_grid or return_gates
        # Collected per cell: h (return_grid), then the four gates (return_gates).
        width = hidden * (int(bool(return_grid)) + 4 * int(bool(return_gates)))
        if collect:
            # One spare slot, written now, so that the stack is defined with no steps.
            grid = tf.TensorArray(
                s.dtype, size=steps + 1, element_shape=tf.TensorShape([width, None])
            )
            grid = grid.write(steps, tf.zeros([width, batch * (m + 1)], s.dtype))
        # With only the corners out, the scan stops on the last anti-diagonal that holds a
        # pair's corner, (m_b - 1) + (n_b - 1): a run-time trip count, so the padding an
        # export adds to reach a length bucket costs no sequential steps.
        used = steps
        if not collect:
            used = tf.minimum(tf.maximum(tf.reduce_max(lengths1 + lengths2), 1) - 1, steps)
        _, _, _, _, corner, grid = tf.while_loop(
            lambda k, *_: k < used,
            body,
            (tf.constant(0, "int32"), packed.read(0), empty, empty, empty[:, 1:], grid),
            maximum_iterations=steps,
        )
        corner = tf.reduce_sum(tf.reshape(corner, [hidden, batch, m + 1]), axis=2)
        corner = tf.transpose(corner)  # [batch, H]
        if not collect:
            return corner
        grid = tf.reshape(grid.stack()[:steps], [steps, width, batch, m + 1])[..., 1:]
        grid = _unskew(tf.transpose(grid, [2, 3, 0, 1]), n)  # [batch, m, n, width]
        if self.go_backwards:
            grid = _reverse_prefixes(_reverse_prefixes(grid, lengths1, 1), lengths2, 2)
        out = (corner,)
        if return_grid:
            out += (grid[..., :hidden],)
        if return_gates:
            gates = grid[..., width - 4 * hidden :]
            out += (tf.reshape(gates, tf.concat([tf.shape(gates)[:3], [4, hidden]], 0)),)
        return out

    # ------------------------------------------------------------------ one cell at a time
    # (for cell_by_cell_spatial_gru only)
    def _fused_weights(self, dtype):
        """The weights as tensors of ``dtype``, arranged for two matmuls per cell (used by
        :meth:`_cell`):

        - ``gate_kernel`` ``[3H + c, 7H]`` = ``[W^(r) | W^(z)]`` (``[3H + c, 4H]`` without
          reset gates) and ``gate_bias``, with the update columns reordered from gate-major
          (``z_i, z_l, z_t, z_d`` blocks of ``H``) to unit-major (``H`` groups of the four
          gates), so a reshape to ``[..., H, 4]`` puts each unit's four gates on the last
          axis;
        - ``candidate_kernel`` ``[c + 3H, H]`` = ``[W; U]`` and ``bias``.
        """
        hidden = self.units

        def cast(w):
            return ops.cast(ops.convert_to_tensor(w), dtype)

        def unit_major(w):  # [..., 4H] gate-major -> [..., 4H] unit-major
            lead = tuple(w.shape[:-1])
            return ops.reshape(
                ops.swapaxes(ops.reshape(w, lead + (4, hidden)), -1, -2), lead + (4 * hidden,)
            )

        gate_kernel = unit_major(cast(self.update_kernel))
        gate_bias = unit_major(cast(self.update_bias))
        if self.reset_gates:
            gate_kernel = ops.concatenate([cast(self.reset_kernel), gate_kernel], 1)
            gate_bias = ops.concatenate([cast(self.reset_bias), gate_bias], 0)
        candidate_kernel = ops.concatenate(
            [cast(self.input_kernel), cast(self.recurrent_kernel)], 0
        )
        return gate_kernel, gate_bias, candidate_kernel, cast(self.bias)

    def _cell(self, top, left, diagonal, s, weights):
        """One step of Eq. 3 for any number of cells at once: ``top = h_(i-1,j)``,
        ``left = h_(i,j-1)``, ``diagonal = h_(i-1,j-1)`` ``[..., H]``, ``s`` ``[..., c]``,
        ``weights`` from :meth:`_fused_weights`; returns ``h_ij`` ``[..., H]``."""
        gate_kernel, gate_bias, candidate_kernel, bias = weights
        hidden = self.units
        q = ops.concatenate([top, left, diagonal, s], axis=-1)
        gates = ops.matmul(q, gate_kernel) + gate_bias
        neighbours = ops.concatenate([left, top, diagonal], axis=-1)
        if self.reset_gates:
            neighbours = ops.sigmoid(gates[..., : 3 * hidden]) * neighbours
            gates = gates[..., 3 * hidden :]
        # SoftmaxByRow: per hidden unit, across the four gates, on the last axis (order
        # i, l, t, d). (A softmax over another axis would transpose inside the loop, and
        # that transpose's gradient does not compile with XLA.)
        lead = top.shape[:-1]
        if any(d is None for d in lead):
            lead = tf.unstack(tf.shape(top)[:-1], num=len(lead))
        z = ops.softmax(ops.reshape(gates, (*lead, hidden, 4)), axis=-1)
        candidate = ops.tanh(
            ops.matmul(ops.concatenate([s, neighbours], axis=-1), candidate_kernel) + bias
        )
        return ops.sum(z * ops.stack([candidate, left, top, diagonal], axis=-1), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            reset_gates=self.reset_gates,
            go_backwards=self.go_backwards,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            recurrent_initializer=keras.initializers.serialize(self.recurrent_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
        )
        return config


# --------------------------------------------------------------------------- slow reference
def cell_by_cell_spatial_gru(layer, s, mask1=None, mask2=None):
    """The corner states of ``layer`` computed one cell per step: for the speed benchmark
    (wavefront vs cell-by-cell) and the tests only, not for models.

    Same weights, options (``reset_gates``, ``go_backwards``), masking and cell equations
    as :class:`SpatialGRU`, but ``m * n`` sequential steps in one ``tf.while_loop``, step
    ``t`` computing cell ``(t // n, t % n)`` (0-based, row-major) for the whole batch. The
    loop carries the previous row and the current row of states (each ``[n + 1, batch, H]``
    with the zero boundary column first) and writes each new state into the current row.
    Wrap the call in ``tf.function`` to time it as a graph.

    Args:
        layer: a built :class:`SpatialGRU`.
        s: float ``[batch, m, n, c]``.
        mask1, mask2: as in :meth:`SpatialGRU.call`.

    Returns:
        float ``[batch, H]``: the state at each pair's true corner ``(m_b, n_b)``, 0 for a
        pair with an empty text; the same as ``layer(s, mask1, mask2)``.
    """
    if not layer.built:
        layer.build(tuple(s.shape))
    s, lengths1, lengths2 = layer._prepare(s, mask1, mask2)
    weights = layer._fused_weights(s.dtype)
    batch, m, n = _dim(s, 0), _dim(s, 1), _dim(s, 2)
    cells = tf.transpose(s, [1, 2, 0, 3])  # [m, n, batch, c]
    empty_row = tf.zeros([n + 1, batch, layer.units], s.dtype)

    def body(t, previous_row, row, corner):
        i, j = t // n, t % n
        h = layer._cell(previous_row[j + 1], row[j], previous_row[j], cells[i, j], weights)
        true = (i < lengths1) & (j < lengths2)  # [batch]
        h = tf.where(true[:, None], h, tf.zeros([], h.dtype))
        corner = tf.where(((i == lengths1 - 1) & (j == lengths2 - 1))[:, None], h, corner)
        row = tf.tensor_scatter_nd_update(row, [[j + 1]], h[None])
        row_done = tf.equal(j, n - 1)
        previous_row = tf.where(row_done, row, previous_row)
        row = tf.where(row_done, empty_row, row)
        return t + 1, previous_row, row, corner

    steps = m * n
    _, _, _, corner = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (tf.constant(0, "int32"), empty_row, empty_row, tf.zeros([batch, layer.units], s.dtype)),
        maximum_iterations=steps,
    )
    return corner
