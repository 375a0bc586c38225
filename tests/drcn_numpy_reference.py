"""An independent NumPy forward pass of DRCN (Kim et al., AAAI 2019), written from the paper's
equations and the readings documented in ``re2_tf/models/drcn.py``.

It imports nothing from re2_tf and uses no deep-learning library: the LSTM cell, the masked
recurrence (loops over each text's real tokens, forward and backward), the character
convolution, the cosine co-attention, the dense / residual connections, the autoencoder and
its masked reconstruction loss, the pooling and the classifier are written out here, in
float64. Dropout is the identity (inference); batch normalisation uses its moving
statistics.

Parameters come in as plain nested dicts of arrays::

    model:  {"embedding": E_tr | None, "fixed_embedding": E_fix | None,
             "char": {"embedding": C, "kernel": K [k, in, out], "bias": b} | None,
             "layers": [layer, ...], "prediction": prediction}
    layer:  {"forward": lstm, "backward": lstm, "autoencoder": ae | None}
    lstm:   {"W": [in, 4u], "U": [u, 4u], "b": [4u]}  (gate blocks i, f, c~, o)
    ae:     {"W_e", "b_e", "W_d", "b_d"}
    prediction: {"hidden": [{"W", "b", "bn": {"gamma", "beta", "mean", "var", "eps"} | None}],
                 "output": {"W", "b"}}

``cfg``: ``exact_match`` (bool), ``co_attention`` (bool), ``connection`` (``dense``,
``residual``, ``residual_no_dense``), ``autoencoder_activation`` (``relu``/``tanh``/...),
``reconstruction_weight`` (float).
"""

import numpy as np

ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "linear": lambda x: x,
}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def f64(x):
    return np.asarray(x, np.float64)


# ------------------------------------------------------------------ word representation
def char_cnn(p, chars):
    """chars int [B, L, W] -> [B, L, out]: embed, zero padding chars, 'same' conv (left pad
    (k-1)//2), ReLU, max over the word's real characters (0 for a word with none)."""
    C, K, b = f64(p["embedding"]), f64(p["kernel"]), f64(p["bias"])
    k, _, out = K.shape
    left = (k - 1) // 2
    B, L, W = chars.shape
    result = np.zeros((B, L, out))
    for bi in range(B):
        for li in range(L):
            ids = chars[bi, li]
            real = ids != 0
            if not real.any():
                continue
            e = C[ids] * real[:, None]
            padded = np.zeros((W + k - 1, e.shape[1]))
            padded[left : left + W] = e
            conv = np.stack([sum(padded[t + j] @ K[j] for j in range(k)) + b for t in range(W)])
            conv = np.maximum(conv, 0.0)
            result[bi, li] = conv[real].max(axis=0)
    return result


def word_representation(params, cfg, ids, chars, flags):
    parts = []
    for key in ("embedding", "fixed_embedding"):
        if params[key] is not None:
            parts.append(f64(params[key])[ids])
    if params["char"] is not None:
        parts.append(char_cnn(params["char"], chars))
    if cfg["exact_match"]:
        parts.append(f64(flags)[..., None])
    return np.concatenate(parts, axis=-1)


# ------------------------------------------------------------------ recurrent layer
def lstm_direction(p, x, mask, reverse):
    """One LSTM direction over the real positions of each row (in reverse order if
    ``reverse``); zero states at the start; output 0 at padding positions."""
    W, U, b = f64(p["W"]), f64(p["U"]), f64(p["b"])
    units = U.shape[0]
    B, L, _ = x.shape
    out = np.zeros((B, L, units))
    for bi in range(B):
        positions = [t for t in range(L) if mask[bi, t]]
        if reverse:
            positions = positions[::-1]
        h, c = np.zeros(units), np.zeros(units)
        for t in positions:
            z = x[bi, t] @ W + h @ U + b
            i = sigmoid(z[:units])
            f = sigmoid(z[units : 2 * units])
            g = np.tanh(z[2 * units : 3 * units])
            o = sigmoid(z[3 * units :])
            c = f * c + i * g
            h = o * np.tanh(c)
            out[bi, t] = h
    return out


def bilstm(p, x, mask):
    return np.concatenate(
        [
            lstm_direction(p["forward"], x, mask, False),
            lstm_direction(p["backward"], x, mask, True),
        ],
        axis=-1,
    )


# ------------------------------------------------------------------ co-attention
def masked_softmax(x, keep, axis):
    """Softmax over the entries where ``keep``; the others and empty slices get 0."""
    peak = np.where(keep, x, -np.inf).max(axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)  # a slice with no kept entry
    e = np.where(keep, np.exp(np.where(keep, x - peak, 0.0)), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def cosine(p, q, epsilon=1e-12):
    """e_ij = cos(p_i, q_j), norms floored at sqrt(epsilon)."""
    pn = p / np.sqrt(np.maximum((p**2).sum(-1, keepdims=True), epsilon))
    qn = q / np.sqrt(np.maximum((q**2).sum(-1, keepdims=True), epsilon))
    return np.einsum("bid,bjd->bij", pn, qn)


def co_attention(hp, hq, mask_p, mask_q):
    """Eq. 5: alpha = softmax_j(e), a_p = alpha h_q; beta = softmax_i(e), a_q = beta^T h_p."""
    e = cosine(hp, hq)
    keep = mask_p[:, :, None] & mask_q[:, None, :]
    alpha = masked_softmax(e, keep, axis=2)
    beta = masked_softmax(e, keep, axis=1)
    return (np.einsum("bij,bjd->bid", alpha, hq), np.einsum("bij,bid->bjd", beta, hp), alpha, beta)


# ------------------------------------------------------------------ autoencoder
def autoencoder(p, activation, weight, xp, xq, mask_p, mask_q):
    """Codes of both texts and weight * (squared error summed over the real positions of
    both texts) / (width * number of real positions)."""
    act = ACTIVATIONS[activation]
    codes, error = [], 0.0
    for x, mask in ((xp, mask_p), (xq, mask_q)):
        z = act(x @ f64(p["W_e"]) + f64(p["b_e"]))
        r = z @ f64(p["W_d"]) + f64(p["b_d"])
        error += (((r - x) ** 2).sum(-1) * mask).sum()
        codes.append(z)
    count = (mask_p.sum() + mask_q.sum()) * xp.shape[-1]
    return codes[0], codes[1], weight * error / max(count, 1)


# ------------------------------------------------------------------ pooling and head
def masked_max_pool(x, mask):
    out = np.zeros((x.shape[0], x.shape[2]))
    for bi in range(x.shape[0]):
        if mask[bi].any():
            out[bi] = x[bi][mask[bi]].max(axis=0)
    return out


def prediction(p, pp, pq):
    x = np.concatenate([pp, pq, pp + pq, pp - pq, np.abs(pp - pq)], axis=-1)  # Eq. 7
    for layer in p["hidden"]:
        x = x @ f64(layer["W"]) + f64(layer["b"])
        bn = layer["bn"]
        if bn is not None:
            x = (x - f64(bn["mean"])) / np.sqrt(f64(bn["var"]) + bn["eps"]) * f64(
                bn["gamma"]
            ) + f64(bn["beta"])
        x = np.maximum(x, 0.0)
    return x @ f64(p["output"]["W"]) + f64(p["output"]["b"])


# ------------------------------------------------------------------ the network
def forward(params, cfg, text1, text2, chars1, chars2, flags1, flags2):
    """Returns ``(logits [B, classes], {layer: reconstruction loss},
    {layer: (alpha, beta)})``."""
    m1, m2 = text1 != 0, text2 != 0
    w1 = word_representation(params, cfg, text1, chars1, flags1)
    w2 = word_representation(params, cfg, text2, chars2, flags2)
    x1, x2 = w1, w2
    r1 = r2 = None
    losses, attention = {}, {}
    for number, layer in enumerate(params["layers"], start=1):
        h1, h2 = bilstm(layer, x1, m1), bilstm(layer, x2, m2)
        if cfg["co_attention"]:
            a1, a2, alpha, beta = co_attention(h1, h2, m1, m2)
            attention[number] = (alpha, beta)
            f1, f2 = np.concatenate([h1, a1], -1), np.concatenate([h2, a2], -1)
        else:
            f1, f2 = h1, h2
        if cfg["connection"] == "dense":  # Eq. 6: [h; a; x]
            x1, x2 = np.concatenate([f1, x1], -1), np.concatenate([f2, x2], -1)
        else:
            r1, r2 = (f1, f2) if r1 is None else (f1 + r1, f2 + r2)
            if cfg["connection"] == "residual":  # Table 6 (8)
                x1, x2 = np.concatenate([r1, w1], -1), np.concatenate([r2, w2], -1)
            elif cfg["connection"] == "residual_no_dense":  # Table 6 (9)
                x1, x2 = r1, r2
            else:
                raise ValueError(cfg["connection"])
        if layer["autoencoder"] is not None:
            x1, x2, losses[number] = autoencoder(
                layer["autoencoder"],
                cfg["autoencoder_activation"],
                cfg["reconstruction_weight"],
                x1,
                x2,
                m1,
                m2,
            )
    logits = prediction(params["prediction"], masked_max_pool(x1, m1), masked_max_pool(x2, m2))
    return logits, losses, attention
