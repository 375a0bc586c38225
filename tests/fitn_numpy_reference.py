"""An independent NumPy forward pass of FITN (Qi et al., Findings of NAACL 2022), written from
the paper's equations (Eq. 1-18) and the readings documented in ``re2_tf/models/fitn.py``.

It imports nothing from re2_tf. The LSTM recurrence, the character CNN, masked softmax and
masked max pooling come from ``drcn_numpy_reference`` (also re2_tf-free); the FITN parts are
written here cell by cell: the interaction vector ``M_ij`` and the memory ``Mbar_ij`` of every
token pair are computed in explicit loops over ``(i, j)`` with Eq. 7's single matrix ``w_m``
applied to ``[Mbar^{l-1}_ij; M_ij]`` (the Keras layer splits it into two blocks), in
float64. Dropout is the identity (inference).

Parameters, as plain dicts of arrays::

    model:  {"embedding": E, "char": {"embedding", "kernel", "bias"} | None,
             "rounds": [round, ...], "hidden": {"W", "b"}, "output": {"W", "b"}}
    round:  {"forward": lstm, "backward": lstm, "attention": att, "output": {"W", "b"}}
    att:    mem/inter: {"w_m": [(d_m if l > 0 else 0) + d, d_m], "b_m", "w_p": [d_m], "b_p"}
            wdot: {"W": [d, d]};  dot: {}

``cfg``: ``attention`` (mem, inter, dot, wdot), ``connection`` (oa_mixed, direct, dense,
residual), ``activation`` (relu, tanh, sigmoid, linear).
"""

import numpy as np
from drcn_numpy_reference import bilstm, char_cnn, f64, masked_max_pool, masked_softmax

ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "linear": lambda x: x,
}


def attention_scores(p, cfg, hs, ht, memory):
    """Eq. 4-8 (mem, inter) or Eq. 18 (dot, wdot) for one pair: ``Att [m, n]`` and the new
    memory (or None)."""
    f = ACTIVATIONS[cfg["activation"]]
    m, n, d = hs.shape[0], ht.shape[0], hs.shape[1]
    if cfg["attention"] == "dot":
        return hs @ ht.T / np.sqrt(d), None
    if cfg["attention"] == "wdot":
        return hs @ f64(p["W"]) @ ht.T / np.sqrt(d), None
    w_m, b_m, w_p, b_p = f64(p["w_m"]), f64(p["b_m"]), f64(p["w_p"]), float(p["b_p"])
    d_m = b_m.shape[0]
    mbar = np.zeros((m, n, d_m))
    att = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            interaction = hs[i] * ht[j]  # Eq. 5
            if memory is not None:
                x = np.concatenate([memory[i, j], interaction])  # Eq. 7
            else:
                x = interaction  # Eq. 6, l = 0
            mbar[i, j] = f(x @ w_m + b_m)
            att[i, j] = f(mbar[i, j] @ w_p + b_p)  # Eq. 8
    return att, (mbar if cfg["attention"] == "mem" else None)


def round_forward(p, cfg, x1, x2, mask1, mask2, memories):
    """One round for the whole batch: ``(O_S, O_T, new memories, attention maps)``."""
    f = ACTIVATIONS[cfg["activation"]]
    h1, h2 = bilstm(p, x1, mask1), bilstm(p, x2, mask2)  # Eq. 2-3
    o1, o2 = np.zeros_like(h1), np.zeros_like(h2)
    new_memories, maps = [], []
    W_f, b_f = f64(p["output"]["W"]), f64(p["output"]["b"])
    for b in range(h1.shape[0]):
        s_idx, t_idx = np.nonzero(mask1[b])[0], np.nonzero(mask2[b])[0]
        hs, ht = h1[b, s_idx], h2[b, t_idx]
        memory = None if memories is None else memories[b]
        att, mbar = attention_scores(p["attention"], cfg, hs, ht, memory)
        new_memories.append(mbar)
        if att.size:
            keep = np.ones_like(att, bool)
            over_t = masked_softmax(att, keep, axis=1)  # softmax over j (Eq. 9)
            over_s = masked_softmax(att, keep, axis=0)  # softmax over i (T's side)
        else:  # an empty text: no attention
            over_t = over_s = np.zeros_like(att)
        a_s, a_t = over_t @ ht, over_s.T @ hs  # 0 when the other text is empty
        full_t = np.zeros((h1.shape[1], h2.shape[1]))
        full_s = np.zeros((h1.shape[1], h2.shape[1]))
        full_t[np.ix_(s_idx, t_idx)] = over_t
        full_s[np.ix_(s_idx, t_idx)] = over_s
        maps.append((full_t, full_s))
        for idx, h, a, out in ((s_idx, hs, a_s, o1), (t_idx, ht, a_t, o2)):
            u = np.concatenate([h, a, (h + a) / 2.0, h - a], axis=-1)  # Eq. 10-11
            out[b, idx] = f(u @ W_f + b_f)  # Eq. 12-13
    return o1, o2, new_memories, maps


def forward(params, cfg, text1, text2, chars1, chars2):
    """Returns ``(logits [B, classes], [(over_t, over_s) per round, each [B, m, n]])``."""
    f = ACTIVATIONS[cfg["activation"]]
    mask1, mask2 = text1 != 0, text2 != 0
    embedded = []
    for ids, chars in ((text1, chars1), (text2, chars2)):
        parts = [f64(params["embedding"])[ids]]
        if params["char"] is not None:
            parts.append(char_cnn(params["char"], chars))
        embedded.append(np.concatenate(parts, axis=-1))  # Eq. 1
    e1, e2 = embedded
    x1, x2 = e1, e2
    hidden1 = hidden2 = None
    memories = None
    maps = []
    for p in params["rounds"]:
        o1, o2, new_memories, round_maps = round_forward(p, cfg, x1, x2, mask1, mask2, memories)
        memories = new_memories if cfg["attention"] == "mem" else None
        maps.append((np.stack([m[0] for m in round_maps]), np.stack([m[1] for m in round_maps])))
        connection = cfg["connection"]
        if connection == "direct":
            x1, x2 = o1, o2
        elif connection == "dense":
            x1, x2 = np.concatenate([x1, o1], -1), np.concatenate([x2, o2], -1)
        else:
            if hidden1 is None:  # Eq. 15, l = 1
                hidden1, hidden2 = o1, o2
            elif connection == "oa_mixed":  # Eq. 15, l > 1
                hidden1, hidden2 = (o1 + hidden1) / 2.0, (o2 + hidden2) / 2.0
            else:  # residual: a sum
                hidden1, hidden2 = o1 + hidden1, o2 + hidden2
            x1 = np.concatenate([e1, hidden1], -1)  # Eq. 14
            x2 = np.concatenate([e2, hidden2], -1)
    v = np.concatenate([masked_max_pool(x1, mask1), masked_max_pool(x2, mask2)], -1)  # Eq. 16-17
    hidden = f(v @ f64(params["hidden"]["W"]) + f64(params["hidden"]["b"]))
    return hidden @ f64(params["output"]["W"]) + f64(params["output"]["b"]), maps
