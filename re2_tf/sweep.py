"""``python -m re2_tf.sweep``: the same command as ``re2-sweep`` (:mod:`re2_tf.cli.sweep`)."""

from re2_tf.cli.sweep import run

if __name__ == "__main__":
    run()
