"""``python -m re2_tf.analyze``: the same command as :mod:`re2_tf.cli.analyze` (the library is
:mod:`re2_tf.analysis`)."""

from re2_tf.cli.analyze import run

if __name__ == "__main__":
    run()
