"""An independent NumPy forward pass of Match-SRNN's two layers (Wan et al., IJCAI 2016),
written from the paper's equations (§4.1 neural tensor network, §4.2 spatial GRU, Eq. 3).

It imports nothing from re2_tf and uses no deep-learning library. Everything is float64 and
cell by cell: the neural tensor network loops over word pairs and slices, the spatial GRU
loops over each pair's true cells (1-based ``i = 1 .. m_b``, ``j = 1 .. n_b``) with a zero
boundary row and column.

Parameters come in as plain dicts of arrays::

    ntn: {"tensor": T [c, d, d], "kernel": W [2d, c], "bias": b [c]}
    gru: {"reset_kernel": [3H + c, 3H] | None, "reset_bias": [3H] | None,
          "update_kernel": [3H + c, 4H], "update_bias": [4H],
          "input_kernel": [c, H], "recurrent_kernel": [3H, H], "bias": [H]}

Spatial GRU, for one cell (row vectors, ``x @ K``)::

    q   = [top; left; diag; s]        top = h[i-1, j], left = h[i, j-1], diag = h[i-1, j-1]
    r   = sigmoid(q @ reset_kernel + reset_bias) = [r_l; r_t; r_d]     (1 without reset gates)
    z   = q @ update_kernel + update_bias = [z_i; z_l; z_t; z_d], softmax across the 4 per unit
    h'  = tanh(s @ input_kernel + (r * [left; top; diag]) @ recurrent_kernel + bias)
    h   = z_l * left + z_t * top + z_d * diag + z_i * h'
"""

import numpy as np


def f64(x):
    return np.asarray(x, np.float64)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------ neural tensor network
def neural_tensor_network(params, u, v, activation="relu"):
    """u [B, m, d], v [B, n, d] -> s [B, m, n, c]:
    ``s[b, i, j, k] = F(u_i . T[k] . v_j + W[:, k] . [u_i; v_j] + b[k])``, pair by pair."""
    T, W, bias = f64(params["tensor"]), f64(params["kernel"]), f64(params["bias"])
    u, v = f64(u), f64(v)
    c = T.shape[0]
    B, m, _ = u.shape
    n = v.shape[1]
    out = np.zeros((B, m, n, c))
    for b in range(B):
        for i in range(m):
            for j in range(n):
                uv = np.concatenate([u[b, i], v[b, j]])
                for k in range(c):
                    out[b, i, j, k] = u[b, i] @ T[k] @ v[b, j] + uv @ W[:, k] + bias[k]
    if activation == "relu":
        return np.maximum(out, 0.0)
    if activation in (None, "linear"):
        return out
    raise ValueError(activation)


# ------------------------------------------------------------------ spatial GRU
def gru_cell(params, top, left, diag, s):
    """One cell of Eq. 3 (vectors ``[H]``, ``[H]``, ``[H]``, ``[c]``) -> ``h`` and the four
    normalised update gates ``(z_i, z_l, z_t, z_d)``."""
    H = top.shape[0]
    q = np.concatenate([top, left, diag, s])
    if params.get("reset_kernel") is not None:
        r = sigmoid(q @ f64(params["reset_kernel"]) + f64(params["reset_bias"]))
    else:
        r = np.ones(3 * H)
    logits = q @ f64(params["update_kernel"]) + f64(params["update_bias"])
    z = [logits[p * H : (p + 1) * H] for p in range(4)]  # z_i, z_l, z_t, z_d
    top_logit = np.max(z, axis=0)
    e = [np.exp(zp - top_logit) for zp in z]
    total = e[0] + e[1] + e[2] + e[3]
    z_i, z_l, z_t, z_d = (ep / total for ep in e)
    neighbours = np.concatenate([left, top, diag])
    candidate = np.tanh(
        s @ f64(params["input_kernel"])
        + (r * neighbours) @ f64(params["recurrent_kernel"])
        + f64(params["bias"])
    )
    h = z_l * left + z_t * top + z_d * diag + z_i * candidate
    return h, (z_i, z_l, z_t, z_d)


def spatial_gru_pair(params, s):
    """One pair's true interaction tensor ``s`` ``[m_b, n_b, c]`` -> the table
    ``h`` ``[m_b + 1, n_b + 1, H]`` with the zero boundary at row 0 and column 0 (so
    ``h[i, j]`` is the paper's 1-based ``h_ij``), filled row by row, cell by cell."""
    s = f64(s)
    m, n = s.shape[:2]
    H = f64(params["bias"]).shape[0]
    h = np.zeros((m + 1, n + 1, H))
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            h[i, j], _ = gru_cell(
                params, h[i - 1, j], h[i, j - 1], h[i - 1, j - 1], s[i - 1, j - 1]
            )
    return h


def spatial_gru(params, s, lengths1, lengths2, go_backwards=False):
    """Batch ``s`` ``[B, M, N, c]`` with per-pair lengths -> ``(corner [B, H],
    grid [B, M, N, H])``.

    Each pair is cut to its true ``[m_b, n_b]`` block. Forward: scan it, the corner is
    ``h_(m_b, n_b)``, ``grid[b, i-1, j-1] = h_ij``. Backward: reverse the block along both
    texts, scan, the corner is the reversed scan's ``(m_b, n_b)``, and the grid is mapped
    back to the original positions (``grid[b, i, j]`` = reversed scan at
    ``(m_b - i, n_b - j)``, 1-based). Cells outside the block are 0; an empty text gives a
    zero corner.
    """
    s = f64(s)
    B, M, N = s.shape[:3]
    H = f64(params["bias"]).shape[0]
    corner = np.zeros((B, H))
    grid = np.zeros((B, M, N, H))
    for b in range(B):
        m, n = int(lengths1[b]), int(lengths2[b])
        if m == 0 or n == 0:
            continue
        block = s[b, :m, :n]
        if go_backwards:
            block = block[::-1, ::-1]
        table = spatial_gru_pair(params, block)[1:, 1:]
        corner[b] = table[m - 1, n - 1]
        grid[b, :m, :n] = table[::-1, ::-1] if go_backwards else table
    return corner, grid
