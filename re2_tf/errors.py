"""Errors re2_tf raises for a user's mistakes (as opposed to bugs), and for a failure outside
the program that the user resolves (a lost worker of a multi-worker run).

The command-line entry points (:mod:`re2_tf.cli`) print these as one line, without a
traceback; library callers catch them like the built-in exceptions they subclass.
"""

__all__ = ["ConfigError", "WorkerLostError"]


class ConfigError(ValueError):
    """An invalid setting: its message names the setting (``TrainConfig`` field, hence the
    flag of the same name) and says what is allowed.

    Attributes:
        field: the offending setting's name (``"batch_size"``, ``"hparams.blocks"``), or
            ``None`` when the error concerns several.
    """

    def __init__(self, message, field=None):
        super().__init__(message)
        self.field = field


class WorkerLostError(RuntimeError):
    """A multi-worker run lost one of its processes (killed, preempted, its host down or
    unreachable) and cannot take another update; raised on a surviving worker, from the
    TensorFlow error of the collective that failed (``__cause__``). The message names the lost
    task and how to resume: start every worker again with the same command
    (``docs/distributed.md``).

    Attributes:
        tasks: tuple of ``(task_type, task_index, address)``, the lost tasks as ``TF_CONFIG``
            names them (``("worker", 1, "127.0.0.1:2223")``); empty when TensorFlow's error
            does not say which task was lost.
    """

    def __init__(self, message, tasks=()):
        super().__init__(message)
        self.tasks = tuple(tasks)
