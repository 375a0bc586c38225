"""Training wrapper around any matching network: task loss + the network's own losses,
global-norm clipping, a guard against non-finite updates, and per-batch statistics (loss
terms, gradient norm, learning rate, task metrics) for logging."""

import keras
import tensorflow as tf

from re2_tf._compat import all_sublayers, own_losses
from re2_tf.training.losses import get_task_loss


def model_loss_terms(network):
    """The network's own losses from its last call, by stable log name.

    Returns ``{"loss_regularization": sum of weight-regulariser terms (0.0 if none),
    "loss_layer/<layer name>": sum of that layer's add_loss terms, ...}`` (float32 scalars;
    layers of nested models and of custom layers included; two layers with the same name
    share one entry). The values add up to ``sum(network.losses)``: the regularisers are those
    of ``network.trainable_weights`` (``Variable.regularizer``), the add_loss terms are read
    layer by layer (:func:`re2_tf._compat.all_sublayers`, :func:`re2_tf._compat.own_losses`),
    as Keras 3's ``Layer.losses`` itself collects them. Keras clears add_loss terms whenever
    ``network`` is called as the outermost layer, so they belong to that call.
    """
    terms = {"loss_regularization": tf.zeros([], "float32")}
    regularization = [
        v.regularizer(v) for v in network.trainable_weights if v.regularizer is not None
    ]
    if regularization:
        terms["loss_regularization"] = tf.cast(tf.add_n(regularization), "float32")
    for layer in all_sublayers(network, include_self=True):
        own = own_losses(layer)
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
        accumulation_steps: int >= 1. With ``k > 1`` each batch is split into ``k``
            micro-batches of ``ceil(b / k)`` rows (the last may be smaller) whose gradients are
            computed one after another in a ``tf.while_loop`` (so only one micro-batch's
            activations are alive at a time) and summed with weights ``rows / b``; the sum is
            clipped and applied once. For a loss that is a mean over rows this is the gradient
            of the whole batch, so the update is the same as with ``k = 1`` (tested to 1e-5);
            what differs is what is computed per call: dropout masks are drawn per
            micro-batch, batch normalisation normalises per micro-batch, and a ranking
            batch's two sides are padded per micro-batch. Logged losses and metrics are the
            same row-weighted means. For users with less memory (BERT fine-tuning).

    Call arguments:
        inputs: the network's feature dict (e.g. int32 ``[batch, length]`` tensors).

    Train-step logs (float32 scalars per batch, not running means): ``loss`` (total),
    ``loss_task``, ``loss_regularization``, ``loss_layer/<name>`` per layer that adds a loss,
    ``grad_norm``, ``lr`` (rate used by this update), ``nonfinite`` (1.0 if the update was
    skipped), and the task loss's metrics (``acc`` for the default).

    Reference: RE2 paper §3.2 (Adam, gradient clipping at 5); release's ``Model.update``.
    """

    def __init__(
        self,
        network,
        grad_clipping=5.0,
        task_loss="softmax_cross_entropy",
        accumulation_steps=1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(accumulation_steps) < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {accumulation_steps!r}")
        self.network = network
        self.grad_clipping = float(grad_clipping)
        self.task_loss = get_task_loss(task_loss)
        self.accumulation_steps = int(accumulation_steps)

    def call(self, inputs, training=False):
        return self.network(inputs, training=training)

    def _loss_and_gradients(self, x, y, variables):
        """``(logs, grads)`` of one (micro-)batch: ``logs`` the loss, its terms and metrics."""
        with tf.GradientTape() as tape:
            task, metrics = self.task_loss(self.network, x, y, training=True)
            terms = model_loss_terms(self.network)
            loss = tf.add_n([task, *terms.values()])
        grads = tape.gradient(loss, variables)
        grads = [
            tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for g, v in zip(grads, variables)
        ]
        return {"loss": loss, "loss_task": task, **terms, **metrics}, grads

    def _accumulated(self, x, y, variables):
        """The row-weighted sums over ``accumulation_steps`` micro-batches of
        :meth:`_loss_and_gradients`, computed sequentially."""
        k = self.accumulation_steps
        rows = tf.shape(tf.nest.flatten(x)[0])[0]
        size = (rows + k - 1) // k

        def part(tensor, i):
            return tensor[i * size : tf.minimum((i + 1) * size, rows)]

        def micro(i):
            xi = tf.nest.map_structure(lambda t: part(t, i), x)
            yi = None if y is None else tf.nest.map_structure(lambda t: part(t, i), y)
            logs, grads = self._loss_and_gradients(xi, yi, variables)
            weight = tf.cast(tf.shape(tf.nest.flatten(xi)[0])[0], "float32") / tf.cast(
                rows, "float32"
            )
            return (
                {name: value * weight for name, value in logs.items()},
                [g * tf.cast(weight, g.dtype) for g in grads],
            )

        # The first micro-batch fixes the structure (and the set of loss terms) of the sums.
        logs, grads = micro(0)

        def body(i, logs, grads):
            more_logs, more_grads = micro(i)
            return (
                i + 1,
                {n: logs[n] + more_logs[n] for n in logs},
                [a + b for a, b in zip(grads, more_grads)],
            )

        steps = tf.minimum(k, (rows + size - 1) // size)  # a small last batch has fewer parts
        _, logs, grads = tf.while_loop(
            lambda i, *_: i < steps, body, (tf.constant(1), logs, grads), maximum_iterations=k - 1
        )
        return logs, grads

    def train_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        variables = self.network.trainable_variables
        if self.accumulation_steps > 1:
            logs, grads = self._accumulated(x, y, variables)
        else:
            logs, grads = self._loss_and_gradients(x, y, variables)
        loss = logs["loss"]
        grads, norm = tf.clip_by_global_norm(grads, self.grad_clipping)
        lr = tf.cast(self.optimizer.learning_rate, "float32")  # before this update's increment
        if not self.optimizer.built:  # create slots outside the conditional branch
            self.optimizer.build(variables)
        finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(norm))
        tf.cond(finite, lambda: self.optimizer.apply(grads, variables), lambda: None)
        return {**logs, "grad_norm": norm, "lr": lr, "nonfinite": 1.0 - tf.cast(finite, "float32")}
