"""Optimisers and learning-rate schedules from a small recipe, for every architecture's paper.

================  =========  =====================  ==============================================
architecture      name       schedule               source
================  =========  =====================  ==============================================
RE2               adam       release                RE2 paper §3.2 and release
FITN              adam       constant               FITN paper §3.1 (Qi et al. 2022; Adam 1e-3)
DRCN              rmsprop    plateau (factor 0.85)  DRCN paper, "Implementation Details" (Kim et
                                                    al. 2019): RMSProp 1e-3
Match-SRNN        adagrad    constant               Match-SRNN paper §4.4 (Wan et al. 2016)
BERT + MatchLSTM  adamw      linear                 BERT release ``optimization.py``; Shao et al.
                                                    2019 §4.2 (peak 2e-5)
================  =========  =====================  ==============================================

All counts are in updates (convert samples with ``routine.samples_to_steps``).
"""

import dataclasses
import math

import keras

from re2_tf.training.schedule import WarmupExponentialDecay, WarmupLinearDecay

OPTIMIZERS = {
    "adam": keras.optimizers.Adam,
    "rmsprop": keras.optimizers.RMSprop,
    "adagrad": keras.optimizers.Adagrad,
    "adamw": keras.optimizers.AdamW,
}
SCHEDULES = ("release", "plateau", "linear", "constant")
#: The BERT release's AdamWeightDecayOptimizer leaves biases and LayerNorm parameters undecayed
#: (Keras names them ``bias``, ``gamma``, ``beta``) and uses epsilon 1e-6.
ADAMW_NO_DECAY = ("bias", "gamma", "beta")
ADAMW_EPSILON = 1e-6


@dataclasses.dataclass(frozen=True)
class OptimizerRecipe:
    """What :func:`build_optimizer` builds (JSON-serialisable with ``dataclasses.asdict``).

    Attributes:
        name: ``adam``, ``rmsprop``, ``adagrad`` or ``adamw`` (the Keras optimiser of that name,
            with Keras' defaults for what is not listed here: e.g. RMSprop ``rho`` 0.9, Adagrad
            ``initial_accumulator_value`` 0.1).
        lr: float > 0, the (peak) learning rate.
        schedule: ``release`` (:class:`WarmupExponentialDecay` from ``min_lr``, ``warmup_steps``,
            ``decay_rate``, ``decay_steps``; RE2), ``plateau`` (a float rate multiplied by
            ``plateau_factor`` by :class:`PlateauDecay`; DRCN), ``linear``
            (:class:`WarmupLinearDecay` over ``total_steps`` after ``warmup_steps``; BERT) or
            ``constant`` (``lr`` throughout).
        min_lr, warmup_steps, decay_rate, decay_steps, total_steps, plateau_factor: schedule
            parameters (counts in updates); a schedule ignores the others.
        weight_decay: float >= 0, decoupled weight decay of ``adamw`` (BERT release: 0.01; not
            applied to ``bias``/``gamma``/``beta`` variables). Other optimisers require 0.
        beta1, beta2: Adam/AdamW moment decay rates.
        epsilon: float or None: the optimiser's default (Keras' 1e-7; 1e-6 for ``adamw``, the
            BERT release's).
    """

    name: str = "adam"
    lr: float = 1e-3
    schedule: str = "release"
    min_lr: float = 0.0
    warmup_steps: int = 0
    decay_rate: float = 1.0
    decay_steps: int = 1
    total_steps: int = 0
    plateau_factor: float = 0.85
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float | None = None


class PlateauDecay:
    """Multiply the learning rate by ``factor`` at every evaluation that does not improve.

    DRCN's rule (Kim et al. 2019, "Experiments: Implementation Details": RMSProp at 1e-3,
    "decreased by a factor of 0.85 when the dev accuracy does not improve"). After ``k``
    non-improving evaluations the rate is ``lr * factor ** k`` (computed from ``k``, not by
    repeated multiplication, so a restored run gets the same float). The rate lives in the
    optimiser's ``learning_rate`` variable, which Keras 3 tracks among the optimiser's variables
    (saved with its weights); ``get_state`` adds the decay count, for the run's JSON state.

    Keras' ``ReduceLROnPlateau`` is not used: it acts at Keras epoch ends on a logged monitor
    value, while evaluations here happen inside epochs (the routine's own schedule) and the
    routine decides what "improved" means; its ``wait``/``best``/``cooldown`` counters live in
    Python attributes that no checkpoint saves, so a resumed run would forget them.

    Args:
        optimizer: a Keras optimiser built with a float learning rate (not a schedule).
        lr: float > 0, the initial rate (assigned to ``optimizer.learning_rate``).
        factor: float in (0, 1] (DRCN: 0.85).

    Raises:
        TypeError: the optimiser has a ``LearningRateSchedule`` (raised by Keras).
        ValueError: ``factor`` outside (0, 1].
    """

    def __init__(self, optimizer, lr, factor=0.85):
        if not 0 < factor <= 1:
            raise ValueError(f"factor must be in (0, 1], got {factor}")
        self.optimizer = optimizer
        self.initial_lr = float(lr)
        self.factor = float(factor)
        self.decays = 0
        self._assign()

    @property
    def lr(self):
        """float, the current rate ``initial_lr * factor ** decays``."""
        return self.initial_lr * self.factor**self.decays

    def _assign(self):
        self.optimizer.learning_rate = self.lr

    def on_evaluation(self, improved):
        """Record one evaluation (``improved``: bool, the dev score strictly improved); returns
        the learning rate in force afterwards."""
        if not improved:
            self.decays += 1
            self._assign()
        return self.lr

    def get_state(self):
        """JSON-serialisable ``{"initial_lr", "factor", "decays", "lr"}``."""
        return {
            "initial_lr": self.initial_lr,
            "factor": self.factor,
            "decays": self.decays,
            "lr": self.lr,
        }

    def set_state(self, state):
        """Restore ``get_state()``'s output and assign its rate to the optimiser.

        Raises:
            ValueError: the state was saved with another ``initial_lr`` or ``factor``.
        """
        saved = (state["initial_lr"], state["factor"])
        if not all(math.isclose(a, b) for a, b in zip(saved, (self.initial_lr, self.factor))):
            raise ValueError(
                f"plateau state was saved with initial_lr, factor = {saved}, "
                f"not {(self.initial_lr, self.factor)}"
            )
        self.decays = int(state["decays"])
        self._assign()


def build_optimizer(recipe):
    """The Keras optimiser of ``recipe`` (an :class:`OptimizerRecipe` or a dict of its fields).

    Returns:
        ``(optimizer, lr_controller)``: ``lr_controller`` is the :class:`PlateauDecay` the
        evaluation routine must call (``on_evaluation(improved)``) for the ``plateau``
        schedule, else ``None``.

    Raises:
        ValueError: unknown optimiser or schedule, ``lr <= 0``, weight decay with an optimiser
            other than ``adamw``, or invalid schedule parameters.
    """
    if isinstance(recipe, dict):
        recipe = OptimizerRecipe(**recipe)
    if recipe.name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {recipe.name!r}; known: {sorted(OPTIMIZERS)}")
    if recipe.schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {recipe.schedule!r}; known: {list(SCHEDULES)}")
    if not recipe.lr >= 0:  # 0 is allowed: a frozen run (tests of the routine use it)
        raise ValueError(f"lr must be >= 0, got {recipe.lr}")
    if recipe.weight_decay and recipe.name != "adamw":
        raise ValueError(
            f"weight_decay={recipe.weight_decay} needs the adamw optimizer, not "
            f"{recipe.name} (use a kernel regulariser for L2)"
        )
    lr = float(recipe.lr)
    if recipe.schedule == "release":
        lr = WarmupExponentialDecay(
            lr, recipe.min_lr, recipe.warmup_steps, recipe.decay_rate, recipe.decay_steps
        )
    elif recipe.schedule == "linear":
        lr = WarmupLinearDecay(lr, recipe.total_steps, recipe.warmup_steps)
    # The name fixes the optimizer's variable paths (``adam/iteration``), which a resumed
    # run's backup is checked against: Keras would number a second one ``adam_1``.
    kwargs = {"learning_rate": lr, "name": recipe.name}
    if recipe.name in ("adam", "adamw"):
        kwargs.update(beta_1=recipe.beta1, beta_2=recipe.beta2)
    if recipe.name == "adamw":
        kwargs.update(weight_decay=recipe.weight_decay, epsilon=ADAMW_EPSILON)
    if recipe.epsilon is not None:
        kwargs["epsilon"] = recipe.epsilon
    optimizer = OPTIMIZERS[recipe.name](**kwargs)
    if recipe.name == "adamw":
        optimizer.exclude_from_weight_decay(var_names=list(ADAMW_NO_DECAY))
    if recipe.schedule == "plateau":
        return optimizer, PlateauDecay(optimizer, recipe.lr, recipe.plateau_factor)
    return optimizer, None
