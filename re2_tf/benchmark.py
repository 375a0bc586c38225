"""``python -m re2_tf.benchmark``: the same command as ``re2-bench``
(:mod:`re2_tf.cli.benchmark`)."""

from re2_tf.cli.benchmark import run

if __name__ == "__main__":
    run()
