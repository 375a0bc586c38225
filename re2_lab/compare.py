"""The five models side by side: a comparison is a sweep over ``--model``
(:mod:`re2_lab.sweep`) with the same data, passes and selection rule for every model.

Each model keeps its own recipe (optimiser, schedule, widths): its run starts from the
model's flagfile for the task (``configs/<model>/<task flagfile>``) or, where the model has
none, from its spec's preset for the task's dataset (``--model=<m> --dataset=<dataset>``).
The common flags then set ``--data_dir``, ``--epochs`` (5 passes),
``--eval_per_samples`` (one evaluation every 2,560 training samples: the learning checks'),
``--eval_epoch`` (an evaluation at every pass end, so the final model is selectable) and
``--embeddings=`` (no GloVe here); a model that trains on ranking triples gets as many triples
as the others get pairs (:func:`equal_pairs_args`). Every run selects its best checkpoint on
the dev split and reports it on the test split (the trainer's own rule). These flags do not
make the budgets equal (a model's recipe sets its batch size, BERT+MatchLSTM has no word
embeddings but a pretrained encoder): :func:`budget_report` reads what each run had from its
``train.log`` (:func:`re2_lab.budget.read_budget`) and states every difference.

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

from re2_lab.budget import read_budget
from re2_lab.doc_tables import INHERITED_RSS
from re2_lab.sweep import Cell, pyplot, summarize_sweep
from re2_lab.throughput import read_jsonl
from re2_tf.benchmarking import inherited_memory
from re2_tf.models.spec import model_names

__all__ = [
    "TASKS",
    "TRIPLE_EPOCHS_CAP",
    "Task",
    "budget_report",
    "budgets",
    "cells",
    "common_args",
    "equal_pairs_args",
    "measure",
    "training_pairs",
    "model_names",
    "report",
]

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


def cells(task, models=None, *, data_dir=None, epochs=5):
    """One :class:`Cell` per model (setting ``model``; ``models`` default: every registered
    model, :func:`~re2_tf.models.spec.model_names`), its base the model's flagfile for
    ``task`` or ``--model=<m> --dataset=<dataset>``; with ``data_dir``, its ``after`` the
    flags :func:`equal_pairs_args` gives it for ``epochs`` passes.

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
        cell = Cell((("model", model),), base=base)
        if data_dir is not None:
            cell = Cell(cell.settings, base, tuple(equal_pairs_args(cell, data_dir, epochs=epochs)))
        out.append(cell)
    return out


def common_args(data_dir, *, epochs=5, eval_per_samples=2560):
    """The flags every model's run shares (module docstring)."""
    return [
        f"--data_dir={data_dir}",
        f"--epochs={epochs}",
        f"--eval_per_samples={eval_per_samples}",
        "--eval_epoch",
        "--embeddings=",
    ]


#: ``--epochs`` of a run that trains on ranking triples: a cap above any pass count the
#: budget needs (``--max_samples`` ends the run).
TRIPLE_EPOCHS_CAP = 1000


def training_pairs(data_dir):
    """Non-empty lines of ``<data_dir>/train.txt``: the training pairs, one a line.

    Raises:
        FileNotFoundError: no ``train.txt``.
    """
    with open(Path(data_dir) / "train.txt", encoding="utf-8") as lines:
        return sum(1 for line in lines if line.strip())


def equal_pairs_args(cell, data_dir, *, epochs=5):
    """Flags after the common ones that give a run on ranking triples the pairs' budget.

    A model whose task loss trains on (question, positive, negative) triples
    (:func:`re2_tf.training.losses.resolve_task_loss`) would otherwise make ``epochs`` passes
    over its triples, a set of another size than the task's pairs. It gets
    ``--max_samples=<epochs x training pairs>`` (as many triples seen as the other models see
    pairs, to within one batch) and ``--epochs`` :data:`TRIPLE_EPOCHS_CAP`; other models get
    none.

    Args:
        cell: a :class:`~re2_lab.sweep.Cell` of :func:`cells`.
        data_dir: the task's prepared data directory.
        epochs: the common passes over the pairs.
    """
    from re2_tf.models import get_spec
    from re2_tf.train_flags import config_from_args
    from re2_tf.training.losses import resolve_task_loss

    config = config_from_args([*cell.base, *cell.args(), f"--data_dir={data_dir}"])
    if not resolve_task_loss(get_spec(config.model), config.hparams).triples:
        return []
    return [
        f"--max_samples={epochs * training_pairs(data_dir)}",
        f"--epochs={TRIPLE_EPOCHS_CAP}",
    ]


def measure(models, records, snli_dir, *, threads=2, batches=100, updates=10, log=print):
    """Measure what :func:`report` needs beside accuracy, for each model not yet measured
    (one JSON line per model appended to ``<records>/serving.jsonl`` as it finishes; training
    speed in ``<records>/training/``, :func:`re2_lab.throughput.measure`).

    The served model is the compared one: the model's SNLI learning-check settings
    (``configs/<model>/snli_learning_check.flags``) with random weights over a 30,000-word
    synthetic vocabulary (Table 5's; speed does not depend on the weights), exported with
    re2_tf's default export and timed with the Table 5 protocol in a fresh process
    (:func:`re2_tf.benchmarking.time_export` on :func:`re2_tf.benchmarking.table5_inputs`:
    batch 8 x 20, median of 100 batches after 10 warm-up ones, ``threads`` intra-op threads,
    one inter-op), then at batch 128 for pairs/s and the serving process's peak memory.

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
    from re2_tf.train_flags import config_from_flagfile

    records = Path(records)
    records.mkdir(parents=True, exist_ok=True)
    path = records / SERVING
    done = {r["model"] for r in read_jsonl(path)}
    for model in models:
        if model in done:
            continue
        flagfile = REPO / "configs" / model / TASKS["snli_check"].flagfile
        config = config_from_flagfile(flagfile)
        with tempfile.TemporaryDirectory() as tmp:
            export, params, featurizers = benchmarking.export_benchmark_model(
                config.spec, dict(config.hparams), Path(tmp) / "export", vocab_size=30000
            )
            inputs = benchmarking.table5_inputs(featurizers, 8, 20)
            row = benchmarking.time_table5(
                export, **inputs.request(), threads=threads, batches=batches, throughput_batch=128
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


def _serving_memory(s):
    """The serving process's own peak (``peak_hwm_mib``: serving batch 8 then 128), or an
    older record's ``getrusage`` figure (``peak_rss_mib``, noted under the table)."""
    for key in ("peak_hwm_mib", "peak_rss_mib"):
        if s and s.get(key):
            return f"{s[key]:,.0f}"
    return "—"


def _training(t):
    """Training pairs/s, with the training process's own peak MiB where recorded."""
    if not t:
        return "—"
    return f"{t['pairs_per_s']:.1f}" + (f" ({t['peak_mib']:,.0f})" if t.get("peak_mib") else "")


def report(records, models=None):
    """The comparison's Markdown table and its summary, from the records alone.

    Returns:
        ``(markdown, summary)``: one row per model -- the test metrics of every task
        (mean ± sample std over the recorded seeds, their number in brackets; ``—`` for a task
        with no record yet), parameters without the
        word embedding, median ms per batch of 8 x 20, served pairs/s at batch 128, peak
        serving memory (MiB: the serving process's own ``VmHWM``; an older record's
        ``getrusage`` figure is noted under the table), training pairs/s (with the training
        process's own peak MiB in brackets where recorded); ``summary = {"tasks": {task:
        sweep summary}, "serving": [...], "training": [...]}``. A figure not recorded is ``—``.
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
        "SavedModel (XLA) latency ms (8×20, median)",
        "served pairs/s @ 128",
        "peak serving MiB",
        "training pairs/s"
        + (" (peak MiB)" if any(t.get("peak_mib") for t in training.values()) else ""),
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
            _serving_memory(s),
            _training(t),
        ]
        lines.append("| " + " | ".join(row) + " |")
    # each kind of record with its own host and date: the two are measured apart
    measured = []
    for kind, rows in (("latency and serving", serving), ("training speed", training)):
        machines = sorted({throughput.describe_machine(r) for r in rows.values() if r.get("cpu")})
        if machines:
            measured.append(f"{kind} on {'; '.join(machines)}")
    if measured:
        lines += ["", f"Measured: {', '.join(measured)}."]
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
    inherited = [m for m, s in serving.items() if inherited_memory([s])]
    if inherited:
        lines[-1] += (
            f" Peak serving MiB of {', '.join(f'`{m}`' for m in inherited)}: recorded before "
            f"the per-process measurement, {INHERITED_RSS}."
        )
    return "\n".join(lines), {
        "tasks": tasks,
        "budgets": {
            task: {m: {str(k): b.to_json() for k, b in r.items()} for m, r in by_model.items()}
            for task, by_model in budgets(records, models).items()
        },
        "serving": list(serving.values()),
        "training": list(training.values()),
    }


def budgets(records, models=None):
    """``{task: {model: {seed: Budget}}}``: :func:`re2_lab.budget.read_budget` of every
    recorded run (``<records>/<task>/model-<m>/seed<k>/`` with a ``results.json`` and a
    ``train.log``, ``k`` up to the task's seeds); a model without runs of a task is left out."""
    records = Path(records)
    out = {}
    for task, spec in TASKS.items():
        out[task] = {}
        for model in model_names() if models is None else models:
            found = {}
            for seed in range(1, spec.seeds + 1):
                run = records / task / f"model-{model}" / f"seed{seed}"
                if (run / "results.json").exists() and (run / "train.log").exists():
                    found[seed] = read_budget(run)
            if found:
                out[task][model] = found
    return out


def _task_name(task):
    return TASKS[task].title.replace(" acc", "").replace(" MAP / MRR", "")


def _budget_cell(budget):
    seen = "—" if budget.seen is None else f"{budget.seen:,} {budget.unit}"
    updates = "—" if budget.updates is None else f"{budget.updates:,}"
    final = "" if budget.final_evaluated else " (final model not evaluated)"
    return f"{updates} · {seen} · {budget.evaluations}{final}"


def _comparable(budget):
    """A budget's figures without its model name and evaluated updates' list."""
    return tuple(v for k, v in budget.to_json().items() if k not in ("model", "evaluated_updates"))


def _reference(values):
    """The value most runs share (the first such in order on a tie)."""
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return max(counts, key=lambda v: counts[v])


def _per_update(budget):
    return budget.seen / budget.updates if budget.seen and budget.updates else None


def _differences(budget, task_budgets):
    """Phrases for each figure of ``budget`` that is not the task's reference (the value most
    of ``task_budgets`` have)."""
    ref = {
        key: _reference([getattr(b, key) for b in task_budgets])
        for key in ("unit", "units", "passes", "seen", "updates", "evaluations")
    }
    ref_final = _reference([b.final_evaluated for b in task_budgets])
    ref_pass_ends = _reference([b.pass_ends_evaluated for b in task_budgets])
    ref_per_update = _reference([_per_update(b) for b in task_budgets])
    out = []
    if (budget.unit, budget.units) != (ref["unit"], ref["units"]):
        stats = budget.triple_stats
        of = (
            f" (from {stats['questions_used']:,} of the {stats['questions']:,} questions: those "
            "with both a positive and a negative answer)"
            if "questions_used" in stats and "questions" in stats
            else ""
        )
        out.append(
            f"trains on {budget.units:,} {budget.unit}{of} instead of {ref['units']:,} "
            f"{ref['unit']}"
        )
    if budget.passes != ref["passes"]:
        out.append(f"{budget.passes} passes against {ref['passes']}")
    if budget.seen != ref["seen"]:
        out.append(f"{budget.seen:,} {budget.unit} seen against {ref['seen']:,} {ref['unit']}")
    if budget.updates != ref["updates"]:
        per, ref_per = _per_update(budget), ref_per_update
        out.append(
            f"{budget.updates:,} updates against {ref['updates']:,}"
            + (
                f" ({per:.1f} {budget.unit} per update against {ref_per:.1f})"
                if per and ref_per
                else ""
            )
        )
    if budget.evaluations != ref["evaluations"]:
        out.append(f"{budget.evaluations} dev evaluations against {ref['evaluations']}")
    if budget.pass_ends_evaluated != ref_pass_ends:
        out.append(
            "an evaluation at every pass end"
            if budget.pass_ends_evaluated
            else "no evaluation at the pass ends"
        )
    if budget.final_evaluated != ref_final:
        out.append(
            f"its final model (update {budget.updates:,}) evaluated"
            if budget.final_evaluated
            else f"its final model (update {budget.updates:,}) never evaluated, so never selectable"
        )
    return out


def _flag(run_dir, name):
    """The value of ``--<name>=`` in ``<run_dir>/flags.txt`` (``None``: not there)."""
    path = Path(run_dir) / "flags.txt"
    if not path.exists():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"--{name}="):
            return line.split("=", 1)[1]
    return None


def budget_report(records, models=None):
    """The comparison's training budgets, read from each run's ``train.log``
    (:func:`re2_lab.budget.read_budget`), as Markdown: a table (one row per model, one cell per
    task: updates · training pairs or triples seen · dev evaluations, and whether the final
    model was evaluated; one entry per seed where the seeds differ), then a note that names,
    per task, every model whose figures differ from the ones most of the task's models have,
    and what each model's word embeddings were.

    Returns:
        ``(markdown, budgets)``: ``budgets`` as :func:`budgets`.
    """
    records = Path(records)
    models = model_names() if models is None else models
    found = budgets(records, models)
    header = ["model"] + [_task_name(t) for t in TASKS]
    lines = [
        "Training budget per run, read from its `train.log`: updates (optimizer steps) · "
        "training pairs (or ranking triples) the updates were computed on · dev evaluations.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for model in models:
        row = [f"`{model}`"]
        for task in TASKS:
            runs = found[task].get(model, {})
            cells = {_budget_cell(b) for b in runs.values()}
            if not runs:
                row.append("—")
            elif len(cells) == 1:
                row.append(cells.pop())
            else:
                row.append("; ".join(f"seed {k}: {_budget_cell(b)}" for k, b in runs.items()))
        lines.append("| " + " | ".join(row) + " |")
    every = [b for by_model in found.values() for runs in by_model.values() for b in runs.values()]
    notes = []
    passes = {b.passes for b in every}
    if len(passes) == 1:
        notes.append(f"Every run made {passes.pop()} whole passes over its training set.")
    for task, by_model in found.items():
        task_budgets = [b for runs in by_model.values() for b in runs.values()]
        differing = []
        for model, runs in by_model.items():
            phrases = []
            for budget in runs.values():
                phrases += [p for p in _differences(budget, task_budgets) if p not in phrases]
            if phrases:
                differing.append(f"`{model}`: {'; '.join(phrases)}")
        if differing:
            notes.append(f"{_task_name(task)}, not equal: {'. '.join(differing)}.")
        elif task_budgets:
            notes.append(f"{_task_name(task)}: every model had the same budget.")
    embeddings = {}
    for task, by_model in found.items():
        for model, runs in by_model.items():
            for seed, budget in runs.items():
                kind = budget.word_embeddings
                if kind == "none":
                    init = _flag(records / task / f"model-{model}" / f"seed{seed}", "bert_init")
                    kind = f"none:{init}"
                embeddings.setdefault(model, set()).add(kind)
    random = [m for m in models if embeddings.get(m) == {"random"}]
    words = []
    if random:
        words.append(
            f"random and trainable for {', '.join(f'`{m}`' for m in random)} (every run's "
            "log says so)"
        )
    for model in models:
        kinds = embeddings.get(model)
        if not kinds or kinds == {"random"}:
            continue
        if kinds <= {"none:pretrained", "none:None"}:
            how = (
                "`--bert_init=pretrained` in every run's flags.txt"
                if kinds == {"none:pretrained"}
                else "`--bert_init=pretrained` in its flags.txt, or no `--bert_init`: a run "
                "older than the flag, when the encoder always loaded the pretrained checkpoint"
            )
            words.append(
                f"`{model}` has none: it reads word pieces, whose embeddings are part of its "
                f"encoder, initialised from pretrained BERT weights ({how})"
            )
        else:
            words.append(f"`{model}`: {', '.join(sorted(kinds))}")
    if words:
        notes.append(f"Word embeddings: {'; '.join(words)}.")
    return "\n".join(lines + [""] + ["- " + n for n in notes]), found


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
    ax.set_xlabel("SavedModel (XLA) latency, ms per batch of 8 x 20 (median, log scale)")
    ax.set_ylabel(f"{task} {metric} (mean ± std over seeds)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
