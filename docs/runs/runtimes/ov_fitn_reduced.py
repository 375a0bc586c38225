"""How small a FITN still makes OpenVINO's bfloat16 CPU plugin die when a text grows (the
runtimes record's FITN row, issue 51 item 4; ``ov_shape_crash.json`` has the crash itself).

Each configuration is FITN's benchmark network with some hyper-parameters changed
(``re2_tf.models.fitn.FITN_DEFAULTS`` otherwise), random weights, exported ``--xla=false``
and converted to OpenVINO's IR as the serving choice converts
(``re2_tf.serving.runtimes.convert``). Each is called on ``ov_shape_crash.py``'s sequences of
batch shapes through that script's child (one infer request, uniform ids without padding,
``INFERENCE_PRECISION_HINT`` and ``INFERENCE_NUM_THREADS`` as given), each sequence in
``--repeats`` fresh processes. The record keeps each IR's operation and weight counts, so the
smallest crashing network can be attached to a report upstream.

Writes ``ov_fitn_reduced.json`` beside this file.

    python docs/runs/runtimes/ov_fitn_reduced.py [--repeats=3]
"""

import collections
import datetime
import itertools
import json
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
REPEATS = int(ARGS.get("repeats", 3))
CRASH_SCRIPT = HERE / "ov_shape_crash.py"
SEQUENCES = ("same shape", "text1 grows", "text2 grows", "both grow")
#: the smallest FITN found to crash: no character CNN, every width cut down, 3 rounds
REDUCED = dict(char_cnn=False, embedding_dim=8, hidden_size=4, memory_size=64, fc_units=8)
#: (configuration name, hyper-parameters over FITN_DEFAULTS, precision)
CONFIGS = (
    ("benchmark FITN", {}, "bf16"),
    ("reduced", REDUCED, "bf16"),
    ("reduced", REDUCED, "f32"),
    ("reduced, memory_size 48", dict(REDUCED, memory_size=48), "bf16"),
    ("reduced, 2 rounds", dict(REDUCED, rounds=2), "bf16"),
    ("reduced, attention inter", dict(REDUCED, attention="inter"), "bf16"),
    ("reduced, attention dot", dict(REDUCED, attention="dot"), "bf16"),
    ("reduced, connection dense", dict(REDUCED, connection="dense"), "bf16"),
)
THREADS = 2
#: words in the synthetic vocabulary (export_benchmark_model's default, as the runtimes record)
VOCAB_SIZE = 30000


def ir_counts(xml):
    """``{"operations": n, "by_type": {type: n}, "weights": n}`` of an OpenVINO IR (weights:
    elements of its float constants)."""
    import numpy as np
    import openvino

    model = openvino.Core().read_model(str(xml))
    ops = model.get_ordered_ops()
    weights = sum(
        int(np.prod(o.get_output_shape(0)))
        for o in ops
        if o.get_type_name() == "Constant" and o.get_element_type().is_real()
    )
    by_type = collections.Counter(o.get_type_name() for o in ops)
    return {"operations": len(ops), "by_type": dict(by_type.most_common()), "weights": weights}


def main():
    # lazy: the record's parent process only, never imported by the library
    from re2_tf import benchmarking
    from re2_tf.machine import machine
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    # the crash record's sequences (its module runs nothing unless it is __main__)
    sequences = runpy.run_path(str(CRASH_SCRIPT))["SEQUENCES"]
    record = {
        "command": " ".join(["python docs/runs/runtimes/ov_fitn_reduced.py", *sys.argv[1:]]),
        "repeats": REPEATS,
        "threads": THREADS,
        "vocab_size": VOCAB_SIZE,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "versions": runtimes.versions(),
        "sequences": {k: sequences[k] for k in SEQUENCES},
        "configs": [],
        "runs": [],
    }
    spec = get_spec("fitn")
    with tempfile.TemporaryDirectory() as tmp:
        converted = {}
        for name, hparams, precision in CONFIGS:
            if name not in converted:
                where = Path(tmp) / str(len(converted))
                path, _, _ = benchmarking.export_benchmark_model(
                    spec, hparams, where / "savedmodel", vocab_size=VOCAB_SIZE, xla=False
                )
                converted[name] = runtimes.convert(path, "openvino", where / "ir")
                record["configs"].append(
                    {"name": name, "hparams": hparams, **ir_counts(converted[name])}
                )
            for sequence, repeat in itertools.product(SEQUENCES, range(REPEATS)):
                shapes = sequences[sequence]
                done = subprocess.run(
                    [sys.executable, str(CRASH_SCRIPT), "--child", str(converted[name]),
                     precision, str(THREADS), json.dumps(shapes)],
                    capture_output=True, text=True, timeout=600,
                )  # fmt: skip
                returned = done.stdout.count("returned")
                record["runs"].append({
                    "config": name, "precision": precision, "sequence": sequence,
                    "repeat": repeat, "calls": len(shapes), "returned": returned,
                    "returncode": done.returncode,
                })  # fmt: skip
                print(name, precision, sequence, returned, "of", len(shapes),
                      "returncode", done.returncode, flush=True)  # fmt: skip
    (HERE / "ov_fitn_reduced.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
