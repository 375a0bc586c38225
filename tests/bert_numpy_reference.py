"""An independent NumPy BERT encoder (Devlin et al., NAACL 2019), written from the paper and
the semantics of Google's original ``modeling.py`` (``embedding_postprocessor``,
``attention_layer``, ``transformer_model``, ``get_pooled_output``). The intermediate
activation is chosen by config.json's ``hidden_act`` with Hugging Face's meaning of the name
("gelu" = exact erf GELU; see :func:`gelu_exact`).

It imports nothing from re2_tf, Keras or keras-hub: the weights are read DIRECTLY from a
Hugging Face ``model.safetensors`` file with ``safetensors.numpy.load_file``, by their Hugging
Face names, and the hyper-parameters from the ``config.json`` next to it. Everything is
computed in float64. Dropout is the identity (inference).

Hugging Face names used (``{i}`` = layer index; a ``torch.nn.Linear`` weight is stored
``[out, in]``, so ``y = x @ W.T + b``)::

    embeddings.word_embeddings.weight            [vocab, H]
    embeddings.position_embeddings.weight        [max_positions, H]
    embeddings.token_type_embeddings.weight      [type_vocab, H]
    embeddings.LayerNorm.{weight,bias}           [H]
    encoder.layer.{i}.attention.self.{query,key,value}.{weight [H, H], bias [H]}
    encoder.layer.{i}.attention.output.dense.{weight [H, H], bias [H]}
    encoder.layer.{i}.attention.output.LayerNorm.{weight,bias}   [H]
    encoder.layer.{i}.intermediate.dense.{weight [I, H], bias [I]}
    encoder.layer.{i}.output.dense.{weight [H, I], bias [H]}
    encoder.layer.{i}.output.LayerNorm.{weight,bias}             [H]
    pooler.dense.{weight [H, H], bias [H]}                       (optional)

Some checkpoints prefix every name with ``bert.`` and old ones name the LayerNorm parameters
``gamma``/``beta``; both are accepted by :func:`load_bert`.
"""

import json
import math
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

try:  # exact erf; scipy is optional
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover
    _erf = np.vectorize(math.erf)


def gelu_exact(x):
    """``x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))``: the GELU of Hendrycks & Gimpel, which is
    what Hugging Face's ``hidden_act == "gelu"`` computes (``torch.nn.functional.gelu``).
    Google's released ``modeling.gelu`` uses the tanh approximation instead
    (:func:`gelu_tanh`); a checkpoint trained with Hugging Face and ``"gelu"`` in its
    config.json means this exact form."""
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def gelu_tanh(x):
    """The tanh approximation ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
    (Hugging Face ``"gelu_new"`` / ``"gelu_pytorch_tanh"``)."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS = {
    "gelu": gelu_exact,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "relu": lambda x: np.maximum(x, 0.0),
}


def load_bert(model_dir):
    """Reads ``config.json`` and ``model.safetensors`` from ``model_dir``.

    Returns ``(config, weights)``: the parsed config dict and a dict of float64 arrays keyed
    by the Hugging Face names above (``bert.`` prefix stripped, ``gamma``/``beta`` renamed to
    ``weight``/``bias``, non-parameter buffers such as ``embeddings.position_ids`` kept as
    they are)."""
    model_dir = Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    weights = {}
    for name, array in load_file(str(model_dir / "model.safetensors")).items():
        if name.startswith("bert."):
            name = name[len("bert.") :]
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
        name = name.replace("LayerNorm.beta", "LayerNorm.bias")
        weights[name] = array.astype(np.float64) if array.dtype.kind == "f" else array
    return config, weights


def layer_norm(x, gamma, beta, eps):
    """LayerNorm over the last axis with the biased variance (``modeling.layer_norm``)."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def linear(w, prefix, x):
    """``x @ W.T + b`` for the Hugging Face Linear ``prefix`` (``W`` is ``[out, in]``)."""
    return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]


def self_attention(w, prefix, x, mask, num_heads):
    """Multi-head scaled dot-product self-attention (``modeling.attention_layer``).

    ``x [B, L, H]``, ``mask [B, L]`` (1 = real token). Scores ``q k^T / sqrt(d_head)`` get the
    additive mask ``-10000 (1 - mask)`` on the KEY axis (as in ``modeling.py``), softmax over
    keys, weighted sum of values, heads concatenated: returns ``[B, L, H]`` (before the output
    dense)."""
    b, length, hidden = x.shape
    d = hidden // num_heads

    def heads(t):  # [B, L, H] -> [B, heads, L, d]
        return t.reshape(b, length, num_heads, d).transpose(0, 2, 1, 3)

    q = heads(linear(w, f"{prefix}.query", x))
    k = heads(linear(w, f"{prefix}.key", x))
    v = heads(linear(w, f"{prefix}.value", x))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)  # [B, h, L, L]
    scores = scores + (-10000.0) * (1.0 - mask[:, None, None, :].astype(np.float64))
    scores = scores - scores.max(-1, keepdims=True)
    probs = np.exp(scores)
    probs = probs / probs.sum(-1, keepdims=True)
    context = probs @ v  # [B, h, L, d]
    return context.transpose(0, 2, 1, 3).reshape(b, length, hidden)


def encoder_layer(w, i, x, mask, config):
    """One post-LN transformer layer (``modeling.transformer_model``): attention -> output
    dense -> residual + LayerNorm -> intermediate dense + activation -> output dense ->
    residual + LayerNorm. ``x [B, L, H]`` -> ``[B, L, H]``."""
    eps = config["layer_norm_eps"]
    act = ACTIVATIONS[config["hidden_act"]]
    p = f"encoder.layer.{i}"
    context = self_attention(w, f"{p}.attention.self", x, mask, config["num_attention_heads"])
    attn = linear(w, f"{p}.attention.output.dense", context)
    x = layer_norm(
        attn + x,
        w[f"{p}.attention.output.LayerNorm.weight"],
        w[f"{p}.attention.output.LayerNorm.bias"],
        eps,
    )
    inner = act(linear(w, f"{p}.intermediate.dense", x))
    out = linear(w, f"{p}.output.dense", inner)
    return layer_norm(
        out + x, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps
    )


def bert_encode(config, weights, token_ids, segment_ids, padding_mask):
    """The BERT encoder forward pass.

    Inputs: ``token_ids``, ``segment_ids``, ``padding_mask``, each ``[B, L]`` integers
    (``padding_mask`` 1 for real tokens, 0 for padding; positions are ``0 .. L-1``).

    Returns ``(sequence_output [B, L, H], pooled_output [B, H] or None)`` in float64:
    the final hidden states, and ``tanh(W_pool h_[CLS] + b)`` on position 0 when the
    checkpoint has pooler weights (``modeling.get_pooled_output``). States at padded positions
    are computed but meaningless (compare only true positions)."""
    token_ids = np.asarray(token_ids)
    segment_ids = np.asarray(segment_ids)
    mask = np.asarray(padding_mask)
    w = weights
    length = token_ids.shape[1]
    x = (
        w["embeddings.word_embeddings.weight"][token_ids]
        + w["embeddings.position_embeddings.weight"][np.arange(length)][None]
        + w["embeddings.token_type_embeddings.weight"][segment_ids]
    )
    x = layer_norm(
        x,
        w["embeddings.LayerNorm.weight"],
        w["embeddings.LayerNorm.bias"],
        config["layer_norm_eps"],
    )
    for i in range(config["num_hidden_layers"]):
        x = encoder_layer(w, i, x, mask, config)
    pooled = None
    if "pooler.dense.weight" in w:
        pooled = np.tanh(linear(w, "pooler.dense", x[:, 0, :]))
    return x, pooled


def mean_pool_normalized(sequence, padding_mask):
    """sentence-transformers' ``Pooling(mean_tokens)`` + ``Normalize``: the mean of
    ``sequence [B, L, H]`` over true positions, L2-normalised: ``[B, H]``."""
    m = np.asarray(padding_mask, np.float64)[..., None]
    mean = (np.asarray(sequence, np.float64) * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return mean / np.linalg.norm(mean, axis=-1, keepdims=True)
