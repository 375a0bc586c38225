"""RE2's folded forward pass (``re2_tf/serving/folded.py``) against the generic Keras backend,
both exported under XLA, timed alternately in fresh processes (Table 5 protocol: batch 8 x 20
and 512 x 20, 2 intra-op threads, median of each process's batches), so that a slow spell of a
shared CPU hits both alike. Writes ``folded_ab.json`` beside this file and prints a table.

    python docs/runs/roofline/folded_ab.py [--rounds=5] [--variants="RE2 3 blocks"]
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.training import throughput

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 5))
SHAPES = ((8, 20, 100), (512, 20, 5))  # batch, length, timed batches
BACKENDS = ("re2_folded", "keras")


def main():
    spec = get_spec("re2")
    record = {
        "command": "python docs/runs/roofline/folded_ab.py "
        + " ".join(f'--{k}="{v}"' if " " in v else f"--{k}={v}" for k, v in ARGS.items()),
        **throughput.machine(),
        "rounds": ROUNDS,
        "threads": 2,
        "variants": {},
    }
    chosen = ARGS["variants"].split(",") if "variants" in ARGS else list(spec.benchmark)
    for variant in chosen:
        entry = spec.benchmark[variant]
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for backend in BACKENDS:
                paths[backend], _, featurizers = benchmarking.export_benchmark_model(
                    spec, entry["hparams"], Path(tmp) / backend, backend=backend
                )
            medians = {f"{b}@{s[0]}": [] for b in BACKENDS for s in SHAPES}
            for _ in range(ROUNDS):
                for batch, length, batches in SHAPES:
                    signature, inputs = benchmarking.benchmark_inputs(featurizers, batch, length)
                    for backend in BACKENDS:
                        timed = benchmarking.time_table5(
                            paths[backend], signature, inputs, threads=2, batches=batches
                        )
                        medians[f"{backend}@{batch}"].append(timed["median_ms"])
        record["variants"][variant] = medians
        print(f"| {variant} | " + " | ".join(
            f"{key} {statistics.median(v):.2f} ms" for key, v in medians.items()
        ) + " |", flush=True)  # fmt: skip
    out = Path(__file__).with_name("folded_ab.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
