"""Why DRCN's LiteRT default at 8 x 20 is faster in the serving choice's timing than in the
runtimes record's (``docs/runs/runtimes/runtimes.json``, 2026-12-04: the choice timed LiteRT
at 0.77x the XLA SavedModel, the record's rounds then 1.05x): the two timing protocols on the
same two exports, in turn, a fresh process per timing, 2 intra-op threads.

- ``choice round 0``: as :func:`re2_tf.serving.serving_choice.choose_serving` times a candidate
  in its first round: :func:`re2_tf.benchmarking.time_table5`, 30 batches each a fresh draw of
  :func:`~re2_tf.benchmarking.table5_inputs`, after untimed calls whose texts change length
  (``shape_changes``);
- ``choice``: its later rounds (the same without ``shape_changes``);
- ``record``: as ``re2_lab.runtimes`` times a path: 100 batches cycling the first 4 batches of
  the same inputs, written once (``inputs_file``).

The exports are the runtimes record's DRCN variant (``batch_norm=True``, random weights, seed
0): the XLA SavedModel and the TFLite export of the same model. Writes ``litert_protocols.json``
beside this file.

    PYTHONPATH=. python docs/runs/runtimes/litert_protocols.py [--rounds=5]
"""

import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

from re2_tf import benchmarking
from re2_tf.machine import machine
from re2_tf.models.spec import get_spec
from re2_tf.serving import runtimes

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
ROUNDS = int(ARGS.get("rounds", 5))
PROTOCOLS = ("choice round 0", "choice", "record")


def main():
    record = dict(
        command="PYTHONPATH=. python docs/runs/runtimes/litert_protocols.py "
        + " ".join(sys.argv[1:]),
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        **machine(),
        variant="DRCN",
        hparams=dict(batch_norm=True),
        shape="8x20",
        threads=2,
        rounds=ROUNDS,
        timings=[],
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        spec = get_spec("drcn")
        _, _, featurizers = benchmarking.export_benchmark_model(spec, record["hparams"], tmp / "sm")
        benchmarking.export_benchmark_model(spec, record["hparams"], tmp / "lite", fmt="tflite")
        drawn = benchmarking.table5_inputs(featurizers, 8, 20)
        request = drawn.request(ids=True, inputs_file=tmp / "drawn.npz")
        fixed = tmp / "fixed.npz"
        fixed_spec = benchmarking.write_batches(
            benchmarking.table5_inputs(featurizers, 8, 20).id_batches(), fixed
        )
        paths = {"savedmodel (XLA)": tmp / "sm", "tflite": tmp / "lite" / "model.tflite"}
        for round_ in range(ROUNDS):
            for protocol in PROTOCOLS:
                for name, path in paths.items():
                    if protocol == "record":
                        timed = benchmarking.time_export(
                            path, runtimes.SIGNATURE, fixed_spec, batches=100, warmup=10,
                            intra_op_threads=2, inter_op_threads=1,
                            options={"inputs_file": str(fixed)},
                        )  # fmt: skip
                    else:
                        options = dict(request["options"])
                        if protocol == "choice round 0":
                            options["shape_changes"] = True
                        timed = benchmarking.time_table5(
                            path, threads=2, batches=30, **dict(request, options=options)
                        )
                    row = dict(round=round_, protocol=protocol, path=name)
                    row.update(median_ms=timed["median_ms"], load_average=timed["load_average"])
                    print(row, flush=True)
                    record["timings"].append(row)
    record["loadavg_end"] = os.getloadavg()[0]
    (HERE / "litert_protocols.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
