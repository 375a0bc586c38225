"""Errors re2_tf raises for a user's mistakes (as opposed to bugs).

The command-line entry points (:mod:`re2_tf.cli`) print these as one line, without a
traceback; library callers catch them like the built-in exceptions they subclass.
"""

__all__ = ["ConfigError"]


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
