r"""Training throughput under each ``--distribution``, and a scaling model built on it.

**Measurement** (:func:`measure`). Each model trains at its SNLI learning-check settings
(``configs/<model>/snli_learning_check.flags``: the paper's SNLI architecture and recipe,
batch 128 except where the flagfile says otherwise) on the SNLI dev file, in a fresh process
per measurement, for ``warmup + updates + 1`` updates with no evaluation before the last; a Keras
callback (:class:`UpdateTimer`) stamps the end of every update and

    pairs/s = batch_size x updates / (time of the last timed update's end - the warm-up's end)

The warm-up updates (tracing, the first allocations) are not counted, nor is the last update:
a run that ends before its first scheduled evaluation evaluates at its last update
(:class:`re2_tf.training.routine.ReleaseRoutine`), and that evaluation runs in the update's
end, before this timer's stamp (:func:`timed_rate`; a record names the update it evaluated at,
``evaluated_at_update``, and a measurement whose evaluation falls among the timed updates is an
error). The modes
(:data:`MODES`) are one process, ``mirrored`` over two logical CPU devices of one process, and
two ``multi_worker`` processes on this host talking over loopback. Scaling efficiency is
``pairs/s of n replicas / (n x pairs/s of one process)``. Every measurement is one line of
``throughput.jsonl`` in the output directory, written when it finishes, so a stopped
measurement resumes where it stopped and a finished line is never measured again.

**Scaling model** (:func:`predict`). From the one-process measurement (the global batch's
compute time ``t1`` per update) and the bytes all-reduced per update ``B`` (every trainable
parameter's gradient in float32: the trainer densifies a word embedding's sparse gradient
before its one all-reduce, ``docs/distributed.md``), ``n`` hosts like this one, each
computing ``batch / n`` rows, take

    t(n) = t1 / n + 2 (n - 1) / n x B / bandwidth          (ring all-reduce)

per update (no overlap: the trainer all-reduces once, after the whole backward pass, before
clipping). Both terms are optimistic in one way each: ``t1 / n`` assumes the per-row cost does
not grow as the per-host batch shrinks, and the ring term ignores per-message latency. For
one-GPU hosts ``t1`` is replaced by an assumed GPU step time (:func:`gpu_step_time`).

Command line: ``python -m re2_lab.cli.throughput`` (:mod:`re2_lab.cli.throughput`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import keras

from re2_tf.benchmarking import process_memory_mib
from re2_tf.machine import (  # noqa: F401  (re-exported: the speed records' CPU fields)
    VECTOR_FEATURES,
    cpu_features,
    cpu_name,
    describe_machine,
    machine,
)

__all__ = [
    "MODES",
    "Mode",
    "UpdateTimer",
    "efficiency_table",
    "gpu_step_time",
    "loopback_table",
    "measure",
    "predict",
    "scaling_table",
    "timed_rate",
]

REPO = Path(__file__).resolve().parents[1]
RECORDS = "throughput.jsonl"


@dataclasses.dataclass(frozen=True)
class Mode:
    """One way of running the training.

    Attributes:
        name: the mode's key in :data:`MODES` and in the records.
        distribution: ``--distribution``.
        processes: processes started (``multi_worker``: one per worker, on this host).
        replicas: replicas in sync (the ``n`` of the scaling efficiency).
        threads: ``--threads`` of each process (0 = TensorFlow's default: one per core).
        logical_cpus: ``--logical_cpus`` (the CPU split of a ``mirrored`` run).
        description: for the table.
    """

    name: str
    distribution: str
    processes: int
    replicas: int
    threads: int
    logical_cpus: int
    description: str


#: The measured modes, in table order.
MODES = {
    m.name: m
    for m in (
        Mode("one_process", "none", 1, 1, 0, 0, "1 process"),
        Mode("mirrored", "mirrored", 1, 2, 0, 2, "mirrored, 2 logical CPUs"),
        Mode("two_workers", "multi_worker", 2, 2, 1, 0, "2 local workers (1 thread each)"),
    )
}


class UpdateTimer(keras.callbacks.Callback):
    """Wall-clock time (``time.perf_counter``, seconds) at the end of every training update.

    Attributes:
        times: list of floats, one per update, in order.
        parameters: trainable parameters of the network (set when training starts).
    """

    def __init__(self):
        super().__init__()
        self.times = []
        self.parameters = 0

    def on_train_begin(self, logs=None):
        network = getattr(self.model, "network", self.model)
        self.parameters = int(sum(v.numpy().size for v in network.trainable_variables))

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter())


def timed_rate(times, warmup, updates, batch_size):
    """``(pairs/s, seconds per update)`` from :class:`UpdateTimer` stamps: the ``updates``
    updates after the first ``warmup``, from the end of the last warm-up update to the end of
    the last timed one; later stamps (the closing update, which ends with the run's
    evaluation) are not read.

    Raises:
        RuntimeError: fewer than ``warmup + updates`` stamps, or ``warmup`` or ``updates``
            below 1.
    """
    if updates < 1 or warmup < 1 or len(times) < warmup + updates:
        raise RuntimeError(
            f"{len(times)} updates were timed, {warmup} warm-up and {updates} timed needed: "
            "nothing to measure"
        )
    seconds = times[warmup + updates - 1] - times[warmup - 1]
    return batch_size * updates / seconds, seconds / updates


def _child(spec):
    """In a measurement process: train ``spec["args"]`` with an :class:`UpdateTimer` and print
    one ``THROUGHPUT {json}`` line (the chief only)."""
    from re2_tf.api import fit
    from re2_tf.train_flags import config_from_args

    config = config_from_args(spec["args"])
    timer = UpdateTimer()
    started = time.perf_counter()
    result = fit(config, callbacks=[timer])
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    if task.get("index", 0) != 0:
        return
    warmup, updates = spec["warmup"], spec["updates"]
    # the run's one evaluation (best_step: 0 without one) must not be among the timed updates
    evaluated = result.best_step or None
    if evaluated is not None and evaluated <= warmup + updates:
        raise RuntimeError(
            f"the run evaluated at update {evaluated}, among the timed updates "
            f"{warmup + 1}..{warmup + updates}"
        )
    pairs_per_s, seconds_per_update = timed_rate(timer.times, warmup, updates, config.batch_size)
    record = {
        "pairs_per_s": pairs_per_s,
        "seconds_per_update": seconds_per_update,
        "updates": updates,
        "warmup": warmup,
        "evaluated_at_update": evaluated,
        "batch_size": config.batch_size,
        "trainable_parameters": timer.parameters,
        "allreduce_bytes": 4 * timer.parameters,
        "wall_s": time.perf_counter() - started,
        # the training process's own peak resident memory (VmHWM), MiB; None without /proc
        "peak_mib": process_memory_mib()["hwm"],
    }
    print("THROUGHPUT " + json.dumps(record), flush=True)


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _run_processes(args, mode, warmup, updates, timeout):
    """Start ``mode.processes`` measurement processes; returns the chief's record."""
    spec = json.dumps({"args": args, "warmup": warmup, "updates": updates})
    command = [sys.executable, "-m", "re2_lab.throughput", spec]
    envs = [dict(os.environ)]
    if mode.processes > 1:
        cluster = {"worker": [f"localhost:{_free_port()}" for _ in range(mode.processes)]}
        envs = [
            dict(
                os.environ,
                TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
            )
            for i in range(mode.processes)
        ]
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for env in envs:
            env["TMPDIR"] = tempfile.mkdtemp(dir=tmp)
            procs.append(
                subprocess.Popen(
                    command,
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        outputs = [p.communicate(timeout=timeout) for p in procs]
    for proc, (_, err) in zip(procs, outputs):
        if proc.returncode:
            raise RuntimeError(f"measurement failed ({' '.join(args)}):\n{err[-3000:]}")
    for line in outputs[0][0].splitlines():
        if line.startswith("THROUGHPUT "):
            return json.loads(line[len("THROUGHPUT ") :])
    raise RuntimeError(f"no THROUGHPUT line from {' '.join(args)}")


def _key(record):
    key = (record["model"], record["mode"], record["mixed_precision"])
    return key + ("jit",) if record.get("jit_compile") else key


def read_jsonl(path):
    """The JSON objects of a JSON-lines file, one per non-empty line (``[]`` when there is
    no file)."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_records(out):
    """The records of ``<out>/throughput.jsonl`` (``[]`` when there is none)."""
    return read_jsonl(Path(out) / RECORDS)


def measure(
    models,
    data_dir,
    out,
    modes=tuple(MODES),
    precisions=("none",),
    warmup=3,
    updates=10,
    timeout=3600,
    jit_compile=(False,),
    log=print,
):
    """Measure every ``model x mode x precision`` not yet in ``<out>/throughput.jsonl``.

    Args:
        models: registered model names (each needs ``configs/<model>/snli_learning_check.flags``).
        data_dir: a prepared SNLI learning-check directory (``train.txt``: the SNLI dev file;
            small ``dev.txt``/``test.txt``, scored at the closing update, after the timed ones).
        out: output directory; the records are appended to ``throughput.jsonl`` there.
        modes: names of :data:`MODES`.
        precisions: ``--mixed_precision`` values (mixed precision is measured in one
            process only: the other modes are measured in float32).
        jit_compile: ``--jit_compile`` values; with ``True`` in it, each model is also
            measured XLA-compiled (one process, float32, ``--deterministic=false``, which XLA
            training needs).
        warmup, updates: updates not timed, then timed (then one more, not timed: the run's
            closing evaluation ends it).
        timeout: seconds allowed per measurement.
        log: called with one line per measurement.

    Returns:
        list of every record in the file (dicts: ``model``, ``mode``, ``mixed_precision``,
        ``pairs_per_s``, ``seconds_per_update``, ``batch_size``, ``trainable_parameters``,
        ``allreduce_bytes``, ``peak_mib`` (the training process's own peak resident memory,
        ``VmHWM``, MiB: :func:`re2_tf.benchmarking.process_memory_mib`; ``None`` without
        ``/proc``, absent from older records), ``threads``, ``cpu``, ``cpu_features``,
        ``cpu_count``, ``tensorflow``, ``date``, ...).

    Raises:
        ValueError: an unknown mode; RuntimeError: a measurement process failed (its stderr
        tail in the message); the records measured before it are kept.
    """
    import tensorflow as tf

    from re2_tf.train_flags import config_from_flagfile

    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown modes {unknown}; known: {list(MODES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    done = {_key(r) for r in load_records(out)}
    for model in models:
        flagfile = REPO / "configs" / model / "snli_learning_check.flags"
        base = [f"--flagfile={flagfile}", f"--data_dir={data_dir}"]
        batch = config_from_flagfile(flagfile, data_dir=data_dir).batch_size
        settings = [(p, False) for p in precisions] + [("none", True) for jit in jit_compile if jit]
        for precision, jit in settings:
            for name in modes:
                mode = MODES[name]
                if (precision != "none" or jit) and mode.replicas > 1:
                    continue
                key = (model, name, precision) + (("jit",) if jit else ())
                if key in done:
                    continue
                with tempfile.TemporaryDirectory() as run_dir:
                    args = base + [
                        f"--run_dir={run_dir}/run",
                        "--progress=false",
                        f"--max_samples={(warmup + updates + 1) * batch}",
                        f"--eval_per_samples={10**9}",
                        "--noeval_epoch",
                        f"--distribution={mode.distribution}",
                        f"--threads={mode.threads}",
                        f"--logical_cpus={mode.logical_cpus}",
                        f"--mixed_precision={precision}",
                    ]
                    if jit:
                        args += ["--jit_compile", "--nodeterministic"]
                    record = _run_processes(args, mode, warmup, updates, timeout)
                record.update(
                    model=model,
                    mode=name,
                    mixed_precision=precision,
                    jit_compile=jit,
                    replicas=mode.replicas,
                    processes=mode.processes,
                    threads=mode.threads,
                    flagfile=str(flagfile.relative_to(REPO)),
                    **machine(),
                    tensorflow=tf.__version__,
                    date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                )
                with (out / RECORDS).open("a") as f:
                    f.write(json.dumps(record) + "\n")
                log(
                    f"{model} {name} {precision}{' jit' if jit else ''}: "
                    f"{record['pairs_per_s']:.1f} pairs/s "
                    f"({record['seconds_per_update']:.2f} s/update)"
                )
    return load_records(out)


def _by_key(records):
    return {_key(r): r for r in records}


def efficiency_table(records):
    """Markdown: per model, pairs/s of each mode measured and the scaling efficiency
    ``pairs/s(n) / (n x pairs/s(1 process))``; bf16/fp16 one-process rows where measured."""
    index = _by_key(records)
    models = list(dict.fromkeys(r["model"] for r in records))
    header = ["model", "batch"]
    for mode in MODES.values():
        header.append(f"{mode.description} (pairs/s)")
        if mode.replicas > 1:
            header.append("efficiency")
    precisions = sorted({r["mixed_precision"] for r in records} - {"none"})
    header += [f"1 process {p} (pairs/s)" for p in precisions]
    jit = any(r.get("jit_compile") for r in records)
    if jit:
        header.append("1 process, XLA-compiled (pairs/s)")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model in models:
        one = index.get((model, "one_process", "none"))
        row = [model, str(one["batch_size"]) if one else "?"]
        for name, mode in MODES.items():
            record = index.get((model, name, "none"))
            row.append(f"{record['pairs_per_s']:.1f}" if record else "not measured")
            if mode.replicas > 1:
                row.append(
                    f"{record['pairs_per_s'] / (mode.replicas * one['pairs_per_s']):.2f}"
                    if record and one
                    else "-"
                )
        for precision in precisions:
            record = index.get((model, "one_process", precision))
            row.append(f"{record['pairs_per_s']:.1f}" if record else "not measured")
        if jit:
            record = index.get((model, "one_process", "none", "jit"))
            row.append(f"{record['pairs_per_s']:.1f}" if record else "not measured")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


#: fp32 peak of the GPU the RE2 paper trained on (NVIDIA Tesla P100 PCIe: 9.3 TFLOP/s, its
#: data sheet), the GPU of :func:`gpu_step_time`.
GPU_NAME, GPU_PEAK_FLOPS = "NVIDIA P100 (fp32 peak 9.3 TFLOP/s)", 9.3e12


def gpu_step_time(cpu_seconds, cpu_flops):
    """An assumed one-GPU step time: the CPU step time scaled by the ratio of the CPU's
    measured fp32 matmul rate (``cpu_flops``, FLOP/s) to the P100's fp32 peak
    (:data:`GPU_PEAK_FLOPS`). It assumes the model reaches the same fraction of the GPU's
    peak as of the CPU's matmul rate -- optimistic for the recurrent models, whose sequential
    steps keep a GPU mostly idle; our assumption, not a measurement."""
    return cpu_seconds * cpu_flops / GPU_PEAK_FLOPS


def predict(seconds_per_update, allreduce_bytes, workers, gbit_per_s, batch_size):
    """``(pairs/s, efficiency)`` of ``workers`` hosts under the ring all-reduce model (the
    module docstring): ``t = seconds_per_update / n + 2 (n - 1) / n x bytes / bandwidth``.

    Args:
        seconds_per_update: float, one host's time for one update of the global batch.
        allreduce_bytes: int, bytes all-reduced per update.
        workers: int >= 1.
        gbit_per_s: float, link bandwidth in Gbit/s (10^9 bits).
        batch_size: int, the global batch.
    """
    n = workers
    seconds = seconds_per_update / n + 2 * (n - 1) / n * allreduce_bytes * 8 / (gbit_per_s * 1e9)
    pairs = batch_size / seconds
    return pairs, pairs / (n * batch_size / seconds_per_update)


def scaling_table(records, cpu_flops, workers=(1, 2, 4, 8, 32), links=(10, 100)):
    """Markdown: predicted pairs/s (efficiency) per model, host kind, link and worker count,
    from the one-process float32 records; and per model the 2-worker prediction beside the
    loopback measurement."""
    index = _by_key(records)
    header = ["model", "host", "link"] + [f"{n} worker{'s' * (n > 1)}" for n in workers]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model in dict.fromkeys(r["model"] for r in records):
        one = index.get((model, "one_process", "none"))
        if one is None:
            continue
        hosts = {
            "CPU (2 cores, as measured)": one["seconds_per_update"],
            f"1 GPU (assumed {GPU_NAME})": gpu_step_time(one["seconds_per_update"], cpu_flops),
        }
        for host, seconds in hosts.items():
            for link in links:
                cells = []
                for n in workers:
                    pairs, eff = predict(
                        seconds, one["allreduce_bytes"], n, link, one["batch_size"]
                    )
                    cells.append(f"{pairs:,.0f} ({eff:.2f})")
                lines.append(f"| {model} | {host} | {link} Gbit/s | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def loopback_table(records, gbit_per_s=10):
    """Markdown: per model, the 2-host prediction (``gbit_per_s`` link) beside the 2-worker
    loopback measurement, and what the measurement implies: the time per update beyond one
    process's (``measured - t1``) and, if all of it were the all-reduce, the bandwidth that
    would explain it (``bytes / overhead``, ring with n = 2)."""
    index = _by_key(records)
    header = [
        "model",
        "all-reduce per update (MB)",
        "1 process (s/update)",
        f"predicted, 2 hosts at {gbit_per_s} Gbit/s (s/update)",
        "measured, 2 local workers (s/update)",
        "overhead over 1 process (s/update)",
        "bandwidth that would explain it (Gbit/s)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model in dict.fromkeys(r["model"] for r in records):
        one = index.get((model, "one_process", "none"))
        two = index.get((model, "two_workers", "none"))
        if one is None or two is None:
            continue
        t1, nbytes = one["seconds_per_update"], one["allreduce_bytes"]
        pairs, _ = predict(t1, nbytes, 2, gbit_per_s, one["batch_size"])
        overhead = two["seconds_per_update"] - t1
        implied = f"{nbytes * 8 / overhead / 1e9:.2f}" if overhead > 0 else "-"
        lines.append(
            f"| {model} | {nbytes / 1e6:.1f} | {t1:.2f} | {one['batch_size'] / pairs:.2f} | "
            f"{two['seconds_per_update']:.2f} | {overhead:.2f} | {implied} |"
        )
    return "\n".join(lines)


def matmul_flops(size=2048, repeats=10):
    """This CPU's measured float32 matmul rate (FLOP/s) with TensorFlow's default threads:
    :func:`re2_lab.roofline.peak_flops` (the median over ``repeats`` of ``2 size^3`` FLOP in one
    ``tf.linalg.matmul``)."""
    from re2_lab.roofline import peak_flops

    return peak_flops("float32", size=size, repeats=repeats)


if __name__ == "__main__":
    _child(json.loads(sys.argv[1]))
