"""Training: task losses, the update rule, optimisers and schedules, triple sampling, and the
release's evaluation/early-stopping loop."""

from re2_tf.training.losses import TASK_LOSSES, get_task_loss
from re2_tf.training.optimizers import OptimizerRecipe, PlateauDecay, build_optimizer
from re2_tf.training.sampling import pairwise_triples
from re2_tf.training.schedule import WarmupExponentialDecay, WarmupLinearDecay
from re2_tf.training.trainer import MatchingTrainer

__all__ = [
    "MatchingTrainer",
    "OptimizerRecipe",
    "PlateauDecay",
    "TASK_LOSSES",
    "WarmupExponentialDecay",
    "WarmupLinearDecay",
    "build_optimizer",
    "get_task_loss",
    "pairwise_triples",
]
