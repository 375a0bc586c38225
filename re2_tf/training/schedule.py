"""Learning-rate schedules: the RE2 release's warm-up + exponential decay, BERT's warm-up +
linear decay."""

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


@keras.saving.register_keras_serializable(package="re2_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's fine-tuning rate at (0-based) update ``s``: linear warm-up, then linear decay to 0.

    - warm-up (``s < warmup_steps``): ``lr * s / warmup_steps``;
    - after: ``lr * max(0, 1 - s / total_steps)``, which reaches 0 at ``total_steps``.

    This is the BERT release's ``optimization.create_optimizer`` (Devlin et al. 2019:
    ``polynomial_decay`` with power 1 to 0 over all ``num_train_steps``, replaced by the
    warm-up ramp while ``s < num_warmup_steps``), used for BERT + MatchLSTM (Shao et al. 2019,
    peak rate 2e-5). Reading chosen: the release's, whose decay line runs from step 0, so the
    rate right after warm-up is ``lr * (1 - warmup_steps / total_steps)``, not ``lr`` (the
    Hugging Face variant rescales the decay to start at the warm-up's end).

    Args:
        lr: float > 0, peak learning rate.
        total_steps: int >= 1, updates of the whole run.
        warmup_steps: int in ``[0, total_steps]``, updates of linear warm-up (BERT: 10%).
    """

    def __init__(self, lr, total_steps, warmup_steps=0):
        if int(total_steps) < 1 or not 0 <= int(warmup_steps) <= int(total_steps):
            raise ValueError(
                f"need total_steps >= 1 and 0 <= warmup_steps <= total_steps, got "
                f"total_steps={total_steps}, warmup_steps={warmup_steps}"
            )
        self.lr = float(lr)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        s = ops.cast(step, "float32")
        decayed = self.lr * ops.maximum(0.0, 1.0 - s / self.total_steps)
        if self.warmup_steps == 0:
            return decayed
        return ops.where(s < self.warmup_steps, self.lr * s / self.warmup_steps, decayed)

    def get_config(self):
        return dict(lr=self.lr, total_steps=self.total_steps, warmup_steps=self.warmup_steps)
