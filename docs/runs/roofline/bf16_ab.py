"""Where a bfloat16 SavedModel gains on a CPU with bfloat16 units (issue 51, item 1): RE2's
default export (folded pass, fp32, XLA) against the same network exported in bf16 with and
without XLA, and OpenVINO bf16 (converted from the Keras backend's ``--xla=false`` export, as
``folded_ab.py``), timed alternately in fresh processes (2 intra-op threads, median of each
process's batches) at batch 8 x 20 and 512 x 20 on the same batches
(``benchmarking.table5_inputs(..., length_spread=0)``).

``--paths`` adds, or chooses among, two more: ``TF bf16 rewrite (fp32 xla=False)`` (the
default network exported ``--xla=false``, under TensorFlow's oneDNN bfloat16 rewrite:
``re2_tf.serving.runtimes.TF_BF16_REWRITE``) and ``openvino bf16 (serving choice)``
(OpenVINO bf16 converted from that export as the serving choice converts it,
``re2_tf.serving.runtimes.convert``: RE2's ``serving_ids_portable``).

Each path's probabilities on those batches are compared with the default export's (max |dp|,
share of equal argmax; random weights, so probabilities are near uniform and argmax flips
easily), and each SavedModel is profiled once per shape with ``tf.profiler``
(``re2_lab.roofline.profile_export``): thread-ms per call in each op kind. Writes
``--json_out`` (default ``bf16_ab.json``) beside this file.

    python docs/runs/roofline/bf16_ab.py [--rounds=3] [--variants="RE2 3 blocks"]
        [--paths="fp32 XLA (default),bf16 XLA,..."] [--json_out=bf16_ab.json]
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

from re2_lab.roofline import ab_agreement, ab_profiles, ab_record, alternate_paths
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 3))
SHAPES = ((8, 20, 100), (512, 20, 5))  # batch, length, timed batches
#: path name -> (export keyword arguments or "openvino", OpenVINO precision)
PATHS = {
    "fp32 XLA (default)": (dict(precision="fp32", xla=True), None),
    "bf16 XLA": (dict(precision="bf16", xla=True), None),
    "bf16 xla=False": (dict(precision="bf16", xla=False), None),
    "openvino bf16": ("openvino", "bf16"),
}
#: the paths ``--paths`` can add: (export keyword arguments, converter, precision)
MORE_PATHS = {
    "TF bf16 rewrite (fp32 xla=False)": (dict(precision="fp32", xla=False), None, "bf16"),
    "openvino bf16 (serving choice)": (dict(precision="fp32", xla=False), "openvino", "bf16"),
}
CHOSEN = ARGS["paths"].split(",") if "paths" in ARGS else list(PATHS)


def main():
    if not runtimes.cpu_has_bf16():
        raise SystemExit("this CPU has no bfloat16 units: nothing to compare")
    spec = get_spec("re2")
    record = ab_record(
        "docs/runs/roofline/bf16_ab.py", ARGS, ROUNDS, variants={}, agreement={}, profiles={}
    )
    chosen = ARGS["variants"].split(",") if "variants" in ARGS else ["RE2 3 blocks"]
    for variant in chosen:
        hparams = spec.benchmark[variant]["hparams"]
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            paths = {}
            for name in CHOSEN:
                if name in MORE_PATHS:
                    kwargs, converter, precision = MORE_PATHS[name]
                    path = tmp / "fp32_noxla"
                    if not path.exists():
                        path, _, featurizers = benchmarking.export_benchmark_model(
                            spec, hparams, path, **kwargs
                        )
                    if converter:
                        path = runtimes.convert(path, converter, tmp / converter)
                    paths[name] = (path, precision)
                    continue
                kwargs, precision = PATHS[name]
                if kwargs == "openvino":
                    plain, _, _ = benchmarking.export_benchmark_model(
                        spec, hparams, tmp / "keras_noxla", backend="keras", xla=False
                    )
                    paths[name] = (runtimes.convert(plain, "openvino", tmp / "ov"), precision)
                else:
                    path, _, featurizers = benchmarking.export_benchmark_model(
                        spec, hparams, tmp / name.replace(" ", "_"), **kwargs
                    )
                    paths[name] = (path, None)
            medians, outputs = alternate_paths(
                paths, featurizers, SHAPES, ROUNDS, tmp, outputs=True
            )
            profiles = ab_profiles(paths, featurizers, SHAPES, tmp)
            record["agreement"][variant] = ab_agreement(outputs, "fp32 XLA (default)")
        record["variants"][variant] = medians
        record["profiles"][variant] = profiles
        print(f"| {variant} | " + " | ".join(
            f"{key} {statistics.median(v):.2f} ms" for key, v in medians.items()
        ) + " |", flush=True)  # fmt: skip
    out = Path(__file__).with_name(ARGS.get("json_out", "bf16_ab.json"))
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
