"""The five models on equal terms: a comparison is a sweep over ``--model``
(:mod:`re2_lab.sweep`) with the same data, passes and selection rule for every model.

Each model keeps its own recipe (optimiser, schedule, widths): its run starts from the
model's flagfile for the task (``configs/<model>/<task flagfile>``) or, where the model has
none, from its spec's preset for the task's dataset (``--model=<m> --dataset=<dataset>``).
The common flags then set what must be equal: ``--data_dir``, ``--epochs`` (5 passes),
``--eval_per_samples`` (one evaluation every 2,560 training samples: the learning checks'),
and ``--embeddings=`` (random trainable word embeddings: no GloVe here). Every run selects its
best checkpoint on the dev split and reports it on the test split (the trainer's own rule).

Beside accuracy, per model (:func:`measure`): parameters without the word embedding, the
Table 5 latency of its default SavedModel (``re2-bench``'s protocol: a fresh process, batch 8 x
20, median ms; the compared network, its SNLI learning-check settings, with random weights,
whose speed does not depend on the weights), pairs/s served at batch 128, the serving
process's peak memory, and training pairs/s at the same settings
(:mod:`re2_lab.throughput`, one process). Records:
``<records>/<task>/model-<m>/seed<k>/`` per run, ``<records>/serving.jsonl``,
``<records>/training/throughput.jsonl``.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path

from re2_lab.sweep import Cell, pyplot, summarize_sweep
from re2_lab.throughput import read_jsonl
from re2_tf.models.spec import model_names

__all__ = ["TASKS", "Task", "cells", "common_args", "measure", "model_names", "report"]

REPO = Path(__file__).resolve().parents[1]
SERVING = "serving.jsonl"


@dataclass(frozen=True)
class Task:
    """A comparison task: its dataset, the models' flagfile name, seeds, and the test metrics
    reported (``<split>/<metric>``)."""

    dataset: str
    flagfile: str
    seeds: int
    metrics: tuple
    title: str


#: The comparison's tasks (issue: the SNLI and Quora learning checks, WikiQA, TrecQA clean).
TASKS = {
    "snli_check": Task(
        "snli", "snli_learning_check.flags", 3, ("test/acc",), "SNLI learning check acc"
    ),
    "quora_check": Task(
        "quora", "quora_learning_check.flags", 1, ("test/acc",), "Quora learning check acc"
    ),
    # WikiQA: 1 seed, our cut from the 3, alike for every model (2 more seeds of DRCN,
    # FITN and BERT+MatchLSTM on WikiQA's 20k pairs did not fit the CPU budget).
    "wikiqa": Task("wikiqa", "wikiqa.flags", 1, ("test/map", "test/mrr"), "WikiQA MAP / MRR"),
    "trecqa": Task("trecqa", "trecqa.flags", 1, ("test/map", "test/mrr"), "TrecQA clean MAP / MRR"),
}


def _task(name):
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


def cells(task, models=None):
    """One :class:`Cell` per model (setting ``model``; ``models`` default: every registered
    model, :func:`~re2_tf.models.spec.model_names`), its base the model's flagfile for
    ``task`` or ``--model=<m> --dataset=<dataset>``.

    Raises:
        ValueError: an unknown task or model.
    """
    from re2_tf.models import get_spec

    spec = _task(task)
    out = []
    for model in model_names() if models is None else models:
        get_spec(model)  # KeyError -> below
        flagfile = REPO / "configs" / model / spec.flagfile
        base = (
            (f"--flagfile={flagfile}",)
            if flagfile.exists()
            else (f"--model={model}", f"--dataset={spec.dataset}")
        )
        out.append(Cell((("model", model),), base=base))
    return out


def common_args(data_dir, *, epochs=5, eval_per_samples=2560):
    """The flags every model's run shares (module docstring)."""
    return [
        f"--data_dir={data_dir}",
        f"--epochs={epochs}",
        f"--eval_per_samples={eval_per_samples}",
        "--embeddings=",
    ]


def measure(models, records, snli_dir, *, threads=2, batches=100, updates=10, log=print):
    """Measure what :func:`report` needs beside accuracy, for each model not yet measured
    (one JSON line per model appended to ``<records>/serving.jsonl`` as it finishes; training
    speed in ``<records>/training/``, :func:`re2_lab.throughput.measure`).

    The served model is the compared one: the model's SNLI learning-check settings
    (``configs/<model>/snli_learning_check.flags``) with random weights over a 30,000-word
    synthetic vocabulary (Table 5's; speed does not depend on the weights), exported with
    re2_tf's default export and timed with the Table 5 protocol in a fresh process
    (:func:`re2_tf.benchmarking.time_export`: batch 8 x 20, median of 100 batches after 10
    warm-up ones, ``threads`` intra-op threads, one inter-op), then at batch 128 for pairs/s
    and the serving process's peak memory.

    Args:
        models: model names.
        records: the comparison's records directory.
        snli_dir: the SNLI learning-check data directory (training speed is measured there).
        threads: intra-op threads of the timed process.
        batches: timed serving batches (Table 5: 100); ``updates``: timed training updates.

    Returns:
        ``(serving, training)``: lists of the records.
    """
    import tempfile

    from re2_lab import throughput
    from re2_tf import benchmarking
    from re2_tf.cli.train import config_from_args

    records = Path(records)
    records.mkdir(parents=True, exist_ok=True)
    path = records / SERVING
    done = {r["model"] for r in read_jsonl(path)}
    for model in models:
        if model in done:
            continue
        flagfile = REPO / "configs" / model / TASKS["snli_check"].flagfile
        config = config_from_args([f"--flagfile={flagfile}", "--run_dir=unused"])
        with tempfile.TemporaryDirectory() as tmp:
            export, params, featurizers = benchmarking.export_benchmark_model(
                config.spec, dict(config.hparams), Path(tmp) / "export", vocab_size=30000
            )
            signature, inputs = benchmarking.benchmark_inputs(featurizers, 8, 20)
            row = benchmarking.time_table5(
                export, signature, inputs, threads=threads, batches=batches, throughput_batch=128
            )
        row = {k: v for k, v in row.items() if k != "times_s"}
        row.update(model=model, params=params, flagfile=str(flagfile.relative_to(REPO)))
        row.update(throughput.machine(), threads=threads)
        row["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
        log(f"{model}: {row['median_ms']:.1f} ms per batch of 8 x 20")
    training = throughput.measure(
        list(models),
        snli_dir,
        records / "training",
        modes=["one_process"],
        warmup=min(3, updates),
        updates=updates,
        log=log,
    )
    return read_jsonl(path), training


def shown_models(records, models):
    """The models a comparison's table and plot show: every registered model
    (:func:`~re2_tf.models.spec.model_names`) that has a record under ``records`` (a test
    result of any task, or a serving record) or is in ``models`` (the ones this command trains
    or measures), then ``models`` not registered, in order. So a command run for one model
    never drops the others' rows."""
    registered = model_names()
    records = Path(records)
    serving = {r["model"] for r in read_jsonl(records / SERVING)}
    recorded = {
        m
        for m in registered
        if m in serving or any(records.glob(f"*/model-{m}/seed*/results.json"))
    }
    return [m for m in registered if m in recorded or m in models] + [
        m for m in models if m not in registered
    ]


def format_metric(metric):
    """``"0.6023 ± 0.0064"`` for a summary's ``{"mean", "std"}`` (four decimals; the mean
    alone when ``std`` is ``None``, one seed), ``"—"`` for ``None``."""
    if metric is None:
        return "—"
    if metric["std"] is None:
        return f"{metric['mean']:.4f}"
    return f"{metric['mean']:.4f} ± {metric['std']:.4f}"


def report(records, models=None):
    """The comparison's Markdown table and its summary, from the records alone.

    Returns:
        ``(markdown, summary)``: one row per model -- the test metrics of every task
        (mean ± sample std over the recorded seeds, their number in brackets; ``—`` for a task
        with no record yet), parameters without the
        word embedding, median ms per batch of 8 x 20, served pairs/s at batch 128, peak
        serving memory (MiB), training pairs/s; ``summary = {"tasks": {task: sweep summary},
        "serving": [...], "training": [...]}``. A figure not recorded is ``—``.
    """
    from re2_lab import throughput

    records = Path(records)
    models = model_names() if models is None else models
    tasks = {}
    for name, spec in TASKS.items():
        seeds = range(1, spec.seeds + 1)
        _, summary = summarize_sweep(cells(name, models), seeds, None, records=records / name)
        tasks[name] = summary
    serving = {r["model"]: r for r in read_jsonl(records / SERVING)}
    training = {
        r["model"]: r
        for r in throughput.load_records(records / "training")
        if r["mode"] == "one_process" and r["mixed_precision"] == "none"
    }
    header = ["model"]
    for name in tasks:
        header.append(f"{TASKS[name].title} (seeds)")
    header += [
        "params (w/o emb.)",
        "latency ms (8×20, median)",
        "served pairs/s @ 128",
        "peak serving MiB",
        "training pairs/s",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model in models:
        row = [f"`{model}`"]
        for name, summary in tasks.items():
            (entry,) = [e for e in summary["cells"] if e["settings"] == {"model": model}]
            metrics = [entry["metrics"].get(m) for m in TASKS[name].metrics]
            figures = " / ".join(format_metric(m) for m in metrics)
            row.append(f"{figures} ({len(entry['seeds'])})" if entry["seeds"] else "—")
        s, t = serving.get(model), training.get(model)
        row += [
            f"{s['params']:,}" if s and s.get("params") is not None else "—",
            f"{s['median_ms']:.1f}" if s else "—",
            f"{s['throughput_pairs_per_s']:,.0f}" if s and s.get("throughput_pairs_per_s") else "—",
            f"{s['peak_rss_mib']:,.0f}" if s and s.get("peak_rss_mib") else "—",
            f"{t['pairs_per_s']:.1f}" if t else "—",
        ]
        lines.append("| " + " | ".join(row) + " |")
    machines = sorted(
        {
            throughput.describe_machine(r)
            for r in [*serving.values(), *training.values()]
            if r.get("cpu")
        }
    )
    if machines:
        lines += ["", f"Latency, serving and training speed measured on {'; '.join(machines)}."]
    fresh = {m: s for m, s in serving.items() if s.get("load_average")}
    if fresh:  # recorded by the timing worker since its batches are fresh draws
        fixed = [m for m in serving if m not in fresh]
        lines[-1] += (
            " Latency timed on fresh batches (texts of 20 ± spread words) for "
            + ", ".join(
                f"`{m}` (spread {s.get('length_spread', 0)}; load average, 1 min, before -> after "
                f"timing: {s['load_average'][0]:.1f} -> {s['load_average'][1]:.1f})"
                for m, s in fresh.items()
            )
            + (
                f"; {', '.join(f'`{m}`' for m in fixed)} on 4 fixed batches of 20 words."
                if fixed
                else "."
            )
        )
    return "\n".join(lines), {
        "tasks": tasks,
        "serving": list(serving.values()),
        "training": list(training.values()),
    }


def plot(summary, task, metric, path):
    """PNG: ``metric`` of ``task`` (mean, error bars of one std over seeds) against the
    Table 5 latency, one point per model (matplotlib, the ``plot`` extra).

    Raises:
        ImportError: saying to install ``re2_tf[plot]``; KeyError: nothing to plot.
    """
    plt = pyplot("the comparison's plot")
    latency = {r["model"]: r["median_ms"] for r in summary["serving"]}
    points = []
    for entry in summary["tasks"].get(task, {"cells": []})["cells"]:
        model = entry["settings"]["model"]
        if metric in entry["metrics"] and model in latency:
            points.append((model, latency[model], entry["metrics"][metric]))
    if not points:
        raise KeyError(f"no model has both {task} {metric} and a latency record")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    # labels alternately above and below their points, in order of latency, so that two
    # models of similar latency and accuracy (RE2 and FITN) do not print over each other
    for i, (model, ms, m) in enumerate(sorted(points, key=lambda p: p[1])):
        ax.errorbar([ms], [m["mean"]], yerr=[m["std"] or 0.0], fmt="o", capsize=4, label=model)
        offset = (6, 4) if i % 2 == 0 else (6, -11)
        ax.annotate(model, (ms, m["mean"]), textcoords="offset points", xytext=offset, fontsize=8)
    ax.set_xscale("log")
    plain = plt.matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("latency, ms per batch of 8 x 20 (median, log scale)")
    ax.set_ylabel(f"{task} {metric} (mean ± std over seeds)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
