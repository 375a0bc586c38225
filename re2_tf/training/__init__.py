"""The release's training recipe: schedule, update rule, evaluation/early-stopping loop."""

from re2_tf.training.schedule import WarmupExponentialDecay
from re2_tf.training.trainer import MatchingTrainer

__all__ = ["MatchingTrainer", "WarmupExponentialDecay"]
