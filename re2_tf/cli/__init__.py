"""Command-line entry points: one module per command, each a thin layer over the library.

=====================  ===================  =============================================
console script         ``python -m``        library call it makes
=====================  ===================  =============================================
``re2-train``          ``re2_tf.cli.train``  :func:`re2_tf.fit`
=====================  ===================  =============================================

Every module here defines its absl flags only when it runs (``define_flags()`` inside
``run()``), so importing any number of them in one process defines no flag and clashes with
nothing; no module outside this package reads ``absl.flags.FLAGS``. ``run()`` is the console
script's target; :func:`re2_tf.cli.common.run_app` prints a user's mistake (a bad flag or
file, :class:`re2_tf.errors.ConfigError`, ``OSError``, ``ValueError``) as one line
``<command>: error: <message>`` and exits with status 1; ``--verbose`` shows the traceback.
"""
