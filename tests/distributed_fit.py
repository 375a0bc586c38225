"""Test helper, run as a script: ``python distributed_fit.py '<json list of runs>'``.

Each run is ``{"config": {TrainConfig fields}, "run_dir": path}``; they are trained one after
another with :func:`re2_tf.fit` in this process (the first run's ``distribution`` and
``logical_cpus`` set the process up: a CPU split and multi-worker collectives are configured
once per process, before TensorFlow's first op). For each run one line
``RESULT {"run_dir", "best_step", "best_score", "stop_reason"}`` is printed. ``TF_CONFIG``
comes from the environment (for ``multi_worker``).
"""

import json
import sys

import re2_tf


def main(runs):
    for run in runs:
        result = re2_tf.fit(re2_tf.TrainConfig(**run["config"]), run_dir=run["run_dir"])
        record = {
            "run_dir": str(run["run_dir"]),
            "best_step": result.best_step,
            "best_score": result.best_score,
            "stop_reason": result.stop_reason,
        }
        print("RESULT " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
