"""Where the default path's time goes when it is not TensorFlow (issue 51, item 3): the
runtimes record's defaults, profiled op by op in their own runtime, beside the floors.

- RE2 1/2/3 blocks on OpenVINO bf16 (their default at both shapes): OpenVINO's per-node
  performance counters (``PERF_COUNT``; each node's ``real_time``, its type and the kernel
  that ran it, ``exec_type``).
- Match-SRNN and Bi-Match-SRNN on ONNX Runtime (their default at 8 x 20): ONNX Runtime's
  profiler (``SessionOptions.enable_profiling``; each kernel's ``dur``, its op type).

Each network is the runtimes record's (``docs/runs/runtimes/runtimes.json``): the benchmark
variant with random weights, exported ``--xla=false`` and converted as the serving choice
converts (``re2_tf.serving.runtimes.convert``), loaded with 2 threads as
``re2_tf.serving.runtimes.load`` loads it, fed the first 4 batches of
``re2_tf.benchmarking.table5_inputs(..., length_spread=0)`` through ``serving_ids``; 10 calls
untimed, then the profiled calls (20 at 8 x 20, 3 at 512 x 20). Per call: wall ms (the
profiler's own cost included: ONNX Runtime's is large on thousands of small kernels). Each
other figure is the median over the profiled calls of its per-call sum: the nodes' ms (a
``Loop``'s own time encloses its body's nodes, which are counted instead), ms per node type,
per kernel and for the slowest nodes by name, the matrix products' ms, and the number of
nodes run. The floors are the runtimes record's (FLOPs from the HLO over the measured peaks;
the dependency floor). Writes ``runtime_profiles.json`` beside this file.

    python docs/runs/roofline/runtime_profiles.py [--variants="RE2 3 blocks,Match-SRNN"]
"""

import collections
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from re2_lab import throughput
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

HERE = Path(__file__).resolve().parent
RECORD = HERE.parents[1] / "runs" / "runtimes" / "runtimes.json"
OUT = HERE / "runtime_profiles.json"
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
THREADS = 2
SHAPES = ((8, 20, 20), (512, 20, 3))  # batch, length, profiled calls
WARMUP = 10
#: variant -> (model, backend, precision)
VARIANTS = {
    "RE2 1 block": ("re2", "openvino", "bf16"),
    "RE2 2 blocks": ("re2", "openvino", "bf16"),
    "RE2 3 blocks": ("re2", "openvino", "bf16"),
    "Match-SRNN": ("match_srnn", "onnxruntime", "f32"),
    "Bi-Match-SRNN": ("match_srnn", "onnxruntime", "f32"),
}
#: node types that are matrix products (OpenVINO's and ONNX's names)
PRODUCTS = {"MatMul", "FullyConnected", "Convolution", "Gemm", "Conv", "Einsum", "FusedMatMul"}
#: node types whose time encloses their body's nodes, which are profiled too (not summed)
CONTAINERS = {"Loop", "If", "Scan", "TensorIterator"}


def openvino_profile(path, batches, calls):
    import openvino as ov

    config = {
        "INFERENCE_PRECISION_HINT": "bf16",
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_NUM_THREADS": THREADS,
        "PERF_COUNT": "YES",
    }
    compiled = ov.Core().compile_model(str(path), "CPU", config)
    request = compiled.create_infer_request()
    for k in range(WARMUP):
        request.infer(batches[k % len(batches)])
    walls, per_call = [], []
    for k in range(calls):
        start = time.perf_counter()
        request.infer(batches[k % len(batches)])
        walls.append((time.perf_counter() - start) * 1e3)
        nodes = [
            (p.node_type, p.exec_type, p.real_time.total_seconds() * 1e3, p.node_name)
            for p in request.profiling_info
            if p.status == p.Status.EXECUTED
        ]
        per_call.append(nodes)
    effective = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    return walls, per_call, effective


def onnxruntime_profile(path, batches, calls):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for k in range(WARMUP):
        session.run(None, batches[k % len(batches)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = str(Path(tmp) / "ort")
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        for k in range(WARMUP):  # the profiled session warms up too; its first calls dropped
            session.run(None, batches[k % len(batches)])
        walls = []
        for k in range(calls):
            start = time.perf_counter()
            session.run(None, batches[k % len(batches)])
            walls.append((time.perf_counter() - start) * 1e3)
        events = json.loads(Path(session.end_profiling()).read_text())
    runs = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    runs = runs[-calls:]
    per_call = []
    for run in runs:
        begin, end = run["ts"], run["ts"] + run["dur"]
        per_call.append(
            [
                (
                    e["args"].get("op_name", "?"),
                    e["args"].get("provider", ""),
                    e["dur"] / 1e3,
                    e["name"].removesuffix("_kernel_time"),
                )
                for e in events
                if e.get("cat") == "Node"
                and e["name"].endswith("_kernel_time")
                and begin <= e["ts"] <= end
            ]
        )
    return walls, per_call, "f32"


def _median_per_call(per_call, key):
    """``{name: median over the calls of the ms the nodes named key(node) took}`` (0 in a call
    that ran none), largest first: one slow call does not move it."""
    counts = [collections.Counter() for _ in per_call]
    for counter, nodes in zip(counts, per_call):
        for node in nodes:
            name = key(node)
            if name is not None:
                counter[name] += node[2]
    names = set().union(*counts)
    medians = {n: statistics.median(c.get(n, 0.0) for c in counts) for n in names}
    return dict(sorted(medians.items(), key=lambda x: -x[1]))


def summarise(walls, per_call, floors):
    def total(kinds):
        return statistics.median(
            sum(ms for kind, _, ms, _ in nodes if kind in kinds) for nodes in per_call
        )

    every = {kind for nodes in per_call for kind, *_ in nodes}
    node_ms = total(every - CONTAINERS)
    product_ms = total(PRODUCTS)
    return {
        "wall_ms_median": statistics.median(walls),
        "node_ms": node_ms,
        "container_ms": total(CONTAINERS),
        "nodes_per_call": statistics.median(
            sum(kind not in CONTAINERS for kind, *_ in nodes) for nodes in per_call
        ),
        "product_ms": product_ms,
        "other_ms": node_ms - product_ms,
        "kinds_ms": dict(list(_median_per_call(per_call, lambda n: n[0]).items())[:12]),
        "kernels_ms": dict(
            list(
                _median_per_call(
                    per_call, lambda n: None if n[0] in CONTAINERS else f"{n[0]} ({n[1]})"
                ).items()
            )[:12]
        ),
        "top_nodes_ms": dict(
            list(
                _median_per_call(
                    per_call, lambda n: None if n[0] in CONTAINERS else f"{n[0]} {n[3]}"
                ).items()
            )[:12]
        ),
        "floors": floors,
    }


def main():
    runtimes_record = json.loads(RECORD.read_text())
    floors = {m["model"]: m["floors"] for m in runtimes_record["models"]}
    chosen = ARGS["variants"].split(",") if "variants" in ARGS else list(VARIANTS)
    record = json.loads(OUT.read_text()) if OUT.exists() else {"variants": {}}
    record.update(
        command="python docs/runs/roofline/runtime_profiles.py"
        + (f' --variants="{ARGS["variants"]}"' if "variants" in ARGS else ""),
        **throughput.machine(),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        versions=runtimes.versions(),
        threads=THREADS,
        warmup=WARMUP,
    )
    for variant in chosen:
        model, backend, precision = VARIANTS[variant]
        spec = get_spec(model)
        hparams = spec.benchmark[variant]["hparams"]
        entry = {"backend": backend, "precision": precision}
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            plain, _, featurizers = benchmarking.export_benchmark_model(
                spec, hparams, tmp / "noxla", xla=False
            )
            path = runtimes.convert(plain, backend, tmp / backend)
            for batch, length, calls in SHAPES:
                inputs = benchmarking.table5_inputs(featurizers, batch, length, length_spread=0)
                batches = inputs.id_batches()
                profile = openvino_profile if backend == "openvino" else onnxruntime_profile
                walls, per_call, effective = profile(path, batches, calls)
                key = f"{batch}x{length}"
                entry[key] = summarise(walls, per_call, floors[variant][key])
                entry[key]["effective_precision"] = effective
                print(variant, key, json.dumps(entry[key])[:400], flush=True)
        record["variants"][variant] = entry
        OUT.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
