"""Why a path's median moves about 2x between fresh processes on this machine (the runtimes
record's "moved by up to" line; Bi-Match-SRNN's 512 x 20 default, issue 51): the same network,
inputs and protocol timed in many fresh processes, in turn, over several minutes.

The network is the runtimes record's Bi-Match-SRNN (``docs/runs/runtimes/runtimes.json``): the
benchmark variant with random weights, exported ``--xla=false``, converted to ONNX as the
serving choice converts (``re2_tf.serving.runtimes.convert``), fed the record's inputs
(``re2_tf.benchmarking.table5_inputs`` at 512 x 20, its first 4 batches as ``serving_ids``)
through ``re2_tf.benchmarking.time_export`` with the record's settings (10 untimed batches,
then :func:`re2_tf.benchmarking.timed_batches` timed, ``inter_op_threads=1``). Paths, each a
fresh process per cycle, the cycles in turn:

- ``onnxruntime``: 2 intra-op threads, ONNX Runtime's defaults (its threads spin while they
  wait), as the record and the serving choice time it;
- ``onnxruntime, no spinning``: the same with ``session.intra_op.allow_spinning=0``;
- ``onnxruntime, 1 thread``: one intra-op thread (nothing to wait for);
- ``savedmodel (xla=False)``: TensorFlow, 2 intra-op threads.

Per process: its median ms, every timed batch's ms, the wall-clock start, the 1-minute load
average before and after, and the steal time the kernel counted meanwhile (``/proc/stat``:
time the hypervisor ran something else on our virtual CPUs). Writes ``phases.json`` beside this
file.

    python docs/runs/runtimes/phases.py [--cycles=8] [--batch=512]
"""

import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from re2_tf import benchmarking
from re2_tf.machine import machine
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

HERE = Path(__file__).resolve().parent
OUT = HERE / "phases.json"
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
CYCLES = int(ARGS.get("cycles", 8))
BATCH, LENGTH = int(ARGS.get("batch", 512)), 20
VARIANT = "Bi-Match-SRNN"
#: path -> (model file: "onnx" or "savedmodel", intra-op threads, ONNX Runtime config entries)
PATHS = {
    "onnxruntime": ("onnx", 2, {}),
    "onnxruntime, no spinning": ("onnx", 2, {"session.intra_op.allow_spinning": "0"}),
    "onnxruntime, 1 thread": ("onnx", 1, {}),
    "savedmodel (xla=False)": ("savedmodel", 2, {}),
}


def steal_ticks():
    """The kernel's steal time of all CPUs so far, in clock ticks (``/proc/stat``)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def main():
    spec = get_spec("match_srnn")
    entry = spec.benchmark[VARIANT]
    processes = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain, _, featurizers = benchmarking.export_benchmark_model(
            spec, entry["hparams"], tmp / "noxla", xla=False
        )
        files = {"savedmodel": plain, "onnx": runtimes.convert(plain, "onnxruntime", tmp / "ort")}
        inputs = benchmarking.table5_inputs(featurizers, BATCH, LENGTH)
        inputs_file = tmp / "inputs.npz"
        input_spec = benchmarking.write_batches(inputs.id_batches(), inputs_file)
        count = benchmarking.timed_batches(BATCH, 100)
        for cycle in range(CYCLES):
            for name, (kind, threads, config) in PATHS.items():
                steal, started = steal_ticks(), time.time()
                timed = benchmarking.time_export(
                    files[kind], runtimes.SIGNATURE, input_spec, batches=count,
                    warmup=min(10, count), intra_op_threads=threads, inter_op_threads=1,
                    throughput_batch=0,
                    options={"inputs_file": str(inputs_file),
                             **({"onnxruntime_config": config} if config else {})},
                )  # fmt: skip
                processes.append(
                    {
                        "path": name,
                        "cycle": cycle,
                        "start_s": round(started, 1),
                        "median_ms": round(timed["median_ms"], 2),
                        "batch_ms": [round(t * 1e3, 1) for t in timed["times_s"]],
                        "load_average": [round(x, 2) for x in timed["load_average"]],
                        "steal_ticks": steal_ticks() - steal,
                        "inputs_sha256": timed["inputs_sha256"],
                    }
                )
                print(name, cycle, processes[-1]["median_ms"], processes[-1]["batch_ms"])
    first = processes[0]["start_s"]
    for p in processes:
        p["start_s"] = round(p["start_s"] - first, 1)  # seconds since the first process
    record = {
        "command": "python docs/runs/runtimes/phases.py" + "".join(f" {a}" for a in sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        **machine(),
        "variant": VARIANT,
        "shape": [BATCH, LENGTH],
        "batches": count,
        "cycles": CYCLES,
        "clock_ticks_per_s": os.sysconf("SC_CLK_TCK"),
        "inputs_sha256": sorted({p.pop("inputs_sha256") for p in processes}),
        "paths": list(PATHS),
        "processes": processes,
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
