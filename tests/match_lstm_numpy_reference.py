"""An independent NumPy forward pass of the MatchLSTM (Wang & Jiang, NAACL 2016; Shao et al.,
2019, Eq. 1-2), written from those equations.

It imports nothing from re2_tf and uses no deep-learning library. Everything is float64 and
one scalar sum at a time where it is cheap to do so: attention logits position by position
(``j`` over A's true tokens only), the context as an explicit sum over ``j``, the LSTM gates
unit by unit. Texts are given with their true lengths (tokens first, padding after); padding
values are never read.

Parameters come in as a plain dict of arrays, named as the Keras layer's weights::

    {"attention_kernel_a": W^A [d_A, D], "attention_kernel_b": W^B [d_B, D],
     "attention_kernel_s": W^s [H, D], "attention_bias": b [D], "attention_vector": u [D],
     "kernel": K [d_B + d_A, 4H], "recurrent_kernel": R [H, 4H], "bias": b_lstm [4H]}

One step at B's position ``i`` (row vectors, ``x @ W``; gate blocks ``i, f, c, o``)::

    e_j  = sum_k u[k] tanh((h^A_j @ W^A)[k] + (h^B_i @ W^B)[k] + (s @ W^s)[k] + b[k])
    a_j  = exp(e_j) / sum_j' exp(e_j')          j, j' over A's true tokens; a = [] if |A| = 0
    c    = sum_j a_j h^A_j                      (0 if |A| = 0)
    z    = [h^B_i ; c] @ K + s @ R + b_lstm
    m'   = sigmoid(z_f) m + sigmoid(z_i) tanh(z_c);   s' = sigmoid(z_o) tanh(m')
"""

import numpy as np


def f64(x):
    return np.asarray(x, np.float64)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def match_lstm_step(params, h_b_i, h_a, state, cell):
    """One MatchLSTM step: ``h_b_i`` ``[d_B]``, ``h_a`` ``[|A|, d_A]`` (true tokens only, may
    be empty), ``state``/``cell`` ``[H]`` -> ``(new_state, new_cell, attention [|A|])``."""
    W_a, W_b = f64(params["attention_kernel_a"]), f64(params["attention_kernel_b"])
    W_s, b = f64(params["attention_kernel_s"]), f64(params["attention_bias"])
    u = f64(params["attention_vector"])
    K, R, b_lstm = f64(params["kernel"]), f64(params["recurrent_kernel"]), f64(params["bias"])
    H = R.shape[0]
    D = u.shape[0]
    d_a = W_a.shape[0]

    query = np.array([h_b_i @ W_b[:, k] + state @ W_s[:, k] + b[k] for k in range(D)])
    logits = np.zeros(len(h_a))
    for j in range(len(h_a)):
        logits[j] = sum(u[k] * np.tanh(h_a[j] @ W_a[:, k] + query[k]) for k in range(D))
    if len(h_a):
        weights = np.exp(logits - logits.max())
        attention = weights / weights.sum()
    else:
        attention = np.zeros(0)
    context = np.zeros(d_a)
    for j in range(len(h_a)):
        context += attention[j] * h_a[j]

    r = np.concatenate([h_b_i, context])
    new_state, new_cell = np.zeros(H), np.zeros(H)
    for n in range(H):
        z_i, z_f, z_c, z_o = (
            r @ K[:, g * H + n] + state @ R[:, g * H + n] + b_lstm[g * H + n] for g in range(4)
        )
        new_cell[n] = sigmoid(z_f) * cell[n] + sigmoid(z_i) * np.tanh(z_c)
        new_state[n] = sigmoid(z_o) * np.tanh(new_cell[n])
    return new_state, new_cell, attention


def match_lstm(params, h_b, h_a, lengths_b, lengths_a, go_backwards=False):
    """The MatchLSTM over a batch.

    Args:
        params: the weights (see the module docstring).
        h_b: ``[batch, len_b, d_B]``; h_a: ``[batch, len_a, d_A]``.
        lengths_b, lengths_a: ``[batch]`` true lengths (tokens first).
        go_backwards: read B's tokens from the last to the first.

    Returns:
        ``(last [batch, H], sequence [batch, len_b, H], attention [batch, len_b, len_a])``:
        the state after the last step (zero if B is empty), the state after reading each
        position (in the original positions; 0 at padding) and the attention weights used at
        each position (0 at padding of either text).
    """
    h_b, h_a = f64(h_b), f64(h_a)
    H = f64(params["recurrent_kernel"]).shape[0]
    batch, len_b, _ = h_b.shape
    len_a = h_a.shape[1]
    last = np.zeros((batch, H))
    sequence = np.zeros((batch, len_b, H))
    attentions = np.zeros((batch, len_b, len_a))
    for row in range(batch):
        n_b, n_a = int(lengths_b[row]), int(lengths_a[row])
        tokens_a = h_a[row, :n_a]
        order = range(n_b - 1, -1, -1) if go_backwards else range(n_b)
        state, cell = np.zeros(H), np.zeros(H)
        for i in order:
            state, cell, attention = match_lstm_step(params, h_b[row, i], tokens_a, state, cell)
            sequence[row, i] = state
            attentions[row, i, :n_a] = attention
        last[row] = state
    return last, sequence, attentions
