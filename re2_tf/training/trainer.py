"""Training wrapper around any matching network: softmax cross-entropy, Adam, global-norm
clipping, and per-batch statistics (loss, gradient norm, learning rate) for logging."""

import keras
import tensorflow as tf


class MatchingTrainer(keras.Model):
    """Wrap a functional matching network for ``fit`` with the release's update rule.

    Each step: ``loss = mean softmax cross-entropy(network(x, training=True), y)``; gradients
    are clipped to global norm ``grad_clipping`` (the norm before clipping is reported) and
    applied by the optimizer. Only ``network`` is ever saved as a model; the wrapper's
    weights file (network + optimizer state) is the resumable training state.

    Args:
        network: ``keras.Model`` mapping ``{"text1", "text2"}`` int32 ids to logits
            ``[batch, num_classes]``.
        grad_clipping: float > 0, global-norm threshold (release: 5).

    Call arguments:
        inputs: dict of int32 ``[batch, length]`` tensors.

    Train-step logs (per batch, not running means): ``loss``, ``grad_norm``, ``lr``,
    ``acc`` (batch accuracy).

    Reference: RE2 paper §3.2 (Adam, gradient clipping at 5); release's ``Model.update``.
    """

    def __init__(self, network, grad_clipping=5.0, **kwargs):
        super().__init__(**kwargs)
        self.network = network
        self.grad_clipping = float(grad_clipping)

    def call(self, inputs, training=False):
        return self.network(inputs, training=training)

    def train_step(self, data):
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        y = tf.cast(y, "int32")
        with tf.GradientTape() as tape:
            logits = self.network(x, training=True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        variables = self.network.trainable_variables
        grads = tape.gradient(loss, variables)
        grads, norm = tf.clip_by_global_norm(grads, self.grad_clipping)
        lr = self.optimizer.learning_rate  # value before this update's increment
        self.optimizer.apply(grads, variables)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type="int32"), y), "float32")
        return {"loss": loss, "grad_norm": norm, "lr": tf.cast(lr, "float32"), "acc": tf.reduce_mean(correct)}
