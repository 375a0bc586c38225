"""An independent NumPy forward pass of RE2, written from the paper's equations and the
behaviour of the authors' TensorFlow release
(github.com/alibaba-edu/simple-effective-text-matching).

It imports nothing from re2_tf. Parameters come in as plain nested dicts of arrays:
    dense/conv: {"v": V, "g": g, "b": b}
    block i:    {"encoder": [conv, ...], "alignment": {"t": t, "proj": dense | None},
                 "fusion": {"orig", "sub", "mul", "proj"} (simple: only "orig"),
                 "connection": {"proj": dense | None} (residual only)}
    model:      {"embedding": E, "blocks": [...], "prediction": {"dense_1", "dense_2"}}
Everything is computed in float64. Dropout is the identity (inference). The encoder's
convolutions use ``cfg["encoder_activation"]``: ReLU (the TF release) or tanh-GeLU (the
authors' PyTorch port).

Empty texts (all-padding rows): re2_tf's chosen reading, not the release's (which has no
value there): pooling over no token is 0, and attention over no position is all zeros (so a
text aligned to an empty text gets a zero aligned vector). Written here without the dtype
minimum fill: weights are ``exp`` over kept entries only, divided by their sum (0 if none).
"""

import numpy as np


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def relu(x):
    return np.maximum(x, 0.0)


def normalized_kernel(p):
    v = np.asarray(p["v"], np.float64)
    axes = tuple(range(v.ndim - 1))
    norm = np.sqrt((v**2).sum(axis=axes, keepdims=True))
    return v / np.maximum(norm, 1e-7) * np.asarray(p["g"], np.float64)


def dense(p, x, act=None):
    y = x @ normalized_kernel(p) + p["b"]
    return act(y) if act else y


def conv1d_same(p, x, act):
    """x [B, L, C]; kernel [k, C, F]; stride 1, 'same' (TF pads (k-1)//2 on the left)."""
    w = normalized_kernel(p)
    k = w.shape[0]
    left = (k - 1) // 2
    right = k - 1 - left
    batch, length, _ = x.shape
    padded = np.concatenate(
        [np.zeros((batch, left, x.shape[2])), x, np.zeros((batch, right, x.shape[2]))], axis=1
    )
    out = np.zeros((batch, length, w.shape[2]))
    for t in range(length):
        for j in range(k):
            out[:, t] += padded[:, t + j] @ w[j]
    return act(out + p["b"])


def masked_softmax(x, keep, axis):
    """Softmax over the entries where ``keep``; excluded entries and empty slices get 0."""
    peak = np.where(keep, x, -np.inf).max(axis=axis, keepdims=True)  # -inf if none kept
    e = np.exp(np.where(keep, x - peak, -np.inf))
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


ACTIVATIONS = {"relu": relu, "gelu": gelu}


def encoder(convs, x, mask, activation):
    for p in convs:
        x = conv1d_same(p, mask * x, ACTIVATIONS[activation])
    return x


def alignment(p, a, b, mask_a, mask_b):
    fa = dense(p["proj"], a, gelu) if p["proj"] is not None else a
    fb = dense(p["proj"], b, gelu) if p["proj"] is not None else b
    e = np.einsum("bid,bjd->bij", fa, fb) * p["t"]  # Eq. 2 with temperature
    pair = (mask_a[:, :, 0][:, :, None] * mask_b[:, :, 0][:, None, :]) > 0
    attn_a = masked_softmax(e, pair, axis=1)  # weights over a's positions, per b_j
    attn_b = masked_softmax(e, pair, axis=2)  # weights over b's positions, per a_i
    aligned_a = np.einsum("bij,bjd->bid", attn_b, b)  # Eq. 3, a'_i
    aligned_b = np.einsum("bij,bid->bjd", attn_a, a)  # Eq. 3, b'_j
    return aligned_a, aligned_b, attn_a, attn_b


def fusion(p, x, x_al, mode):
    g1 = dense(p["orig"], np.concatenate([x, x_al], -1), gelu)
    if mode == "simple":
        return g1
    g2 = dense(p["sub"], np.concatenate([x, x - x_al], -1), gelu)
    g3 = dense(p["mul"], np.concatenate([x, x * x_al], -1), gelu)
    return dense(p["proj"], np.concatenate([g1, g2, g3], -1), gelu)  # Eq. 4


def connect(p, x, res, i, mode):
    if mode == "aug":
        if i == 1:
            return np.concatenate([res, x], -1)
        h = x.shape[-1]
        return np.concatenate([res[..., :-h], (res[..., -h:] + x) * np.sqrt(0.5)], -1)
    if p["proj"] is not None:
        x = dense(p["proj"], x)
    return (x + res) * np.sqrt(0.5)


def pool(x, mask):
    """Max over the tokens of each text; 0 for a text without tokens."""
    has_token = (mask > 0).any(axis=1)
    return np.where(has_token, np.where(mask > 0, x, -np.inf).max(axis=1), 0.0)


def predict(p, a, b, mode):
    if mode == "full":
        f = np.concatenate([a, b, a * b, a - b], -1)
    elif mode == "symmetric":
        f = np.concatenate([a, b, a * b, np.abs(a - b)], -1)
    else:
        f = np.concatenate([a, b], -1)
    return dense(p["dense_2"], dense(p["dense_1"], f, gelu))


def forward(params, ids1, ids2, cfg):
    """Logits [B, C] and the per-block attention matrices, in float64."""
    emb = np.asarray(params["embedding"], np.float64)
    mask_a = (ids1 != 0).astype(np.float64)[..., None]
    mask_b = (ids2 != 0).astype(np.float64)[..., None]
    e1, e2 = emb[ids1], emb[ids2]
    a, b = e1, e2
    res_a, res_b = a, b
    outs_a, outs_b, attention = [], [], []
    for i, blk in enumerate(params["blocks"]):
        if cfg["parallel_blocks"]:
            a, b = e1, e2
        elif i > 0:
            a = connect(blk["connection"], a, res_a, i, cfg["connection"])
            b = connect(blk["connection"], b, res_b, i, cfg["connection"])
            res_a, res_b = a, b
        enc_a = encoder(blk["encoder"], a, mask_a, cfg["encoder_activation"])
        enc_b = encoder(blk["encoder"], b, mask_b, cfg["encoder_activation"])
        if cfg["enc_in"]:
            a, b = np.concatenate([a, enc_a], -1), np.concatenate([b, enc_b], -1)
        else:
            a, b = enc_a, enc_b
        al_a, al_b, at_a, at_b = alignment(blk["alignment"], a, b, mask_a, mask_b)
        attention.append((at_a, at_b))
        a = fusion(blk["fusion"], a, al_a, cfg["fusion"])
        b = fusion(blk["fusion"], b, al_b, cfg["fusion"])
        outs_a.append(a)
        outs_b.append(b)
    if cfg["parallel_blocks"]:
        a, b = sum(outs_a), sum(outs_b)
    return predict(
        params["prediction"], pool(a, mask_a), pool(b, mask_b), cfg["prediction"]
    ), attention
