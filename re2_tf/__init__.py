"""re2_tf: RE2 and related sentence-pair matching architectures as Keras 3 models.

The library in one screen::

    import re2_tf

    config = re2_tf.TrainConfig(model="drcn", dataset="sample", epochs=1)
    result = re2_tf.fit(config, run_dir="checkpoints/sample-drcn")   # a RunResult
    print(result.best_score, result.test_scores)
    matcher = result.matcher()              # = re2_tf.Matcher.from_run("checkpoints/sample-drcn")
    matcher.predict([("A man sleeps.", "A person rests.")])    # [{"label", "probabilities"}]
    matcher.evaluate("test")                                    # {metric: value}
    matcher.export("exports/drcn")                              # what re2-export does
    re2_tf.Matcher.from_export("exports/drcn").rank("A man sleeps.", ["A person rests."])

``re2_tf.evaluate(run_dir, split)`` and ``re2_tf.predict(export_dir, pairs)`` are one-call
shorthands of ``Matcher.from_run(run_dir).evaluate(split)`` and
``Matcher.from_export(export_dir).predict(pairs)`` (:mod:`re2_tf.inference`). :func:`fit`
writes nothing to stdout: its lines go to the run's ``train.log`` and to the ``logging``
logger ``re2_tf.train`` (``re2-train`` shows them on stdout).

Importing re2_tf imports TensorFlow and Keras and registers every custom layer and model
with Keras (``keras.saving.register_keras_serializable``), so ``keras.saving.load_model`` of
any re2_tf ``.keras`` file works in a process that has imported ``re2_tf``. Imported as a
library, re2_tf does not touch the process's stderr: TensorFlow's start-up notices are its
own. The command-line entry points are in :mod:`re2_tf.cli`; only in a process started as
one of them is TensorFlow's import kept quiet (:mod:`re2_tf.cli.startup`), and in a process
started as ``re2-predict``, which serves exports only, ``import re2_tf`` imports neither Keras
nor the layers and models (``re2_tf.layers`` and ``re2_tf.models`` import them on first use).
"""

import importlib
import sys

__version__ = "0.2.0"

from re2_tf.cli import startup as _startup  # noqa: E402  (imports no TensorFlow)

if _startup.started_as_command():
    _startup.import_tensorflow(quiet="--verbose" not in sys.argv, keras=not _startup.exports_only())

if not _startup.exports_only():
    from re2_tf import layers, models  # noqa: E402,F401  (registers the custom Keras objects)

#: Subpackages imported on first use where ``import re2_tf`` has not imported them.
_SUBMODULES = ("layers", "models")

#: Public names resolved on first use (PEP 562), so ``import re2_tf`` stays light.
_LAZY = {
    "TrainConfig": "re2_tf.config",
    "ConfigError": "re2_tf.errors",
    "WorkerLostError": "re2_tf.errors",
    "fit": "re2_tf.api",
    "RunResult": "re2_tf.api",
    "evaluate": "re2_tf.inference",
    "predict": "re2_tf.inference",
    "Matcher": "re2_tf.matcher",
    "Predictor": "re2_tf.serving.predictor",
}

__all__ = ["__version__", "layers", "models", *_LAZY]


#: Public names that differ from the name in their module.
_RENAMED = {"evaluate": "evaluate_run"}


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"re2_tf.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), _RENAMED.get(name, name))
        globals()[name] = value
        return value
    raise AttributeError(f"module 're2_tf' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
