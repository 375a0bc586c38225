"""Serving backends: how an exported model computes its outputs from its input features.

A model spec names its backend (``ModelSpec.export_backend``); ``re2_tf.serving.export`` wraps it
with the in-graph featurisers, padding, checks and signatures, which are the same for every
model. A backend is a ``tf.Module`` built from a trained Keras model; calling it with the
model's feature dict (``{input name: tensor [batch, length, ...]}``) returns float32 logits
``[batch, num_classes]`` or scores ``[batch]``. Both run inside the exported graph (with XLA
when the export asks for it); no Keras and no ``re2_tf`` code is needed to serve them.

``keras``
    The Keras model itself (``model(features, training=False)``). Any architecture. fp32 (a
    model trained with ``--mixed_precision`` is served from its float32 copy,
    :func:`policy_copy`), or bf16: a copy of the model under Keras's ``mixed_bfloat16`` policy
    (:func:`bfloat16_copy`).
``re2_folded``
    RE2 from folded weights (:mod:`re2_tf.serving.folded`: weight normalisation folded into
    plain kernels, fusion G1/G2 as one matmul, the two texts run as one sequence); fp32 or
    bf16 (weights and compute in bfloat16, logits float32). Without XLA the products' kernels
    are constants of the exported graph (``_FoldedWeights``).
``bert_folded``
    BERT+MatchLSTM with its BERT as a forward pass over plain weights
    (:mod:`re2_tf.serving.folded_bert`) and the model's own head layers on its outputs, in an
    ``--xla=false`` export, its products' kernels constants of the graph as ``re2_folded``'s;
    under XLA the Keras model (``keras``) in fp32, and in bf16 the pass without XLA with only
    the head compiled by XLA. fp32 or bf16.

Every backend takes ``xla``: whether the export compiles it with XLA (a backend may pick the
form it computes by it). A backend whose ``jit_compile`` attribute is ``False`` compiles what
it compiles itself, and the export does not compile its call as a whole; the precisions in
which it does so under XLA are its ``xla_part_precisions`` (:func:`compiles_part`).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from re2_tf.models.bert_matchlstm import head_logits
from re2_tf.serving import folded as folded_lib
from re2_tf.serving import folded_bert as folded_bert_lib

__all__ = [
    "BACKENDS",
    "KerasBackend",
    "FoldedBertBackend",
    "FoldedRE2Backend",
    "bfloat16_copy",
    "compiles_part",
    "make_backend",
    "policy_copy",
]


def _set_policies(config, name):
    """Rewrite, in place, every dtype policy of a serialised Keras object (nested layers and
    models included) that is not ``name`` to ``name``; returns how many were rewritten. Plain
    dtype strings (an input layer's tensor dtype) are left alone."""
    count = 0
    if isinstance(config, dict):
        for key, value in config.items():
            if (
                key == "dtype"
                and isinstance(value, dict)
                and value.get("class_name") == "DTypePolicy"
            ):
                if value.get("config", {}).get("name") != name:
                    value["config"]["name"] = name
                    count += 1
            else:
                count += _set_policies(value, name)
    elif isinstance(config, list):
        count += sum(_set_policies(item, name) for item in config)
    return count


def policy_copy(model, policy):
    """A copy of ``model`` whose every layer (nested layers and models included) has the Keras
    dtype policy ``policy`` (``"float32"``, ``"mixed_bfloat16"``, ...), with the same weights;
    ``model`` itself when every layer has it already.

    The model is serialised, its policies rewritten, and the copy rebuilt and given the same
    weights (a mixed policy's variables are float32 too, so the weights carry over unchanged).

    Args:
        model: a serialisable Keras model (its custom classes registered with
            ``keras.saving.register_keras_serializable``, as re2_tf's are).
        policy: a Keras dtype policy name.

    Returns:
        ``keras.Model``.
    """

    config = keras.saving.serialize_keras_object(model)
    if not _set_policies(config, policy):
        return model
    # Every class of an re2_tf model is registered with Keras by ``import re2_tf`` (keras-hub's
    # by keras-hub), so the config names them all.
    copy = keras.saving.deserialize_keras_object(config)
    copy.set_weights(model.get_weights())
    return copy


def bfloat16_copy(model):
    """A copy of ``model`` whose layers compute in bfloat16 (Keras ``mixed_bfloat16``,
    :func:`policy_copy`).

    Variables stay float32, each layer casts its inputs and weights to bfloat16 and computes
    in bfloat16 (layers that Keras keeps in float32 for stability, such as normalisation
    statistics and softmax, do so as usual). Outputs are bfloat16. A model trained with
    ``--mixed_precision`` (whose float32 layers, :mod:`re2_tf.training.precision`, become
    bfloat16 here too) is rewritten alike.

    Raises:
        ValueError: every layer of the model computes in bfloat16 already.
    """
    copy = policy_copy(model, "mixed_bfloat16")
    if copy is model:
        raise ValueError(f"{model.name}: every layer computes in bfloat16 already")
    return copy


class KerasBackend(tf.Module):
    """The Keras model as it is (any architecture), or its bfloat16 copy.

    Args:
        model: functional Keras model over the feature dict.
        precision: ``fp32`` (the model itself, or its float32 copy when it was trained with
            mixed precision) or ``bf16`` (:func:`bfloat16_copy`; logits
            cast back to float32).
        xla: unused (the same graph either way).

    Raises:
        ValueError: another precision.
    """

    precisions = ("fp32", "bf16")

    def __init__(self, model, precision="fp32", xla=False):
        super().__init__(name="keras_backend")
        if precision not in self.precisions:
            raise ValueError(
                f"precision {precision!r} needs a backend that supports it; the "
                f"Keras backend serves {self.precisions}"
            )
        model = bfloat16_copy(model) if precision == "bf16" else policy_copy(model, "float32")
        # The model is held untracked and its tf.Variables tracked directly (as
        # ``keras.export.ExportArchive`` does): a tracked Keras variable is exported as a
        # second tf.Variable that the TF1 session loader restores while the functions read the
        # first, so serving_ids failed there with "Could not find variable ...".
        object.__setattr__(self, "model", model)
        self.model_variables = [v.value for v in model.variables]

    def __call__(self, features):
        return tf.cast(self.model(features, training=False), tf.float32)


class _FoldedWeights(tf.Module):
    """A folded parameter dict held for an export: its arrays in ``dtype``, as untrainable
    ``tf.Variable``s tracked by the SavedModel under their keys with ``.`` for ``/``, or, with
    ``constant_kernels``, its product weights as constants of the traced graph; its structure
    entries (layer counts, epsilon, flags: ``structure_keys``) kept apart as Python values.

    Constant kernels are for exports run by TensorFlow's own kernels (``--xla=false``). There
    TensorFlow's oneDNN product kernels (``_MklNativeFusedMatMul``, ``_MklNativeConv2D``) see
    that their weight input is a graph constant: they let oneDNN choose the weights' blocked
    layout, reorder them once and keep them, and run the product on oneDNN's blocked
    (``brgemm``) kernels; given a variable, they reorder a convolution's filter on every call
    and run a dense layer's product on plain-layout weights. Biases stay variables: a
    constant all-zero bias (a freshly initialised model's) is removed by Grappler's constant
    folding, and with it the bias-and-activation fusion into the product. Every trace of a
    function that calls :meth:`params` holds its own copy of the constants, so the export
    traces each model function once (:class:`re2_tf.serving.export.ServingModule`). The
    profile and the timings: ``docs/performance.md``, "Constant kernels".

    Args:
        params: ``{name: array or structure value}`` from a ``fold_*`` function.
        structure_keys: the keys of ``params`` that are not arrays.
        dtype: the arrays' dtype.
        constant_kernels: hold every array of rank 2 or more whose key does not start with
            ``embedding`` (the products' kernels; embeddings are gathered, not multiplied)
            as a constant rather than a variable.
    """

    def __init__(self, params, structure_keys, dtype, constant_kernels=False):
        super().__init__(name="folded_weights")
        self._structure = {k: params[k] for k in structure_keys}
        arrays = {k: v for k, v in params.items() if k not in self._structure}
        constant = {
            k
            for k, v in arrays.items()
            if constant_kernels and np.ndim(v) >= 2 and not k.startswith("embedding")
        }
        # Untracked: NumPy arrays, written into each traced graph as constants.
        object.__setattr__(
            self, "_constants", {k: tf.cast(arrays[k], dtype).numpy() for k in constant}
        )
        self.arrays = {
            k.replace("/", "."): tf.Variable(tf.cast(v, dtype), trainable=False, name=k)
            for k, v in arrays.items()
            if k not in constant
        }

    def params(self):
        """The parameter dict again: arrays as the variables, and the constant kernels as
        ``tf.constant``s made at trace time (``Const`` nodes of the traced graph)."""
        params = dict(self._structure)
        params.update({k.replace(".", "/"): v for k, v in self.arrays.items()})
        params.update({k: tf.constant(v) for k, v in self._constants.items()})
        return params


class FoldedRE2Backend(tf.Module):
    """RE2 served from folded weights (:func:`folded.fold_re2` / :func:`folded.re2_forward`).

    Args:
        model: a model built by ``re2_tf.models.build_re2``.
        precision: ``fp32`` or ``bf16``.
        xla: whether the export compiles the backend with XLA. Without XLA the products'
            kernels are constants of the graph (``_FoldedWeights``' ``constant_kernels``);
            under XLA, variables (XLA compiles the graph by its own rules).
        joint: run both texts as one sequence (see :func:`folded.re2_forward`).
    """

    precisions = ("fp32", "bf16")

    def __init__(self, model, precision="fp32", xla=False, joint=True):
        super().__init__(name="re2_folded")
        if precision not in self.precisions:
            raise ValueError(f"precision must be one of {self.precisions}, got {precision!r}")
        self._dtype = tf.bfloat16 if precision == "bf16" else tf.float32
        self._joint = bool(joint)
        params = folded_lib.fold_re2(model)
        self.folded = _FoldedWeights(
            params, folded_lib.structure_of(params), self._dtype, constant_kernels=not xla
        )

    def __call__(self, features, convolution="conv1d"):
        return folded_lib.re2_forward(
            self.folded.params(),
            features["text1"],
            features["text2"],
            dtype=self._dtype,
            joint=self._joint,
            convolution=convolution,
        )

    def portable(self, features):
        """The same logits with the encoder's convolutions as matrix products
        (``convolution="products"``): what the converters of other runtimes read
        (:mod:`re2_tf.serving.export`'s ``serving_ids_portable``)."""
        return self(features, convolution="products")


class FoldedBertBackend(tf.Module):
    """BERT+MatchLSTM with its BERT from plain weights (:func:`folded_bert.fold_bert` /
    :func:`folded_bert.bert_forward`) and the model's own head (any of ``BERT_HEADS``,
    :func:`re2_tf.models.bert_matchlstm.head_logits`) in float32 on its outputs.

    Under XLA (``xla=True``) in ``fp32`` it is :class:`KerasBackend`: XLA compiles
    keras-hub's graph and fuses it by its own rules; the pass is written for TensorFlow's
    oneDNN kernels without XLA (``docs/performance.md``, "BERT's encoder as a forward pass
    over plain weights"). Under XLA in ``bf16`` it is both: BERT is the pass in bfloat16 on
    TensorFlow's oneDNN kernels (which run bfloat16 products on the CPU's bfloat16 units;
    XLA's CPU compiler does not), and only the float32 head is compiled by XLA, in a
    function of its own (``jit_compile``: :attr:`jit_compile` is then ``False``, so the
    export does not compile the whole; ``docs/performance.md``, "BERT in bfloat16, its head
    under XLA").

    Args:
        model: a model built by ``re2_tf.models.build_bert_matchlstm``.
        precision: ``fp32`` or ``bf16`` (BERT's weights and products in bfloat16, its
            LayerNorm statistics and softmax in float32; the head in float32).
        xla: whether the export compiles the backend, or in ``bf16`` its head, with XLA.

    Attributes:
        jit_compile: whether the export compiles this backend's call as a whole with XLA
            (``False`` where the backend compiles a part of it itself).
        xla_part_precisions: the precisions in which, under XLA, it compiles only a part of
            its call (its head), ``("bf16",)``: :func:`compiles_part`.

    Raises:
        ValueError: another precision, or a model without a BERT backbone.
    """

    precisions = ("fp32", "bf16")
    xla_part_precisions = ("bf16",)

    def __init__(self, model, precision="fp32", xla=False):
        super().__init__(name="bert_folded")
        if precision not in self.precisions:
            raise ValueError(f"precision must be one of {self.precisions}, got {precision!r}")
        self.jit_compile = bool(xla) and precision not in self.xla_part_precisions
        if self.jit_compile:
            object.__setattr__(self, "_keras", KerasBackend(model, precision))
            self.model_variables = self._keras.model_variables
            return
        object.__setattr__(self, "_keras", None)
        model = policy_copy(model, "float32")
        backbones = [
            layer
            for layer in model.layers
            if hasattr(layer, "transformer_layers") and hasattr(layer, "pooled_dense")
        ]
        if len(backbones) != 1:
            raise ValueError(f"{model.name}: expected one BERT backbone, found {len(backbones)}")
        self._dtype = tf.bfloat16 if precision == "bf16" else tf.float32
        params = folded_bert_lib.fold_bert(backbones[0])
        self.folded = _FoldedWeights(
            params, folded_bert_lib.STRUCTURE_KEYS, self._dtype, constant_kernels=True
        )
        # The head's layers run on the folded outputs; the model is held untracked and its
        # head's tf.Variables tracked directly (see KerasBackend).
        object.__setattr__(self, "model", model)
        backbone_variables = {id(v) for v in backbones[0].variables}
        self.head_variables = [v.value for v in model.variables if id(v) not in backbone_variables]
        # Untracked, as the model: the head's compiled function is traced inside the export's
        # model function, not saved as a function of its own.
        object.__setattr__(
            self, "_head", tf.function(self._head_logits, jit_compile=True) if xla else None
        )

    def _head_logits(self, outputs, inputs):
        # bert_forward's outputs are float32 in either precision
        return tf.cast(head_logits(self.model, outputs, inputs), tf.float32)

    def __call__(self, features):
        if self._keras is not None:
            return self._keras(features)
        inputs = {key: features[key] for key in ("token_ids", "segment_ids", "padding_mask")}
        outputs = folded_bert_lib.bert_forward(self.folded.params(), **inputs, dtype=self._dtype)
        return (self._head or self._head_logits)(outputs, inputs)


BACKENDS = {"keras": KerasBackend, "re2_folded": FoldedRE2Backend, "bert_folded": FoldedBertBackend}


def _backend_class(name):
    if name not in BACKENDS:
        raise KeyError(f"unknown serving backend {name!r}; known: {sorted(BACKENDS)}")
    return BACKENDS[name]


def compiles_part(name, precision):
    """Whether backend ``name``, in an XLA export in ``precision`` (``fp32``, ``bf16``),
    compiles only a part of its call with XLA and runs the rest on TensorFlow's own kernels
    (its class's ``xla_part_precisions``; ``bert_folded`` in ``bf16``: BERT's bfloat16
    products on oneDNN, the head under XLA). Such an export is a serving-choice candidate of
    its own (:mod:`re2_tf.serving.serving_choice`, ``savedmodel_bf16_xla``). Raises
    ``KeyError`` for an unknown name."""
    return precision in getattr(_backend_class(name), "xla_part_precisions", ())


def make_backend(name, model, precision="fp32", xla=False):
    """Instantiate backend ``name`` for ``model`` (``xla``: whether the export compiles it with
    XLA). Raises ``KeyError`` for an unknown name."""
    return _backend_class(name)(model, precision, xla=xla)
