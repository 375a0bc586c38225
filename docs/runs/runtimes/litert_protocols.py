"""Whether the serving choice's timing and the runtimes record's differ in kind, on two paths
of one benchmark variant: the two timing protocols on the same two exports, in turn, a fresh
process per timing, 2 intra-op threads. First asked of DRCN's LiteRT default at 8 x 20, faster
in the serving choice's timing than in the runtimes record's
(``docs/runs/runtimes/runtimes.json``, 2026-12-04: the choice timed LiteRT at 0.77x the XLA
SavedModel, the record's rounds then 1.05x); the defaults repeat that check.

- ``choice round 0``: as :func:`re2_tf.serving.serving_choice.choose_serving` times a candidate
  in its first round: :func:`re2_tf.benchmarking.time_table5`, 30 batches each a fresh draw of
  :func:`~re2_tf.benchmarking.table5_inputs`, after untimed calls whose texts change length
  (``shape_changes``);
- ``choice``: its later rounds (the same without ``shape_changes``);
- ``record``: as ``re2_lab.runtimes`` times a path: 100 batches cycling the first 4 batches of
  the same inputs, written once (``inputs_file``).

The exports are the runtimes record's for ``--variant`` (its benchmark hyperparameters, random
weights, seed 0), the ``--paths`` of: ``savedmodel (XLA)`` (the default export),
``savedmodel (xla=False)`` (the same model exported without XLA) and ``tflite`` (its
``--format=tflite`` export). TensorFlow's paths run on ``--inter_op`` inter-op threads (the
runtimes records time them on the setting the variant's serving choice picked). Writes
``--json_out`` (default ``litert_protocols.json`` beside this file).

    PYTHONPATH=. python docs/runs/runtimes/litert_protocols.py [--rounds=5] [--variant=DRCN]
        [--paths="savedmodel (XLA),tflite"] [--shape=8x20] [--inter_op=1] [--json_out=...]
"""

import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

from re2_tf import benchmarking, models
from re2_tf.machine import machine
from re2_tf.serving import runtimes

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
ROUNDS = int(ARGS.get("rounds", 5))
VARIANT = ARGS.get("variant", "DRCN")
PATHS = ARGS.get("paths", "savedmodel (XLA),tflite").split(",")
SHAPE = ARGS.get("shape", "8x20")
INTER_OP = int(ARGS.get("inter_op", 1))
JSON_OUT = Path(ARGS.get("json_out", HERE / "litert_protocols.json"))
PROTOCOLS = ("choice round 0", "choice", "record")
#: ``--paths`` names: (export format, XLA)
EXPORTS = {
    "savedmodel (XLA)": ("savedmodel", True),
    "savedmodel (xla=False)": ("savedmodel", False),
    "tflite": ("tflite", True),
}


def benchmark_variant(variant):
    """``(spec, hparams)`` of the registered model whose benchmark has ``variant``."""
    for name in models.model_names():
        spec = models.get_spec(name)
        if variant in spec.benchmark:
            return spec, spec.benchmark[variant]["hparams"]
    raise SystemExit(f"--variant={variant!r} is no registered model's benchmark variant")


def main():
    unknown = [p for p in PATHS if p not in EXPORTS]
    if unknown or len(PATHS) != len(set(PATHS)):
        raise SystemExit(f"--paths: distinct names of {sorted(EXPORTS)}, got {PATHS}")
    batch, length = map(int, SHAPE.split("x"))
    spec, hparams = benchmark_variant(VARIANT)
    record = dict(
        command="PYTHONPATH=. python docs/runs/runtimes/litert_protocols.py "
        + " ".join(sys.argv[1:]),
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        **machine(),
        variant=VARIANT,
        hparams=dict(hparams),
        shape=SHAPE,
        threads=2,
        rounds=ROUNDS,
        timings=[],
    )
    if INTER_OP != 1:  # TensorFlow's inter-op threads (the DRCN check ran on 1)
        record["inter_op_threads"] = INTER_OP
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = {}
        for name in PATHS:
            fmt, xla = EXPORTS[name]
            paths[name], _, featurizers = benchmarking.export_benchmark_model(
                spec, hparams, tmp / name.replace(" ", "_"), fmt=fmt, xla=xla
            )
        drawn = benchmarking.table5_inputs(featurizers, batch, length)
        request = drawn.request(ids=True, inputs_file=tmp / "drawn.npz")
        fixed = tmp / "fixed.npz"
        fixed_spec = benchmarking.write_batches(
            benchmarking.table5_inputs(featurizers, batch, length).id_batches(), fixed
        )
        for round_ in range(ROUNDS):
            for protocol in PROTOCOLS:
                for name, path in paths.items():
                    if protocol == "record":
                        timed = benchmarking.time_export(
                            path, runtimes.SIGNATURE, fixed_spec, batches=100, warmup=10,
                            intra_op_threads=2, inter_op_threads=INTER_OP,
                            options={"inputs_file": str(fixed)},
                        )  # fmt: skip
                    else:
                        options = dict(request["options"])
                        if protocol == "choice round 0":
                            options["shape_changes"] = True
                        timed = benchmarking.time_table5(
                            path, threads=2, batches=30, inter_op_threads=INTER_OP,
                            **dict(request, options=options),
                        )  # fmt: skip
                    row = dict(round=round_, protocol=protocol, path=name)
                    row.update(median_ms=timed["median_ms"], load_average=timed["load_average"])
                    print(row, flush=True)
                    record["timings"].append(row)
    record["loadavg_end"] = os.getloadavg()[0]
    JSON_OUT.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
