"""Tables in the README and ``docs/`` generated from the committed run records.

A generated table sits between two HTML comments that Markdown does not show; the first names
what generates it::

    <!-- generated: compare docs/runs/compare -->
    | model | SNLI learning check acc (seeds) | ... |
    <!-- end generated -->

Kinds (paths relative to the repository root):

- ``compare <records>``: the five-model comparison's table,
  :func:`re2_lab.compare.report` over ``<records>`` (``docs/runs/compare``);
- ``compare-budget <records>``: the comparison's training budgets read from each run's
  ``train.log`` and every difference between the models, :func:`re2_lab.compare.budget_report`;
- ``growth <record.jsonl>``: a ``python -m re2_lab.cli.growth`` record (:mod:`re2_lab.growth`):
  the fitted cost model per model, :func:`re2_lab.growth.markdown`;
- ``tests <ci log>``: the steps of one recorded ``.ci/run`` (``docs/runs/test-tiers/ci-run.txt``)
  with their pytest counts and times, its commit and machine (:func:`test_tiers`);
- ``sweep <flagfile> [<split>/<metric> ...]``: a sweep config's summary
  (``configs/re2/table7.flags``): its ``--grid``, ``--seeds`` and ``--records`` read from the
  flagfile, the table of :func:`re2_lab.sweep.summarize_sweep` over the records alone
  (with metrics named: only those columns, in that order; default every recorded metric);
- ``bench <record.json>``: one ``re2-bench --json_out`` record
  (:func:`re2_tf.benchmarking.benchmark_record`) as ``re2-bench`` prints it (its component
  timings included), then the CPU, the date and the command it was measured with;
- ``table5 <record.json> ...``: several such records of one model's variants (RE2's 1, 2 and
  3 blocks) side by side, one line per record (export format and options), median ms per
  variant and the last variant's mean ± std, under the paper's own row;
- ``roofline <record.json> [export]``: a ``python -m re2_lab.cli.roofline --json_out`` record
  (:func:`re2_lab.roofline.report`) as :func:`re2_lab.roofline.markdown` prints it (with
  ``export``: that export's serving rows only), then its command;
- ``runtimes <record.json> [table [brief]|order|choices|standing]``: a ``python -m
  re2_lab.cli.runtimes --json_out`` record (:func:`re2_lab.runtimes.report`) as
  :func:`re2_lab.runtimes.markdown` prints it, then its command (with ``table``:
  :func:`re2_lab.runtimes.table`, the default path first beside every path and the floor, then
  the command; ``table brief``: the same with the date of each variant's rows in place of every
  ``--redo``'s reason, for the README; with ``order``:
  :func:`re2_lab.runtimes.order`'s list of each model's paths, fastest first; with
  ``choices``: :func:`re2_lab.runtimes.choices`, each model's serving choice; with
  ``standing``: :func:`re2_lab.runtimes.standing`, where the default stands);
- ``agreement <record.json>``: ``docs/runs/serving-choice/agreement.py``'s record, each
  runtime's labels on a trained run's dev pairs against the SavedModel's;
- ``core-install <record.json>``: ``docs/runs/serving-choice/core_install.py``'s record, what
  ``re2-export`` with no flags chose on a core install (no OpenVINO, no ONNX Runtime) per
  trained run and timed batch: the default path beside every candidate's median, the default
  over the XLA SavedModel, and the default's labels against the SavedModel's;
- ``export-cost <record.json>``: ``docs/runs/serving-choice/export_cost.py``'s record,
  ``re2-export``'s wall seconds on a core install at two revisions, round by round: the
  timing processes each export's serving choice started and what it chose per timed batch;
- ``figure-rule <record.json>``: ``docs/runs/serving-choice/figure_rule.py``'s record,
  ``re2-export`` at two revisions in turn, several times each: per export its wall seconds,
  timing processes, the CPU's peaks just before and the path chosen per timed batch, and per
  revision how many different choices its exports made;
- ``bf16_parts <record.json>``: ``docs/runs/serving-choice/bf16_parts.py``'s record,
  BERT+MatchLSTM's labels on a trained run's dev pairs per precision of its OpenVINO IR's
  two parts (``re2_tf.serving.runtimes.OPENVINO_PARTS``) and of the whole IR;
- ``bf16_softmax <record.json>``: ``docs/runs/roofline/bf16_rewrite_softmax.py``'s record,
  TensorFlow's bfloat16 rewrite against float32 per variant, by two commits' exports;
- ``profiles <record.json>``: ``docs/runs/roofline/runtime_profiles.py``'s record, where
  each default's time goes in its own runtime's profiler: per variant and shape, the matrix
  products' ms and GFLOP/s against the best-precision FLOP floor, the other nodes' ms and
  their largest kinds, and the nodes run per call;
- ``probe-deaths <record.json>``: ``docs/runs/runtimes/ov_probe_deaths.py``'s record, per
  network, batch, precision and whether the probe of changing lengths ran first: how many
  of its fresh processes died (and how) of how many;
- ``phases <record.json>``: ``docs/runs/runtimes/phases.py``'s record, one network timed in
  many fresh processes per path: per path, its processes' medians (least, median, most),
  how many processes and batches ran at 1.5 times the path's least median or more, and the
  steal time the kernel counted;
- ``ab <record.json>``: an A/B record of ``docs/runs/`` (paths timed alternately in fresh
  processes): ``docs/runs/training-profile/bilstm_ab.py``'s (``models``: per model,
  ``before``/``after`` lists of measurements) as pairs/s and profile time per side, or
  ``docs/runs/roofline/folded_ab.py``'s (``variants``: per variant, ``{"<path>@<batch>":
  [median ms per round]}``) as ms per path and batch; each the median over the rounds with
  the rounds' range, then the CPU and the command;
- ``products <record.json>``: ``docs/runs/roofline/product_kernels.py``'s record, each matrix
  product of a network timed alone in each runtime: per batch and product (``batch x m x k
  x n``), each runtime's median ms over the rounds and the GFLOP/s that gives, then all the
  products' sum per round (median and range); then, where the record has them, the whole
  network's paths, agreement and profiles as an ``ab`` record's; the CPU and the command;
- ``onednn <record.json>``: ``docs/runs/roofline/onednn_primitives.py``'s record, the oneDNN
  primitives TensorFlow ran per call for one export at two revisions: per variant, batch and
  (kind, implementation), how many ran per call and their ms per call before and after, then
  every primitive's ms per call; the CPU and the command.

``python -m re2_lab.cli.summarize --update_docs README.md docs/*.md`` rewrites every block from
the records, and
``tests/test_recorded_runs.py`` checks that each block in the README and ``docs/`` is what the
records give today (so a table cannot go stale after a new record).
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

__all__ = ["BLOCK", "blocks", "generate", "sweep_config", "update"]

REPO = Path(__file__).resolve().parents[1]
#: One generated block: ``spec`` is what follows ``generated:``, ``body`` the table.
BLOCK = re.compile(
    r"<!-- generated: (?P<spec>[^\n]*?) -->\n(?P<body>.*?)<!-- end generated -->", re.S
)


def sweep_config(flagfile, root=REPO):
    """``(grid, seeds, records)`` of a sweep flagfile (``--grid=``, ``--seeds=``,
    ``--records=`` lines; ``#`` lines are comments).

    Raises:
        ValueError: naming the flagfile, when it lacks ``--grid`` or ``--records``.
    """
    values = {}
    for line in (Path(root) / flagfile).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("--") and "=" in line:
            name, value = line[2:].split("=", 1)
            values[name] = value
    missing = [n for n in ("grid", "records") if n not in values]
    if missing:
        raise ValueError(f"{flagfile}: no --{' or --'.join(missing)} line")
    return values["grid"], int(values.get("seeds", 1)), values["records"]


def generate(spec, root=REPO):
    """The Markdown table a block's ``spec`` names (module docstring), from records alone.

    Raises:
        ValueError: an unknown kind or a malformed spec.
    """
    kind, *args = spec.split()
    root = Path(root)
    if kind == "compare" and len(args) == 1:
        from re2_lab import compare

        table, _ = compare.report(root / args[0])
        return table
    if kind == "compare-budget" and len(args) == 1:
        from re2_lab import compare

        table, _ = compare.budget_report(root / args[0])
        return table
    if kind == "sweep" and args and all("/" in a for a in args[1:]):
        from re2_lab import sweep

        grid, seeds, records = sweep_config(args[0], root)
        table, _ = sweep.summarize_sweep(
            sweep.parse_grid(grid),
            range(1, seeds + 1),
            None,
            records=root / records,
            columns=args[1:] or None,
        )
        return table
    if kind == "bench" and len(args) == 1:
        return _bench(_read(root / args[0]))
    if kind == "table5" and args:
        return _table5([_read(root / a) for a in args])
    if kind == "roofline" and len(args) in (1, 2):
        from re2_lab import roofline

        record = _read(root / args[0])
        table = roofline.markdown(record, *args[1:])
        return table + f"\n\nCommand: `{record['command']}`."
    if kind == "runtimes" and args[1:] in (
        [],
        ["table"],
        ["table", "brief"],
        ["order"],
        ["choices"],
        ["standing"],
    ):
        from re2_lab import runtimes

        record = _read(root / args[0])
        if args[1:] == ["standing"]:
            return runtimes.standing(record)
        if args[1:] == ["order"]:
            return runtimes.order(record)
        if args[1:] == ["choices"]:
            return runtimes.choices(record)
        if args[1:2] == ["table"]:
            table = runtimes.table(record, history=args[2:] != ["brief"])
        else:
            table = runtimes.markdown(record)
        return table + f"\n\nCommand: `{record['command']}`."
    if kind == "ab" and len(args) == 1:
        record = _read(root / args[0])
        return _training_ab(record) if "models" in record else _paths_ab(record)
    if kind == "products" and len(args) == 1:
        return _products(_read(root / args[0]))
    if kind == "onednn" and len(args) == 1:
        return _onednn(_read(root / args[0]))
    if kind == "agreement" and len(args) == 1:
        return _agreement(_read(root / args[0]))
    if kind == "core-install" and len(args) == 1:
        return _core_install(_read(root / args[0]))
    if kind == "export-cost" and len(args) == 1:
        return _export_cost(_read(root / args[0]))
    if kind == "figure-rule" and len(args) == 1:
        return _figure_rule(_read(root / args[0]))
    if kind == "bf16_parts" and len(args) == 1:
        return _bf16_parts(_read(root / args[0]))
    if kind == "bf16_softmax" and len(args) == 1:
        return _bf16_softmax(_read(root / args[0]))
    if kind == "profiles" and len(args) == 1:
        return _profiles(_read(root / args[0]))
    if kind == "phases" and len(args) == 1:
        return _phases(_read(root / args[0]))
    if kind == "probe-deaths" and len(args) == 1:
        return _probe_deaths(_read(root / args[0]))
    if kind == "growth" and len(args) == 1:
        from re2_lab import growth

        return growth.markdown(growth.read_points(root / args[0]))
    if kind == "tests" and len(args) == 1:
        return test_tiers((root / args[0]).read_text(encoding="utf-8"))
    raise ValueError(
        f"unknown generated table {spec!r}: expected 'compare <records>', "
        "'compare-budget <records>', 'sweep <flagfile> [<split>/<metric> ...]', "
        "'bench <json>', 'table5 <json> ...', 'roofline <json> [export]', "
        "'runtimes <json> [table|order|choices|standing]', 'agreement <json>', "
        "'core-install <json>', 'export-cost <json>', 'figure-rule <json>', "
        "'bf16_parts <json>', 'bf16_softmax <json>', "
        "'profiles <json>', 'phases <json>', 'probe-deaths <json>', 'ab <json>', "
        "'products <json>', 'onednn <json>', "
        "'growth <jsonl>' or 'tests <ci log>'"
    )


def blocks(text):
    """``[(spec, body)]`` of every generated block in ``text``."""
    return [(m["spec"], m["body"]) for m in BLOCK.finditer(text)]


def update(path, root=REPO):
    """Rewrite every generated block of the Markdown file ``path`` from the records.

    Returns:
        int, how many blocks changed.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    changed = 0

    def replace(match):
        nonlocal changed
        body = generate(match["spec"], root) + "\n"
        changed += body != match["body"]
        return f"<!-- generated: {match['spec']} -->\n{body}<!-- end generated -->"

    new = BLOCK.sub(replace, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return changed


def _read(path):
    import json

    return json.loads(Path(path).read_text(encoding="utf-8"))


def _machine(record):
    from re2_lab.throughput import describe_machine

    return f"{describe_machine(record)}: `{record['command']}`"


#: Under a table of a record whose memory is ``getrusage``'s (before the timing worker read its
#: own ``VmHWM``: :func:`re2_tf.benchmarking.inherited_memory`).
INHERITED_RSS = (
    "`getrusage`'s `ru_maxrss`, which on Linux a process inherits from the one that started "
    "it: at least that parent's peak, not the serving process's own"
)
INHERITED_MEMORY = (
    f"Memory: this record predates the per-process measurement; its peak RSS is {INHERITED_RSS}, "
    "and its growth over loaded (+0) is no measure of what the calls needed."
)


def _bench(record):
    from re2_tf.benchmarking import inherited_memory, markdown_table

    settings = record["settings"]
    table = markdown_table(
        record["rows"], settings["batch"], settings["length"], settings["throughput_batch"]
    )
    parts = [table]
    parts += [f"{title}:\n\n{text}" for title, text in record.get("components", {}).items()]
    notes = _timing_notes(record)
    if inherited_memory(record["rows"]):
        notes += " " + INHERITED_MEMORY
    return "\n\n".join(parts) + f"\n\nMeasured on {_machine(record)}." + notes


def _timing_notes(record):
    """What the worker recorded about the timed batches (absent from older records): the
    length draw and the 1-minute load average before and after timing, per row."""
    rows = [r for r in record["rows"] if "load_average" in r]
    if not rows:
        return ""
    spread = rows[0].get("length_spread", 0)
    length = record["settings"]["length"]
    loads = "; ".join(
        f"{r['model']}: {r['load_average'][0]:.1f} -> {r['load_average'][1]:.1f}" for r in rows
    )
    return (
        f" Every timed batch a fresh draw, each text {length} ± {spread} words. "
        f"Load average (1 min, {record.get('cpu_count', '?')} cores) before -> after timing: "
        f"{loads}."
    )


def _spread(values, fmt):
    """``"median (min-max)"`` of a round's values."""
    import statistics

    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def _training_ab(record):
    import statistics

    from re2_lab.throughput import describe_machine

    batch = record["batch_size"]
    lines = [
        "| model | side | pairs/s (rounds' range) | thread-ms in ops per update | of which in "
        "the recurrences | largest op kinds (thread-ms) |",
        "|---|---|---|---|---|---|",
    ]
    for model, sides in record["models"].items():
        for side in ("before", "after"):
            runs = sides[side]
            kinds = {}
            for run in runs:
                for kind, ms in run["kinds"].items():
                    kinds.setdefault(kind, []).append(ms)
            top = sorted(kinds, key=lambda k: -statistics.median(kinds[k]))[:3]
            lines.append(
                f"| {model} | {side} (`{record[side][:7]}`) | "
                f"{_spread([batch / r['seconds_per_update'] for r in runs], '.1f')} | "
                f"{statistics.median(r['op_ms'] for r in runs):.0f} | "
                f"{statistics.median(r['in_loops_ms'] for r in runs):.0f} | "
                + "; ".join(f"{k} {statistics.median(kinds[k]):.0f}" for k in top)
                + " |"
            )
    return (
        "\n".join(lines)
        + f"\n\n{record['rounds']} rounds, batch {batch}, {record['threads']} threads, on "
        f"{describe_machine(record)}: `{record['command']}`"
    )


def _agreement(record):
    """``docs/runs/serving-choice/agreement.py``'s record: per trained run, each runtime's share
    of the dev labels equal to the SavedModel's and its max |Δp|, then the command."""
    from re2_lab.throughput import describe_machine

    lines = [
        "| run | model | dev pairs | runtime | labels as the SavedModel's | max abs Δp |",
        "|---|---|---:|---|---:|---:|",
    ]
    for run in record["runs"]:
        for c in run["candidates"]:
            name = f"{c['backend']} {c['precision']}"
            if "error" in c:
                lines.append(f"| `{run['run']}` | {run['model']} | {run['pairs']:,} | {name} | "
                             f"{c['error']} | — |")  # fmt: skip
                continue
            lines.append(
                f"| `{run['run']}` | {run['model']} | {run['pairs']:,} | {name} | "
                f"{c['label_agreement']:.4f} | {c['max_abs_dp']:.1e} |"
            )
    again = "".join(
        f"; `{run['run']}` measured again on {run['date']}"
        for run in record["runs"]
        if "date" in run
    )
    footer = f"{describe_machine(record)}{again}. Command: `{record['command']}`."
    return "\n".join(lines + ["", footer])


def _core_install(record):
    """``docs/runs/serving-choice/core_install.py``'s record: per trained run and timed batch,
    the path ``re2-export`` chose on a core install and every candidate's median ms (the
    choice's own timings), then the CPU, each run's date, load average and ``re2-export``'s wall
    seconds with and without the measurement, and the command."""
    from re2_lab.runtimes import CHOICE_NAMES
    from re2_tf.machine import describe_machine

    # every path of the serving choice that needs no extra and some run measured, in the
    # choice's order
    measured = {(c["backend"], c["precision"]) for run in record["runs"]
                for c in run["serving_choice"]["candidates"]}  # fmt: skip
    names = [
        key for key in CHOICE_NAMES if key[0] not in ("onnxruntime", "openvino") and key in measured
    ]
    lines = [
        "| run | batch | **default** (path) | "
        + " | ".join(CHOICE_NAMES[n] for n in names)
        + " | default ÷ savedmodel (XLA) | default's labels as the SavedModel's (max abs Δp) |",
        "|---|---|---:|" + "---:|" * len(names) + "---:|---:|",
    ]
    for run in record["runs"]:
        choice = run["serving_choice"]
        rows = {(c["backend"], c["precision"]): c for c in choice["candidates"]}
        for route, (batch, length) in zip(choice["routes"], choice["shapes"]):
            key = f"{batch}x{length}"
            chosen = rows[(route["backend"], route["precision"])]
            cells = []
            for name in names:
                row = rows.get(name)
                if row is None:
                    cells.append("—")
                elif key not in row.get("median_ms", {}):
                    cells.append("fails")
                else:
                    cells.append(f"{row['median_ms'][key]:.1f}")
            ms = chosen["median_ms"][key]
            lines.append(
                f"| `{run['run']}` | {batch}×{length} | **{ms:.1f}** "
                f"({CHOICE_NAMES[(route['backend'], route['precision'])]}) | "
                + " | ".join(cells)
                + f" | {ms / rows[names[0]]['median_ms'][key]:.2f} | "
                f"{chosen['label_agreement']:.4f} ({chosen['max_abs_dp']:.1e}) |"
            )
    when = "; ".join(
        f"`{run['run']}` {run['date']} (load average {run['loadavg'][0]} → {run['loadavg'][1]}, "
        f"{run['serving_choice']['pairs']:,} dev pairs; `re2-export` "
        f"{run['export_seconds']['default']:.0f} s, with `--serving=savedmodel` "
        f"{run['export_seconds']['--serving=savedmodel']:.0f} s)"
        for run in record["runs"]
    )
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    footer = (
        f"{describe_machine(record)}; {when}. Versions: {versions}. "
        f"Command (in a core install): `{record['command']}`."
    )
    return "\n".join(lines + ["", footer])


def _routes_text(routes):
    """A serving choice's ``routes`` as its paths' names, ``" / "`` between timed batches."""
    from re2_lab.runtimes import CHOICE_NAMES

    return " / ".join(CHOICE_NAMES[(r["backend"], r["precision"])] for r in routes)


def _export_cost(record):
    """``docs/runs/serving-choice/export_cost.py``'s record: per trained run and round,
    ``re2-export``'s wall seconds at the revision before and after, the timing processes each
    export's serving choice started, their ratio, and the path each chose per timed batch;
    then the CPU, the revisions, each export's time and load average, and the command."""
    from re2_tf.machine import describe_machine

    def chosen(timed):
        return _routes_text(timed["routes"])

    lines = [
        "| run | round | before: `re2-export` s (timing processes) | after: `re2-export` s "
        "(timing processes) | after ÷ before | chosen before (per timed batch) | chosen after |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    when = []
    for name, run in record["runs"].items():
        for k, pair in enumerate(run["rounds"], 1):
            if set(pair) != {"before", "after"}:
                continue  # a round a killed run left half done
            before, after = pair["before"], pair["after"]
            lines.append(
                f"| `{name}` | {k} | {before['seconds']:.0f} ({before['processes']}) | "
                f"{after['seconds']:.0f} ({after['processes']}) | "
                f"{after['seconds'] / before['seconds']:.2f} | {chosen(before)} | "
                f"{chosen(after)} |"
            )
            run_name = f"`{name}` " if len(record["runs"]) > 1 else ""
            when += [
                f"{run_name}round {k} {label} {pair[label]['date']} (load average "
                f"{pair[label]['loadavg'][0]} → {pair[label]['loadavg'][1]})"
                for label in ("before", "after")
            ]
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    revisions = record["revisions"]
    footer = (
        f"{describe_machine(record)}; before = {revisions['before'][:7]}, after = "
        f"{revisions['after'][:7]}; {'; '.join(when)}. Versions: {versions}. "
        f"Command (in a core install): `{record['command']}`."
    )
    return "\n".join(lines + ["", footer])


def _figure_rule(record):
    """``docs/runs/serving-choice/figure_rule.py``'s record: one row per export in the order
    run (revision, UTC time, the CPU's float32 and bfloat16 peaks measured just before,
    ``re2-export``'s wall seconds, its timing processes, the TensorFlow threads and the path
    chosen per timed batch); then per revision its exports' seconds (least to most) and how
    many different choices (threads and paths) they made; then the CPU, revisions, run,
    versions and command."""
    from re2_tf.machine import describe_machine

    def chosen(export):
        threads = export["tf_threads"]
        return f"{threads[0]} + {threads[1]}: {_routes_text(export['routes'])}"

    lines = [
        "| export | revision | UTC | peaks before, GFLOP/s f32 / bf16 | `re2-export` s | "
        "timing processes | chosen (TensorFlow threads: per timed batch) |",
        "|---:|---|---|---:|---:|---:|---|",
    ]
    for k, export in enumerate(record["exports"], 1):
        peaks = export["peaks_before"]
        bf16 = f"{peaks['bfloat16'] / 1e9:,.0f}" if peaks.get("bfloat16") else "–"
        lines.append(
            f"| {k} | {export['revision']} | {export['date'][11:16]} | "
            f"{peaks['float32'] / 1e9:,.0f} / {bf16} | {export['seconds']:.0f} | "
            f"{export['processes']} | {chosen(export)} |"
        )
    summary, day = [], record["exports"][0]["date"] if record["exports"] else None
    for name in ("before", "after"):
        mine = [e for e in record["exports"] if e["revision"] == name]
        if not mine:
            continue
        seconds = sorted(e["seconds"] for e in mine)
        distinct = len({chosen(e) for e in mine})
        choices = "one choice in all" if distinct == 1 else f"{distinct} different choices"
        summary.append(
            f"{name} ({record['revisions'][name][:7]}): {len(mine)} "
            f"export{'s' if len(mine) != 1 else ''}, "
            f"{seconds[0]:.0f}–{seconds[-1]:.0f} s, {choices}"
        )
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items() if k != "python" and v)
    footer = (
        f"{'; '.join(summary)}. {describe_machine({**record, 'date': day})}; run "
        f"`{record['run']['run_dir']}` "
        f"({record['run']['model']}). Versions: {versions}. Command: `{record['command']}`."
    )
    return "\n".join(lines + ["", footer])


def _bf16_parts(record):
    """``docs/runs/serving-choice/bf16_parts.py``'s record: per precision of BERT+MatchLSTM's
    two OpenVINO parts (or of the whole IR), the share of dev labels equal to the SavedModel's,
    the max |Δp| over the pairs with finite probabilities and the count of the others, then
    the run, the machine and the command."""
    from re2_lab.throughput import describe_machine

    lines = [
        "| OpenVINO IR | BERT encoder | MatchLSTM and what follows | labels as the SavedModel's "
        "| compile | max abs Δp (finite pairs) | pairs not finite |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for row in record["rows"]:
        ir = "two parts" if row["parts"] == 2 else "whole"
        # records before the count and the repeated compiles were kept: "—", not measured
        non_finite = row.get("non_finite_pairs", "—")
        lines.append(
            f"| {ir} | {row['encoder']} | {row['match_lstm']} | {row['label_agreement']:.4f} | "
            f"{row.get('compile', '—')} | {row['max_abs_dp']:.1e} | {non_finite} |"
        )
    footer = (
        f"`{record['run']}`, {record['pairs']:,} dev pairs in batches of {record['batch']}. "
        f"{describe_machine(record)}. Command: `{record['command']}`."
    )
    return "\n".join(lines + ["", footer])


def _bf16_softmax(record):
    """``docs/runs/roofline/bf16_rewrite_softmax.py``'s record: per variant and export (the
    ``--before`` commit's, this checkout's), TensorFlow's bfloat16 rewrite against float32 on
    the pairs: label agreement, max |Δp|, rows tied for first place, the agreement on the rows
    without a tie, the share of probabilities that are bfloat16 numbers and the ``Softmax``
    nodes the rewrite changed to bfloat16; then the machine and the command."""
    from re2_lab.throughput import describe_machine

    lines = [
        "| variant | export | labels as float32's | max abs Δp | bf16 rows tied for first "
        "| labels as float32's, rows without a tie | probabilities that are bfloat16 numbers "
        "| `Softmax` nodes made bfloat16 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for variant, exports in record["variants"].items():
        for name, row in exports.items():
            untied = row["label_agreement_without_ties"]
            lines.append(
                f"| {variant} | {name} | {row['label_agreement']:.3f} | "
                f"{row['max_abs_dp']:.1e} | {row['bf16_rows_with_a_tie_for_first']} of "
                f"{row['pairs']} | {'—' if untied is None else f'{untied:.3f}'} | "
                f"{row['share_of_bf16_probabilities_that_are_bfloat16_numbers']:.0%} | "
                f"{row['softmax_nodes_changed_to_bfloat16']} |"
            )
    footer = f"{describe_machine(record)}. Command: `{record['command']}`."
    return "\n".join(lines + ["", footer])


def _profiles(record, kinds=3):
    """``docs/runs/roofline/runtime_profiles.py``'s record: per variant and shape, the profiled
    call's wall ms, its nodes' summed ms, the matrix products' ms with their GFLOP/s (the
    call's FLOPs over the products' time) and their ratio to the best-precision FLOP floor,
    the other nodes' ms with their ``kinds`` largest node types, and the nodes per call; where
    the record has loops (a SavedModel's ``looped``), the loop's runs per call, the ops that
    ran in it and their µs per run, beside the dependency floor's µs per step."""
    from re2_lab.roofline import PRODUCT_KINDS
    from re2_lab.throughput import describe_machine

    loops = any(
        "looped" in p
        for e in record["variants"].values()
        for p in e.values()
        if isinstance(p, dict)
    )
    lines = [
        "| variant | batch | runtime | wall ms | nodes ms | products ms (GFLOP/s) "
        "| products ÷ FLOP floor | other ms: largest | nodes per call |"
        + (" loop runs × ops: µs per run (floor's) |" if loops else ""),
        "|---|---|---|---:|---:|---:|---:|---|---:|" + ("---|" if loops else ""),
    ]
    for variant, entry in record["variants"].items():
        for key, p in entry.items():
            if not isinstance(p, dict):
                continue
            floor = min(p["floors"]["flop_floor_ms"].values())
            flops = p["floors"]["flops"]
            others = [
                (kind, ms)
                for kind, ms in p["kinds_ms"].items()
                if kind not in ("Loop", "If", "Scan", "TensorIterator", "while")
                and kind not in PRODUCT_KINDS
            ][:kinds]
            largest = ", ".join(f"{kind} {ms:.2f}" for kind, ms in others)
            runtime = p.get("runtime") or f"{entry['backend']} {p['effective_precision']}"
            line = (
                f"| {variant} | {key.replace('x', '×')} | {runtime} "
                f"| {p['wall_ms_median']:.2f} | {p['node_ms']:.2f} | "
                f"{p['product_ms']:.2f} ({flops / p['product_ms'] / 1e6:.0f}) | "
                f"{p['product_ms'] / floor:.2f} | {p['other_ms']:.2f}: {largest} | "
                f"{p['nodes_per_call']:,.0f} |"
            )
            if loops:
                loop, steps = p.get("looped"), p["floors"]["sequential_steps"]
                if loop and loop["loop_runs"]:
                    per_step = p["floors"]["dependency_floor_ms"] / steps * 1e3
                    line += (
                        f" {loop['loop_runs']:.0f} × {loop['ops']}"
                        f": {loop['ms_per_loop_run'] * 1e3:.0f} ({per_step:.1f}) |"
                    )
                else:
                    line += " — |"
            lines.append(line)
    return "\n".join(lines + ["", f"{describe_machine(record)}. Command: `{record['command']}`."])


def _probe_deaths(record):
    """``docs/runs/runtimes/ov_probe_deaths.py``'s record: per network, batch, precision and
    probe, the processes that died of the processes run, with how they ended."""
    from re2_lab.throughput import describe_machine

    groups = {}
    for run in record["runs"]:
        key = (run["variant"], run["batch"], run["precision"], run.get("probe", True))
        groups.setdefault(key, []).append(run["ended"])
    lines = [
        "| network | batch | precision | probe first | died | how |",
        "|---|---:|---|---|---:|---|",
    ]
    for (variant, batch, precision, probe), ended in groups.items():
        died = [e for e in ended if e != "ran"]
        # the worker's reason in brackets ("killed by SIGSEGV"), else the whole failure
        reasons = {(re.search(r"\(([^()]*)\):?$", e) or [e, e])[1] for e in died}
        how = "; ".join(sorted(reasons)) or "—"
        lines.append(
            f"| {variant} | {batch} | {precision} | {'yes' if probe else 'no'} "
            f"| {len(died)} of {len(ended)} | {how} |"
        )
    footer = f"{describe_machine(record)}. Command: `{record['command']}`."
    return "\n".join(lines + ["", footer])


#: A batch or process this many times its path's least process median counts as slowed.
SLOWED = 1.5


def _phases(record):
    """``docs/runs/runtimes/phases.py``'s record: per path, over its fresh processes, the
    least / median / most process median (ms), the processes and timed batches at
    :data:`SLOWED` times the least process median or more, and the steal seconds counted."""
    from re2_lab.throughput import describe_machine

    lines = [
        "| path | processes | median ms: least / median / most | slowed processes "
        "| slowed batches | steal s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for path in record["paths"]:
        runs = [p for p in record["processes"] if p["path"] == path]
        medians = sorted(p["median_ms"] for p in runs)
        least = medians[0]
        batches = [ms for p in runs for ms in p["batch_ms"]]
        slowed = sum(p["median_ms"] >= SLOWED * least for p in runs)
        slow_batches = sum(ms >= SLOWED * least for ms in batches)
        steal = sum(p["steal_ticks"] for p in runs) / record["clock_ticks_per_s"]
        lines.append(
            f"| {path} | {len(runs)} | {least:.0f} / {statistics.median(medians):.0f} / "
            f"{medians[-1]:.0f} | {slowed} | {slow_batches} of {len(batches)} | {steal:.2f} |"
        )
    batch, length = record["shape"]
    return "\n".join(
        lines
        + [
            "",
            f"{record['variant']}, {batch}×{length}, {record['batches']} timed batches per "
            f"process, {record['cycles']} cycles of the paths in turn; "
            f"slowed: at least {SLOWED}× the path's least process median. "
            f"{describe_machine(record)}. Command: `{record['command']}`.",
        ]
    )


def _paths_ab(record):
    from re2_lab.throughput import describe_machine

    return (
        "\n".join(_paths_lines(record))
        + f"\n\n{record['rounds']} rounds, {record['threads']} threads, on "
        f"{describe_machine(record)}: `{record['command']}`"
    )


def _paths_lines(record):
    """A paths A/B's table (ms per path and batch, median of the rounds and their range), then
    its agreement and profiles where it has them."""
    lines = []
    for variant, medians in record["variants"].items():
        paths = list(dict.fromkeys(key.rsplit("@", 1)[0] for key in medians))
        batches = list(dict.fromkeys(key.rsplit("@", 1)[1] for key in medians))
        if not lines:
            lines += [
                "| variant | path | "
                + " | ".join(f"ms @ {b} x 20 (rounds' range)" for b in batches)
                + " |",
                "|---|---|" + "---|" * len(batches),
            ]
        for path in paths:
            cells = [
                _spread(medians[f"{path}@{b}"], ".2f") if f"{path}@{b}" in medians else "—"
                for b in batches
            ]
            lines.append(f"| {variant} | {path} | " + " | ".join(cells) + " |")
    return lines + _agreement_and_profiles(record)


def _products(record):
    from re2_lab.throughput import describe_machine

    runtimes = list(next(iter(record["batches"].values()))["products"][0]["ms"])
    lines = [
        "| batch | product (batch × m × k × n) | GFLOP | "
        + " | ".join(f"{name} ms (GFLOP/s)" for name in runtimes)
        + " |",
        "|---|---|---:|" + "---:|" * len(runtimes),
    ]
    for batch, entry in record["batches"].items():
        sums = {name: [0.0] * record["rounds"] for name in runtimes}
        for product in entry["products"]:
            b, m, k, n = product["shape"]
            gflop = 2 * b * m * k * n / 1e9
            cells = []
            for name in runtimes:
                times = product["ms"][name]
                for i, ms in enumerate(times):
                    sums[name][i] += ms
                ms = statistics.median(times)
                cells.append(f"{ms:.3f} ({gflop / ms * 1e3:.0f})" if ms > 0 else f"{ms:.3f} (—)")
            lines.append(
                f"| {batch} × 20 | {b} × {m} × {k} × {n} | {gflop:.4f} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append(
            f"| {batch} × 20 | all {len(entry['products'])}, summed per round | "
            f"{sum(2 * math.prod(p['shape']) for p in entry['products']) / 1e9:.4f} | "
            + " | ".join(_spread(sums[name], ".2f") for name in runtimes)
            + " |"
        )
    if record.get("variants"):
        lines += ["", *_paths_lines(record)]
    return (
        "\n".join(lines) + f"\n\n{record['rounds']} rounds, {record['threads']} threads, on "
        f"{describe_machine(record)}: `{record['command']}`"
    )


def _onednn(record):
    from re2_lab.throughput import describe_machine

    lines = [
        "| variant | batch | primitive: implementation | before: per call (ms) "
        "| after: per call (ms) |",
        "|---|---|---|---:|---:|",
    ]

    def cell(entry):
        return f"{entry['per_call']:g} ({entry['ms']:.3f})" if entry else "—"

    for variant, sides in record["variants"].items():
        batches = sorted({int(key.split("@")[1]) for key in sides})
        for batch in batches:
            before, after = sides[f"before@{batch}"], sides[f"after@{batch}"]
            for key in list(before) + [k for k in after if k not in before]:
                lines.append(
                    f"| {variant} | {batch} × 20 | {key} | {cell(before.get(key))} "
                    f"| {cell(after.get(key))} |"
                )
            lines.append(
                f"| {variant} | {batch} × 20 | **all** | "
                f"{sum(e['per_call'] for e in before.values()):g} "
                f"({sum(e['ms'] for e in before.values()):.3f}) | "
                f"{sum(e['per_call'] for e in after.values()):g} "
                f"({sum(e['ms'] for e in after.values()):.3f}) |"
            )
    return (
        "\n".join(lines) + f"\n\nbefore = {record['before'][:7]}, after = "
        f"{record['after'][:7]}; {record['calls']} calls per export and batch, "
        f"{record['threads']} threads, on {describe_machine(record)}: `{record['command']}`"
    )


def _agreement_and_profiles(record):
    """A paths A/B's agreement with its reference path and its profiles, where the record has
    them (``docs/runs/roofline/bf16_ab.py``): one row per path and batch."""
    if not record.get("agreement"):
        return []
    lines = [
        "",
        "| variant | path @ batch | max \\|Δp\\| | same argmax | profiled ms per call "
        "| thread-ms in ops | largest op kinds (thread-ms) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for variant, agreement in record["agreement"].items():
        profiles = record.get("profiles", {}).get(variant, {})
        for key, row in agreement.items():
            profile = profiles.get(key)
            cells = ["—", "—", "—"]
            if profile:
                top = sorted(profile["kinds"].items(), key=lambda kv: -kv[1])[:3]
                cells = [
                    f"{profile['wall_ms']:.2f}",
                    f"{profile['op_ms']:.2f}",
                    "; ".join(f"{kind} {ms:.2f}" for kind, ms in top),
                ]
            lines.append(
                f"| {variant} | {key.replace('@', ' @ ')} | {row['max_abs_dp']:.1e} | "
                f"{row['argmax_agreement']:.4f} | " + " | ".join(cells) + " |"
            )
    return lines + _call_phases(record)


#: The phases of a profiled call (``re2_lab/profile_worker.py``) in :func:`_call_phases`'s
#: columns: (heading, phase).
PHASE_COLUMNS = (
    ("Python", "python"),
    ("eager dispatch", "eager"),
    ("TensorFlow before XLA", "before_xla"),
    ("TensorFlow after XLA", "after_xla"),
    ("of those two, in kernels", "tf_kernels"),
    ("XLA in thunks", "xla_ops"),
    ("XLA in no thunk", "xla_between_ops"),
)


def _call_phases(record):
    """Where a profiled call's time went, per variant, path and batch of an A/B record whose
    profiles have ``phases`` (:func:`re2_lab.roofline.ab_profiles`): the profiled call's ms
    and each phase's median ms over the profiled calls (:data:`PHASE_COLUMNS`)."""
    rows = [
        (variant, key, profile)
        for variant, profiles in record.get("profiles", {}).items()
        for key, profile in profiles.items()
        if profile.get("phases")
    ]
    if not rows:
        return []
    lines = [
        "",
        "| variant | path @ batch | profiled ms per call | "
        + " | ".join(heading for heading, _ in PHASE_COLUMNS)
        + " |",
        "|---|---|---:|" + "---:|" * len(PHASE_COLUMNS),
    ]
    for variant, key, profile in rows:
        phases = profile["phases"]
        cells = [f"{phases[phase]:.2f}" for _, phase in PHASE_COLUMNS]
        lines.append(
            f"| {variant} | {key.replace('@', ' @ ')} | {profile['wall_ms']:.2f} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def _split_name(name):
    """``"RE2 3 blocks (savedmodel, fp32, XLA)"`` -> ``("RE2 3 blocks", "savedmodel, fp32,
    XLA")``."""
    variant, _, rest = name.partition(" (")
    return variant, rest[:-1] if rest.endswith(")") else rest


def _table5(records):
    variants, lines = [], {}
    for record in records:
        for row in record["rows"]:
            variant, export = _split_name(row["model"])
            if variant not in variants:
                variants.append(variant)
            lines.setdefault(export, {})[variant] = row
    last = variants[-1]
    header = ["export", *variants, f"{last}, mean ± std s/batch"]
    out = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    paper = {v: r.get("paper") for rows in lines.values() for v, r in rows.items()}
    if any(isinstance(p, (int, float)) for p in paper.values()):
        cells = [f"{paper[v] * 1000:.0f} ms" if paper.get(v) else "" for v in variants]
        out.append(f"| paper Table 5 (Core i7 laptop, TF1) | {' | '.join(cells)} | |")
    for export, rows in lines.items():
        cells = [f"{rows[v]['median_ms']:.1f} ms" if v in rows else "" for v in variants]
        spread = rows.get(last)
        tail = f"{spread['mean_s']:.4f} ± {spread['std_s']:.4f}" if spread else ""
        out.append(f"| {export} | {' | '.join(cells)} | {tail} |")
    machines = sorted({_machine(r).split(": `")[0] for r in records})
    commands = "; ".join(f"`{r['command']}`" for r in records)
    return "\n".join(out) + f"\n\nMeasured on {' and '.join(machines)}: {commands}."


#: ``.ci/run``'s steps as it names them in its output (``<name>: <seconds> s``), with the command
#: each runs, in the order the steps run.
CI_STEPS = {
    "default suite, README install": ("the README's install (`.[test]`), then its test command",
                                      "`python -m pytest`"),
    "default suite, tests that need an extra": ("every extra installed: the tests that skipped",
                                                "`python -m pytest @<skipped>`"),
    "lab tests": ("the lab's tests", "`python -m pytest re2_lab/tests`"),
    "slow tier": ("the slow tier, the library's then the lab's",
                  "`python -m pytest -m slow` (and `re2_lab/tests`)"),
}  # fmt: skip
_OUTCOMES = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)\b")
_SESSION_END = re.compile(r"^=*\s*(\d+ (?:passed|failed|skipped|deselected|error).*) in [\d.]+s")


def _minutes(seconds):
    return f"{int(seconds) // 60} min {int(seconds) % 60} s"


def test_tiers(log):
    """The Markdown of a recorded ``.ci/run`` (its output, as ``docs/runs/test-tiers/ci-run.txt``
    keeps it: a ``# ... at <commit> ...`` header with the machine, then the script's output):
    one row per step of :data:`CI_STEPS` found in the log, with the pytest outcomes of the
    sessions that ran in it (summed over a step's sessions) and its time, then the whole run's
    time (``real`` of ``time``).

    Raises:
        ValueError: no commit in the header, or no step found.
    """
    commit = re.search(r"fresh clone of main at ([0-9a-f]{7,})", log)
    machine = re.search(r"^# (\d+ [^\n]*?cores[^\n]*?\)), (\d{4}-\d{2}-\d{2})", log, re.M)
    if commit is None:
        raise ValueError("no 'fresh clone of main at <commit>' in the CI log's header")
    rows, counts = [], {}
    for line in log.splitlines():
        session = _SESSION_END.match(line.strip())
        if session:
            for number, outcome in _OUTCOMES.findall(session.group(1)):
                key = outcome.rstrip("s") if outcome.startswith("error") else outcome
                counts[key] = counts.get(key, 0) + int(number)
            continue
        name, _, rest = line.partition(": ")
        if name in CI_STEPS and rest.endswith(" s") and rest[:-2].isdigit():
            what, command = CI_STEPS[name]
            result = ", ".join(f"{n:,} {k}" for k, n in counts.items()) or "no test run"
            rows.append(f"| {what} | {command} | {result} | {_minutes(int(rest[:-2]))} |")
            counts = {}
    if not rows:
        raise ValueError("no .ci/run step found in the CI log")
    real = re.search(r"^real\s+(\d+)m([\d.]+)s", log, re.M)
    where = f" on {machine.group(1)}, {machine.group(2)}" if machine else ""
    lines = [
        f"`.ci/run` in a fresh clone of main at {commit.group(1)}{where} "
        "(record: `docs/runs/test-tiers/ci-run.txt`):",
        "",
        "| step | command | result | time |",
        "|---|---|---|---|",
        *rows,
    ]
    if real:
        lines += ["", f"The whole run: {int(real.group(1))} min {int(float(real.group(2)))} s."]
    return "\n".join(lines)
