"""Training wrapper around any matching network: task loss + the network's own losses,
global-norm clipping, a guard against non-finite updates, and per-batch statistics (loss
terms, gradient norm, learning rate, task metrics) for logging."""

import keras
import tensorflow as tf

from re2_tf._compat import (
    SkipsSymbolicBuildOnceBuilt,
    all_sublayers,
    gradients_already_summed,
    own_losses,
)
from re2_tf.training.losses import get_task_loss
from re2_tf.training.precision import uses_loss_scaling


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


class MatchingTrainer(SkipsSymbolicBuildOnceBuilt, keras.Model):
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

    Under a ``tf.distribute`` strategy with ``n`` replicas each replica computes its rows'
    loss terms, metrics and gradient; weighted by its share of the batch's rows they are
    summed across replicas (:meth:`_replica_sum`, one all-reduce) *before* clipping and the
    non-finite guard, so the update is the one a single process takes on the whole batch and
    every replica applies or skips it alike; the optimiser's own cross-replica sum is
    switched off (:func:`re2_tf._compat.gradients_already_summed`). See
    ``docs/distributed.md``.

    With a ``LossScaleOptimizer`` (``--mixed_precision=fp16``,
    :mod:`re2_tf.training.precision`) the loss is scaled before differentiation, the gradient
    is unscaled before clipping (so the norm, the clipping and the logged ``grad_norm`` are
    those of the true gradient) and the optimiser skips an overflowing update and halves its
    scale (:meth:`_apply_scaled`; logs ``loss_scale`` and ``overflow``) instead of the run
    stopping.

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

    def compile(self, optimizer="adam", **kwargs):
        """``keras.Model.compile``; the optimiser is told that :meth:`train_step` sums the
        gradients across replicas itself (:func:`re2_tf._compat.gradients_already_summed`)."""
        if not isinstance(optimizer, str):
            gradients_already_summed(optimizer)
        super().compile(optimizer=optimizer, **kwargs)

    def call(self, inputs, training=False):
        return self.network(inputs, training=training)

    def _loss_and_gradients(self, x, y, variables):
        """``(logs, grads)`` of one (micro-)batch: ``logs`` the loss, its terms and metrics."""
        with tf.GradientTape() as tape:
            task, metrics = self.task_loss(self.network, x, y, training=True)
            terms = model_loss_terms(self.network)
            loss = tf.add_n([task, *terms.values()])
            # times the dynamic loss scale under fp16 (LossScaleOptimizer), else the loss
            scaled = self.optimizer.scale_loss(loss)
        grads = tape.gradient(scaled, variables)
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

    def _replica_sum(self, x, logs, grads):
        """Across replicas: the row-weighted sum of every replica's logs and gradients.

        Each replica's terms are means over its own rows; weighted by ``rows / global rows``
        and summed (one all-reduce), they are the means over the global batch -- the loss, the
        metrics and the gradient one process computes on the whole batch. A replica with no
        rows (the last, short batch of a pass) contributes exact zeros
        (``tf.math.multiply_no_nan``: its empty mean may be NaN). With one replica this
        returns its arguments.
        """
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return logs, grads
        rows = tf.cast(tf.shape(tf.nest.flatten(x)[0])[0], "float32")
        total = context.all_reduce(tf.distribute.ReduceOp.SUM, rows)
        weight = rows / total
        names = list(logs)
        local = [tf.math.multiply_no_nan(logs[n], weight) for n in names] + [
            tf.math.multiply_no_nan(g, tf.cast(weight, g.dtype)) for g in grads
        ]
        summed = context.all_reduce(tf.distribute.ReduceOp.SUM, local)
        return dict(zip(names, summed[: len(names)])), list(summed[len(names) :])

    def _apply_if(self, finite, grads, variables):
        """Apply ``grads`` when ``finite`` (the same on every replica), else change nothing.

        Under a strategy whose updates go through ``merge_call`` (``MirroredStrategy``), the
        condition is taken in the cross-replica context, as Keras' ``LossScaleOptimizer``
        does: a ``tf.cond`` in a replica context cannot hold a branch that calls
        ``merge_call``.
        """

        def apply():
            self.optimizer.apply(grads, variables)

        context = tf.distribute.get_replica_context()
        if (
            context is None
            or context.num_replicas_in_sync == 1
            or tf.__internal__.distribute.strategy_supports_no_merge_call()
        ):
            tf.cond(finite, apply, lambda: None)
            return

        def cross_replica(distribution, finite, grads):
            decided = distribution.experimental_local_results(finite)[0]

            def apply_each():
                distribution.extended.call_for_each_replica(
                    lambda g: self.optimizer.apply(g, variables), args=(grads,)
                )

            tf.cond(decided, apply_each, lambda: None)

        context.merge_call(cross_replica, args=(finite, grads))

    def _apply_scaled(self, loss, norm, scale, grads, variables):
        """The update under dynamic loss scaling (``keras.optimizers.LossScaleOptimizer``).

        The clipped gradient is scaled back and handed to the ``LossScaleOptimizer``, which
        applies it (unscaled) when every entry is finite, and otherwise skips the update and
        halves the scale. A loss that is not finite makes the gradient NaN, so it is skipped
        too. A skipped update still advances ``optimizer.iterations`` (update ``n`` stays
        batch ``n`` of the training stream). Returns the logs ``loss_scale`` (the scale this
        update used) and ``overflow`` (1.0 when it was skipped)."""
        factor = tf.where(tf.math.is_finite(loss), scale, float("nan"))
        self.optimizer.apply([g * factor for g in grads], variables)
        overflow = tf.logical_not(tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(norm)))
        self.optimizer.iterations.assign_add(tf.cast(overflow, self.optimizer.iterations.dtype))
        return {"loss_scale": scale, "overflow": tf.cast(overflow, "float32")}

    def train_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        variables = self.network.trainable_variables
        if self.accumulation_steps > 1:
            logs, grads = self._accumulated(x, y, variables)
        else:
            logs, grads = self._loss_and_gradients(x, y, variables)
        logs, grads = self._replica_sum(x, logs, grads)
        loss = logs["loss"]
        if not self.optimizer.built:  # create slots outside the conditional branch
            self.optimizer.build(variables)
        lr = tf.cast(self.optimizer.learning_rate, "float32")  # before this update's increment
        loss_scaling = uses_loss_scaling(self.optimizer)
        if loss_scaling:
            scale = tf.convert_to_tensor(self.optimizer.dynamic_scale)
            grads = [g / scale for g in grads]  # clipped as the unscaled gradient
        grads, norm = tf.clip_by_global_norm(grads, self.grad_clipping)
        finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(norm))
        if loss_scaling:
            logs = {**logs, **self._apply_scaled(loss, norm, scale, grads, variables)}
            finite = tf.math.is_finite(loss)  # an overflow is the scale's business, not a stop
        else:
            self._apply_if(finite, grads, variables)
        logs = {**logs, "grad_norm": norm, "lr": lr, "nonfinite": 1.0 - tf.cast(finite, "float32")}
        if isinstance(tf.distribute.get_strategy(), tf.distribute.MultiWorkerMirroredStrategy):
            # Keras reduces a multi-worker step's logs with ``strategy.reduce(MEAN, axis=0)``,
            # which needs an axis: each log is a vector of one value there (the same value
            # on every replica, so the mean is that value).
            logs = {name: tf.reshape(value, [1]) for name, value in logs.items()}
        return logs
