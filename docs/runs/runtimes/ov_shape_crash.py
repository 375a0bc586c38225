"""When OpenVINO's bfloat16 FITN dies with SIGSEGV (the runtimes record's FITN row, issue 51
item 4): the same converted network called on sequences of batch shapes, each sequence in a
fresh process, recording how many calls returned and how the process ended.

The networks are the runtimes record's (``docs/runs/runtimes/runtimes.json``): a benchmark
variant with random weights, exported ``--xla=false`` and converted to OpenVINO's IR as the
serving choice converts (``re2_tf.serving.runtimes.convert``), compiled for the CPU with
``INFERENCE_PRECISION_HINT`` bf16 or f32 and ``INFERENCE_NUM_THREADS``. A call's inputs are
uniform ids with no padding (``[batch, len]`` per text, ``[batch, len, chars]`` for a
character input), so only the shapes change from call to call. Each sequence is a list of
``batch x len1 x len2`` shapes called in order through one infer request, in ``--repeats``
fresh processes each.

Writes ``ov_shape_crash.json`` beside this file.

    python docs/runs/runtimes/ov_shape_crash.py [--repeats=3]
"""

import datetime
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
REPEATS = int(ARGS.get("repeats", 3))
#: sequence name -> shapes (batch, len1, len2), called in order in one process
SEQUENCES = {
    "same shape": [(8, 20, 20)] * 3,
    "text1 grows": [(8, 20, 20), (8, 21, 20), (8, 21, 20)],
    "text2 grows": [(8, 20, 20), (8, 20, 21), (8, 20, 21)],
    "text1 grows, then back": [(8, 20, 20), (8, 21, 20), (8, 20, 20)],
    "both grow": [(8, 20, 20), (8, 21, 21), (8, 21, 21)],
    "text1 shrinks": [(8, 20, 20), (8, 19, 20), (8, 19, 20)],
    "batch 1, text1 grows": [(1, 20, 20), (1, 21, 20), (1, 21, 20)],
}
#: (variant, model, precision, threads) of each run
RUNS = (
    ("FITN", "fitn", "bf16", 2),
    ("FITN", "fitn", "bf16", 1),
    ("FITN", "fitn", "f32", 2),
    ("DRCN", "drcn", "bf16", 2),
    ("RE2 1 block", "re2", "bf16", 2),
)


def child(xml, precision, threads, shapes):
    """Run in a fresh process: compile ``xml`` and call it on ``shapes``; print one line per
    call that returned."""
    import numpy as np
    import openvino

    compiled = openvino.Core().compile_model(
        xml, "CPU", {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads}
    )
    request = compiled.create_infer_request()
    rng = np.random.default_rng(0)
    for batch, len1, len2 in shapes:
        inputs = {}
        for port in compiled.inputs:
            name = port.get_any_name()
            length = len1 if name.startswith("text1") else len2
            shape = port.get_partial_shape()
            inner = [int(d) for d in shape[2:].to_shape()] if len(shape) > 2 else []
            high = 60 if inner else 29999
            inputs[name] = rng.integers(2, high, [batch, length, *inner]).astype("int32")
        request.infer(inputs)
        print("returned", flush=True)


def main():
    from re2_tf import benchmarking
    from re2_tf.machine import machine
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    record = {
        "command": " ".join(["python docs/runs/runtimes/ov_shape_crash.py", *sys.argv[1:]]),
        "repeats": REPEATS,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "versions": runtimes.versions(),
        "sequences": {k: [list(s) for s in v] for k, v in SEQUENCES.items()},
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        converted = {}
        for variant, model, precision, threads in RUNS:
            if variant not in converted:
                spec = get_spec(model)
                path, _, _ = benchmarking.export_benchmark_model(
                    spec, spec.benchmark[variant]["hparams"], Path(tmp) / model, xla=False
                )
                ir = runtimes.convert(path, "openvino", Path(tmp) / "ir" / model)
                converted[variant] = str(ir)
            for (name, shapes), repeat in itertools.product(SEQUENCES.items(), range(REPEATS)):
                done = subprocess.run(
                    [sys.executable, __file__, "--child", converted[variant], precision,
                     str(threads), json.dumps(shapes)],
                    capture_output=True, text=True, timeout=600,
                )  # fmt: skip
                returned = done.stdout.count("returned")
                record["runs"].append({
                    "variant": variant, "precision": precision, "threads": threads,
                    "sequence": name, "repeat": repeat, "calls": len(shapes), "returned": returned,
                    "returncode": done.returncode,
                })  # fmt: skip
                print(variant, precision, threads, name, returned, "of", len(shapes),
                      "returncode", done.returncode, flush=True)  # fmt: skip
    (HERE / "ov_shape_crash.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5]))
    else:
        main()
