r"""CPU latency benchmark with the protocol of RE2's Table 5, for any registered model.

Table 5 (paper §3.4): a batch of 8 pairs, both texts of length 20, seconds per batch, RE2 with
1/2/3 blocks (3 encoder layers, hidden 150, 300-d embeddings); the paper reports 0.03 /
0.04 / 0.05 s on its CPU. ``--model`` picks the model; the variants timed are its spec's
``benchmark`` entries (RE2: those three models, with the paper's seconds beside them), built
with random weights over a synthetic vocabulary of ``--vocab_size`` words and fed random ids
of every input feature the model takes. Every model is **exported**
(:mod:`re2_tf.serving.export`) and timed through the exported artefact loaded in a **fresh
process** (``serving/timing_worker.py``, which never imports ``re2_tf``): first call (XLA
compilation), ``--warmup`` untimed batches, then ``--batches`` timed batches, each a fresh
draw whose texts are 20 ± 5 words long (:data:`TABLE5_LENGTH_SPREAD`) -> mean ± std s/batch,
median and p99 ms, plus throughput at
batch ``--throughput_batch`` and the worker's peak resident memory (after loading, and after
all calls: the growth is what the calls needed, e.g. FITN's ``[batch, len1, len2, d]``
interaction tensors at ``--batch=128 --length=40``).

Library: :func:`run_benchmark` (a model's variants), :func:`time_export` (any export).
Command line (:mod:`re2_tf.cli.benchmark`)::

    # Table 5: RE2 1/2/3 blocks, random weights, vocabulary 30,000
    re2-bench --intra_op_threads=2 --inter_op_threads=1
    re2-bench --model=re2 --variants="RE2 3 blocks" --xla=false
    re2-bench --format=tflite --precision=int8

    # any exported SavedModel signature (model-agnostic)
    re2-bench --saved_model=exports/snli --signature=serving_ids \
        --input_spec='{"text1": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 1000},
                       "text2": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 1000}}'
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import keras
import numpy as np

from re2_tf.data.datasets import BUNDLED
from re2_tf.data.features import FEATURIZERS
from re2_tf.data.pipeline import encode_examples, make_dataset
from re2_tf.data.readers import PairExample
from re2_tf.data.vocab import Vocab
from re2_tf.machine import machine
from re2_tf.models import count_parameters, get_spec
from re2_tf.serving import runtimes
from re2_tf.serving.export import export_model
from re2_tf.serving.files import TFLITE_FILE
from re2_tf.serving.timing_worker import inputs_digest, make_inputs, process_memory_mib
from re2_tf.training.losses import output_kind

__all__ = [
    "THEN_KEYS",
    "Table5Inputs",
    "benchmark_inputs",
    "exit_status",
    "export_benchmark_model",
    "features_spec",
    "ids_spec",
    "inherited_memory",
    "markdown_table",
    "pair_batch",
    "process_memory_mib",
    "run_benchmark",
    "sample_words",
    "single_position_words",
    "synthetic_featurizers",
    "table5_inputs",
    "run_worker",
    "text_spec",
    "timed_batches",
    "time_export",
    "time_in_turn",
    "time_table5",
    "write_batches",
]

WORKER = Path(__file__).resolve().parent / "serving" / "timing_worker.py"


def exit_status(returncode):
    """How a child process ended, from its ``returncode`` (non-zero): ``"killed by SIGSEGV"``
    for a signal (a runtime's crash writes no traceback), else ``"exit status <n>"``."""
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


def run_worker(script, request, *, timeout=1800):
    """Run a worker script (such as ``serving/timing_worker.py``) in a
    fresh Python process with ``request`` as its JSON argument; its last stdout line, parsed.

    Raises:
        RuntimeError: naming the script, ``request["path"]`` and the exit status (or the
            signal that killed the worker), with the worker's stderr tail, if it fails.
    """
    proc = subprocess.run(
        [sys.executable, str(script), json.dumps(request)],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{Path(script).stem} failed on {request.get('path')} "
            f"({exit_status(proc.returncode)}):\n"
            f"{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: the keys of one of :func:`time_export`'s ``then`` items (the first two required)
THEN_KEYS = ("input_spec", "batches", "warmup", "seed", "length_spread", "options")


def time_export(
    path,
    signature,
    input_spec,
    *,
    batches=100,
    warmup=10,
    intra_op_threads=0,
    inter_op_threads=0,
    throughput_batch=0,
    throughput_batches=5,
    seed=0,
    length_spread=0,
    timeout=1800,
    options=None,
    then=(),
):
    """Time an exported model in a fresh Python subprocess.

    Args:
        path: SavedModel directory, or ``.tflite``, ``.onnx`` or OpenVINO ``.xml`` file.
        signature: signature name.
        input_spec: ``{input name: {"dtype", "shape", "low", "high" | "words"}}`` (see
            ``serving/timing_worker.py``); the first input's ``shape[0]`` is the batch.
        batches, warmup: timed / untimed batches (after the first call), each a fresh draw
            of ``input_spec`` (unless ``options`` gives an ``inputs_file``).
        length_spread: each text's length is drawn per row from ``length ± length_spread``
            (0: every text ``length`` long; ``serving/timing_worker.py``).
        intra_op_threads, inter_op_threads: thread pools (0 = default; TFLite uses intra).
        throughput_batch: if > 0, also measure pairs/s at this batch size.
        options: more request keys of ``serving/timing_worker.py`` (``inputs_file``,
            ``outputs_file``, ``precision``).
        then: more inputs timed after these in the same process, on the same loaded model
            (the worker's ``then``): each ``{"input_spec": ..., "batches": ...}``, optionally
            ``warmup`` (default ``warmup``), ``seed``, ``length_spread`` (default these
            arguments') and ``options`` (timing keys only; the model's are this call's).

    Returns:
        dict with ``first_call_s``, ``mean_s``, ``std_s``, ``median_ms``, ``p99_ms``,
        ``throughput_pairs_per_s``, ``interpreter``, ``times_s``, ``length_spread``,
        ``load_average`` (the 1-minute load before and after timing); with ``then``, also
        ``then``: one such dict per item, in order.

    Raises:
        RuntimeError: with the worker's stderr tail if it fails.
        ValueError: a ``then`` item without ``input_spec`` or ``batches``, or with other keys.
    """
    later = []
    for item in then:
        if not {"input_spec", "batches"} <= set(item) <= set(THEN_KEYS):
            raise ValueError(
                "a then item is {input_spec, batches[, warmup, seed, length_spread, options]}, "
                f"got keys {sorted(item)}"
            )
        later.append(
            dict(
                inputs=item["input_spec"],
                batches=int(item["batches"]),
                warmup=int(item.get("warmup", warmup)),
                throughput_batch=0,
                seed=item.get("seed", seed),
                length_spread=int(item.get("length_spread", length_spread)),
                **(item.get("options") or {}),
            )
        )
    request = dict(
        path=os.fspath(path),
        signature=signature,
        inputs=input_spec,
        batches=int(batches),
        warmup=int(warmup),
        intra_op_threads=intra_op_threads,
        inter_op_threads=inter_op_threads,
        throughput_batch=throughput_batch,
        throughput_batches=throughput_batches,
        seed=seed,
        length_spread=int(length_spread),
        **(options or {}),
    )
    if later:
        request["then"] = later
    result = run_worker(WORKER, request, timeout=timeout)
    for timed in [result, *result.get("then", [])]:
        times = np.asarray(timed["times_s"])
        timed.update(
            mean_s=float(times.mean()),
            std_s=float(times.std()),
            median_ms=float(np.median(times) * 1e3),
            p99_ms=float(np.percentile(times, 99) * 1e3),
        )
    return result


#: Table 5 timing: each text's length is drawn per row from 20 ± this many words (mean 20), so
#: every batch has fresh lengths and an export that compiles per length cannot hide.
TABLE5_LENGTH_SPREAD = 5


#: Largest batch timed with the full count of batches (:func:`timed_batches`).
SMALL_BATCH = 64


def timed_batches(batch, batches=100):
    """How many batches are timed at ``batch`` pairs: ``batches`` (Table 5's 100 by default)
    up to :data:`SMALL_BATCH` pairs, ``batches // 20`` (at least 5) above, so a batch of 512
    is timed on 5 batches, not 100 (our rule; a big batch's median moves less)."""
    return batches if batch <= SMALL_BATCH else max(5, batches // 20)


def time_table5(
    path, signature, input_spec, *, threads, batches=100, throughput_batch=0, then=(),
    inter_op_threads=1, **kw,
):  # fmt: skip
    """:func:`time_export` with the Table 5 protocol every re2_tf latency figure uses: a fresh
    process, ``threads`` intra-op threads and one inter-op thread (``inter_op_threads``: more,
    for a measurement of TensorFlow's inter-op pool itself), ``min(10, batches)``
    untimed batches after the first call, then ``batches`` timed ones (median reported), every
    batch a fresh draw with text lengths ``length ±`` :data:`TABLE5_LENGTH_SPREAD`; ``kw`` as
    :func:`time_export`'s (``options``, ``seed``, ``timeout``, ``length_spread``). ``then``:
    more shapes timed so after these in the same process (each ``{"input_spec", "batches",
    "options"}``; their warm-up ``min(10, batches)`` too), as :func:`time_export`'s."""
    kw.setdefault("length_spread", TABLE5_LENGTH_SPREAD)
    then = [dict(item, warmup=min(10, int(item.get("batches", 0)))) for item in then]
    return time_export(
        path,
        signature,
        input_spec,
        batches=batches,
        warmup=min(10, batches),
        intra_op_threads=threads,
        inter_op_threads=inter_op_threads,
        throughput_batch=throughput_batch,
        then=then,
        **kw,
    )


def time_in_turn(paths, shapes, rounds, time_one, *, required=()):
    """Time every path at every shape ``rounds`` times, the paths in turn: round by round,
    shape by shape, each path once, so that a slow spell of a shared CPU falls on every path
    alike rather than on whichever one it met (each ``time_one`` call is expected to time in a
    fresh process, as :func:`time_table5` does). The serving choice
    (:func:`re2_tf.serving.serving_choice.choose_serving`) times its candidates with it.

    Args:
        paths: the paths' keys (any hashable), in the order they are timed within a shape.
        shapes: the shapes' keys, in order.
        rounds: how many times each path is timed at each shape, at least 1.
        time_one: ``time_one(path, shape, round_)`` -> that call's timing (any value). A
            ``RuntimeError`` from it marks ``(path, shape)`` failed: not timed again.
        required: paths whose ``RuntimeError`` is raised, not recorded (a reference path
            without which the other timings mean nothing).

    Returns:
        ``(timings, failures)``: ``{(path, shape): [timing per round it ran]}`` for every pair
        and ``{(path, shape): RuntimeError}`` for the pairs that failed (their timings stop
        at the round before).

    Raises:
        ValueError: if ``rounds`` is below 1 or a path or shape repeats.
        RuntimeError: a ``required`` path's failure.
    """
    paths, shapes = list(paths), list(shapes)
    if int(rounds) < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    for name, keys in (("path", paths), ("shape", shapes)):
        if len(set(keys)) != len(keys):
            raise ValueError(f"a {name} is listed twice: {keys}")
    timings = {(path, shape): [] for path in paths for shape in shapes}
    failures = {}
    for round_ in range(int(rounds)):
        for shape in shapes:
            for path in paths:
                if (path, shape) in failures:
                    continue
                try:
                    timings[(path, shape)].append(time_one(path, shape, round_))
                except RuntimeError as error:
                    if path in required:
                        raise
                    failures[(path, shape)] = error
    return timings, failures


def features_spec(featurizers, batch, length):
    """Input spec of ``serving_ids`` for any model: every feature the featurisers produce,
    ``[batch, length, *inner]``, ids uniform over real entries (2 .. vocabulary size - 1; 0/1
    flags for float features)."""
    spec = {}
    for featurizer in featurizers:
        for feature in featurizer.specs():
            integer = feature.dtype.startswith("int")
            spec[feature.name] = {
                "dtype": feature.dtype,
                "shape": [batch, length, *feature.inner_shape],
                "low": 2 if integer else 0,
                "high": max(int(featurizer.vocab_size or 2), 3) if integer else 2,
                "side": feature.side,
            }
    return spec


SAMPLE_TEXT = BUNDLED / "sample" / "train.txt"


def text_spec(batch, length, words):
    """Input spec of ``serving_default``: ``text1``/``text2`` strings of ``length`` words drawn
    uniformly from ``words``."""
    one = {"dtype": "string", "shape": [batch, length], "words": list(words)}
    return {"text1": dict(one, side="text1"), "text2": dict(one, side="text2")}


def sample_words(path=SAMPLE_TEXT):
    """The distinct alphabetic words of the bundled SNLI sample's texts (sorted): real English
    words for models timed on raw text."""
    words = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        for text in line.split("\t")[:2]:
            words.update(w for w in text.split() if w.isalpha())
    return sorted(words)


def benchmark_inputs(featurizers, batch, length):
    """``(signature, input spec)`` of :func:`table5_inputs` (the fresh-draw spec the timing
    worker draws from)."""
    inputs = table5_inputs(featurizers, batch, length)
    return inputs.signature, inputs.spec


def single_position_words(featurizers, words):
    """The ``words`` every featuriser encodes as one position of a text (WordPiece: one
    sub-word), so that a text of ``n`` of them is ``n`` positions long and a batch of such
    texts needs no padding. One :func:`re2_tf.data.pipeline.encode_examples` call encodes
    every word once alone and once doubled."""
    candidates = ["the", *words]
    examples = [PairExample(t, t, 0) for w in candidates for t in (w, f"{w} {w}")]
    features = encode_examples(examples, featurizers).features

    def positions(k):
        return {name: len(values[k]) for name, values in features.items()}

    one, two = positions(0), positions(1)
    return [
        w
        for k, w in enumerate(candidates[1:], start=1)
        if positions(2 * k) == one and positions(2 * k + 1) == two
    ]


def pair_batch(featurizers, batch, length, words, *, length_multiple=0, seed=0):
    """Input features of ``batch`` pairs whose texts are ``length`` random ``words`` each,
    padded as the training pipeline pads them (to a multiple of ``length_multiple``)."""
    rng = np.random.default_rng(seed)
    examples = [
        PairExample(" ".join(rng.choice(words, length)), " ".join(rng.choice(words, length)), 0)
        for _ in range(batch)
    ]
    dataset = make_dataset(
        encode_examples(examples, featurizers),
        batch_size=batch,
        training=False,
        with_labels=False,
        length_multiple=length_multiple,
    )
    return next(iter(dataset))


@dataclasses.dataclass(frozen=True)
class Table5Inputs:
    """The inputs one model is timed on (:func:`table5_inputs` makes them): every latency
    re2_tf and its lab report -- ``re2-bench``, the comparison, the roofline, the runtimes
    table -- times these, so one model has one latency definition.

    Attributes:
        signature: ``serving_ids`` (random ids of every feature) or, for a packed-pair model,
            ``serving_default`` (raw texts).
        spec: the timing worker's input spec (``serving/timing_worker.py``): what it draws.
        featurizers: the model's featurisers (they encode the texts for :meth:`id_batches`).
        length_spread: each row's length is drawn from ``length ± length_spread`` (per side).
        seed: the seed of the worker's ``numpy.random.default_rng``.
    """

    signature: str
    spec: dict
    featurizers: tuple
    length_spread: int
    seed: int

    @property
    def batch(self):
        """Pairs per batch (int)."""
        return self.spec[next(iter(self.spec))]["shape"][0]

    def batches(self, count=4):
        """The first ``count`` batches the timing worker draws for :attr:`signature` (its
        first call, warm-up and timed batches draw on from the same generator):
        ``[{input name: np.ndarray}]``, ids ``int32``/``float32`` ``[batch, width, ...]``
        (``width`` the longest row, padding 0) or texts (object ``[batch]``)."""
        rng = np.random.default_rng(self.seed)
        return [make_inputs(self.spec, self.batch, rng, self.length_spread) for _ in range(count)]

    def id_batches(self, count=4):
        """:meth:`batches` as ``serving_ids`` inputs (a converted model's signature): the
        same arrays for an id model; for a packed-pair model, the same texts encoded by its
        featurisers and padded to the batch's longest pair, as the training pipeline does."""
        batches = self.batches(count)
        if self.signature == runtimes.SIGNATURE:
            return batches
        return [_encode_texts(self.featurizers, b["text1"], b["text2"]) for b in batches]

    def digest(self, ids=False):
        """The timing worker's ``inputs_sha256`` of these inputs (of :meth:`id_batches` with
        ``ids``): a record with this digest timed them."""
        return inputs_digest(self.id_batches() if ids else self.batches())

    def request(self, *, ids=False, inputs_file=None):
        """``time_export`` / ``time_table5`` keyword arguments (``signature``, ``input_spec``,
        ``seed``, ``length_spread``, ``options``) timing these inputs: fresh draws by the
        worker; with ``ids`` (a converted model's ``serving_ids``) and a packed-pair model,
        whose ids the worker cannot draw, :meth:`id_batches` written to ``inputs_file``
        (``.npz``) and cycled through.

        Raises:
            ValueError: ``ids`` for a packed-pair model without ``inputs_file``.
        """
        kw = dict(seed=self.seed, length_spread=self.length_spread, options={})
        if not ids or self.signature == runtimes.SIGNATURE:
            return dict(kw, signature=self.signature, input_spec=self.spec)
        if inputs_file is None:
            raise ValueError("a packed-pair model's serving_ids inputs need an inputs_file")
        spec = write_batches(self.id_batches(), inputs_file)
        kw["options"] = {"inputs_file": str(inputs_file)}
        return dict(kw, signature=runtimes.SIGNATURE, input_spec=spec)


def _encode_texts(featurizers, texts1, texts2):
    examples = [PairExample(str(a), str(b), 0) for a, b in zip(texts1, texts2)]
    dataset = make_dataset(
        encode_examples(examples, featurizers),
        batch_size=len(examples),
        training=False,
        with_labels=False,
    )
    return {k: np.asarray(v) for k, v in next(iter(dataset)).items()}


def table5_inputs(featurizers, batch=8, length=20, *, length_spread=None, seed=0):
    """The one definition of the Table 5 inputs a model is timed on (:class:`Table5Inputs`).

    Per batch of ``batch`` pairs, from ``numpy.random.default_rng(seed)`` (one generator for
    all batches, in order), for each input of the spec in turn: a side's row lengths, once per
    side, ``rng.integers(max(length - length_spread, 1), length + length_spread + 1, batch)``;
    then ids ``rng.integers(low, high, [batch, longest row, ...])`` with each row's tail set
    to 0, or texts of ``rng.choice(words, n)`` joined by spaces per row
    (``serving/timing_worker.py``'s ``make_inputs``).

    What is drawn: ids uniform over every feature's real entries (:func:`features_spec`:
    2 .. vocabulary size - 1) through ``serving_ids``; or -- when a feature packs both texts
    into one sequence (side ``pair``, BERT's ``[CLS] a [SEP] b [SEP]``), which random ids
    cannot form -- raw texts through ``serving_default``, of the bundled sample's words that
    each featuriser encodes as one position (:func:`single_position_words` of
    :func:`sample_words`), so a text of ``n`` words is ``n`` positions long; tokenisation and
    packing are in the time.

    Args:
        featurizers: the model's featurisers.
        batch, length: pairs per batch and mean text length (Table 5: 8 and 20).
        length_spread: default :data:`TABLE5_LENGTH_SPREAD`.
        seed: the generator's seed.
    """
    featurizers = tuple(featurizers)
    if length_spread is None:
        length_spread = TABLE5_LENGTH_SPREAD
    if any(s.side == "pair" for f in featurizers for s in f.specs()):
        words = single_position_words(featurizers, sample_words())
        signature, spec = "serving_default", text_spec(batch, length, words)
    else:
        signature, spec = runtimes.SIGNATURE, features_spec(featurizers, batch, length)
    return Table5Inputs(signature, spec, featurizers, int(length_spread), int(seed))


def write_batches(batches, path):
    """Write ``batches`` (``[{name: np.ndarray}]``) to ``path`` (``.npz``) as the timing
    worker's ``inputs_file``; return their input spec."""
    np.savez(path, **{f"{i}/{k}": v for i, b in enumerate(batches) for k, v in b.items()})
    return {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in batches[0].items()}


def ids_spec(batch, length, vocab_size):
    """Input spec of a word-id model's ``serving_ids``: int32 ``text1``/``text2``
    ``[batch, length]``."""
    one = {"dtype": "int32", "shape": [batch, length], "low": 2, "high": int(vocab_size)}
    return {"text1": dict(one, side="text1"), "text2": dict(one, side="text2")}


def synthetic_featurizers(spec, hparams, vocab_size):
    """The model's featurisers over a synthetic vocabulary ``w2 .. w<vocab_size-1>``."""
    words = [f"w{i}" for i in range(2, vocab_size)]
    vocab = Vocab(words)
    featurizers = []
    for kind, options in spec.feature_options(hparams).items():
        featurizer = FEATURIZERS[kind].create(options, vocab)
        featurizer.fit(words)
        featurizers.append(featurizer)
    return featurizers


def export_benchmark_model(
    spec,
    hparams,
    export_dir,
    *,
    vocab_size=30000,
    num_classes=3,
    fmt="savedmodel",
    precision="fp32",
    xla=True,
    seed=0,
    plain_dir=None,
    backend=None,
):
    """Build ``spec``'s model with ``hparams`` and random weights over a synthetic vocabulary,
    export it (through serving ``backend``, default the spec's ``export_backend``); return
    ``(path, parameters outside the embedding, featurizers)``.

    With ``plain_dir``, the same network is also written there with Keras' own
    ``model.export`` (signature ``serving_default`` over the model's inputs): the baseline a
    user gets without re2_tf's export."""
    keras.utils.set_random_seed(seed)
    hparams = dict(spec.defaults(), **hparams)
    featurizers = synthetic_featurizers(spec, hparams, vocab_size)
    model = spec.build(num_classes, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
    export_model(
        model,
        export_dir,
        featurizers=featurizers,
        backend=backend or spec.export_backend,
        output=output_kind(spec, hparams),
        label_names=[str(i) for i in range(num_classes)],
        fmt=fmt,
        precision=precision,
        xla=xla,
    )
    if plain_dir is not None:
        model.export(str(plain_dir), format="tf_saved_model", verbose=False)
    path = Path(export_dir) / TFLITE_FILE if fmt == "tflite" else Path(export_dir)
    return path, count_parameters(model), featurizers


def _memory(row):
    """The memory cell of a row: the worker's own peak after the timed batches and its growth
    over the loaded model (``batches_hwm_mib``, ``loaded_hwm_mib``); a record from before them
    gives ``getrusage``'s ``peak_rss_mib`` / ``loaded_rss_mib`` (``serving/timing_worker.py``)."""
    for peak, loaded in (("batches_hwm_mib", "loaded_hwm_mib"), ("peak_rss_mib", "loaded_rss_mib")):
        if row.get(peak) is not None and row.get(loaded) is not None:
            return f"{row[peak]:,.0f} (+{row[peak] - row[loaded]:,.0f})"
    return "—"


def inherited_memory(rows):
    """Whether ``rows`` (``time_export`` results, or records) give memory only as
    ``getrusage``'s ``peak_rss_mib`` -- recorded before the worker measured its own ``VmHWM``,
    so their figure is at least the peak of the process that started the worker, not the
    worker's own."""
    return any(r.get("peak_rss_mib") is not None for r in rows) and not any(
        "peak_hwm_mib" in r for r in rows
    )


def markdown_table(rows, batch, length, throughput_batch):
    """Rows of ``{"model", "params", **time_export result}`` -> Markdown table string. The
    memory column: the timing process's own peak after the timed batches, MiB, and in brackets
    how much the calls added over the loaded model (``getrusage``'s peak RSS for rows recorded
    before that, :func:`inherited_memory`)."""
    served = f"pairs/s @ batch {throughput_batch}" if throughput_batch else "pairs/s (not timed)"
    memory = "peak RSS MiB" if inherited_memory(rows) else "own peak MiB after the batches"
    lines = [
        f"| model | params (w/o emb.) | mean ± std s/batch ({batch}×{length}) | median ms | "
        f"p99 ms | first call s | {served} | {memory} "
        f"(+ over loaded) | paper s/batch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        tput = r.get("throughput_pairs_per_s")
        lines.append(
            f"| {r['model']} | {'—' if r['params'] is None else format(r['params'], ',')} | "
            f"{r['mean_s']:.4f} ± {r['std_s']:.4f} | "
            f"{r['median_ms']:.1f} | {r['p99_ms']:.1f} | {r['first_call_s']:.2f} | "
            f"{'—' if not tput else f'{tput:,.0f}'} | {_memory(r)} | {r.get('paper', '—')} |"
        )
    return "\n".join(lines)


def benchmark_record(rows, *, argv=(), settings=None):
    """A latency measurement as a record (``re2-bench --json_out``): ``{"command": "re2-bench
    <argv>", "settings": settings, **re2_tf.machine.machine(), "date": <UTC ISO date>, "rows": rows
    without their per-batch times}``."""
    return {
        "command": " ".join(["re2-bench", *argv]),
        "settings": dict(settings or {}),
        **machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "rows": [{k: v for k, v in r.items() if k != "times_s"} for r in rows],
    }


def run_benchmark(
    model="re2",
    variants=None,
    *,
    batch=8,
    length=20,
    batches=100,
    warmup=10,
    vocab_size=30000,
    fmt="savedmodel",
    precision="fp32",
    xla=True,
    intra_op_threads=0,
    inter_op_threads=0,
    throughput_batch=512,
    workdir=None,
    plain=False,
    runtime=None,
    length_spread=None,
):
    """Export each benchmark variant of ``model``'s spec (RE2: Table 5's 1/2/3 blocks) and
    time it with the Table 5 protocol; return ``(rows, markdown)``. ``plain`` adds a row per
    variant for the same network exported with Keras' ``model.export``. ``runtime``
    (``openvino``, ``onnxruntime``): time instead the ``xla=False`` export's ``serving_ids``
    converted for it (:func:`re2_tf.serving.runtimes.convert`). Inputs:
    :func:`table5_inputs` (seed 0): every timed batch a fresh draw whose texts are ``length ±
    length_spread`` long (default :data:`TABLE5_LENGTH_SPREAD`); a converted packed-pair model
    cycles through their first 4 batches encoded (:meth:`Table5Inputs.request`).

    Raises:
        KeyError: an unknown model or variant.
    """
    if length_spread is None:
        length_spread = TABLE5_LENGTH_SPREAD
    spec = get_spec(model)
    xla = xla and not runtime  # the converters need the xla=False export
    variants = list(spec.benchmark) if not variants else list(variants)
    unknown = [v for v in variants if v not in spec.benchmark]
    if unknown:
        raise KeyError(f"{model} has no benchmark variant {unknown}; known: {list(spec.benchmark)}")
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for k, label in enumerate(variants):
            entry = spec.benchmark[label]
            plain_dir = Path(tmp) / f"plain{k}" if plain else None
            path, params, featurizers = export_benchmark_model(
                spec,
                entry["hparams"],
                Path(tmp) / f"model{k}",
                vocab_size=vocab_size,
                fmt=fmt,
                precision=precision,
                xla=xla,
                plain_dir=plain_dir,
            )
            inputs = table5_inputs(featurizers, batch, length, length_spread=length_spread)
            request, kind = inputs.request(), f"{fmt}, {precision}"
            if runtime:
                path = runtimes.convert(path, runtime, Path(tmp) / f"{runtime}{k}")
                kind = f"{runtime}, fp32"
                request = inputs.request(ids=True, inputs_file=Path(tmp) / f"inputs{k}.npz")
                # OpenVINO's default is bf16 where the CPU has it
                request["options"]["precision"] = "f32"
            signature = request.pop("signature")
            timed = [
                (
                    path,
                    signature,
                    f"{label} ({kind}"
                    f"{', XLA' if xla and fmt == 'savedmodel' else ''}"
                    f"{', raw text' if signature == 'serving_default' else ''})",
                )
            ]
            if plain and signature == "serving_default":
                raise ValueError(
                    f"{model}: --plain_export times a Keras export over the "
                    "model's input features, which random ids cannot form for "
                    "a packed pair; time it without --plain_export"
                )
            if plain:
                timed.append((plain_dir, "serving_default", f"{label} (plain Keras model.export)"))
            for target, signature, name in timed:
                result = time_export(
                    target,
                    **dict(request, signature=signature),
                    batches=batches,
                    warmup=warmup,
                    intra_op_threads=intra_op_threads,
                    inter_op_threads=inter_op_threads,
                    throughput_batch=0 if "inputs_file" in request["options"] else throughput_batch,
                )
                result.update(model=name, params=params, paper=entry.get("paper_seconds", "—"))
                rows.append(result)
    return rows, markdown_table(rows, batch, length, throughput_batch)
