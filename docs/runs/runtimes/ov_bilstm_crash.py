"""A small network outside DRCN that makes OpenVINO's bfloat16 CPU plugin die the way DRCN's
does (issue 51 item 4; ``ov_probe_deaths.py`` and its ``ov_drcn_*.json`` records narrow DRCN
itself): what a report to OpenVINO would attach.

The network, per text: 8-wide embeddings of the ids, ``re2_tf.layers.MaskedBiLSTM`` (4 units
per direction, DRCN's recurrent layer, padding masked), its output beside the embeddings
through one ``Dense`` of ``units`` (96, ReLU), max-pooled over the words; then the two texts'
vectors ``[p; q; p - q; |p - q|]`` through ``Dense(8, ReLU)`` and ``Dense(3)``, softmax.
Random weights (seed 0). The ``tf.function`` is converted by ``openvino.convert_model``
directly (``saved``: through a SavedModel, as ``re2_tf.serving.runtimes.convert`` does) and
compiled for the CPU with ``INFERENCE_PRECISION_HINT`` as given, 2 threads, latency hint. One
infer request is called on the serving choice's probe of changing lengths
(``timing_worker.shape_change_inputs``' sequence: both texts 26 words, then text1 27 twice,
26, then text2 27 twice, 26; ids uniform, no padding), then 5 batches of 15 to 25 words per
text padded after (``probe``: False leaves out the probe). Each configuration runs in
``--processes`` fresh processes; each process ends as "ran" or as its signal, with the last
call that returned (``call <k>: <words of text1> x <words of text2>``).

Writes ``ov_bilstm_crash.json`` beside this file.

    python docs/runs/runtimes/ov_bilstm_crash.py [--processes=3]
"""

import datetime
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
PROCESSES = int(ARGS.get("processes", 3))
#: the network and call settings; each configuration changes some
BASE = dict(batch=512, units=96, lstm=True, precision="bf16", saved=False, probe=True)
#: (configuration name, changes to BASE)
CONFIGS = (
    ("small BiLSTM network", {}),
    ("f32", dict(precision="f32")),
    ("Dense(8) in place of the BiLSTM", dict(lstm=False)),
    ("units 64", dict(units=64)),
    ("batch 8", dict(batch=8)),
    ("converted through a SavedModel", dict(saved=True)),
    ("no probe", dict(probe=False)),
)
VOCABULARY, EMBEDDING, HIDDEN = 1000, 8, 4


def child(settings):
    """Builds, converts and calls the network (in this fresh process); prints one JSON line
    of the IR's counts, then one line per call that returned."""
    # lazy: only the fresh child process imports TensorFlow and OpenVINO
    import tempfile

    import numpy as np
    import openvino as ov
    import tensorflow as tf

    from re2_tf.layers import MaskedBiLSTM

    rng = np.random.default_rng(0)
    table = tf.constant(rng.normal(size=(VOCABULARY, EMBEDDING)).astype(np.float32))
    encoder = MaskedBiLSTM(HIDDEN) if settings["lstm"] else tf.keras.layers.Dense(2 * HIDDEN)
    dense = tf.keras.layers.Dense(settings["units"], activation="relu")
    hidden = tf.keras.layers.Dense(8, activation="relu")
    logits = tf.keras.layers.Dense(3)

    def text(ids):
        x = tf.gather(table, ids)
        mask = tf.cast(ids > 0, tf.float32)
        h = encoder(x, mask) if settings["lstm"] else encoder(x)
        return tf.reduce_max(dense(tf.concat([h, x], -1)), 1)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    def network(ids1, ids2):
        p, q = text(ids1), text(ids2)
        return tf.nn.softmax(logits(hidden(tf.concat([p, q, p - q, tf.abs(p - q)], -1))))

    if settings["saved"]:
        module = tf.Module()
        module.network, module.layers = network, [encoder, dense, hidden, logits]
        path = tempfile.mkdtemp()
        tf.saved_model.save(module, path, signatures={"serving_default": network})
        loaded = tf.saved_model.load(path)
        model = ov.convert_model(loaded.signatures["serving_default"])
    else:
        model = ov.convert_model(network)
    ops = model.get_ordered_ops()
    print(
        json.dumps({"operations": len(ops), "loops": sum(o.get_type_name() == "Loop" for o in ops)})
    )
    config = {"INFERENCE_PRECISION_HINT": settings["precision"], "INFERENCE_NUM_THREADS": 2}
    config["PERFORMANCE_HINT"] = "LATENCY"
    request = ov.Core().compile_model(model, "CPU", config).create_infer_request()
    batch, top = settings["batch"], 26

    def draw(length, padded):
        ids = rng.integers(1, VOCABULARY, (batch, length)).astype(np.int32)
        if padded:
            lengths = rng.integers(15, 26, batch)
            ids = ids[:, : lengths.max()]
            ids[np.arange(ids.shape[1])[None, :] >= lengths[:, None]] = 0
        return ids

    probe = [(top, top), (top + 1, top), (top + 1, top), (top, top)]
    probe += [(top, top + 1), (top, top + 1), (top, top)]
    calls = [(f"{m} x {n}", m, n, False) for m, n in probe] if settings["probe"] else []
    calls += [("padded", 25, 25, True)] * 5
    calls = [
        (f"call {k + 1}: {name}", m, n, padded) for k, (name, m, n, padded) in enumerate(calls)
    ]
    for name, m, n, padded in calls:
        request.infer([draw(m, padded), draw(n, padded)])
        print(name, flush=True)


def main():
    # lazy: the record's parent process only, never imported by the library
    from re2_tf import benchmarking
    from re2_tf.machine import machine
    from re2_tf.serving import runtimes

    record = {
        "command": " ".join(["python docs/runs/runtimes/ov_bilstm_crash.py", *sys.argv[1:]]),
        "processes": PROCESSES,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "versions": runtimes.versions(),
        "base": BASE,
        "runs": [],
    }
    for name, changes in CONFIGS:
        settings = dict(BASE, **changes)
        for process in range(PROCESSES):
            done = subprocess.run(
                [sys.executable, __file__, "--child=" + json.dumps(settings)],
                capture_output=True, text=True, cwd=HERE,
            )  # fmt: skip
            lines = done.stdout.splitlines()
            counts = json.loads(lines[0]) if lines and lines[0].startswith("{") else None
            ended = "ran" if done.returncode == 0 else benchmarking.exit_status(done.returncode)
            if done.returncode > 0:  # a Python error: its last line
                ended += ": " + (done.stderr.strip().splitlines() or [""])[-1]
            record["runs"].append(
                {"variant": name, "batch": settings["batch"], "precision": settings["precision"],
                 "probe": settings["probe"], "settings": settings, "process": process,
                 "ended": ended,
                 "last_call": lines[-1] if len(lines) > 1 else None, **(counts or {})}
            )  # fmt: skip
            print(name, process, ended, lines[-1] if lines else "", flush=True)
    out = HERE / ARGS.get("json_out", "ov_bilstm_crash.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if "child" in ARGS:
        child(json.loads(ARGS["child"]))
    else:
        main()
