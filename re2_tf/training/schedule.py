"""The release's learning-rate schedule: linear warm-up, then stepwise exponential decay."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="re2_tf")
class WarmupExponentialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Learning rate at (0-based) update ``s``, as the RE2 release computes it.

    - warm-up (``s < warmup_steps``): ``min_lr + (lr - min_lr) * s / warmup_steps``;
    - after: ``max(min_lr, lr * decay_rate ** floor((s - warmup_steps) / decay_steps))``.

    With ``decay_rate = 1`` and no warm-up the rate is fixed at ``lr`` (SciTail, WikiQA).

    Args:
        lr: float, peak learning rate.
        min_lr: float, floor (and warm-up start).
        warmup_steps: int >= 0, updates of linear warm-up.
        decay_rate: float in (0, 1], multiplicative decay per ``decay_steps``.
        decay_steps: int >= 1, updates between decays.

    Reference: RE2 paper §3.2 ("exponentially decaying learning rate with a linear
    warmup"); release's ``Model`` learning-rate op, with counts converted from samples to
    updates as ``ceil(samples / batch_size)``.
    """

    def __init__(self, lr, min_lr, warmup_steps, decay_rate, decay_steps):
        if lr < min_lr:
            raise ValueError(f"lr ({lr}) must be >= min_lr ({min_lr}), as the release asserts.")
        if int(decay_steps) < 1 or int(warmup_steps) < 0:
            raise ValueError("decay_steps must be >= 1 and warmup_steps >= 0.")
        self.lr = float(lr)
        self.min_lr = float(min_lr)
        self.warmup_steps = int(warmup_steps)
        self.decay_rate = float(decay_rate)
        self.decay_steps = int(decay_steps)

    def __call__(self, step):
        s = ops.cast(step, "float32")
        decayed = self.lr * ops.power(
            self.decay_rate, ops.floor((s - self.warmup_steps) / self.decay_steps)
        )
        after = ops.maximum(self.min_lr, decayed)
        if self.warmup_steps == 0:
            return after
        warm = self.min_lr + (self.lr - self.min_lr) * s / self.warmup_steps
        return ops.where(s < self.warmup_steps, warm, after)

    def get_config(self):
        return dict(
            lr=self.lr,
            min_lr=self.min_lr,
            warmup_steps=self.warmup_steps,
            decay_rate=self.decay_rate,
            decay_steps=self.decay_steps,
        )
