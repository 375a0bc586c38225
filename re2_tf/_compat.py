"""The only place re2_tf reaches into private Keras, keras-hub and TensorFlow internals.

Each function here wraps one private attribute for which neither Keras 3 nor keras-hub has a
public equivalent; everything else in re2_tf uses public API only. ``tests/test_compat.py``
checks every wrapped internal against the installed versions and fails naming the internal
(and the version) when one has moved or changed meaning, so an upgrade breaks there, loudly,
instead of somewhere downstream. Written against Keras 3.15 and keras-hub 0.32.
"""

from __future__ import annotations

import contextlib
import uuid

import keras
import tensorflow as tf

#: The global-state keys of Keras' object-sharing scope (``keras.saving.load_model`` opens it;
#: ``keras/src/saving/serialization_lib.py`` ``ObjectSharingScope``).
SHARING_MAP_KEYS = ("shared_objects/id_to_obj_map", "shared_objects/id_to_config_map")


def all_sublayers(layer, include_self=False):
    """Every layer nested in ``layer`` at any depth, each once, in Keras' own order.

    Keras 3 has no public traversal below ``keras.Model.layers`` (which lists a model's direct
    layers only); this is the private ``Layer._flatten_layers`` that ``Layer.losses`` and
    ``Layer.weights`` use, so it reaches sublayers of custom layers too.

    Args:
        layer: a ``keras.layers.Layer`` (a model too).
        include_self: put ``layer`` itself first.

    Returns:
        list of ``keras.layers.Layer``.
    """
    return list(layer._flatten_layers(include_self=include_self, recursive=True))


def own_losses(layer):
    """The ``add_loss`` terms ``layer`` itself added in its last call (not its sublayers', not
    weight regularisers): Keras' private ``Layer._get_own_losses``.

    ``Layer.losses`` (public) is this list for ``layer`` and every sublayer, plus the
    regularisers, with no public way to tell whose term is whose.

    Returns:
        list of scalar tensors (a copy; empty if none).
    """
    return list(layer._get_own_losses())


@contextlib.contextmanager
def outside_object_sharing():
    """Suspend Keras' shared-object tracking for the body of the ``with`` statement.

    ``keras.saving.load_model`` opens an object-sharing scope, which records objects by
    ``id()`` in two global maps (:data:`SHARING_MAP_KEYS`, kept in the private
    ``keras.src.backend.common.global_state``); a layer that serialises and deserialises
    private copies of a sublayer in its constructor (``keras.layers.Bidirectional``) can get
    an earlier, freed object's copy back when ``id()`` values are reused. Inside this context
    the maps are ``None`` (no scope) and are restored afterwards.
    """
    # lazy: a private Keras module; if Keras moves it, only the feature needing it fails
    from keras.src.backend.common import global_state

    saved = [global_state.get_global_attribute(key) for key in SHARING_MAP_KEYS]
    for key in SHARING_MAP_KEYS:
        global_state.set_global_attribute(key, None)
    try:
        yield
    finally:
        for key, value in zip(SHARING_MAP_KEYS, saved):
            global_state.set_global_attribute(key, value)


def sharing_maps():
    """The current values of Keras' object-sharing maps (:data:`SHARING_MAP_KEYS`): two dicts
    inside ``keras.saving.load_model``'s deserialisation, ``None`` outside. For the tests of
    :func:`outside_object_sharing`."""
    # lazy: a private Keras module; if Keras moves it, only the feature needing it fails
    from keras.src.backend.common import global_state

    return tuple(global_state.get_global_attribute(key) for key in SHARING_MAP_KEYS)


def transformer_intermediate_dense(encoder) -> keras.layers.Dense:
    """The first feed-forward ``Dense`` (hidden -> intermediate, with the activation) of a
    ``keras_hub.layers.TransformerEncoder``: its private ``_feedforward_intermediate_dense``.

    keras-hub exposes the activation only as a constructor argument, and ``BertBackbone``
    hard-codes it; the layer reads ``Dense.activation`` at call time, so setting it on this
    ``Dense`` changes what the encoder computes.

    Raises:
        TypeError: the attribute is not a ``keras.layers.Dense``.
    """
    dense = encoder._feedforward_intermediate_dense
    if not isinstance(dense, keras.layers.Dense):
        raise TypeError(
            f"{type(encoder).__name__}._feedforward_intermediate_dense is "
            f"{type(dense).__name__}, not a keras.layers.Dense"
        )
    return dense


#: The private attributes of a ``keras_hub.layers.TransformerEncoder`` that hold its parts, by
#: role (keras-hub 0.32, ``keras_hub/src/layers/modeling/transformer_encoder.py``).
TRANSFORMER_PARTS = {
    "attention": "_self_attention_layer",
    "attention_norm": "_self_attention_layer_norm",
    "intermediate": "_feedforward_intermediate_dense",
    "output": "_feedforward_output_dense",
    "output_norm": "_feedforward_layer_norm",
}


def transformer_parts(encoder) -> dict:
    """The layers of a built ``keras_hub.layers.TransformerEncoder``, by role.

    keras-hub exposes none of them publicly; the roles are those of its ``call``: the
    self-attention (``keras.layers.MultiHeadAttention``), the LayerNorm after its residual
    sum (``attention_norm``), the feed-forward ``Dense`` layers (``intermediate``, with the
    activation; ``output``) and the LayerNorm after the second residual sum
    (``output_norm``), each applied after its sum when ``normalize_first`` is False (BERT's
    post-LayerNorm order).

    Returns:
        ``{role: keras layer}`` for the roles of :data:`TRANSFORMER_PARTS`.

    Raises:
        TypeError: naming the attribute, when one is missing or not the layer type its role
            needs.
    """
    kinds = {
        "attention": keras.layers.MultiHeadAttention,
        "attention_norm": keras.layers.LayerNormalization,
        "intermediate": keras.layers.Dense,
        "output": keras.layers.Dense,
        "output_norm": keras.layers.LayerNormalization,
    }
    parts = {}
    for role, attribute in TRANSFORMER_PARTS.items():
        layer = getattr(encoder, attribute, None)
        if not isinstance(layer, kinds[role]):
            raise TypeError(
                f"{type(encoder).__name__}.{attribute} is {type(layer).__name__}, not a "
                f"{kinds[role].__name__}: re2_tf._compat.transformer_parts must be updated "
                "for this keras-hub"
            )
        parts[role] = layer
    return parts


class UniqueTextFileInitializer(tf.lookup.TextFileInitializer):
    """A ``tf.lookup.TextFileInitializer`` whose table gets a globally unique shared name.

    A non-anonymous ``tf.lookup.StaticHashTable`` takes its ``shared_name`` from the
    initializer's private ``_shared_name`` property, which for a text file is built from the
    filename argument; for an ``Asset`` that is the object's repr (its address), so a table
    created later at a reused address would silently share the first table's contents.
    Anonymous tables (``experimental_is_anonymous=True``) avoid that but cannot be run by the
    TF1 session loader (``saved_model_cli run``, TensorFlow Serving): their initialiser is not
    in the SavedModel's main op, and lookups fail with ``Table not initialized``. This
    subclass appends a UUID to the private ``_shared_name``, so the table is a named one
    (initialised by the main op) that never collides. Same arguments as
    ``tf.lookup.TextFileInitializer``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._unique_suffix = uuid.uuid4().hex

    @property
    def _shared_name(self):
        return f"{super()._shared_name}_{self._unique_suffix}"


def gradients_already_summed(optimizer):
    """Stop ``optimizer`` from summing gradients across replicas; returns it.

    Keras 3's TensorFlow optimiser all-reduces (sums) the gradients it is given across the
    replicas of a ``tf.distribute`` strategy inside ``apply``
    (``keras/src/backend/tensorflow/optimizer.py``, ``TFOptimizer._all_reduce_sum_gradients``,
    called from ``_backend_update_step``). :class:`re2_tf.training.trainer.MatchingTrainer`
    sums them itself, before the release's global-norm clipping, so a second sum would
    multiply the update by the number of replicas. The method is replaced on this instance
    (and on the inner optimiser of a ``LossScaleOptimizer``) by the identity; with one
    replica both are the identity anyway.

    Raises:
        RuntimeError: naming the internal and the Keras version, when an optimiser has no
            ``_all_reduce_sum_gradients`` (Keras renamed or removed it): replacing a method
            that is no longer called would silently sum the gradients twice.
    """
    for target in (optimizer, getattr(optimizer, "inner_optimizer", None)):
        if target is None:
            continue
        if not callable(getattr(target, "_all_reduce_sum_gradients", None)):
            raise RuntimeError(
                f"Keras {keras.__version__}: {type(target).__name__} has no "
                "_all_reduce_sum_gradients (private, keras/src/backend/tensorflow/optimizer.py); "
                "re2_tf._compat.gradients_already_summed must be updated for this Keras"
            )
        target._all_reduce_sum_gradients = list
    return optimizer


if not callable(getattr(keras.Model, "_maybe_symbolic_build", None)):
    raise ImportError(
        f"Keras {keras.__version__}: keras.Model has no _maybe_symbolic_build (private, "
        "keras/src/backend/tensorflow/trainer.py); re2_tf._compat.SkipsSymbolicBuildOnceBuilt "
        "must be updated for this Keras"
    )


class SkipsSymbolicBuildOnceBuilt:
    """A mix-in for a ``keras.Model`` trainer holding ``self.network``: ``fit`` skips Keras'
    symbolic build once the network and the optimiser are built.

    Keras' TensorFlow trainer (``keras/src/backend/tensorflow/trainer.py``, the private
    ``_maybe_symbolic_build``), under a ``tf.distribute`` strategy only, draws a batch from the
    training iterator and all-reduces it (``MEAN``) to build the model before ``fit``; under
    ``MultiWorkerMirroredStrategy`` that reduction fails on a batch of feature dicts. Without
    a strategy Keras skips this step; so does a trainer with this mix-in once its network and
    optimizer are built (``re2_tf.fit`` builds both before training). Importing this module
    fails, naming the internal, when Keras no longer has the method.
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if self.network.built and self.optimizer is not None and self.optimizer.built:
            return
        super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
