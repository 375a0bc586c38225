"""Where TensorFlow's oneDNN bfloat16 rewrite gains and loses (issue 51, item 1): the
``--xla=false`` SavedModel of a benchmark variant (random weights, as ``re2-bench``) in float32
and under the rewrite (``re2_tf.serving.runtimes.TF_BF16_REWRITE``, the runtimes record's
"SavedModel bf16 no XLA" path), timed alternately in fresh processes
(``re2_lab.roofline.alternate_paths``: 2 intra-op threads, median of each process's batches)
at batch 8 x 20 and 512 x 20 on the same batches, then each profiled once per shape with
``tf.profiler`` (``re2_lab.roofline.profile_export``): thread-ms per call in each kernel type
(``Cast`` is what the rewrite adds; ``_MklMatMul``/``_MklFusedMatMul``/``BatchMatMulV2``
are the products), and how many distinct kernels (graph nodes) run in a call.

Writes ``rewrite_profile.json`` beside this file (``--json_out``: another name there).

    python docs/runs/roofline/rewrite_profile.py [--rounds=2] [--variants="RE2 1 block,DRCN"]
    python docs/runs/roofline/rewrite_profile.py --variants="BERT (h_0)" \
        --json_out=rewrite_profile_bert.json
"""

import json
import sys
import tempfile
from pathlib import Path

from re2_lab.roofline import ab_inputs, ab_record, alternate_paths, kind_times, profile_export
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 2))
SHAPES = ((8, 20, 100), (512, 20, 5))  # batch, length, timed batches
#: variant -> model name
VARIANTS = {"RE2 1 block": "re2", "RE2 3 blocks": "re2", "DRCN": "drcn", "FITN": "fitn"}
VARIANTS["BERT (h_0)"] = "bert_matchlstm"
#: path name -> timing worker precision
PATHS = {"f32": "f32", "bf16 rewrite": "bf16"}


def main():
    if not runtimes.cpu_has_bf16():
        raise SystemExit("this CPU has no bfloat16 units: the rewrite does not run")
    chosen = ARGS["variants"].split(",") if "variants" in ARGS else list(VARIANTS)
    record = ab_record(
        "docs/runs/roofline/rewrite_profile.py", ARGS, ROUNDS, medians_ms={}, profiles={}
    )
    for variant in chosen:
        spec = get_spec(VARIANTS[variant])
        hparams = spec.benchmark[variant]["hparams"]
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            path, _, featurizers = benchmarking.export_benchmark_model(
                spec, hparams, tmp / "noxla", xla=False
            )
            paths = {name: (path, precision) for name, precision in PATHS.items()}
            medians = alternate_paths(paths, featurizers, SHAPES, ROUNDS, tmp)
            profiles = {}
            for batch, length, _ in SHAPES:
                input_spec = ab_inputs(featurizers, batch, length, tmp)
                for name, precision in PATHS.items():
                    traced = profile_export(
                        path, runtimes.SIGNATURE, input_spec,
                        calls=20 if batch == 8 else 3, warmup=3, precision=precision,
                        inputs_file=tmp / f"inputs_{batch}.npz",
                    )  # fmt: skip
                    kinds, counts = kind_times(traced)
                    profiles[f"{name}@{batch}"] = {
                        "wall_ms": traced["wall_ms"],
                        "op_ms": sum(traced["ops"].values()),
                        "kernels": sum(counts.values()),  # distinct kernels run per call
                        "kinds_ms": kinds,
                        "kinds_count": counts,
                    }
        record["medians_ms"][variant] = medians
        record["profiles"][variant] = profiles
        print(f"| {variant} | " + " | ".join(
            f"{key} {min(v):.2f} ms" for key, v in medians.items()
        ) + " |", flush=True)  # fmt: skip
        for key, p in profiles.items():
            top = ", ".join(f"{k} {v:.2f}" for k, v in list(p["kinds_ms"].items())[:6])
            print(f"  {key}: wall {p['wall_ms']:.2f} ms, kernels {p['kernels']}: {top}")
    out = Path(__file__).with_name(ARGS.get("json_out", "rewrite_profile.json"))
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
