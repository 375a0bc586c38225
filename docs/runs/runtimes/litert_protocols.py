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
  the same inputs, written once (``inputs_file``);
- ``drawn 100``: the choice's later rounds with 100 timed batches (the record's count);
- ``fixed 30``: the record's protocol with 30 timed batches (the choice's count).

``--protocols`` picks among them (default the first three, the DRCN check's).

The exports are the runtimes record's for ``--variant`` (its benchmark hyperparameters, random
weights, seed 0), the ``--paths`` of: ``savedmodel (XLA)`` (the default export),
``savedmodel (xla=False)`` (the same model exported without XLA) and ``tflite`` (its
``--format=tflite`` export). TensorFlow's paths run on ``--inter_op`` inter-op threads (the
runtimes records time them on the setting the variant's serving choice picked). Writes
``--json_out`` (default ``litert_protocols.json`` beside this file).

    PYTHONPATH=. python docs/runs/runtimes/litert_protocols.py [--rounds=5] [--variant=DRCN]
        [--paths="savedmodel (XLA),tflite"] [--shape=8x20] [--inter_op=1] [--json_out=...]
        [--protocols="choice round 0,choice,record"]
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
#: protocol: (timed batches, the 4 fixed batches cycled, shape changes first)
KNOWN = {
    "choice round 0": (30, False, True),
    "choice": (30, False, False),
    "record": (100, True, False),
    "drawn 100": (100, False, False),
    "fixed 30": (30, True, False),
}
PROTOCOLS = ARGS.get("protocols", "choice round 0,choice,record").split(",")
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
    unknown = [p for p in PROTOCOLS if p not in KNOWN]
    if unknown or len(PROTOCOLS) != len(set(PROTOCOLS)):
        raise SystemExit(f"--protocols: distinct names of {sorted(KNOWN)}, got {PROTOCOLS}")
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
    if "protocols" in ARGS:
        record["protocols"] = {p: dict(zip(("batches", "fixed", "shape_changes"), KNOWN[p]))
                               for p in PROTOCOLS}  # fmt: skip
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
        fixed_spec = benchmarking.write_batches(drawn.id_batches(), fixed)
        for round_ in range(ROUNDS):
            for protocol in PROTOCOLS:
                for name, path in paths.items():
                    count, cycled, shape_changes = KNOWN[protocol]
                    if cycled:
                        timed = benchmarking.time_export(
                            path, runtimes.SIGNATURE, fixed_spec, batches=count, warmup=10,
                            intra_op_threads=2, inter_op_threads=INTER_OP,
                            options={"inputs_file": str(fixed)},
                        )  # fmt: skip
                    else:
                        options = dict(request["options"])
                        if shape_changes:
                            options["shape_changes"] = True
                        timed = benchmarking.time_table5(
                            path, threads=2, batches=count, inter_op_threads=INTER_OP,
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
