"""Training wrapper around any matching network: task loss + the network's own losses,
global-norm clipping, a guard against non-finite updates, and per-batch statistics (loss
terms, gradient norm, learning rate, task metrics) for logging."""

import keras
import tensorflow as tf

from re2_tf.training.losses import get_task_loss


def model_loss_terms(network):
    """The network's own losses from its last call, by stable log name.

    Returns ``{"loss_regularization": sum of weight-regulariser terms (0.0 if none),
    "loss_layer/<layer name>": sum of that layer's add_loss terms, ...}`` (float32 scalars;
    layers of nested models included; two layers with the same name share one entry). The
    values add up to ``sum(network.losses)``: they are read with the accessors Keras 3's
    ``Layer.losses`` itself uses (``_flatten_layers``, ``_get_own_losses``,
    ``_get_regularization_losses``; keras 3.15 ``src/layers/layer.py``). Keras clears add_loss
    terms whenever ``network`` is called as the outermost layer, so they belong to that call.
    """
    terms = {"loss_regularization": tf.zeros([], "float32")}
    regularization = network._get_regularization_losses()
    if regularization:
        terms["loss_regularization"] = tf.cast(tf.add_n(regularization), "float32")
    for layer in network._flatten_layers(include_self=True):
        own = layer._get_own_losses()
        if own:
            key = f"loss_layer/{layer.name}"
            terms[key] = terms.get(key, 0.0) + tf.cast(tf.add_n(own), "float32")
    return terms


class MatchingTrainer(keras.Model):
    """Wrap a functional matching network for ``fit`` with the release's update rule.

    Each step: ``loss = task loss + the network's own losses`` (``add_loss`` terms and weight
    regularisers, see :func:`model_loss_terms`); gradients are clipped to global norm
    ``grad_clipping`` (the norm before clipping is reported) and applied by the optimizer --
    unless the loss or the gradient norm is not finite, in which case nothing changes (weights,
    optimizer slots and iteration count stay as they were) and ``nonfinite`` is 1.0 in the logs.
    Only ``network`` is ever saved as a model; the wrapper's weights file (network + optimizer
    state, including a float learning rate) is the resumable training state.

    Args:
        network: ``keras.Model`` taking the batch features and returning what ``task_loss``
            expects (``[batch, num_classes]`` logits for the default).
        grad_clipping: float > 0, global-norm threshold (release: 5).
        task_loss: name in ``re2_tf.training.losses.TASK_LOSSES`` or a task-loss instance
            (default ``"softmax_cross_entropy"``, the release's).

    Call arguments:
        inputs: the network's feature dict (e.g. int32 ``[batch, length]`` tensors).

    Train-step logs (float32 scalars per batch, not running means): ``loss`` (total),
    ``loss_task``, ``loss_regularization``, ``loss_layer/<name>`` per layer that adds a loss,
    ``grad_norm``, ``lr`` (rate used by this update), ``nonfinite`` (1.0 if the update was
    skipped), and the task loss's metrics (``acc`` for the default).

    Reference: RE2 paper §3.2 (Adam, gradient clipping at 5); release's ``Model.update``.
    """

    def __init__(self, network, grad_clipping=5.0, task_loss="softmax_cross_entropy", **kwargs):
        super().__init__(**kwargs)
        self.network = network
        self.grad_clipping = float(grad_clipping)
        self.task_loss = get_task_loss(task_loss)

    def call(self, inputs, training=False):
        return self.network(inputs, training=training)

    def train_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        variables = self.network.trainable_variables
        with tf.GradientTape() as tape:
            task, metrics = self.task_loss(self.network, x, y, training=True)
            terms = model_loss_terms(self.network)
            loss = tf.add_n([task, *terms.values()])
        grads = tape.gradient(loss, variables)
        grads, norm = tf.clip_by_global_norm(grads, self.grad_clipping)
        lr = tf.cast(self.optimizer.learning_rate, "float32")  # before this update's increment
        if not self.optimizer.built:  # create slots outside the conditional branch
            self.optimizer.build(variables)
        finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(norm))
        tf.cond(finite, lambda: self.optimizer.apply(grads, variables), lambda: None)
        return {"loss": loss, "loss_task": task, **terms, "grad_norm": norm, "lr": lr,
                "nonfinite": 1.0 - tf.cast(finite, "float32"), **metrics}
