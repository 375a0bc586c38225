"""``python -m re2_tf.compare``: the same command as ``re2-compare`` (:mod:`re2_tf.cli.compare`)."""

from re2_tf.cli.compare import run

if __name__ == "__main__":
    run()
