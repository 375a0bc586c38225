"""How each model's serving cost grows with text length and batch size, and a cost model fitted
to it (issue 51, item 7).

Every benchmark variant of every model (``ModelSpec.benchmark``: the rows of the roofline and
``re2-bench``) is exported once as re2_tf's default SavedModel with random weights
(:func:`re2_tf.benchmarking.export_benchmark_model`) and timed in a fresh process per shape
(:func:`re2_tf.benchmarking.time_export`, 2 intra-op threads, 1 inter-op thread) on the
Table 5 inputs (:func:`re2_tf.benchmarking.table5_inputs`) with every text exactly ``length``
long (no spread, so the length on the axis is the length timed):

- **length sweep**: batch :data:`BASE_BATCH`, lengths :data:`LENGTHS` (10 to 400 words);
- **batch sweep**: length :data:`BASE_LENGTH`, batches :data:`BATCHES` (1 to 512 pairs).

Each point records the median latency (ms) over its timed batches (fewer for large shapes:
:func:`timed_batches`) and the worker's own peak resident memory (``VmHWM`` after the timed
batches, MiB). Points are appended to a JSON-lines file as they finish; a rerun skips the
points already there (a killed sweep resumes).

A model whose featuriser packs both texts into one sequence of at most ``max_length``
positions (BERT+MatchLSTM's ``[CLS] a [SEP] b [SEP]``) would time the same cut sequence at
every longer length, so a point where the featuriser cuts tokens from the drawn texts is not
timed: it is recorded with ``cut_tokens`` (tokens cut from its first batch) and no latency, and
the fits leave it out (:func:`cut_tokens`).

**Cost model** (:func:`fit`): per model, least squares of the relative error (each residual
over its measured value, so the millisecond points of short texts weigh as much as the second
points of long ones) of latency on ``a + b L + c L^2`` over
the length sweep (``L`` words per text: encoders and feed-forward layers are linear in ``L``,
alignment / attention / the spatial GRU's grid quadratic) and on ``a + b B`` over the batch
sweep; the length at which the quadratic term overtakes the linear one is ``L* = b / c``
(``None`` when ``c <= 0``: no quadratic growth measured). The same fit of peak memory gives its
quadratic share.
"""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path

import numpy as np

from re2_lab.sweep import pyplot
from re2_tf.benchmarking import export_benchmark_model, table5_inputs, time_export
from re2_tf.machine import describe_machine, machine
from re2_tf.models import get_spec

__all__ = [
    "BASE_BATCH",
    "BASE_LENGTH",
    "BATCHES",
    "LENGTHS",
    "fit",
    "fits",
    "markdown",
    "measure",
    "plot",
    "read_points",
    "timed_batches",
]

#: The length sweep's texts, words per text.
LENGTHS = (10, 15, 25, 35, 50, 100, 200, 400)
#: The batch sweep's batch sizes, pairs.
BATCHES = (1, 8, 64, 512)
#: The length sweep's batch (Table 5's).
BASE_BATCH = 8
#: The batch sweep's length (Table 5's).
BASE_LENGTH = 20


def timed_batches(batch, length, *, most=100, least=5, words=16_000):
    """Timed batches of a point: ``most`` for Table 5's shape, fewer as a batch holds more words
    (``words // (batch * length)``), at least ``least``."""
    return int(max(least, min(most, words // (batch * length))))


def cut_tokens(inputs):
    """Tokens the model's featurisers cut from the first batch of ``inputs``
    (:class:`re2_tf.benchmarking.Table5Inputs`): 0 for a model timed on drawn ids (nothing is
    featurised); for a packed-pair model, the ``truncated_tokens`` its featurisers count while
    encoding that batch's texts."""
    if inputs.signature == "serving_ids":
        return 0
    for featurizer in inputs.featurizers:
        featurizer.stats.clear()
    inputs.id_batches(1)
    return int(sum(f.stats["truncated_tokens"] for f in inputs.featurizers))


def _timed(points):
    return [p for p in points if p.get("median_ms") is not None]


def read_points(path):
    """The points of a growth record (``[]`` when the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _key(point):
    return (point["variant"], point["sweep"], point["batch"], point["length"])


def _points(lengths, batches):
    for length in lengths:
        yield "length", BASE_BATCH, length
    for batch in batches:
        yield "batch", batch, BASE_LENGTH


def measure(
    models,
    out,
    *,
    lengths=LENGTHS,
    batches=BATCHES,
    threads=2,
    workdir=None,
    log=print,
):
    """Time every benchmark variant of ``models`` at every point not yet in ``out``.

    Args:
        models: model names (each with all its benchmark variants).
        out: the JSON-lines record; one line per point, appended as it finishes: ``variant``,
            ``model``, ``sweep`` (``"length"`` or ``"batch"``), ``batch``, ``length``,
            ``cut_tokens`` (:func:`cut_tokens`; a point with cuts has ``median_ms`` None and
            nothing else timed), ``batches`` (timed), ``median_ms``, ``p99_ms``,
            ``peak_hwm_mib`` (the worker's own peak), ``loaded_hwm_mib``, ``load_average``
            (1-minute, before and after),
            ``cpu`` and ``threads``.
        lengths, batches: the sweeps' points.
        threads: intra-op threads of each timing process.
        workdir: where the exports are written (a temporary directory in it).
        log: called with one line per point.

    Returns:
        the points measured now (list of dict).
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {_key(p) for p in read_points(out)}
    measured = []

    def record(point):
        with out.open("a") as handle:
            handle.write(json.dumps(point) + "\n")
        measured.append(point)

    for model in models:
        spec = get_spec(model)
        for variant, entry in spec.benchmark.items():
            todo = [p for p in _points(lengths, batches) if (variant, *p) not in done]
            if not todo:
                continue
            with tempfile.TemporaryDirectory(dir=workdir) as tmp:
                path, _, featurizers = export_benchmark_model(
                    spec, entry["hparams"], Path(tmp) / "model"
                )
                for sweep, batch, length in todo:
                    inputs = table5_inputs(featurizers, batch, length, length_spread=0)
                    cut = cut_tokens(inputs)
                    point = {"variant": variant, "model": model, "sweep": sweep}
                    point.update(batch=batch, length=length, cut_tokens=cut)
                    if cut:
                        point.update(median_ms=None, threads=threads, **machine())
                        record(point)
                        log(
                            f"{variant} {sweep} batch {batch} length {length}: not timed, "
                            f"the featuriser cuts {cut} tokens of the first batch"
                        )
                        continue
                    request = inputs.request()
                    count = timed_batches(batch, length)
                    result = time_export(
                        path,
                        request["signature"],
                        request["input_spec"],
                        batches=count,
                        warmup=min(3, count),
                        intra_op_threads=threads,
                        inter_op_threads=1,
                        seed=request["seed"],
                        length_spread=0,
                        options=request["options"],
                    )
                    point.update({
                        "batches": count,
                        "median_ms": result["median_ms"],
                        "p99_ms": result["p99_ms"],
                        "peak_hwm_mib": result.get("peak_hwm_mib"),
                        "loaded_hwm_mib": result.get("loaded_hwm_mib"),
                        "load_average": result.get("load_average"),
                        "threads": threads,
                        **machine(),
                        "date": datetime.datetime.now().isoformat(timespec="seconds"),
                    })  # fmt: skip
                    record(point)
                    log(
                        f"{variant} {sweep} batch {batch} length {length}: "
                        f"{point['median_ms']:.2f} ms, {point['peak_hwm_mib']} MiB"
                    )
    return measured


def fit(xs, ys, degree):
    """Polynomial ``sum_k coef[k] x^k`` (``k = 0 .. degree``) through the points, by least
    squares of the relative residuals ``(y - fit) / y`` (``ys`` must be positive).

    Returns:
        ``{"coefficients": [c_0, ..., c_degree], "r2": float}``: ``r2`` is the usual
        (unweighted) coefficient of determination, 1.0 when ``ys`` is constant and fitted
        exactly.

    Raises:
        ValueError: fewer points than coefficients, or a ``y`` <= 0.
    """
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(xs) < degree + 1:
        raise ValueError(f"a degree-{degree} fit needs {degree + 1} points, got {len(xs)}")
    if (ys <= 0).any():
        raise ValueError(f"a relative fit needs positive values, got {ys.min()}")
    design = np.vander(xs, degree + 1, increasing=True)
    coefficients, *_ = np.linalg.lstsq(design / ys[:, None], np.ones_like(ys), rcond=None)
    residual = ys - design @ coefficients
    total = float(((ys - ys.mean()) ** 2).sum())
    r2 = 1.0 - float((residual**2).sum()) / total if total > 0 else 1.0
    return {"coefficients": [float(c) for c in coefficients], "r2": r2}


def fits(points):
    """Per variant (in the record's order): the length fits of latency and peak memory
    (quadratic in ``L``), the batch fit of latency (linear in ``B``) and the crossover
    ``L* = b / c`` of the latency fit (``None`` when ``c <= 0``).

    Returns:
        ``{variant: {"model", "lengths", "length_ms", "length_mib", "batch_ms",
        "crossover_length"}}`` over the timed points (``lengths``: those of the length fit);
        a fit is ``None`` when its sweep has too few points.
    """
    out = {}
    timed = _timed(points)
    for variant in dict.fromkeys(p["variant"] for p in points):
        mine = [p for p in timed if p["variant"] == variant]
        if not mine:
            continue
        by_length = sorted((p for p in mine if p["sweep"] == "length"), key=lambda p: p["length"])
        by_batch = sorted((p for p in mine if p["sweep"] == "batch"), key=lambda p: p["batch"])
        length_ms = length_mib = batch_ms = crossover = None
        if len(by_length) >= 3:
            lengths = [p["length"] for p in by_length]
            length_ms = fit(lengths, [p["median_ms"] for p in by_length], 2)
            if all(p.get("peak_hwm_mib") is not None for p in by_length):
                length_mib = fit(lengths, [p["peak_hwm_mib"] for p in by_length], 2)
            _, b, c = length_ms["coefficients"]
            crossover = b / c if c > 0 and b > 0 else (0.0 if c > 0 else None)
        if len(by_batch) >= 2:
            batch_ms = fit([p["batch"] for p in by_batch], [p["median_ms"] for p in by_batch], 1)
        out[variant] = {
            "model": mine[0]["model"],
            "lengths": [p["length"] for p in by_length],
            "length_ms": length_ms,
            "length_mib": length_mib,
            "batch_ms": batch_ms,
            "crossover_length": crossover,
        }
    return out


def _coef(value, digits=3):
    return "—" if value is None else f"{value:.{digits}g}"


def _crossover(length, timed):
    """The L* cell: past the longest length timed, the fit extrapolates, and the cell says so."""
    if length is None:
        return "—"
    return f"{length:,.0f}" + (" (past the sweep)" if timed and round(length) > max(timed) else "")


def markdown(points):
    """The fitted cost models as a Markdown table (one row per variant), after a line naming
    the CPU, threads and the load averages the points were taken under."""
    fitted = fits(points)
    cut = {p["variant"] for p in points if p.get("median_ms") is None}
    points = _timed(points)
    machines = sorted({describe_machine(p) for p in points})
    loads = [v for p in points for v in (p.get("load_average") or []) if v is not None]
    load = f"{min(loads):.2f}-{max(loads):.2f}" if loads else "not recorded"
    lengths = [p["length"] for p in points if p["sweep"] == "length"] or [0]
    batches = [p["batch"] for p in points if p["sweep"] == "batch"] or [0]
    lines = [
        f"{'; '.join(machines)}; {points[0]['threads']} intra-op threads; 1-minute load average "
        f"{load} while timing. Latency ms = a + b·L + c·L² over the length sweep (batch "
        f"{BASE_BATCH}, L = {min(lengths)}-{max(lengths)} words per text) and = a + b·B over the "
        f"batch sweep (L = {BASE_LENGTH}, B = {min(batches)}-{max(batches)}); L* = b / c, the "
        "length where the quadratic term (alignment, attention, the spatial GRU's grid) "
        "overtakes the linear one (extrapolated where it is past the lengths timed); peak "
        "memory (the serving process's own VmHWM) fitted the "
        "same way in L. L timed: the lengths fitted (a packed-pair model's longer texts are "
        "cut to its featuriser's max_length, so not timed).",
        "",
        "| model | L timed | a ms | b ms/word | c ms/word² | R² | L* words "
        "| ms per pair (batch fit) | R² | peak MiB, shortest → longest L | memory c MiB/word² |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for variant, f in fitted.items():
        mine = sorted(
            (p for p in points if p["variant"] == variant and p["sweep"] == "length"),
            key=lambda p: p["length"],
        )
        memory = (
            f"{mine[0]['peak_hwm_mib']:,.0f} → {mine[-1]['peak_hwm_mib']:,.0f}"
            if mine and mine[0].get("peak_hwm_mib") is not None
            else "—"
        )
        a = b = c = r2 = per_pair = r2b = mem_c = None
        if f["length_ms"]:
            (a, b, c), r2 = f["length_ms"]["coefficients"], f["length_ms"]["r2"]
        if f["batch_ms"]:
            per_pair, r2b = f["batch_ms"]["coefficients"][1], f["batch_ms"]["r2"]
        if f["length_mib"]:
            mem_c = f["length_mib"]["coefficients"][2]
        crossover = f["crossover_length"]
        timed = (
            f"{min(f['lengths'])}-{max(f['lengths'])}" + (" (longer cut)" if variant in cut else "")
            if f["lengths"]
            else "—"
        )
        lines.append(
            f"| {variant} | {timed} | {_coef(a)} | {_coef(b)} | {_coef(c)} | "
            f"{'—' if r2 is None else f'{r2:.3f}'} | "
            f"{_crossover(crossover, f['lengths'])} | {_coef(per_pair)} | "
            f"{'—' if r2b is None else f'{r2b:.3f}'} | {memory} | {_coef(mem_c)} |"
        )
    return "\n".join(lines)


def plot(points, path):
    """Two panels (latency against length at batch :data:`BASE_BATCH`, against batch at length
    :data:`BASE_LENGTH`; log-log), one line of measured points per variant with its fitted
    curve dashed; written to ``path`` (PNG)."""
    plt = pyplot("the cost-growth figure")
    fitted = fits(points)
    points = _timed(points)
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    for variant, f in fitted.items():
        for ax, sweep, x, model in (
            (left, "length", "length", f["length_ms"]),
            (right, "batch", "batch", f["batch_ms"]),
        ):
            mine = sorted(
                (p for p in points if p["variant"] == variant and p["sweep"] == sweep),
                key=lambda p: p[x],
            )
            if not mine:
                continue
            xs = np.array([p[x] for p in mine], dtype=float)
            (line,) = ax.plot(xs, [p["median_ms"] for p in mine], "o-", label=variant)
            if model:
                grid = np.geomspace(xs.min(), xs.max(), 50)
                curve = np.polynomial.polynomial.polyval(grid, model["coefficients"])
                ax.plot(grid, curve, "--", color=line.get_color(), linewidth=0.8)
    left.set(xscale="log", yscale="log", xlabel="words per text (batch 8)", ylabel="median ms")
    right.set(xscale="log", yscale="log", xlabel="pairs per batch (20 words)", ylabel="median ms")
    left.legend(fontsize=7)
    for ax in (left, right):
        ax.grid(alpha=0.3, which="both")
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return Path(path)
