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

``import re2_tf`` imports neither TensorFlow nor Keras and reads no ``sys.argv``: every public
name above is imported on first use (PEP 562). ``import re2_tf.models`` registers every custom
layer and model with Keras (``keras.saving.register_keras_serializable``), so
``keras.saving.load_model`` of an re2_tf ``.keras`` file works after it; every re2_tf function
that builds or loads a model imports it. Imported as a library, re2_tf does not touch the
process's stderr: TensorFlow's start-up notices are its own. The command-line entry points are
in :mod:`re2_tf.cli`, whose package start-up (:mod:`re2_tf.cli.startup`) keeps TensorFlow's
import quiet in a process started as one of them, before any command module is imported; a
process started as ``re2-predict``, which serves exports only, imports no Keras.
"""

import importlib

__version__ = "0.2.0"

#: Subpackages imported on first use (``import re2_tf.models`` registers the custom Keras
#: objects; every re2_tf function that builds or loads a model imports it).
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
