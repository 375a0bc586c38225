"""The training budget a run actually had, read from its ``train.log`` (not from its flags).

A comparison asks every model for the same passes and evaluation interval, but what a model
does with them differs (a preset without pass-end evaluations, passes over ranking triples,
a smaller batch), so the budget is counted from what the trainer logged
(``re2_tf.api.train`` and ``re2_tf.training.routine``). Lines read:

- ``Starting <model> run ...`` / ``Resuming <model> run ...``: an attempt begins;
- ``Restored training state at update <s> from ...``: the attempt continues from update ``s``
  (an attempt without it starts from update 0);
- ``... training on <n>``: the training pairs; ``<n> ranking triples; {...}``: a pairwise
  ranking loss trains on these triples instead (the ``{...}`` its statistics);
- ``update <u> (epoch <e>) | dev ...``: a dev evaluation after update ``u``, ``e = u / updates
  per pass`` to two decimals;
- ``max_samples=<m>: training stops after <N> updates (... passes of <k> updates over ...;
  <s> pairs seen)``: a run cut short of whole passes (``--max_samples``): ``k`` updates a
  pass, ``s`` units seen;
- ``Training complete after <N> updates.``: the run finished its planned updates.

:func:`read_budget` gives a :class:`Budget`; :func:`re2_lab.compare.budget_report` puts the
comparison's budgets in a table and states every difference between the models of a task.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["STOPS", "Budget", "parse_budget", "read_budget"]

_ATTEMPT = re.compile(r"\b(Starting|Resuming) (\w+) run ")
_RESTORED = re.compile(r"Restored training state at update (\d+)\b")
_PAIRS = re.compile(r"; training on (\d+)\s*$")
_TRIPLES = re.compile(r"\b(\d+) ranking triples; (\{.*\})\s*$")
_EVALUATION = re.compile(r"\bupdate (\d+) \(epoch (\d+\.\d+)\) \| dev ")
#: A ``--max_samples`` run's line (``re2_tf.api``): its updates, passes (two decimals), updates
#: per pass and units seen. :func:`re2_lab.figures.base.load_record` reads it too.
STOPS = re.compile(
    r"max_samples=\d+: training stops after (?P<updates>\d+) updates \((?P<passes>[\d.]+) of "
    r"\d+ passes of (?P<per_pass>\d+) updates over \d+ (?:pairs|triples); (?P<seen>[\d,]+) "
    r"(?:pairs|triples) seen\)"
)
_COMPLETE = re.compile(r"Training complete after (\d+) updates\.")
_NO_WORDS = "takes no word ids: no word vocabulary is built"
_RANDOM_WORDS = "No embeddings file: word embeddings are random and trainable."


@dataclass(frozen=True)
class Budget:
    """A run's budget as its ``train.log`` records it.

    Attributes:
        model: the model named by the log's first ``Starting`` line.
        updates: optimizer steps behind the final model: ``N`` of ``Training complete after N
            updates.`` (``None``: the log has no such line, the run stopped otherwise).
        unit: ``"pairs"`` or, for a pairwise ranking loss, ``"triples"`` (query, positive,
            negative: one update's batch holds this many triples).
        units: the training set in ``unit`` (the last attempt's ``training on`` or
            ``ranking triples`` count).
        updates_per_pass: updates in one pass over the ``units`` (``ceil(units / batch)``),
            the one integer every evaluation line's ``update / epoch`` (epoch to two decimals)
            admits; ``None`` when they admit none or several.
        passes: ``updates / updates_per_pass``: an int for whole passes, else a float to two
            decimals (a ``--max_samples`` run); ``None`` when either is unknown.
        seen: training ``unit``s the updates were computed on: ``units * passes`` for whole
            passes (each pass covers every unit once; its last batch is short), the
            ``--max_samples`` line's count otherwise; ``None`` when neither is known.
        evaluations: dev evaluations on the path to the final model: every evaluation line,
            except those an attempt made after the update a later attempt restored (those
            updates were trained again, and their evaluations logged again).
        evaluated_updates: the updates after which those evaluations ran, in order.
        final_evaluated: whether an evaluation ran after the last update (so the final
            model could be selected).
        pass_ends_evaluated: whether an evaluation ran at the end of every whole pass (after
            updates ``k * updates_per_pass``, ``k = 1 .. floor(passes)``); ``False`` without
            ``passes``.
        word_embeddings: ``"random"`` (the log says word embeddings are random and
            trainable), ``"none"`` (the model takes no word ids, e.g. word pieces) or
            ``"other"`` (the log names an embeddings file, or says nothing).
        triple_stats: the ranking-triple statistics the log printed (``{}`` for pairs).
    """

    model: str
    updates: int | None
    unit: str
    units: int
    updates_per_pass: int | None
    passes: int | None
    seen: int | None
    evaluations: int
    evaluated_updates: tuple
    final_evaluated: bool
    pass_ends_evaluated: bool
    word_embeddings: str
    triple_stats: dict = field(default_factory=dict)

    def to_json(self):
        """The fields as a JSON-ready dict (``evaluated_updates`` a list)."""
        out = asdict(self)
        out["evaluated_updates"] = list(self.evaluated_updates)
        return out


def _updates_per_pass(evaluations):
    """The one integer ``k`` with ``round(u / k, 2) == e`` for every ``(u, e)``, else ``None``."""
    if not evaluations:
        return None
    candidates = None
    for update, epoch in evaluations:
        if update == 0:
            continue
        low, high = epoch - 0.005, epoch + 0.005
        first = math.ceil(update / high) if high > 0 else 1
        last = math.floor(update / low) if low > 0 else update
        fits = {k for k in range(max(first, 1), last + 1) if f"{update / k:.2f}" == f"{epoch:.2f}"}
        candidates = fits if candidates is None else candidates & fits
    return next(iter(candidates)) if candidates and len(candidates) == 1 else None


def parse_budget(text, source="train.log"):
    """:class:`Budget` of a ``train.log``'s text (module docstring: the lines read).

    Raises:
        ValueError: naming ``source``, when the text has no ``Starting`` line or no
            training-set size.
    """
    model = None
    units = unit = None
    stats = {}
    words = "other"
    kept = []  # (update, epoch) of the evaluations on the final model's path
    kept_before = []  # the previous attempts' kept evaluations, until a restore line
    updates = None
    stops = None  # (updates per pass, units seen) of a --max_samples line
    for line in text.splitlines():
        if found := _ATTEMPT.search(line):
            if model is None and found.group(1) == "Starting":
                model = found.group(2)
            # an attempt without a restore line starts again from update 0
            kept_before, kept = kept, []
            continue
        if found := _RESTORED.search(line):
            kept = [e for e in kept_before if e[0] <= int(found.group(1))]
            continue
        if found := _TRIPLES.search(line):
            units, unit = int(found.group(1)), "triples"
            stats = ast.literal_eval(found.group(2))
            continue
        if (found := _PAIRS.search(line)) and unit != "triples":
            units, unit = int(found.group(1)), "pairs"
            continue
        if found := _EVALUATION.search(line):
            kept.append((int(found.group(1)), float(found.group(2))))
            continue
        if found := STOPS.search(line):
            stops = (int(found["per_pass"]), int(found["seen"].replace(",", "")))
            continue
        if found := _COMPLETE.search(line):
            updates = int(found.group(1))
            continue
        if _NO_WORDS in line:
            words = "none"
        elif _RANDOM_WORDS in line:
            words = "random"
    if model is None:
        raise ValueError(f"{source}: no 'Starting <model> run' line: not a train.log")
    if units is None:
        raise ValueError(f"{source}: no 'training on <n>' line: the training set is unknown")
    per_pass = stops[0] if stops else _updates_per_pass(kept)
    passes = seen = None
    if updates is not None and per_pass:
        whole, rest = divmod(updates, per_pass)
        passes = whole if rest == 0 else round(updates / per_pass, 2)
        if stops:
            seen = stops[1]
        elif rest == 0:
            seen = units * whole
    evaluated = tuple(u for u, _ in kept)
    return Budget(
        model=model,
        updates=updates,
        unit=unit,
        units=units,
        updates_per_pass=per_pass,
        passes=passes,
        seen=seen,
        evaluations=len(kept),
        evaluated_updates=evaluated,
        final_evaluated=updates is not None and updates in evaluated,
        pass_ends_evaluated=passes is not None
        and all(k * per_pass in evaluated for k in range(1, int(passes) + 1)),
        word_embeddings=words,
        triple_stats=stats,
    )


def read_budget(run_dir):
    """:class:`Budget` of ``<run_dir>/train.log`` (:func:`parse_budget`).

    Raises:
        FileNotFoundError: no ``train.log``; ValueError: as :func:`parse_budget`.
    """
    path = Path(run_dir) / "train.log"
    return parse_budget(path.read_text(encoding="utf-8"), source=str(path))
