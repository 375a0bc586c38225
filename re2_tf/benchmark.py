"""``python -m re2_tf.benchmark``: the same command as ``re2-bench`` (:mod:`re2_tf.cli.benchmark`);
``python -m re2_tf.benchmark --roofline`` is the report of :mod:`re2_lab.roofline`."""

from re2_tf.cli.benchmark import run

if __name__ == "__main__":
    run()
