"""How often OpenVINO's bfloat16 CPU plugin dies in the serving choice's probe of changing text
lengths (issue 51 item 4): the runtimes record on a CPU with AMX lost DRCN's and FITN's
OpenVINO bf16 there (SIGSEGV), while single processes of the same path have run the probe
through (``docs/performance.md``, "OpenVINO bfloat16 on FITN").

Each variant's benchmark network (random weights, exported ``--xla=false``, converted to
OpenVINO's IR as the serving choice converts, ``re2_tf.serving.runtimes.convert``) is timed
by the timing worker in ``--processes`` fresh processes per precision, each with
``shape_changes`` (the probe: every text one word past the longest drawn, then each text
growing alone, ``timing_worker.shape_change_inputs``) before 5 timed batches of
``re2_tf.benchmarking.table5_inputs(featurizers, batch, 20)`` (lengths 20 +- 5, padding
after), 2 threads, at the serving choice's two batches, 8 and 512. Each process ends as "ran"
or as the worker's failure (``killed by SIGSEGV``).

``--reduce=drcn`` looks for how small a DRCN still dies so, at batch 512 (where its
benchmark network dies): :data:`DRCN_CONFIGS`, the benchmark without the probe (5 timed
batches of fresh draws, no length change beyond theirs), then every width cut down at once,
in bf16 with the probe and without it and in f32, and one part at a time from there;
``--reduce=drcn-parts`` cuts one part at a time from the benchmark network instead
(:data:`DRCN_PARTS`); ``--reduce=drcn-keep`` cuts every width down but one, each part in turn
kept at the benchmark's size (:data:`DRCN_KEEP`); ``--reduce=drcn-autoencoder`` cuts down from
the smallest of those that still dies, every width cut but the autoencoder's
(:data:`DRCN_AUTOENCODER`); ``--reduce=drcn-minimal`` cuts that to one layer without batch norm
and narrows its autoencoder (:data:`DRCN_MINIMAL`). Each configuration runs in ``--processes``
processes. The record keeps each IR's operation and weight counts (``ov_fitn_reduced.py``'s
``ir_counts``).

Writes ``--json_out`` (default ``ov_probe_deaths.json``) beside this file.

    python docs/runs/runtimes/ov_probe_deaths.py [--processes=5] [--variants=DRCN,FITN]
    python docs/runs/runtimes/ov_probe_deaths.py --reduce=drcn --processes=3 \
        --json_out=ov_drcn_reduced.json
    python docs/runs/runtimes/ov_probe_deaths.py --reduce=drcn-parts --processes=3 \
        --json_out=ov_drcn_parts.json
    python docs/runs/runtimes/ov_probe_deaths.py --reduce=drcn-keep --processes=3 \
        --json_out=ov_drcn_keep.json
    python docs/runs/runtimes/ov_probe_deaths.py --reduce=drcn-autoencoder --processes=3 \
        --json_out=ov_drcn_autoencoder.json
    python docs/runs/runtimes/ov_probe_deaths.py --reduce=drcn-minimal --processes=3 \
        --json_out=ov_drcn_minimal.json
"""

import datetime
import json
import runpy
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
PROCESSES = int(ARGS.get("processes", 5))
BATCHES = (8, 512)
VARIANTS = ARGS.get("variants", "DRCN,FITN").split(",")
PRECISIONS = ("bf16", "f32")
#: DRCN cut down: no character CNN, every width small, the benchmark's batch norm kept
DRCN_REDUCED = dict(
    batch_norm=True, char_cnn=False, embedding_dim=8, hidden_size=4, autoencoder_units=8,
    fc_units=8,
)  # fmt: skip
#: (configuration name, hyper-parameters over DRCN_DEFAULTS, precision, probe)
DRCN_CONFIGS = (
    ("benchmark DRCN", dict(batch_norm=True), "bf16", False),
    ("reduced", DRCN_REDUCED, "bf16", True),
    ("reduced", DRCN_REDUCED, "f32", True),
    ("reduced", DRCN_REDUCED, "bf16", False),
    ("reduced, 2 layers", dict(DRCN_REDUCED, num_layers=2, autoencoder_layers="2"), "bf16", True),
    ("reduced, no autoencoder", dict(DRCN_REDUCED, autoencoder_layers="none"), "bf16", True),
    ("reduced, no co-attention", dict(DRCN_REDUCED, co_attention=False), "bf16", True),
    ("reduced, no batch norm", dict(DRCN_REDUCED, batch_norm=False), "bf16", True),
)

#: DRCN's benchmark network with one part cut down at a time (``--reduce=drcn-parts``)
DRCN_PARTS = (
    ("benchmark DRCN", dict(batch_norm=True), "bf16", True),
    ("no character CNN", dict(batch_norm=True, char_cnn=False), "bf16", True),
    ("embedding_dim 8", dict(batch_norm=True, embedding_dim=8), "bf16", True),
    ("hidden_size 4", dict(batch_norm=True, hidden_size=4), "bf16", True),
    ("autoencoder_units 8", dict(batch_norm=True, autoencoder_units=8), "bf16", True),
    ("fc_units 8", dict(batch_norm=True, fc_units=8), "bf16", True),
)

#: every width of DRCN_REDUCED cut but one, that part at the benchmark's size
#: (``--reduce=drcn-keep``)
DRCN_KEEP = tuple(
    (f"reduced but {part}", {k: v for k, v in DRCN_REDUCED.items() if k != part}, "bf16", True)
    for part in ("char_cnn", "embedding_dim", "hidden_size", "autoencoder_units", "fc_units")
)

#: DRCN_REDUCED with the benchmark's autoencoder (200 units at layers 3 and 5)
DRCN_AE = {k: v for k, v in DRCN_REDUCED.items() if k != "autoencoder_units"}
#: cut down from DRCN_AE (``--reduce=drcn-autoencoder``)
DRCN_AUTOENCODER = (
    ("reduced but autoencoder_units", DRCN_AE, "f32", True),
    ("reduced but autoencoder_units", DRCN_AE, "bf16", False),
    *(
        (f"reduced, autoencoder_units {units}", dict(DRCN_AE, autoencoder_units=units), "bf16",
         True)
        for units in (16, 32, 64, 128)
    ),  # fmt: skip
    *(
        (f"reduced but autoencoder_units, {n} layers", dict(DRCN_AE, num_layers=n,
         autoencoder_layers=str(n)), "bf16", True)
        for n in (3, 2, 1)
    ),  # fmt: skip
    ("reduced but autoencoder_units, no co-attention", dict(DRCN_AE, co_attention=False), "bf16",
     True),
    ("reduced but autoencoder_units, no batch norm", dict(DRCN_AE, batch_norm=False), "bf16",
     True),
)  # fmt: skip

#: DRCN_AE at one layer (its autoencoder after it), no batch norm
DRCN_ONE = dict(DRCN_AE, num_layers=1, autoencoder_layers="1", batch_norm=False)
#: DRCN_ONE's autoencoder narrowed (``--reduce=drcn-minimal``)
DRCN_MINIMAL = (
    *(
        (f"1 layer, autoencoder_units {units}", dict(DRCN_ONE, autoencoder_units=units), "bf16",
         True)
        for units in (200, 128, 96, 64)
    ),
    ("1 layer, autoencoder_units 200", dict(DRCN_ONE, autoencoder_units=200), "f32", True),
    ("1 layer, autoencoder_units 200", dict(DRCN_ONE, autoencoder_units=200), "bf16", False),
)  # fmt: skip


def runs():
    """``[(name, model, hparams, batch, precision, probe)]`` this invocation runs."""
    # lazy: the record's parent process only, as main's imports
    from re2_tf.models import MODEL_SPECS

    reductions = {"drcn": DRCN_CONFIGS, "drcn-parts": DRCN_PARTS, "drcn-keep": DRCN_KEEP,
                  "drcn-autoencoder": DRCN_AUTOENCODER, "drcn-minimal": DRCN_MINIMAL}  # fmt: skip
    if "reduce" in ARGS:
        if ARGS["reduce"] not in reductions:
            raise SystemExit(f"--reduce must be one of {list(reductions)}, got {ARGS['reduce']!r}")
        return [(n, "drcn", h, 512, p, probe) for n, h, p, probe in reductions[ARGS["reduce"]]]
    out = []
    for variant in VARIANTS:
        spec = next(s for s in MODEL_SPECS.values() if variant in s.benchmark)
        hparams = spec.benchmark[variant]["hparams"]
        out += [(variant, spec.name, hparams, b, p, True) for b in BATCHES for p in PRECISIONS]
    return out


def main():
    # lazy: the record's parent process only, never imported by the library
    from re2_tf import benchmarking
    from re2_tf.machine import machine
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    ir_counts = runpy.run_path(str(HERE / "ov_fitn_reduced.py"))["ir_counts"]
    record = {
        "command": " ".join(["python docs/runs/runtimes/ov_probe_deaths.py", *sys.argv[1:]]),
        "processes": PROCESSES,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **machine(),
        "versions": runtimes.versions(),
        "configs": [],
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        converted = {}
        for name, model, hparams, batch, precision, probe in runs():
            if name not in converted:
                where = Path(tmp) / str(len(converted))
                path, _, featurizers = benchmarking.export_benchmark_model(
                    get_spec(model), hparams, where / "savedmodel", xla=False
                )
                xml = runtimes.convert(path, "openvino", where / "ir")
                converted[name] = (xml, featurizers)
                record["configs"].append({"name": name, "hparams": hparams, **ir_counts(xml)})
            xml, featurizers = converted[name]
            request = benchmarking.table5_inputs(featurizers, batch, 20).request(ids=True)
            options = dict(request["options"], precision=precision, shape_changes=probe)
            for process in range(PROCESSES):
                try:
                    benchmarking.time_table5(
                        xml, threads=2, batches=5, **dict(request, options=options)
                    )
                    ended = "ran"
                except RuntimeError as error:
                    ended = runtimes.failure(error)
                record["runs"].append(
                    {"variant": name, "batch": batch, "precision": precision, "probe": probe,
                     "process": process, "ended": ended}
                )  # fmt: skip
                print(name, batch, precision, probe, process, ended, flush=True)
    out = HERE / ARGS.get("json_out", "ov_probe_deaths.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
