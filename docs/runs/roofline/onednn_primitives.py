"""Which oneDNN primitives TensorFlow runs for the bfloat16 SavedModel without XLA, before and
after a change (issue 51, item 1: the profile behind "Constant kernels" in
``docs/performance.md``).

For each benchmark variant (random weights) the ``--before`` git revision and this checkout
each export ``--xla=false --precision=bf16``. For each export and batch (8 x 20 and 512 x 20,
on :func:`re2_lab.roofline.ab_inputs`' batches), a fresh process with 2 intra-op threads and
``ONEDNN_VERBOSE=1`` loads the export as the timing worker does, makes 5 untimed calls,
then ``--calls`` calls whose verbose lines it keeps. oneDNN writes one line per primitive it
executes, with the primitive's kind, the implementation oneDNN chose (``brgemm:avx512_core_bf16``,
``x64:gemm:jit``, ...) and its time in ms. The record sums them per (kind, implementation):
how many ran per call and their ms per call.

Writes ``onednn_primitives.json`` beside this file.

    python docs/runs/roofline/onednn_primitives.py --before=<git revision> [--calls=20]
        [--variants="re2:RE2 1 block,bert_matchlstm:BERT (h_0)"]
"""

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from re2_lab.revisions import _script_arguments, checkout, commit

VARIANTS = "re2:RE2 1 block,bert_matchlstm:BERT (h_0)"
#: ``(batch, length)`` of each run.
SHAPES = ((8, 20), (512, 20))
#: Run in the checkout being measured (its own ``re2_tf``): its bfloat16 export without XLA.
EXPORT = r"""
import sys
from re2_tf import benchmarking
from re2_tf.models import get_spec
out, model, variant = sys.argv[1:4]
spec = get_spec(model)
benchmarking.export_benchmark_model(
    spec, spec.benchmark[variant]["hparams"], out, xla=False, precision="bf16"
)
"""
#: Run in a fresh process with ``ONEDNN_VERBOSE=1``: the export loaded and its batches read
#: by the library's timing worker (``re2_tf/serving/timing_worker.py``, a script: this process
#: imports TensorFlow, not re2_tf), with 2 intra-op threads and 1 inter-op thread.
WORKER = r"""
import importlib.util
import sys
from pathlib import Path
sys.path.insert(
    0, str(Path(importlib.util.find_spec("re2_tf").submodule_search_locations[0]) / "serving")
)
from timing_worker import load, read_batches
path, signature, inputs_file, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
call, _ = load(
    {"path": path, "signature": signature, "intra_op_threads": 2, "inter_op_threads": 1}
)
batches = read_batches(inputs_file)
for i in range(5):
    call(batches[i % 4])
print("=== calls", flush=True)
for i in range(calls):
    call(batches[i % 4])
print("=== end", flush=True)
"""


def primitives(stdout, calls):
    """``{"<kind>: <implementation>": {"per_call": n, "ms": ms per call}}`` of the verbose
    ``exec`` lines between the worker's markers, largest ms first."""
    lines = stdout.split("=== calls\n", 1)[1].split("=== end", 1)[0].splitlines()
    total = defaultdict(lambda: [0, 0.0])
    for line in lines:
        fields = line.split(",")
        if fields[:4] != ["onednn_verbose", "v1", "primitive", "exec"]:
            continue
        key = f"{fields[5]}: {fields[6]}"
        total[key][0] += 1
        total[key][1] += float(fields[-1])
    return {
        key: {"per_call": n / calls, "ms": ms / calls}
        for key, (n, ms) in sorted(total.items(), key=lambda kv: -kv[1][1])
    }


def main():
    # lazy: TensorFlow (through these) after the arguments are read
    from re2_lab.roofline import ab_inputs, ab_record
    from re2_tf import benchmarking
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    script, repo, args = _script_arguments(__file__)
    calls = int(args.get("calls", 20))
    chosen = [tuple(v.split(":", 1)) for v in args.get("variants", VARIANTS).split(",")]
    record = ab_record(
        str(script.relative_to(repo)), args, 1, before=commit(repo, args["before"]),
        after=commit(repo), calls=calls, variants={},
    )  # fmt: skip
    out = script.with_suffix(".json")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with checkout(args["before"], tmp / "before_checkout", repo) as old:
            for model, variant in chosen:
                spec = get_spec(model)
                hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
                featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
                work = tmp / variant.replace(" ", "_")
                work.mkdir()
                for batch, length in SHAPES:  # one inputs file per batch, for both sides
                    ab_inputs(featurizers, batch, length, work)
                entry = record["variants"][variant] = {}
                for side, source in (("before", old), ("after", repo)):
                    export = work / side
                    subprocess.run(
                        [sys.executable, "-c", EXPORT, str(export), model, variant],
                        check=True, capture_output=True, cwd=source,
                        env=dict(os.environ, PYTHONPATH=str(source)),
                    )  # fmt: skip
                    for batch, _ in SHAPES:
                        run = subprocess.run(
                            [sys.executable, "-c", WORKER, str(export), runtimes.SIGNATURE,
                             str(work / f"inputs_{batch}.npz"), str(calls)],
                            check=True, capture_output=True, text=True,
                            env=dict(os.environ, ONEDNN_VERBOSE="1"),
                        )  # fmt: skip
                        entry[f"{side}@{batch}"] = primitives(run.stdout, calls)
                out.write_text(json.dumps(record, indent=1) + "\n")
                print(variant, "done", flush=True)


if __name__ == "__main__":
    main()
