"""Which CPU runtime serves an export by default: ``re2-export --serving=auto`` (the default)
times the SavedModel against every other installed runtime on this CPU, checks their labels
against the SavedModel's on the run's held-out pairs, and records the fastest that agrees in
the export; :class:`~re2_tf.serving.predictor.Predictor` (``re2-predict``,
``Matcher.from_export``) then serves through it.

The rule (ours):

- **Candidates**: the SavedModel (TensorFlow, the reference); ONNX Runtime (``onnx`` extra);
  OpenVINO in float32 and, where its CPU plugin reports bfloat16 units, in bfloat16
  (``openvino`` extra); and, for an XLA export (the default), TensorFlow without XLA
  (``savedmodel_noxla``: XLA's CPU code for the model function is not TensorFlow's own
  kernels, and which is faster depends on the model and the batch), and where the CPU has
  bfloat16 units (:func:`re2_tf.machine.cpu_units`) the same without XLA under TensorFlow's
  oneDNN bfloat16 rewrite (``savedmodel_noxla`` ``bf16``:
  :data:`re2_tf.serving.runtimes.TF_BF16_REWRITE`), and on such a CPU a bfloat16 SavedModel of
  the same weights (``savedmodel_bf16``: exported ``--xla=false --precision=bf16``, a graph
  bfloat16 as built; for RE2 the folded pass with bfloat16 weights, whose dense layers'
  bias and activation fuse into oneDNN's product: :mod:`re2_tf.serving.folded`), and for a
  model whose bfloat16 XLA export compiles only a part with XLA
  (:func:`re2_tf.serving.backends.compiles_part`; BERT+MatchLSTM's head, BERT's bfloat16
  pass left to oneDNN) that export too (``savedmodel_bf16_xla``; XLA's CPU compiler runs no
  bfloat16 product on the bfloat16 units, so a wholly compiled bfloat16 export is none);
  and LiteRT
  (``tflite``) on a ``--format=tflite`` export of the same model, where one is given (the
  TFLite converter reads the Keras model, so ``re2-export`` exports one beside the others;
  a model it cannot convert is a candidate with the converter's error). The others are made
  from an ``--xla=false`` SavedModel of the same weights (converted, or for
  ``savedmodel_noxla`` and ``savedmodel_bf16`` copied, as ``savedmodel_bf16_xla`` is from its
  export: :func:`re2_tf.serving.runtimes.convert`)
  and kept in ``<export>/runtimes/``, the LiteRT model too
  (:func:`re2_tf.serving.runtimes.keep_tflite`). TensorFlow without XLA, the bfloat16
  SavedModel and LiteRT need no extra: a core install measures them against the SavedModel.
- **Agreement**: a candidate is eligible only if its most probable label equals the
  SavedModel's on at least :data:`MIN_AGREEMENT` of the held-out pairs (both fed the same
  Python tokenisation) and every output is finite: the one rule,
  :func:`re2_tf.serving.runtimes.agrees`, that ``--precision=measure`` and the lab's
  runtimes record apply too; its max |Δp| is recorded. A conversion
  or a run that fails makes the candidate ineligible, with the error recorded.
- **Survival**: in its first round, at each shape after its first call there, each
  candidate's process is called on texts that change length one side at a time, each
  growing alone past every length drawn (the timing worker's ``shape_changes``, untimed); a
  candidate whose process dies there is ineligible like any that fails to run (OpenVINO's
  bfloat16 FITN dies so: ``docs/performance.md``). Not for a packed-pair model, whose ids
  the worker cannot draw (its candidates cycle 4 fixed batches of different lengths); the
  choice's ``shape_changes`` says which.
- **Speed**: each candidate is timed with the Table 5 protocol
  (:func:`re2_tf.benchmarking.time_table5`: :func:`~re2_tf.benchmarking.table5_inputs` at
  each of :data:`SHAPES`, fed to ``serving_ids``, so tokenisation is outside every
  candidate's time alike), in :data:`ROUNDS` rounds of the candidates in turn. In a round a
  candidate has one fresh process, which loads it once and times it at every shape in turn,
  each on the draws a process of its own would time (the timing worker's ``then``), so a
  round starts one process per candidate, not one per candidate and shape. A candidate's
  figure at a shape is the median of its rounds' medians (:func:`median_of_rounds`): a
  shared or virtual CPU's speed drifts both ways between processes, slower under load and
  faster in spells (``docs/performance.md``), so neither the least nor the greatest round
  is the candidate's. A close call is timed again: at a shape where more than one eligible
  candidate has a round within :data:`CLOSE` of the least eligible figure
  (:func:`close_candidates`: a candidate whose rounds disagree may be the fastest even when
  its figure is not), those candidates get :data:`CLOSE_ROUNDS` more rounds in turn there,
  a fresh process each, and their figures are the medians of all their rounds. At each
  timed shape the eligible candidate with the least figure is then chosen (:func:`pick`;
  ties keep the SavedModel), so one export may serve small batches through one runtime and
  large ones through another: a call of ``n`` pairs takes the route of the timed batch
  nearest ``n`` on a log scale (:func:`~re2_tf.serving.predictor.route`; with the default
  shapes, up to 64 pairs take the 8-pair choice).

- **TensorFlow's threads**: TensorFlow sizes its intra-op and inter-op thread pools once per
  process, so one process serves every TensorFlow route on one setting. Every TensorFlow
  candidate (the SavedModel and its ``savedmodel_*`` twins) is therefore timed at each
  setting of :func:`tf_thread_settings` (for ``c`` cores: ``(c, c)``, TensorFlow's own
  default; ``(c, 1)``, Table 5's protocol, one op at a time; ``(c // 2, 2)``, two
  independent ops at once, e.g. RE2's two texts through one encoder, on half the cores
  each), each setting a candidate of its own (``threads``: ``[intra, inter]``), while
  OpenVINO, ONNX Runtime and LiteRT set their threads per model and are timed once. The
  setting served (:func:`pick_threads`) is the one whose routes lose least at their worst
  shape against the best routes any setting gives (ties keep the first, TensorFlow's
  default); the choice records it as ``tf_threads`` and a
  :class:`~re2_tf.serving.predictor.Predictor` sets TensorFlow's pools to it before
  loading (:func:`~re2_tf.serving.predictor.recorded_tf_threads`).

Where no candidate but the SavedModel is left (no other runtime installed and no twin of
the export given, e.g. a core install's ``--xla=false --precision=bf16`` export), nothing is
measured and the export is served by its SavedModel (``measured`` False, the reason names the
extras). ``--serving=savedmodel`` skips the measurement. Either way the decision (every
candidate's medians and agreement, the CPU) is the export's ``export_config.json``
``serving_choice``, and ``re2-export`` prints it on stderr. What the rule picks per model on
our CPU is in ``docs/performance.md``.

Library: :func:`choose_serving`, :func:`pick`, :func:`pick_threads`,
:func:`tf_thread_settings`, :func:`installed_candidates`,
and :func:`~re2_tf.serving.predictor.default_routes` (what a
:class:`~re2_tf.serving.predictor.Predictor` serves through).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

from re2_tf import benchmarking
from re2_tf.machine import cpu_units, machine
from re2_tf.serving import runtimes
from re2_tf.serving.files import EXPORT_CONFIG_FILE
from re2_tf.serving.predictor import (
    TENSORFLOW_BACKENDS,
    Predictor,
    export_featurizers,
    installed,
)

__all__ = [
    "CHOICES",
    "CLOSE",
    "CLOSE_ROUNDS",
    "FIGURE",
    "MIN_AGREEMENT",
    "ROUNDS",
    "SHAPES",
    "choose_serving",
    "close_candidates",
    "installed_candidates",
    "median_of_rounds",
    "pick",
    "pick_threads",
    "record_choice",
    "tensorflow_candidates",
    "tf_thread_settings",
]

#: ``--serving`` values: measure among the installed runtimes, or the SavedModel unmeasured.
CHOICES = ("auto", "savedmodel")
#: Serving shapes timed (batch, words per text): Table 5's and a batch of 512.
SHAPES = ((8, 20), (512, 20))
#: Timing rounds: each candidate is timed once per round, in turn; its figure at a shape is
#: the median of its rounds' medians (:func:`median_of_rounds`).
ROUNDS = 2
#: Timed batches per round at a small shape (:func:`re2_tf.benchmarking.timed_batches` gives
#: the count at a larger one): fewer than Table 5's 100, as every candidate is timed per round.
BATCHES = 30
#: A close call (our threshold): eligible candidates with a round at a shape within this share
#: above the least eligible figure there are timed again there (:func:`close_candidates`).
CLOSE = 0.2
#: How a candidate's ``median_ms`` is made from its ``rounds_ms`` (recorded in the choice).
FIGURE = "median of rounds"
#: More rounds of a shape's close candidates, in turn (none where only one is close).
CLOSE_ROUNDS = 2
#: Least share of held-out labels a candidate must share with the SavedModel: the one rule's
#: (:data:`re2_tf.serving.runtimes.MIN_AGREEMENT`).
MIN_AGREEMENT = runtimes.MIN_AGREEMENT
#: The reason recorded when the SavedModel is the only candidate.
NOTHING_TO_MEASURE = (
    "no other candidate: no other CPU runtime is installed (pip install -e '.[openvino]' or "
    "'.[onnx]') and no TensorFlow or LiteRT twin of this export was made, so the SavedModel "
    "serves"
)


def installed_candidates():
    """``[(backend, precision)]`` the rule compares on this machine: ``("savedmodel", "f32")``
    first, then ``("onnxruntime", "f32")``, ``("openvino", "f32")`` and ``("openvino",
    "bf16")`` where their packages are installed (bf16 where OpenVINO reports bfloat16 units:
    :func:`re2_tf.serving.runtimes.cpu_has_bf16`)."""
    found = [("savedmodel", "f32")]
    if installed("onnxruntime"):
        found.append(("onnxruntime", "f32"))
    if installed("openvino"):
        found.append(("openvino", "f32"))
        if runtimes.cpu_has_bf16():
            found.append(("openvino", "bf16"))
    return found


def tensorflow_candidates(noxla=True, bf16_export=False, bf16_xla_export=False):
    """``[(backend, precision)]`` of TensorFlow's other paths the rule adds: for an XLA export
    (``noxla``) ``("savedmodel_noxla", "f32")``, then ``("savedmodel_noxla", "bf16")``
    (TensorFlow's oneDNN bfloat16 rewrite) where the CPU has bfloat16 units
    (:func:`re2_tf.machine.cpu_units`); with a bfloat16 SavedModel of the same weights
    (``bf16_export``) and those units, ``("savedmodel_bf16", "bf16")``; with a bfloat16 XLA
    export of them (``bf16_xla_export``) and those units, ``("savedmodel_bf16_xla", "bf16")``
    last."""
    units = cpu_units()["bfloat16"]
    found = [("savedmodel_noxla", "f32")] if noxla else []
    if noxla and units:
        found.append(("savedmodel_noxla", "bf16"))
    if bf16_export and units:
        found.append(("savedmodel_bf16", "bf16"))
    if bf16_xla_export and units:
        found.append(("savedmodel_bf16_xla", "bf16"))
    return found


def tf_thread_settings(cores=0):
    """TensorFlow's thread settings the rule times its TensorFlow candidates at (the module
    docstring): ``[(intra, inter)]`` for ``cores`` cores (0: the cores this process may run
    on), ``[(c, c), (c, 1), (max(c // 2, 1), 2)]`` without repeats, TensorFlow's default
    first (our rule)."""
    c = int(cores) or len(os.sched_getaffinity(0))
    return list(dict.fromkeys([(c, c), (c, 1), (max(c // 2, 1), 2)]))


def _tf_rows(rows, setting):
    """The candidates a process on TensorFlow thread ``setting`` can serve through: the
    other runtimes, and the TensorFlow ones timed at ``setting``, the SavedModel first."""
    setting = list(setting)
    chosen = [r for r in rows if r.get("threads", setting) == setting]
    return sorted(chosen, key=lambda r: r["backend"] != "savedmodel")


def pick_threads(candidates, shapes, min_agreement=MIN_AGREEMENT):
    """The TensorFlow thread setting the rule serves on (the module docstring).

    Args:
        candidates: as :func:`pick`'s, each TensorFlow one with ``threads`` (``[intra,
            inter]``), the others without; the SavedModel timed at every setting.
        shapes: the keys of ``median_ms`` to compare.
        min_agreement: least label agreement of an eligible candidate.

    Returns:
        ``[intra, inter]``: of the settings the SavedModel was timed at every shape at, the
        one whose worst ratio over ``shapes`` of its best eligible median to the best of any
        setting is least (the first, in the SavedModel rows' order, on ties).

    Raises:
        ValueError: the SavedModel was timed at every shape at no setting.
    """
    settings = [
        r["threads"]
        for r in candidates
        if r["backend"] == "savedmodel"
        and "threads" in r
        and all(k in (r.get("median_ms") or {}) for k in shapes)
    ]
    if not settings:
        raise ValueError(f"the SavedModel was not timed at every shape of {list(shapes)}")
    best = {
        s: {k: pick(_tf_rows(candidates, s), k, min_agreement)["median_ms"][k] for k in shapes}
        for s in map(tuple, settings)
    }
    least = {k: min(b[k] for b in best.values()) for k in shapes}
    return list(min(best, key=lambda s: max(best[s][k] / least[k] for k in shapes)))


def _shape_key(batch, length):
    return f"{batch}x{length}"


def _eligible(candidate, reference, shape, min_agreement):
    if shape not in (candidate.get("median_ms") or {}):
        return False
    agreement = candidate.get("label_agreement")
    return candidate is reference or runtimes.agrees(agreement, min_agreement)


def pick(candidates, shape, min_agreement=MIN_AGREEMENT):
    """The rule's choice among measured candidates at one timed shape.

    Args:
        candidates: ``[{"backend", "precision", "median_ms": {shape: ms} or absent,
            "label_agreement": float or absent}]``, the SavedModel first (the reference: it
            is eligible without an agreement).
        shape: the key of ``median_ms`` to compare (``"<batch>x<length>"``).
        min_agreement: least label agreement of an eligible candidate.

    Returns:
        the eligible candidate with the least figure (``median_ms``) at ``shape`` (the first
        such on ties, so the SavedModel is kept unless another is faster).

    Raises:
        ValueError: the reference was not timed at ``shape``.
    """
    reference = candidates[0]
    if shape not in (reference.get("median_ms") or {}):
        raise ValueError(f"the reference candidate (the SavedModel) was not timed at {shape}")
    return min(
        (c for c in candidates if _eligible(c, reference, shape, min_agreement)),
        key=lambda c: c["median_ms"][shape],
    )


def median_of_rounds(rounds_ms):
    """A candidate's figure at a shape from its rounds (the module docstring; our rule).

    Args:
        rounds_ms: the median milliseconds of each of its rounds there, at least one.

    Returns:
        float: their median (for an even count the mean of the middle two), rounded to
        the microsecond (3 decimals, as each round's median is recorded).

    Raises:
        ValueError: ``rounds_ms`` is empty.
    """
    if len(rounds_ms) == 0:
        raise ValueError("a candidate's figure needs at least one round")
    return round(float(np.median(np.asarray(rounds_ms, dtype=np.float64))), 3)


def close_candidates(candidates, shape, min_agreement=MIN_AGREEMENT, close=CLOSE):
    """Indices of the eligible candidates (as :func:`pick`'s) with a round at ``shape`` within
    ``close`` of the least eligible figure: whose least round (of ``rounds_ms[shape]``, or
    ``median_ms[shape]`` for a candidate given without rounds) is at most ``(1 + close)``
    times the least eligible ``median_ms[shape]``, in order; ``[]`` where fewer than two are
    (the call is not close). A candidate whose rounds disagree is in where its fastest round
    is, as that round may be its time and the others slowed (our rule).

    Raises:
        ValueError: the reference was not timed at ``shape`` (as :func:`pick`).
    """
    best = pick(candidates, shape, min_agreement)["median_ms"][shape]

    def least(c):
        return min(c.get("rounds_ms", {}).get(shape) or [c["median_ms"][shape]])

    found = [
        i
        for i, c in enumerate(candidates)
        if _eligible(c, candidates[0], shape, min_agreement) and least(c) <= best * (1 + close)
    ]
    return found if len(found) > 1 else []


def record_choice(export_dir, choice):
    """Write ``choice`` as ``serving_choice`` into the export's ``export_config.json``."""
    path = Path(export_dir) / "assets" / EXPORT_CONFIG_FILE
    config = json.loads(path.read_text())
    config["serving_choice"] = choice
    path.write_text(json.dumps(config, indent=2) + "\n")


def choose_serving(
    export_dir,
    pairs,
    *,
    convertible=None,
    bf16_export=None,
    bf16_xla_export=None,
    tflite_export=None,
    candidates=None,
    shapes=SHAPES,
    threads=0,
    tf_threads=None,
    rounds=ROUNDS,
    close=CLOSE,
    close_rounds=CLOSE_ROUNDS,
    min_agreement=MIN_AGREEMENT,
    log=logging.info,
):
    """``re2-export --serving=auto``: measure the candidates for ``export_dir`` and return
    the decision (the module docstring's rule); the caller records it (:func:`record_choice`).

    Args:
        export_dir: a SavedModel export (``re2_tf.serving.export.export_model``).
        pairs: held-out ``(text1, text2)`` pairs every candidate scores (e.g. the run's dev
            split); with none, nothing can be checked and the SavedModel serves.
        convertible: an ``xla=False`` SavedModel of the same model the other runtimes are
            converted from (default: ``export_dir`` itself, which then must be one).
        bf16_export: an ``xla=False``, ``precision="bf16"`` SavedModel of the same model,
            the candidate ``savedmodel_bf16`` (kept as ``<export_dir>/runtimes/
            savedmodel_bf16``) where the CPU has bfloat16 units.
        bf16_xla_export: a ``precision="bf16"`` XLA export of the same model that compiles
            only a part with XLA (:func:`re2_tf.serving.backends.compiles_part`), the
            candidate ``savedmodel_bf16_xla`` (kept as ``<export_dir>/runtimes/
            savedmodel_bf16_xla``) where the CPU has bfloat16 units.
        tflite_export: a ``--format=tflite`` export of the same model, the candidate
            ``tflite`` (its model kept as ``<export_dir>/runtimes/model.tflite``), or the
            ``ValueError`` its export raised (the candidate's recorded error).
        candidates: ``[(backend, precision)]`` (default :func:`installed_candidates`, and
            after the SavedModel :func:`tensorflow_candidates`: ``savedmodel_noxla`` where
            ``export_dir`` is an XLA export and ``convertible`` is given, ``savedmodel_bf16``
            where ``bf16_export`` is, ``savedmodel_bf16_xla`` where ``bf16_xla_export`` is,
            then ``("tflite", "f32")`` where ``tflite_export`` is); the SavedModel is always
            the first.
        shapes: ``(batch, words per text)`` shapes timed.
        threads: intra-op threads of the timing processes of OpenVINO, ONNX Runtime and
            LiteRT (0: each runtime's default), and the cores :func:`tf_thread_settings`
            is given.
        tf_threads: ``[(intra, inter)]`` TensorFlow's candidates are each timed at (default
            ``tf_thread_settings(threads)``); the first is the reference's.
        rounds: timing rounds; a candidate's figure (``median_ms``) at a shape is the median
            of its rounds' (:func:`median_of_rounds`).
        close, close_rounds: a shape's close candidates (:func:`close_candidates` with
            ``close``) are timed ``close_rounds`` more rounds, after the agreement check (0:
            never).
        min_agreement: least label agreement with the SavedModel.
        log: ``(message) -> None`` told each candidate's result.

    Returns:
        the JSON-serialisable ``serving_choice``: ``backend``, ``precision`` (at the first
        shape), ``reason``, ``measured``; where measured also ``tf_threads`` (``[intra,
        inter]``: :func:`pick_threads`), ``tf_thread_settings``, ``routes`` (per shape:
        ``batch``, ``backend``, ``precision``; :func:`~re2_tf.serving.predictor.route`),
        ``candidates`` (each with ``median_ms`` per ``"<batch>x<length>"``, the median of
        its ``rounds_ms`` there, a TensorFlow one with ``threads``, ``rounds_ms``
        (every round's median, the close rounds' last), ``label_agreement``, ``max_abs_dp``
        or ``error``), ``figure`` (``"median of rounds"``: how ``median_ms`` is made from
        ``rounds_ms``), ``pairs``, ``shapes``, ``threads``, ``rounds``, ``close``,
        ``close_rounds``, ``shape_changes`` (whether every candidate's first round called it
        on changing shapes first: the module docstring's survival), ``min_agreement`` and the
        CPU (:func:`re2_tf.machine.machine`).

    Raises:
        RuntimeError: the SavedModel itself fails to run or gives non-finite outputs.
    """
    export_dir = Path(export_dir)
    config = json.loads((export_dir / "assets" / EXPORT_CONFIG_FILE).read_text())
    found = [c for c in (candidates or installed_candidates()) if c != ("savedmodel", "f32")]
    if candidates is None:
        noxla = bool(config.get("xla")) and convertible is not None
        litert = [("tflite", "f32")] if tflite_export is not None else []
        found[:0] = (
            tensorflow_candidates(noxla, bf16_export is not None, bf16_xla_export is not None)
            + litert
        )
    unmeasured = {"backend": "savedmodel", "precision": "f32", "measured": False}
    if not found:
        return dict(unmeasured, reason=NOTHING_TO_MEASURE)
    found = [("savedmodel", "f32"), *found]
    pairs = list(pairs or [])
    if not pairs:
        return dict(unmeasured, reason="no held-out pairs to check other runtimes against")
    featurizers = export_featurizers(export_dir, config)
    convertible = Path(convertible or export_dir)
    settings = [tuple(map(int, s)) for s in (tf_threads or tf_thread_settings(threads))]
    if not settings or len(set(settings)) != len(settings) or min(map(min, settings)) < 1:
        raise ValueError(f"tf_threads must be distinct (intra, inter) pairs >= 1, got {settings}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        requests = {}
        for batch, length in shapes:
            inputs = benchmarking.table5_inputs(featurizers, batch, length)
            requests[_shape_key(batch, length)] = (
                batch,
                inputs.request(ids=True, inputs_file=Path(tmp) / f"{batch}x{length}.npz"),
            )
        # the worker draws the inputs, so it can change their shapes (not a packed pair's)
        shape_changes = all("inputs_file" not in r["options"] for _, r in requests.values())
        # every timing process first, then the outputs, scored in this process, then the
        # close calls' timing processes
        paths = []
        sources = {"savedmodel_bf16": bf16_export, "savedmodel_bf16_xla": bf16_xla_export}
        for backend, precision in found:
            row = {"backend": backend, "precision": precision, "median_ms": {}, "rounds_ms": {}}
            path = export_dir
            if backend == "tflite":
                try:
                    if tflite_export is None:
                        raise ValueError("no --format=tflite export of the model was given")
                    if isinstance(tflite_export, Exception):
                        raise tflite_export
                    path = runtimes.keep_tflite(tflite_export, export_dir)
                except ValueError as error:  # the TFLite converter's, as export_model raises
                    path, row["error"] = None, runtimes.failure(error)
            elif backend != "savedmodel":
                source = sources.get(backend, convertible)
                try:
                    path = runtimes.convert(source, backend, export_dir / "runtimes")
                except runtimes.ConversionError as error:
                    path, row["error"] = None, runtimes.failure(error)
            if backend not in TENSORFLOW_BACKENDS:
                rows.append(row)
                paths.append(path)
                continue
            for intra, inter in settings:  # one candidate per TensorFlow thread setting
                rows.append(dict(row, threads=[intra, inter], median_ms={}, rounds_ms={}))
                paths.append(path)

        def time_one(index, keys, _round):
            # one fresh process times the candidate at every shape of keys, in turn
            shapes_ = []
            for key in keys:
                batch, request = requests[key]
                options = dict(request["options"])
                if _round == 0 and shape_changes:
                    # every candidate first survives its texts changing length, as in serving
                    options["shape_changes"] = True
                shapes_.append(
                    {
                        "input_spec": request["input_spec"],
                        "batches": benchmarking.timed_batches(batch, BATCHES),
                        "seed": request["seed"],
                        "length_spread": request["length_spread"],
                        "options": options,
                    }
                )
            asked = runtimes.asked_precision(rows[index]["backend"], rows[index]["precision"])
            if asked:  # a key of the process's model: given with the first shape only
                shapes_[0]["options"]["precision"] = asked
            intra, inter = rows[index].get("threads", (threads, 1))
            timed = benchmarking.time_table5(
                paths[index],
                requests[keys[0]][1]["signature"],
                threads=intra,
                inter_op_threads=inter,
                then=shapes_[1:],
                **shapes_[0],
            )
            each = [timed, *timed.get("then", [])]
            return {key: round(t["median_ms"], 3) for key, t in zip(keys, each)}

        def time_rounds(indices, keys, count):
            # the candidates in turn, a fresh process each covering every shape of keys; the
            # SavedModel's failure is raised
            keys = tuple(keys)
            timings, failures = benchmarking.time_in_turn(
                indices, [keys], count, time_one, required=(0,)
            )
            for (index, _), medians in timings.items():
                row = rows[index]
                for by_key in medians:
                    for key, median in by_key.items():
                        row["rounds_ms"][key] = row["rounds_ms"].get(key, []) + [median]
                        row["median_ms"][key] = median_of_rounds(row["rounds_ms"][key])
            for (index, _), error in failures.items():
                rows[index].setdefault("error", runtimes.failure(error))
                rows[index].pop("median_ms", None)

        time_rounds([i for i, row in enumerate(rows) if "error" not in row], requests, rounds)
        _score(export_dir, rows, pairs)
        for key in requests if close_rounds else ():
            contenders = close_candidates(rows, key, min_agreement, close)
            if contenders:
                time_rounds(contenders, [key], close_rounds)
        for row in rows:
            log(f"serving=auto: {row['backend']} {row['precision']}: "
                f"{row.get('median_ms', row.get('error'))}")  # fmt: skip
    routes, parts = [], []
    keys = [_shape_key(batch, length) for batch, length in shapes]
    served_threads = pick_threads(rows, keys, min_agreement)
    served = _tf_rows(rows, served_threads)
    saved_ms = served[0]["median_ms"]
    for batch, length in shapes:
        key = _shape_key(batch, length)
        chosen = pick(served, key, min_agreement)
        routes.append(
            {"batch": batch, "backend": chosen["backend"], "precision": chosen["precision"]}
        )
        parts.append(
            f"{key} {chosen['backend']} {chosen['precision']} "
            f"({chosen['median_ms'][key] / saved_ms[key]:.2f}x the SavedModel's time)"
        )
    first = routes[0]
    return {
        "backend": first["backend"],
        "precision": first["precision"],
        "routes": routes,
        "reason": (
            f"on TensorFlow threads {served_threads[0]} + {served_threads[1]}, per timed "
            "batch, the fastest that agrees: " + ", ".join(parts)
        ),
        "measured": True,
        "tf_threads": served_threads,
        "tf_thread_settings": [list(s) for s in settings],
        "candidates": rows,
        "figure": FIGURE,
        "pairs": len(pairs),
        "shapes": [list(s) for s in shapes],
        "threads": threads,
        "rounds": rounds,
        "close": close,
        "close_rounds": close_rounds,
        "shape_changes": shape_changes,
        "min_agreement": min_agreement,
        **machine(),
    }


def _served_probabilities(export_dir, where, texts1, texts2):
    """The probabilities, float32 ``[pairs, labels]``, that ``where`` = ``(backend,
    precision)`` serves from ``export_dir`` on the pairs, or the ``RuntimeError`` or
    ``ValueError`` it fails with."""
    try:
        served = Predictor(export_dir, tokenize="python", backend=where[0], precision=where[1])
        return served.probabilities(texts1, texts2)
    except (RuntimeError, ValueError) as error:
        return error


def _score(export_dir, rows, pairs):
    """Score every timed candidate of ``rows`` on ``pairs`` in this process: its
    ``label_agreement`` and ``max_abs_dp`` against the SavedModel's (``rows[0]``), or its
    ``error`` (and no ``median_ms``) where it fails or gives a non-finite output. A runtime
    timed at several TensorFlow thread settings is scored once (threads change no output)."""
    texts1, texts2 = [a for a, _ in pairs], [b for _, b in pairs]
    reference = None  # the SavedModel's probabilities on the pairs
    outputs = {}  # (backend, precision) -> its probabilities or its error
    for row in rows:
        if "error" in row:
            row.pop("median_ms", None)
            continue
        where = (row["backend"], row["precision"])
        if where not in outputs:
            outputs[where] = _served_probabilities(export_dir, where, texts1, texts2)
        probabilities = outputs[where]
        if isinstance(probabilities, Exception):
            if row is rows[0]:
                raise probabilities
            row["error"] = runtimes.failure(probabilities)
            row.pop("median_ms", None)
            continue
        finite = np.isfinite(probabilities).all(axis=-1)
        if not finite.all():  # NaN or inf: never served, whatever its labels' argmax says
            if row is rows[0]:
                raise RuntimeError(f"the SavedModel's outputs are not finite on {export_dir}")
            row["error"] = f"non-finite outputs on {int((~finite).sum())} of {len(finite)} pairs"
            row.pop("median_ms", None)
            continue
        if reference is None:
            reference = probabilities
        measured = runtimes.agreement(reference, probabilities)
        row["label_agreement"] = round(measured["argmax_agreement"], 4)
        row["max_abs_dp"] = measured["max_abs_dp"]
