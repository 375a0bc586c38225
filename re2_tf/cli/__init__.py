"""Command-line entry points: one module per command, each a thin layer over the library.

=================  ==========================  ===============================================
console script     ``python -m re2_tf.cli.``   library it calls
=================  ==========================  ===============================================
``re2-train``      ``train``                   ``re2_tf.fit``
``re2-evaluate``   ``evaluate``                ``re2_tf.inference`` (``evaluate_run``'s steps)
``re2-predict``    ``predict``                 ``re2_tf.serving.predictor.Predictor``
``re2-export``     ``export``                  ``re2_tf.serving.run_export.export_run``
``re2-bench``      ``benchmark``               ``re2_tf.benchmarking.run_benchmark``
``re2-prepare``    ``prepare``                 ``re2_tf.data.prepare.prepare``
``python -m re2_lab.cli.summarize``  ``summarize``               ``re2_lab.results.collect``
(none)             ``precision_check``         ``re2_lab.precision.compare_precisions``
=================  ==========================  ===============================================

Every module here defines its absl flags only when it runs (``define_flags()`` inside
``run()``), so importing any number of them in one process defines no flag and clashes with
nothing; no module outside this package reads ``absl.flags.FLAGS``. ``run()`` is the console
script's target; :func:`re2_tf.cli.common.run_app` prints a user's mistake (a bad flag or
file, :class:`re2_tf.errors.ConfigError`, ``OSError``, ``ValueError``) as one line
``<command>: error: <message>`` and exits with status 1; ``--verbose`` shows the traceback.
"""

import sys

from re2_tf.cli import startup

# A process started as one of the commands imports TensorFlow here, quietly, before its command
# module (and with it TensorFlow) is imported; re2-predict without Keras. Imported any other way
# (a library user, the lab, the tests) this does nothing.
if startup.started_as_command():
    startup.import_tensorflow(quiet="--verbose" not in sys.argv, keras=not startup.exports_only())
