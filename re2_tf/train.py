"""``python -m re2_tf.train``: the same command as ``re2-train`` (:mod:`re2_tf.cli.train`)."""

from re2_tf.cli.train import run

if __name__ == "__main__":
    run()
