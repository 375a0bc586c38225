"""RE2's folded forward pass (``re2_tf/serving/folded.py``) against the paths a user would
have without it, timed alternately in fresh processes (Table 5 protocol: batch 8 x 20 and
512 x 20, 2 intra-op threads, median of each process's batches), so that a slow spell of a
shared CPU hits all alike:

- ``re2_folded``: the default export (folded pass, XLA);
- ``keras``: the same network through the generic Keras backend, XLA;
- ``openvino f32`` / ``openvino bf16`` (bf16 only on a CPU with bf16 units): OpenVINO
  converting the Keras backend's ``--xla=false`` export (``re2_tf.serving.runtimes``).

Every path times the same batches (``benchmarking.table5_inputs(..., length_spread=0)``).
Writes ``folded_ab.json`` beside this file and prints a table.

    python docs/runs/roofline/folded_ab.py [--rounds=5] [--variants="RE2 3 blocks"]
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

from re2_lab.roofline import ab_record, alternate_paths
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 5))
SHAPES = ((8, 20, 100), (512, 20, 5))  # batch, length, timed batches


def main():
    spec = get_spec("re2")
    precisions = ("f32", "bf16") if runtimes.cpu_has_bf16() else ("f32",)
    record = ab_record("docs/runs/roofline/folded_ab.py", ARGS, ROUNDS, variants={})
    chosen = ARGS["variants"].split(",") if "variants" in ARGS else list(spec.benchmark)
    for variant in chosen:
        hparams = spec.benchmark[variant]["hparams"]
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            paths = {}  # path name -> (export or converted model, OpenVINO precision)
            for backend in ("re2_folded", "keras"):
                path, _, featurizers = benchmarking.export_benchmark_model(
                    spec, hparams, tmp / backend, backend=backend
                )
                paths[backend] = (path, None)
            plain, _, _ = benchmarking.export_benchmark_model(
                spec, hparams, tmp / "keras_noxla", backend="keras", xla=False
            )
            converted = runtimes.convert(plain, "openvino", tmp / "openvino")
            for precision in precisions:
                paths[f"openvino {precision}"] = (converted, precision)
            medians = alternate_paths(paths, featurizers, SHAPES, ROUNDS, tmp)
        record["variants"][variant] = medians
        print(f"| {variant} | " + " | ".join(
            f"{key} {statistics.median(v):.2f} ms" for key, v in medians.items()
        ) + " |", flush=True)  # fmt: skip
    out = Path(__file__).with_name("folded_ab.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
