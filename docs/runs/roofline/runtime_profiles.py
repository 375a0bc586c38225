"""Where the default path's time goes (issue 51, item 3): a runtimes record's defaults,
profiled op by op in their own runtime, beside the floors.

Without ``--record``, the AMD EPYC record (``docs/runs/runtimes/runtimes.json``) and the paths
below at both shapes; with ``--record=<runtimes record>``, each variant's default at each
shape as that record names it (its ``models[].default``):

- OpenVINO (RE2 1/2/3 blocks' bf16 default): OpenVINO's per-node performance counters
  (``PERF_COUNT``; each node's ``real_time``, its type and the kernel that ran it,
  ``exec_type``).
- ONNX Runtime (Match-SRNN's and Bi-Match-SRNN's default at 8 x 20 on the AMD EPYC): ONNX
  Runtime's profiler (``SessionOptions.enable_profiling``; each kernel's ``dur``, its op
  type).
- The SavedModel, with XLA or without (``savedmodel (XLA)``, ``savedmodel (xla=False)``, and
  ``savedmodel bf16 (xla=False)`` under TensorFlow's bfloat16 rewrite):
  ``re2_lab.roofline.profile_export`` (``tf.profiler``; each XLA thunk or TensorFlow kernel's
  exclusive thread-ms per call, its kind and how many times it ran per call). Its figures are
  the means over the profiled calls, and its wall ms the mean call under the profiler.

Each network is the record's: the benchmark variant with random weights, exported as that
path's SavedModel (``--xla=false`` for the converters) and converted as the serving choice
converts (``re2_tf.serving.runtimes.convert``), loaded with 2 threads as
``re2_tf.serving.runtimes.load`` loads it, fed the first 4 batches of
``re2_tf.benchmarking.table5_inputs(..., length_spread=0)`` through ``serving_ids``; 10 calls
untimed, then the profiled calls (20 at 8 x 20, 3 at 512 x 20). Per call: wall ms (the
profiler's own cost included: ONNX Runtime's is large on thousands of small kernels). Each
other figure is the median over the profiled calls of its per-call sum: the nodes' ms (a
``Loop``'s own time encloses its body's nodes, which are counted instead), ms per node type,
per kernel and for the slowest nodes by name, the matrix products' ms, and the number of
nodes run. The floors are the runtimes record's (FLOPs from the HLO over the measured peaks;
the dependency floor). A SavedModel's entry also has ``looped``: the ops that ran more than
once per call (a ``while`` body's), how many there are, their runs and ms per call, and ms
per run of the loop (``loop_runs``: the body's runs), and ``phases``: the median
call's split from Python to XLA's thunks (``re2_lab/profile_worker.py``). Writes
``--json_out`` (default ``runtime_profiles.json`` beside this file); a record already there is
added to.

    python docs/runs/roofline/runtime_profiles.py [--variants="RE2 3 blocks,Match-SRNN"]
        [--record=docs/runs/runtimes/runtimes-amx.json --json_out=runtime_profiles-amx.json]
"""

import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from re2_lab import roofline, throughput
from re2_tf import benchmarking
from re2_tf.models import MODEL_SPECS
from re2_tf.serving import runtimes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
RECORD = ROOT / ARGS.get("record", "docs/runs/runtimes/runtimes.json")
OUT = HERE / ARGS.get("json_out", "runtime_profiles.json")
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
#: node types that are matrix products (OpenVINO's and ONNX's names, XLA's and TensorFlow's)
PRODUCTS = roofline.PRODUCT_KINDS
#: a runtimes record's SavedModel paths: (xla, precision)
SAVEDMODELS = {
    "savedmodel (XLA)": (True, "f32"),
    "savedmodel (xla=False)": (False, "f32"),
    "savedmodel bf16 (xla=False)": (False, "bf16"),
}
#: node types whose time encloses their body's nodes, which are profiled too (not summed)
CONTAINERS = {"Loop", "If", "Scan", "TensorIterator"}


def openvino_profile(path, batches, calls, precision="bf16"):
    import openvino as ov

    config = {
        "INFERENCE_PRECISION_HINT": precision,
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


def onnxruntime_profile(path, batches, calls, precision="f32"):
    import onnxruntime as ort

    if precision != "f32":  # the same call as openvino_profile's; this CPU provider is f32
        raise ValueError(f"ONNX Runtime is profiled in f32 only, not {precision!r}")

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


def savedmodel_profile(path, batches, calls, precision, workdir):
    """A SavedModel's profile (``re2_lab.roofline.profile_export``) as one call's nodes (each
    op's mean thread-ms per call), with its runs per call and its phases."""
    inputs_file = Path(workdir) / "inputs.npz"
    spec = benchmarking.write_batches(batches, inputs_file)
    traced = roofline.profile_export(
        path,
        runtimes.SIGNATURE,
        spec,
        calls=calls,
        warmup=WARMUP,
        threads=THREADS,
        precision=precision,
        inputs_file=inputs_file,
    )
    nodes = [(traced["kinds"][name], "", ms, name) for name, ms in traced["ops"].items()]
    phases = {
        phase: statistics.median(call[phase] for call in traced["phases"])
        for phase in traced["phases"][0]
    }
    return [traced["wall_ms"]], [nodes], precision, traced["runs"], phases


def looped(nodes, runs):
    """The ops of one call that ran more than once (a loop's body and condition): how many
    there are, their runs and ms per call, the loop's runs per call (``loop_runs``: the most
    common runs count among them, the body's; its condition runs once more) and the ms of
    all of them per loop run."""
    inside = [(name, ms) for _, _, ms, name in nodes if runs.get(name, 1) > 1]
    loop_runs = statistics.mode(runs[name] for name, _ in inside) if inside else 0
    ms = sum(ms for _, ms in inside)
    return {
        "ops": len(inside),
        "runs_per_call": sum(runs[name] for name, _ in inside),
        "ms": ms,
        "loop_runs": loop_runs,
        "ms_per_loop_run": ms / loop_runs if loop_runs else None,
    }


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


def paths(variant, record):
    """``{shape key: path name}`` profiled for ``variant``: with ``--record``, its default at
    each shape there; without, :data:`VARIANTS`' path at both."""
    if "record" in ARGS:
        return next(m["default"] for m in record["models"] if m["model"] == variant)
    _, backend, precision = VARIANTS[variant]
    return {f"{b}x{n}": f"{backend} {precision}" for b, n, _ in SHAPES}


def main():
    runtimes_record = json.loads(RECORD.read_text())
    floors = {m["model"]: m["floors"] for m in runtimes_record["models"]}
    chosen = ARGS["variants"].split(",") if "variants" in ARGS else list(VARIANTS)
    record = json.loads(OUT.read_text()) if OUT.exists() else {"variants": {}}
    record.update(
        command="python docs/runs/roofline/runtime_profiles.py "
        + " ".join(f'--{k}="{v}"' if " " in v else f"--{k}={v}" for k, v in ARGS.items()),
        record=os.fspath(RECORD.relative_to(ROOT)),
        **throughput.machine(),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        versions=runtimes.versions(),
        threads=THREADS,
        warmup=WARMUP,
    )
    record["command"] = record["command"].rstrip()
    for variant in chosen:
        spec = next(spec for spec in MODEL_SPECS.values() if variant in spec.benchmark)
        hparams = spec.benchmark[variant]["hparams"]
        chosen_paths = paths(variant, runtimes_record)
        entry = {}
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            exports, converted, featurizers = {}, {}, None
            for batch, length, calls in SHAPES:
                key = f"{batch}x{length}"
                name = chosen_paths[key]
                if name in SAVEDMODELS:
                    xla, precision = SAVEDMODELS[name]
                    backend = "savedmodel"
                else:
                    backend, precision = name.rsplit(" ", 1)
                    xla = False
                if xla not in exports:
                    exports[xla], _, featurizers = benchmarking.export_benchmark_model(
                        spec, hparams, tmp / f"xla{int(xla)}", xla=xla
                    )
                inputs = benchmarking.table5_inputs(featurizers, batch, length, length_spread=0)
                batches = inputs.id_batches()
                runs, phases = None, None
                if backend == "savedmodel":
                    walls, per_call, effective, runs, phases = savedmodel_profile(
                        exports[xla], batches, calls, precision, tmp
                    )
                else:
                    if backend not in converted:
                        converted[backend] = runtimes.convert(
                            exports[False], backend, tmp / backend
                        )
                    path = converted[backend]
                    profile = openvino_profile if backend == "openvino" else onnxruntime_profile
                    walls, per_call, effective = profile(path, batches, calls, precision)
                entry[key] = summarise(walls, per_call, floors[variant][key])
                entry[key]["effective_precision"] = effective
                entry[key]["runtime"] = (
                    name if backend == "savedmodel" else f"{backend} {effective}"
                )
                if runs is not None:
                    entry[key]["nodes_per_call"] = sum(runs.values())
                    entry[key]["looped"] = looped(per_call[0], runs)
                    entry[key]["phases"] = phases
                print(variant, key, json.dumps(entry[key])[:400], flush=True)
        record["variants"][variant] = entry
        OUT.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
