"""How close a model runs to what the CPU can do: FLOP counts from XLA's HLO, floors, a report.

A model's FLOPs per call are counted from the HLO XLA builds for it (``tf.function(...,
jit_compile=True).experimental_get_compiler_ir(...)(stage="hlo")``, before fusion): every
``dot`` (``MatMul``, ``BatchMatMul``, ``Tensordot``, Keras ``Dense``) costs ``2 x`` its output
elements ``x`` its contracted length, every ``convolution`` ``2 x`` its output elements ``x``
its kernel's spatial size ``x`` its input features per group. A ``while`` loop's body counts
once per iteration (:meth:`HloModule.trip_count` reads the count from the loop's condition:
Keras's LSTMs, Match-SRNN's wavefront, their gradient loops), and only instructions the result
depends on count (XLA drops the rest as dead code). That is the arithmetic a matrix unit must
do; element-wise work (activations, softmax, masks, additions) is left out, and so is the
embedding lookup (a gather, no FLOPs). For RE2's 3-block Table 5 model (batch 8, both texts 20
tokens) this is 1,868,666,400 FLOP, which ``tests/test_roofline.py`` derives by hand from the
release's layer widths, as it does an LSTM's forward and training step. TensorFlow's own
profiler counts FLOPs only for the ops that register a statistic and misses XLA-compiled
functions, so the HLO is read instead (our choice; the issue's other option).

Two floors: the *FLOP floor* of a call is its FLOPs over the CPU's measured peak
(:func:`peak_flops`, a large matmul with TensorFlow at the thread count used); the
*dependency floor* of a recurrent model is its longest chain of loop iterations that must run
one after another (:meth:`HloModule.critical_path`: a BiLSTM's two directions overlap, stacked
layers do not) times the measured time of one iteration of its body's smallest matmul
(:func:`loop_step_seconds`). No implementation on that CPU can beat the larger of the two; the
ratio of a measured time to it says how far from the hardware a model runs. :func:`report`
measures both for every model (``python -m re2_lab.cli.roofline``), :func:`markdown`
prints it, and ``docs/performance.md``'s roofline table is generated from its record.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from pathlib import Path

from re2_tf.benchmarking import pair_batch, single_position_words
from re2_tf.machine import cpu_units  # noqa: F401  (re-exported)

__all__ = [
    "ab_agreement",
    "ab_inputs",
    "ab_profiles",
    "ab_record",
    "alternate_paths",
    "dependency_floor",
    "environment",
    "function_flops",
    "function_hlo",
    "hlo_flops",
    "kind_times",
    "loop_step_seconds",
    "model_flops",
    "parse_hlo",
    "peak_flops",
    "train_step_flops",
]

_HEADER = re.compile(r"^(ENTRY\s+)?%(\S+)\s+\(.*\{\s*$")
_DEFINITION = re.compile(r"^\s*(ROOT\s+)?%(\S+)\s*=\s*(.*)$")
_OPERAND = re.compile(r"(\w+)\[([\d,]*)\](?:\{[\d,]*\})?\s+%")
_REFERENCE = re.compile(r"%([\w.\-]+)")
_COMPARE = re.compile(r"compare\(s(?:32|64)\[\] %([\w.\-]+), s(?:32|64)\[\] %([\w.\-]+)\)")
_CONSTANT = re.compile(r"^s(?:32|64)\[\] constant\((-?\d+)\)")


def _dims(text):
    return [int(x) for x in text.split(",") if x]


def _product(values):
    out = 1
    for v in values:
        out *= v
    return out


def _tuple_index(instruction):
    """The ``index`` of a ``get-tuple-element`` (not an ``/*index=5*/`` comment of its type)."""
    return int(re.search(r"\),\s*index=(\d+)", instruction.text).group(1))


def _split_type(rest):
    """``(type, op, remainder)`` of an instruction's right-hand side; the type may be a
    (nested) tuple."""
    if rest.startswith("("):
        depth, end = 0, 0
        while end == 0 or depth:
            depth += {"(": 1, ")": -1}.get(rest[end], 0)
            end += 1
        type_, rest = rest[:end], rest[end:]
    else:
        type_, _, rest = rest.partition(" ")
    match = re.match(r"\s*([\w-]+)\((.*)$", rest)
    if match is None:
        return type_, None, rest
    return type_, match.group(1), match.group(2)


@dataclasses.dataclass
class Instruction:
    """One HLO instruction: its name, result type text, opcode and the text after ``op(``."""

    name: str
    type: str
    op: str
    text: str
    root: bool = False

    def references(self):
        return _REFERENCE.findall(self.text)

    def attribute(self, key):
        match = re.search(rf"\b{key}=%([\w.\-]+)", self.text)
        return match.group(1) if match else None


@dataclasses.dataclass
class HloModule:
    """An HLO module's computations (``{name: [Instruction, ...]}`` in text order, which is a
    topological order) and the name of its entry computation."""

    computations: dict
    entry: str
    #: Memoised :meth:`live` lists and :meth:`_named` indexes, per computation.
    _memo: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def live(self, computation):
        """The instructions of a computation its result depends on, in text order: what XLA
        keeps after removing dead code (e.g. the first step Keras' TensorFlow backend computes
        before a recurrent loop only to learn the output's shape)."""
        key = ("live", computation)
        if key not in self._memo:
            instructions = self.computations[computation]
            needed = {i.name for i in instructions if i.root} or {instructions[-1].name}
            for inst in reversed(instructions):
                if inst.name in needed:
                    needed.update(inst.references())
            self._memo[key] = [i for i in instructions if i.name in needed]
        return self._memo[key]

    def _named(self, computation):
        """``{instruction name: Instruction}`` of a computation."""
        key = ("named", computation)
        if key not in self._memo:
            self._memo[key] = {i.name: i for i in self.computations[computation]}
        return self._memo[key]

    def dot_flops(self, instruction):
        """FLOPs of one ``dot`` or ``convolution`` instruction (0 for any other op)."""
        if instruction.op not in ("dot", "convolution"):
            return 0
        outputs = _product(_dims(re.match(r"\w+\[([\d,]*)\]", instruction.type).group(1)))
        operands = _OPERAND.findall(instruction.text)
        line = f"%{instruction.name} = {instruction.type} {instruction.op}(...)"
        if instruction.op == "dot":
            contracting = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", instruction.text)
            if contracting is None or not operands:
                raise ValueError(f"dot without lhs_contracting_dims: {line[:120]}")
            lhs = _dims(operands[0][1])
            return 2 * outputs * _product(lhs[i] for i in _dims(contracting.group(1)))
        labels = re.search(r"dim_labels=\w+_(\w+)->", instruction.text)
        if labels is None or len(operands) < 2:
            raise ValueError(f"convolution without dim_labels: {line[:120]}")
        kernel = _dims(operands[1][1])
        groups = re.search(r"feature_group_count=(\d+)", instruction.text)
        per_output = _product(d for d, label in zip(kernel, labels.group(1)) if label != "o")
        return 2 * outputs * per_output // (int(groups.group(1)) if groups else 1)

    def dot_shape(self, instruction):
        """``(m, k, n)`` of a ``dot``: ``m x k`` times ``k x n`` does its work (``k`` the
        contracted length, ``n`` the right operand's other elements, batch dimensions folded
        into ``m``)."""
        operands = _OPERAND.findall(instruction.text)
        rhs = _dims(operands[1][1])
        contracting = re.search(r"rhs_contracting_dims=\{([\d,]*)\}", instruction.text)
        batch = re.search(r"rhs_batch_dims=\{([\d,]*)\}", instruction.text)
        skip = set(_dims(contracting.group(1))) | set(_dims(batch.group(1)) if batch else ())
        k = _product(rhs[i] for i in _dims(contracting.group(1)))
        n = _product(d for i, d in enumerate(rhs) if i not in skip)
        outputs = _product(_dims(re.match(r"\w+\[([\d,]*)\]", instruction.type).group(1)))
        return outputs // n, k, n

    def dot_batched_shape(self, instruction):
        """``(batch, m, k, n)`` of a ``dot``: :meth:`dot_shape` with the batch taken out of
        ``m``, ``batch`` the product of the left operand's ``lhs_batch_dims`` (1 without)."""
        m, k, n = self.dot_shape(instruction)
        found = re.search(r"lhs_batch_dims=\{([\d,]*)\}", instruction.text)
        lhs = _dims(_OPERAND.findall(instruction.text)[0][1])
        batch = _product(lhs[i] for i in _dims(found.group(1))) if found else 1
        return batch, m // batch, k, n

    def _value(self, computation, name):
        """The integer a scalar instruction of ``computation`` holds (:meth:`_integers`), or
        ``None``."""
        values = self._integers(computation, name)
        return values[0] if values is not None and len(values) == 1 else None

    def _integers(self, computation, name, depth=0):
        """The integers an integer instruction of ``computation`` holds, flattened, when they
        are known before it runs: a constant; a ``convert``, ``reshape``, ``copy``,
        ``broadcast`` of a scalar, ``concatenate`` or 1-D ``slice`` of known integers (how
        TensorFlow's ``tf.shape(x)[1]`` reaches XLA); an element of a tuple; or an element of
        a finished ``while`` (a counter: its start plus the loop's trip count). ``None``
        otherwise."""
        inst = self._named(computation).get(name)
        if inst is None or depth > 50 or not re.match(r"s(32|64)\[", inst.type):
            return None
        operands = [r for r in inst.references() if r != name]

        def operand(k=0):
            if k >= len(operands):
                return None
            return self._integers(computation, operands[k], depth + 1)

        if inst.op == "constant":
            literal = re.match(r"\{?([-\d,\s]*)\}?\)", inst.text)
            return [int(v) for v in literal.group(1).split(",") if v.strip()] if literal else None
        if inst.op in ("convert", "reshape", "copy", "bitcast"):
            return operand()
        if inst.op == "broadcast":
            values, size = operand(), _product(_dims(re.match(r"\w+\[([\d,]*)\]", inst.type)[1]))
            return values * size if values is not None and len(values) == 1 else None
        if inst.op == "concatenate":
            parts = [operand(k) for k in range(len(operands))]
            return None if any(p is None for p in parts) else [v for p in parts for v in p]
        if inst.op == "slice":
            values = operand()
            bounds = re.search(r"slice=\{\[(\d+):(\d+)(?::(\d+))?\]\}", inst.text)
            if values is None or bounds is None:
                return None
            start, stop, step = (int(g) if g else 1 for g in bounds.groups())
            return values[start:stop:step]
        if inst.op == "get-tuple-element":
            source = self._named(computation)[operands[0]]
            if source.op == "tuple":
                return self._integers(
                    computation, source.references()[_tuple_index(inst)], depth + 1
                )
            if source.op == "while":
                start = self._initial(computation, source, _tuple_index(inst))
                return None if start is None else [start + self.trip_count(source, computation)]
        return None

    def _initial(self, computation, loop, index):
        """The starting value of element ``index`` of a ``while`` of ``computation``."""
        inst = self._named(computation).get(loop.references()[0])
        if inst is not None and inst.op == "tuple":
            return self._value(computation, inst.references()[index])
        return None

    def trip_count(self, loop, caller):
        """Iterations of the ``while`` instruction ``loop`` of computation ``caller``: its
        condition compares loop-carried integers with a bound (``i < c``, ``i <= c``), each
        integer stepping by 1 from its value in the loop's initial tuple, as TensorFlow's
        ``while_loop`` lowers its counters; a bound is a constant or another loop-carried
        integer that does not change (a gradient loop runs as often as its forward loop ran);
        the smallest count wins.

        Raises:
            ValueError: naming the loop, when no bound or start is known (a data-dependent
            loop).
        """
        counts = []
        pending = [loop.attribute("condition")]
        while pending:
            name = pending.pop()
            known = {}
            for inst in self.computations[name]:
                if inst.op == "call":
                    pending.append(inst.attribute("to_apply"))
                constant = _CONSTANT.match(f"{inst.type} {inst.op}({inst.text}")
                if constant:
                    known[inst.name] = int(constant.group(1))
                if inst.op == "get-tuple-element":
                    known[inst.name] = self._initial(caller, loop, _tuple_index(inst))
                compare = _COMPARE.search(f"{inst.op}({inst.text}")
                direction = re.search(r"direction=(\w+)", inst.text)
                if not (compare and direction and direction.group(1) in ("LT", "LE")):
                    continue
                start, bound = known.get(compare.group(1)), known.get(compare.group(2))
                if start is not None and bound is not None:
                    counts.append(max(0, bound + (direction.group(1) == "LE") - start))
        if not counts:
            raise ValueError(f"while loop %{loop.name}: no constant trip count in its condition")
        return min(counts)

    def _called(self, inst, computation):
        """``[(computation, times)]`` an instruction of ``computation`` runs (a loop's body
        once per iteration)."""
        if inst.op == "while":
            return [(inst.attribute("body"), self.trip_count(inst, computation))]
        if inst.op in ("call", "fusion"):
            name = inst.attribute("to_apply") or inst.attribute("calls")
            return [(name, 1)] if name else []
        if inst.op == "conditional":
            names = re.findall(r"%([\w.\-]+)", inst.text.split("branch_computations=")[-1])
            return [(n, 1) for n in names if n in self.computations]
        return []

    def _dots(self, computation):
        """The ``dot`` instructions a computation runs itself or through the computations it
        calls (a ``call``, as XLA wraps a loop body whose arguments change layout; not the
        bodies of nested loops, which :meth:`critical_path` costs on their own)."""
        dots = []
        for inst in self.live(computation):
            if inst.op == "dot":
                dots.append(inst)
            elif inst.op in ("call", "fusion"):
                for name, _ in self._called(inst, computation):
                    dots += self._dots(name)
        return dots

    def flops(self, computation=None):
        """``{"dot", "convolution", "total"}`` FLOPs of a computation (default: the entry),
        called computations included, a loop body counted once per iteration."""
        counts = {"dot": 0, "convolution": 0}
        computation = computation or self.entry
        for inst in self.live(computation):
            if inst.op in counts:
                counts[inst.op] += self.dot_flops(inst)
            for name, times in self._called(inst, computation):
                inner = self.flops(name)
                counts["dot"] += times * inner["dot"]
                counts["convolution"] += times * inner["convolution"]
        counts["total"] = counts["dot"] + counts["convolution"]
        return counts

    def critical_path(self, step_seconds, computation=None):
        """Seconds of the longest chain of loop iterations that must run one after another in
        a computation (default: the entry): an iteration of a ``while`` costs
        ``step_seconds((m, k, n))`` of its body's smallest ``dot`` (:meth:`_dots`: calls
        followed; 0 for a body without one)
        plus the critical path of loops nested in it; instructions outside loops cost
        nothing; independent loops (a BiLSTM's two directions, two texts' encoders) overlap."""
        finish = {}
        computation = computation or self.entry
        for inst in self.live(computation):
            start = max((finish.get(r, 0.0) for r in inst.references()), default=0.0)
            cost = 0.0
            for name, times in self._called(inst, computation):
                if inst.op == "while":
                    dots = self._dots(name)
                    smallest = min(dots, key=self.dot_flops, default=None)
                    step = step_seconds(self.dot_shape(smallest)) if smallest else 0.0
                    cost += times * (step + self.critical_path(step_seconds, name))
                else:
                    cost += self.critical_path(step_seconds, name)
            finish[inst.name] = start + cost
        return max(finish.values(), default=0.0)


def parse_hlo(hlo):
    """:class:`HloModule` of an HLO module's text (``stage="hlo"``: one instruction per line,
    operands written with their shapes, ``f32[8,20,150]{2,1,0} %name``); instructions before
    any computation header (a bare list, as in a test) form the entry computation."""
    computations, entry, current = {}, "entry", None
    for line in hlo.splitlines():
        header = _HEADER.match(line)
        if header:
            current = computations.setdefault(header.group(2), [])
            if header.group(1):
                entry = header.group(2)
            continue
        definition = _DEFINITION.match(line)
        if definition:
            type_, op, text = _split_type(definition.group(3))
            if op is not None:
                if current is None:
                    current = computations.setdefault("entry", [])
                root = bool(definition.group(1))
                current.append(Instruction(definition.group(2), type_, op, text, root))
    return HloModule(computations, entry)


def hlo_flops(hlo):
    """FLOPs of the ``dot`` and ``convolution`` instructions of an HLO module's text, a loop's
    body counted once per iteration (:meth:`HloModule.trip_count`).

    Args:
        hlo: str, HLO text (``stage="hlo"``), one instruction per line, operands written with
            their shapes (``f32[8,20,150]{2,1,0} %name``).

    Returns:
        ``{"dot": int, "convolution": int, "total": int}`` FLOPs (a multiply-add counts 2).

    Raises:
        ValueError: naming the line, for a ``dot`` without ``lhs_contracting_dims`` or a
        ``convolution`` without ``dim_labels``; naming the loop, for a loop whose trip count
        is not a constant.
    """
    return parse_hlo(hlo).flops()


def dependency_floor(hlo, step_seconds):
    """Seconds no implementation can beat when every loop iteration waits for the previous
    one: :meth:`HloModule.critical_path` of the module (a model without loops: 0)."""
    return parse_hlo(hlo).critical_path(step_seconds)


def function_hlo(fn, *args):
    """HLO text (``stage="hlo"``) of ``fn(*args)`` compiled by XLA (``fn`` a Python callable
    of tensors; traced once with these arguments' shapes and dtypes)."""
    import tensorflow as tf

    compiled = tf.function(fn, jit_compile=True)
    return compiled.experimental_get_compiler_ir(*args)(stage="hlo")


def function_flops(fn, *args):
    """:func:`hlo_flops` of ``fn(*args)`` (:func:`function_hlo`)."""
    return hlo_flops(function_hlo(fn, *args))


def model_flops(model, inputs, *, training=False):
    """FLOPs of one forward call of a Keras ``model`` on ``inputs`` (a dict or list of arrays;
    the batch and lengths are theirs), :func:`function_flops`."""
    return function_flops(lambda x: model(x, training=training), inputs)


def train_step_flops(model, inputs):
    """FLOPs of one training step's forward and backward pass of a Keras ``model`` on
    ``inputs`` (dropout on; the sum of the outputs and its gradient with respect to every
    trainable weight, so the loss itself, a few element-wise ops, is not counted), from the
    HLO of the step as :func:`function_flops` reads it. The optimiser's update is element-wise
    and not counted either."""
    import tensorflow as tf

    def step(x):
        with tf.GradientTape() as tape:
            outputs = model(x, training=True)
            total = tf.add_n(
                [tf.reduce_sum(tf.cast(o, tf.float32)) for o in tf.nest.flatten(outputs)]
            )
        return total, tape.gradient(total, model.trainable_variables)

    return function_flops(step, inputs)


def peak_flops(dtype="float32", size=2048, repeats=10):
    """This CPU's measured matmul rate in FLOP/s for ``dtype`` (``"float32"`` or
    ``"bfloat16"``) with TensorFlow's current thread settings: the median over ``repeats`` of
    ``2 size^3`` FLOP in one ``tf.linalg.matmul`` of two ``size x size`` matrices, after one
    untimed call. Where the CPU has no bfloat16 units, TensorFlow emulates them and the bf16
    rate comes out below the float32 one; that is the measurement, not an error."""
    import time

    import numpy as np
    import tensorflow as tf

    a = tf.cast(tf.random.normal([size, size]), dtype)
    b = tf.cast(tf.random.normal([size, size]), dtype)
    tf.linalg.matmul(a, b).numpy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        tf.linalg.matmul(a, b).numpy()
        times.append(time.perf_counter() - start)
    return 2 * size**3 / float(np.median(times))


def loop_step_seconds(shape, iterations=2000, repeats=5):
    """Measured seconds of one iteration of a loop whose only work is one ``m x k`` times
    ``k x n`` matmul that needs the previous iteration's result (``x <- tanh(x W)``, cut or
    padded with zeros back to ``m x k``), compiled by XLA: the least a recurrent step with that
    matmul can cost on this CPU at the current thread settings (the median over ``repeats``
    runs of ``iterations`` steps, after one untimed run).

    Args:
        shape: ``(m, k, n)``, e.g. :meth:`HloModule.dot_shape` of a loop body's smallest dot.
    """
    import time

    import numpy as np
    import tensorflow as tf

    m, k, n = (int(v) for v in shape)
    rng = np.random.default_rng(0)
    w = tf.constant(rng.normal(scale=1 / np.sqrt(k), size=(k, n)).astype("float32"))
    x0 = tf.constant(rng.normal(size=(m, k)).astype("float32"))

    @tf.function(jit_compile=True)
    def chain(x):
        def body(i, x):
            y = tf.tanh(tf.matmul(x, w))
            y = y[:, :k] if n >= k else tf.pad(y, [[0, 0], [0, k - n]])
            return i + 1, y

        return tf.while_loop(lambda i, x: i < iterations, body, (tf.constant(0), x))[1]

    chain(x0).numpy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        chain(x0).numpy()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) / iterations


# ------------------------------------------------------------------------------ the report
#: Export variants the report can time: name -> (format, precision, XLA, peak dtype of the
#: FLOP floor (None: no measured peak, no floor), serving backend (None: the model's own)).
#: ``savedmodel_fp32_keras`` serves RE2 through the generic Keras backend instead of its
#: folded forward pass (:mod:`re2_tf.serving.folded`); for the other models it is their
#: default export and is not timed twice.
EXPORTS = {
    "savedmodel_fp32": ("savedmodel", "fp32", True, "float32", None),
    "savedmodel_fp32_keras": ("savedmodel", "fp32", True, "float32", "keras"),
    "savedmodel_fp32_noxla": ("savedmodel", "fp32", False, "float32", None),
    "savedmodel_bf16": ("savedmodel", "bf16", True, "bfloat16", None),
    "tflite_fp32": ("tflite", "fp32", False, "float32", None),
    "tflite_int8": ("tflite", "int8", False, None, None),
}


def peaks(units=None):
    """Measured peak FLOP/s per precision (:func:`peak_flops`) at the current thread settings:
    ``{"float32": x, "bfloat16": x or None, "int8": None}`` -- bfloat16 only where the CPU
    has units for it (:func:`cpu_units`), int8 never (TensorFlow has no int8 matmul on CPU to
    time; its TFLite export is timed, without a floor)."""
    units = cpu_units() if units is None else units
    return {
        "float32": peak_flops("float32"),
        "bfloat16": peak_flops("bfloat16") if units["bfloat16"] else None,
        "int8": None,
    }


def floors(model, inputs, peak, step_seconds):
    """``(flops, sequential steps, dependency floor s, FLOP floor s)`` of one forward call of
    ``model`` on ``inputs``: :func:`hlo_flops` and :meth:`HloModule.critical_path` of its HLO
    (steps: with every iteration costing 1; floor: ``step_seconds``), FLOPs over ``peak``."""
    module = parse_hlo(function_hlo(lambda x: model(x, training=False), inputs))
    flops = module.flops()["total"]
    steps = module.critical_path(lambda shape: 1.0)
    return flops, int(steps), module.critical_path(step_seconds), flops / peak if peak else None


def serving_rows(
    model_name,
    *,
    peak,
    words,
    exports=("savedmodel_fp32",),
    variants=None,
    batch=8,
    length=20,
    throughput_batch=512,
    threads=2,
    batches=100,
    step_seconds=None,
    profile_calls=0,
    log=print,
):
    """Time each of a model's benchmark variants (its spec's ``benchmark``) in each export of
    :data:`EXPORTS` with the Table 5 protocol (:func:`re2_tf.benchmarking.time_export`:
    fresh process, ``batches`` batches of ``batch x length``, median; then pairs/s at
    ``throughput_batch``) and put it beside its floors.

    Args:
        peak: ``{dtype: FLOP/s or None}`` (:func:`peaks`).
        words: words of the FLOP count's texts (:func:`single_position_words`): every text is
            ``length`` positions long. The timed export gets the Table 5 inputs
            (:func:`re2_tf.benchmarking.table5_inputs`, seed 0: texts of ``length`` ±
            :data:`~re2_tf.benchmarking.TABLE5_LENGTH_SPREAD` positions), as ``re2-bench``.
        step_seconds: ``(m, k, n) -> s`` for the dependency floor (default:
            :func:`loop_step_seconds`, memoised).
        profile_calls: if > 0, also profile this many calls of each SavedModel export at
            the timed shape (:func:`profile_export`) and add the row's ``profile``
            (:func:`profile_summary`).

    Returns:
        list of dicts: ``model``, ``variant``, ``export``, ``flops`` (per batch),
        ``flops_throughput_batch``, ``sequential_steps``, ``dependency_floor_ms``,
        ``flop_floor_ms``, ``median_ms``, ``times_floor`` (median over the larger floor),
        ``bound`` (``"FLOPs"`` or ``"dependency"``), ``throughput_pairs_per_s``,
        ``percent_of_peak`` (at ``throughput_batch``), ``first_call_s``, ``peak_hwm_mib``
        (the timing process's own peak, MiB).
    """
    import functools
    import tempfile

    from re2_tf import benchmarking
    from re2_tf.models import get_spec

    spec = get_spec(model_name)
    step_seconds = step_seconds or functools.lru_cache(maxsize=None)(loop_step_seconds)
    rows = []
    for variant in variants or list(spec.benchmark):
        hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
        featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
        model = spec.build(3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
        small = pair_batch(featurizers, batch, length, words)
        large = pair_batch(featurizers, throughput_batch, length, words)
        flops, steps, dependency, _ = floors(model, small, None, step_seconds)
        flops_large = model_flops(model, large)["total"]
        inputs = benchmarking.table5_inputs(featurizers, batch, length)
        signature, spec_inputs = inputs.signature, inputs.spec
        timed_exports = set()
        for name in exports:
            fmt, precision, xla, dtype, backend = EXPORTS[name]
            key = (fmt, precision, xla, backend or spec.export_backend)
            if key in timed_exports:
                continue
            timed_exports.add(key)
            rate = peak.get(dtype) if dtype else None
            with tempfile.TemporaryDirectory() as tmp:
                path, _, _ = benchmarking.export_benchmark_model(
                    spec,
                    hparams,
                    Path(tmp) / "export",
                    fmt=fmt,
                    precision=precision,
                    xla=xla,
                    backend=backend,
                )
                timed = benchmarking.time_table5(
                    path,
                    **inputs.request(),
                    threads=threads,
                    batches=batches,
                    throughput_batch=throughput_batch,
                )
                traced = None
                if profile_calls and fmt == "savedmodel":
                    traced = profile_export(
                        path, signature, spec_inputs, calls=profile_calls, threads=threads
                    )
            flop_floor = flops / rate if rate else None
            floor = max(flop_floor or 0.0, dependency)
            pairs = timed.get("throughput_pairs_per_s")
            row = dict(
                model=model_name,
                variant=variant,
                export=name,
                signature=signature,
                flops=flops,
                flops_throughput_batch=flops_large,
                sequential_steps=steps,
                dependency_floor_ms=dependency * 1e3,
                flop_floor_ms=None if flop_floor is None else flop_floor * 1e3,
                median_ms=timed["median_ms"],
                times_floor=timed["median_ms"] / (floor * 1e3) if floor else None,
                bound="dependency" if dependency > (flop_floor or 0.0) else "FLOPs",
                throughput_pairs_per_s=pairs,
                percent_of_peak=(
                    100 * flops_large / throughput_batch * pairs / rate if rate and pairs else None
                ),
                first_call_s=timed["first_call_s"],
                peak_hwm_mib=timed.get("peak_hwm_mib"),
                inputs_sha256=timed.get("inputs_sha256"),
            )
            if traced is not None:
                row["profile"] = profile_summary(traced, flops, rate)
            rows.append(row)
            log(
                f"{variant} {name}: {row['median_ms']:.1f} ms, "
                f"{row['times_floor'] or float('nan'):.1f}x its {row['bound']} floor"
            )
    return rows


#: Op kinds that are matrix products: XLA's ``dot`` / ``convolution`` (alone or fused) and
#: TensorFlow's kernels outside XLA.
MATMUL_KINDS = frozenset(
    {"dot", "convolution", "fusion with dot", "fusion with convolution"}
    | {"MatMul", "_FusedMatMul", "_MklMatMul", "_MklFusedMatMul", "BatchMatMulV2"}
    | {"BatchMatMulV3", "_MklBatchMatMulV2", "Conv2D", "_FusedConv2D", "_MklNativeConv2D"}
)
#: Node kinds that are matrix products in any runtime's profile
#: (``docs/runs/roofline/runtime_profiles.py``): :data:`MATMUL_KINDS`, TensorFlow's other
#: oneDNN products, and OpenVINO's and ONNX Runtime's node types.
PRODUCT_KINDS = MATMUL_KINDS | frozenset(
    {"_MklEinsum", "_MklNativeFusedMatMul", "FullyConnected", "Convolution", "Gemm", "Conv"}
    | {"Einsum", "FusedMatMul"}
)


def profile_export(
    path,
    signature,
    input_spec,
    *,
    calls=20,
    warmup=10,
    threads=2,
    inter_op_threads=1,
    seed=0,
    precision="f32",
    inputs_file=None,
):
    """Profile ``calls`` calls of an exported SavedModel in a fresh process
    (``re2_lab/profile_worker.py``, ``tf.profiler.experimental``), after ``warmup`` calls,
    with ``threads`` intra-op threads and 1 inter-op thread; ``precision="bf16"`` under
    TensorFlow's oneDNN bfloat16 rewrite (:data:`re2_tf.serving.runtimes.TF_BF16_REWRITE`).
    The calls cycle the 4 batches of ``inputs_file`` (``.npz``,
    :func:`re2_tf.benchmarking.write_batches`) where given, else all take one batch the
    worker draws from ``input_spec``.

    Returns:
        dict: ``calls``, ``wall_ms`` (mean per call under the profiler), ``ops`` (``{op:
        exclusive ms per call, summed over threads}``: XLA thunks by HLO instruction name,
        TensorFlow kernels as ``name:Type``), ``kinds`` (``{op: opcode or kernel type}``),
        ``phases`` (one ``{phase: ms}`` per call: where its time went, from Python to XLA's
        thunks; ``re2_lab/profile_worker.py``), ``runs`` (``{op: times it ran per call}``).

    Raises:
        RuntimeError: the worker failed (its stderr's tail).
    """
    import os
    import tempfile

    from re2_tf import benchmarking

    worker = Path(__file__).parent / "profile_worker.py"
    with tempfile.TemporaryDirectory() as logdir:
        request = dict(
            path=os.fspath(path),
            signature=signature,
            inputs=input_spec,
            calls=int(calls),
            warmup=int(warmup),
            intra_op_threads=threads,
            inter_op_threads=inter_op_threads,
            seed=seed,
            logdir=logdir,
            precision=precision,
        )
        if inputs_file is not None:
            request["inputs_file"] = os.fspath(inputs_file)
        return benchmarking.run_worker(worker, request)


def kind_times(traced):
    """``({kind: ms per call}, {kind: distinct ops})`` of a profile (:func:`profile_export`'s
    result), largest time first: each op's exclusive ms summed by its kind (an XLA opcode or a
    TensorFlow kernel type; an op the trace gives no kind takes the type after its last ``:``)."""
    kinds, counts = {}, {}
    for name, ms in traced["ops"].items():
        kind = traced["kinds"].get(name, name.rsplit(":", 1)[-1])
        kinds[kind] = kinds.get(kind, 0.0) + ms
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(kinds.items(), key=lambda item: -item[1])), counts


def profile_summary(traced, flops, peak, top=4):
    """Where a profiled call's time goes (:func:`profile_export`'s result).

    Args:
        traced: the profile.
        flops: FLOPs of one call (:func:`hlo_flops`: its matrix products).
        peak: FLOP/s of the export's precision, or ``None``.
        top: how many of the largest non-matmul ops to name.

    Returns:
        dict: ``wall_ms`` (per call under the profiler), ``op_ms`` (exclusive op time summed
        over threads), ``matmul_ms`` (of :data:`MATMUL_KINDS`), ``matmul_percent_of_peak``
        (``flops`` over ``matmul_ms`` against ``peak``: how fast the products themselves run;
        thread time, so 100 % means every thread at peak), ``kinds`` (``{kind: ms}``, largest
        first), ``largest`` (``[[op, ms], ...]``: the ``top`` largest ops outside the
        products).
    """
    kinds, _ = kind_times(traced)
    matmul = sum(ms for kind, ms in kinds.items() if kind in MATMUL_KINDS)
    others = sorted(
        (
            (f"{name} ({traced['kinds'][name]})", ms)
            for name, ms in traced["ops"].items()
            if traced["kinds"][name] not in MATMUL_KINDS
        ),
        key=lambda item: -item[1],
    )
    return dict(
        wall_ms=traced["wall_ms"],
        op_ms=sum(traced["ops"].values()),
        matmul_ms=matmul,
        matmul_percent_of_peak=(100 * flops / (matmul / 1e3) / peak if matmul and peak else None),
        kinds=kinds,
        largest=[[n, ms] for n, ms in others[:top]],
    )


def synthetic_data_dir(directory, words, *, length=20, pairs=4096, seed=0):
    """Write a prepared 3-class data directory (``train.txt``, ``dev.txt``, ``test.txt``) of
    random pairs of ``length`` ``words`` each: what :func:`training_rows` trains on."""
    import numpy as np

    rng = np.random.default_rng(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", pairs), ("dev", 64), ("test", 64)):
        lines = [
            f"{' '.join(rng.choice(words, length))}\t{' '.join(rng.choice(words, length))}\t{i % 3}"
            for i in range(n)
        ]
        (directory / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def training_rows(
    models, *, peak, words, length=20, warmup=3, updates=10, jit_compile=(False,), log=print
):
    """Training speed against its floor, per model: ``re2-train`` with the model's SNLI
    learning-check recipe (``configs/<model>/snli_learning_check.flags``: its paper's batch,
    optimiser, schedule) on random pairs of ``length`` single-position ``words``
    (:func:`synthetic_data_dir`), timed by :func:`re2_lab.throughput.measure` (one
    process, ``updates`` updates after ``warmup``), beside the FLOPs of one update
    (:func:`train_step_flops` on a batch as the training pipeline pads it). With ``True`` in
    ``jit_compile``, each model is also timed XLA-compiled (``--jit_compile``).

    Returns:
        list of dicts: ``model``, ``batch_size``, ``length`` (padded), ``flops_per_update``,
        ``pairs_per_s``, ``floor_pairs_per_s`` (float32 peak / FLOPs per pair),
        ``percent_of_peak``.
    """
    import tempfile

    from re2_lab import throughput
    from re2_tf import benchmarking
    from re2_tf.train_flags import config_from_flagfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = synthetic_data_dir(Path(tmp) / "data", words, length=length)
        records = throughput.measure(
            list(models),
            data_dir,
            Path(tmp) / "records",
            modes=["one_process"],
            warmup=warmup,
            updates=updates,
            jit_compile=jit_compile,
            log=log,
        )
        for record in records:
            flagfile = throughput.REPO / record["flagfile"]
            jit = {"jit_compile": True, "deterministic": False} if record.get("jit_compile") else {}
            config = config_from_flagfile(flagfile, data_dir=data_dir, **jit)
            multiple = config.length_multiple
            if multiple is None:
                multiple = 8 if config.jit_compile else 0
            hparams = dict(config.hparams)
            featurizers = benchmarking.synthetic_featurizers(config.spec, hparams, 30000)
            model = config.spec.build(
                3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams
            )
            inputs = pair_batch(
                featurizers, config.batch_size, length, words, length_multiple=multiple
            )
            flops = train_step_flops(model, inputs)["total"]
            per_pair = flops / config.batch_size
            rows.append(
                dict(
                    model=record["model"],
                    batch_size=config.batch_size,
                    length=max(int(v.shape[1]) for v in inputs.values()),
                    flops_per_update=flops,
                    pairs_per_s=record["pairs_per_s"],
                    floor_pairs_per_s=peak["float32"] / per_pair,
                    percent_of_peak=100 * record["pairs_per_s"] * per_pair / peak["float32"],
                    jit_compile=config.jit_compile,
                )
            )
    return rows


def _ms(value):
    return "—" if value is None else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _pct(value):
    return "—" if value is None else f"{value:.0f} %"


def markdown(record, export=None):
    """The report's two Markdown tables (serving, training) with the CPU, threads and peaks
    above them, from a record written by :func:`report`; with ``export`` (a name of
    :data:`EXPORTS`), only that export's serving rows and no training table."""
    from re2_lab import throughput

    rates = ", ".join(
        f"{dtype} {rate / 1e9:.0f} GFLOP/s"
        if rate
        else f"{dtype} units present, not timed"
        if record["units"].get(dtype)
        else f"no {dtype} units"
        for dtype, rate in record["peaks"].items()
    )
    lines = [
        f"{throughput.describe_machine(record)}; {record['threads']} threads; measured peak: "
        f"{rates}.",
        "",
        f"| model | export | GFLOP per {record['batch']}×{record['length']} batch | median ms | "
        "FLOP floor ms | sequential steps | dependency floor ms | × floor | "
        f"pairs/s @ {record['throughput_batch']} | % of peak @ {record['throughput_batch']} |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in record["serving"]:
        if export and r["export"] != export:
            continue
        times = "—" if r["times_floor"] is None else f"{r['times_floor']:.1f}"
        pairs = r["throughput_pairs_per_s"]
        lines.append(
            f"| {r['variant']} | {r['export']} | {r['flops'] / 1e9:.3f} | {_ms(r['median_ms'])} "
            f"| {_ms(r['flop_floor_ms'])} | {r['sequential_steps']} | "
            f"{_ms(r['dependency_floor_ms']) if r['sequential_steps'] else '—'} | "
            f"{times} ({r['bound']}) | {'—' if not pairs else f'{pairs:,.0f}'} | "
            f"{_pct(r['percent_of_peak'])} |"
        )
    if record.get("training") and not export:
        lines += [
            "",
            "| model (training) | batch × length | GFLOP per update | pairs/s | "
            "floor pairs/s | % of peak |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in record["training"]:
            lines.append(
                f"| {r['model']}{' (XLA)' if r.get('jit_compile') else ''} | "
                f"{r['batch_size']}×{r['length']} | {r['flops_per_update'] / 1e9:.2f} | "
                f"{r['pairs_per_s']:,.1f} | "
                f"{r['floor_pairs_per_s']:,.0f} | {_pct(r['percent_of_peak'])} |"
            )
    profiled = [r for r in record["serving"] if r.get("profile")]
    if profiled and not export:
        lines += [
            "",
            "| model (profiled) | export | ms per call | thread ms in ops | in matrix products "
            "| their % of peak | largest other ops (thread ms) |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
        for r in profiled:
            p = r["profile"]
            largest = "; ".join(f"{name} {ms:.2f}" for name, ms in p["largest"])
            lines.append(
                f"| {r['variant']} | {r['export']} | {_ms(p['wall_ms'])} | {_ms(p['op_ms'])} | "
                f"{_ms(p['matmul_ms'])} | {_pct(p['matmul_percent_of_peak'])} | {largest} |"
            )
    return "\n".join(lines)


def report(
    models,
    *,
    exports=("savedmodel_fp32",),
    threads=2,
    batch=8,
    length=20,
    throughput_batch=512,
    batches=100,
    training=True,
    updates=10,
    training_jit=False,
    profile_calls=0,
    argv=(),
    log=print,
):
    """Measure this CPU's peaks and every model's serving (and training) speed against its
    floors; return the record (JSON-serialisable; :func:`markdown` prints it).

    The FLOP floor of a call is its FLOPs (:func:`hlo_flops`, element-wise work and the
    embedding lookup not counted) over the measured peak of the export's precision; the
    dependency floor is the longest chain of loop iterations that must run one after another
    (:meth:`HloModule.critical_path`), each costing the measured time of its body's smallest
    matmul in a loop of its own (:func:`loop_step_seconds`); ``× floor`` is the median over
    the larger of the two. ``% of peak`` is the FLOP rate at ``throughput_batch`` over the
    peak. Texts are ``length`` words of the bundled sample that every featuriser encodes as
    one position, so the counted and the timed problem are the same size.

    Raises:
        KeyError: an unknown model or export.
    """
    import datetime

    import tensorflow as tf

    from re2_lab import throughput
    from re2_tf import benchmarking
    from re2_tf.models import get_spec

    unknown = [e for e in exports if e not in EXPORTS]
    if unknown:
        raise KeyError(f"unknown exports {unknown}; known: {list(EXPORTS)}")
    specs = [get_spec(m) for m in models]
    try:  # a fresh process (the command); a process whose runtime already ran keeps its own
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        log("TensorFlow is already initialised in this process: its thread settings stay")
    units = cpu_units()
    peak = peaks(units)
    log("peaks: " + ", ".join(f"{k} {v / 1e9:.0f} GFLOP/s" for k, v in peak.items() if v))
    serving, words_of = [], {}
    for spec in specs:
        hparams = dict(spec.defaults(), **next(iter(spec.benchmark.values()))["hparams"])
        featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
        words_of[spec.name] = single_position_words(featurizers, benchmarking.sample_words())
        serving += serving_rows(
            spec.name,
            peak=peak,
            words=words_of[spec.name],
            exports=exports,
            batch=batch,
            length=length,
            throughput_batch=throughput_batch,
            threads=threads,
            batches=batches,
            profile_calls=profile_calls,
            log=log,
        )
    rows = []
    if training:
        words = sorted(set.intersection(*(set(w) for w in words_of.values())))
        rows = training_rows(
            models,
            peak=peak,
            words=words,
            length=length,
            updates=updates,
            jit_compile=(False, True) if training_jit else (False,),
            log=log,
        )
    return {
        "command": " ".join(["python -m re2_tf.benchmark", *argv]),
        **throughput.machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "tensorflow": tf.__version__,
        "threads": threads,
        "units": units,
        "peaks": peak,
        "batch": batch,
        "length": length,
        "throughput_batch": throughput_batch,
        "serving": serving,
        "training": rows,
    }


def ab_inputs(featurizers, batch, length, workdir):
    """Write the inputs every path of an A/B record is timed and profiled on at one shape, the
    first 4 batches of :func:`re2_tf.benchmarking.table5_inputs` with every text exactly
    ``length`` long, as ``serving_ids`` inputs to ``<workdir>/inputs_<batch>.npz``; returns
    their input spec (:func:`re2_tf.benchmarking.write_batches`)."""
    from re2_tf import benchmarking

    return benchmarking.write_batches(
        benchmarking.table5_inputs(featurizers, batch, length, length_spread=0).id_batches(),
        Path(workdir) / f"inputs_{batch}.npz",
    )


def ab_record(script, args, rounds, threads=2, **fields):
    """The head of an A/B record of ``docs/runs/roofline/`` (the scripts that time paths with
    :func:`alternate_paths`): the command that made it (``script`` with its ``--key=value``
    ``args``), the machine, the UTC date, the runtimes' versions, ``rounds`` and ``threads``,
    then ``fields``."""
    import time

    from re2_lab import throughput
    from re2_tf.serving import runtimes

    return {
        "command": f"python {script} "
        + " ".join(f'--{k}="{v}"' if " " in v else f"--{k}={v}" for k, v in args.items()),
        **throughput.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "versions": runtimes.versions(),
        "rounds": rounds,
        "threads": threads,
        **fields,
    }


@contextlib.contextmanager
def environment(variables):
    """Set the environment ``variables`` (``{name: value}``, or ``None`` for none) for the
    block, so the worker processes started inside it inherit them (an A/B of ``XLA_FLAGS``);
    the previous values come back afterwards, even on an error."""
    before = {name: os.environ.get(name) for name in variables or {}}
    os.environ.update(variables or {})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


#: The request keys :func:`_path_threads` turns into a path's thread keywords.
_THREAD_KEYS = ("intra_op_threads", "inter_op_threads")


def _path_threads(requests, name, threads):
    """A path's thread keywords for :func:`re2_tf.benchmarking.time_table5` and
    :func:`profile_export`: ``threads`` (intra-op) and ``inter_op_threads``, its ``requests``'
    ``intra_op_threads`` / ``inter_op_threads`` where given, else ``threads`` and 1."""
    request = (requests or {}).get(name, {})
    return {
        "threads": request.get("intra_op_threads", threads),
        "inter_op_threads": request.get("inter_op_threads", 1),
    }


def alternate_paths(
    paths, featurizers, shapes, rounds, workdir, *, threads=2, outputs=False, environments=None,
    requests=None,
):  # fmt: skip
    """Time several serving paths of one network alternately, each call in a fresh process, so
    that a slow spell of a shared CPU hits all alike (the A/B records under
    ``docs/runs/roofline/``).

    Per shape ``(batch, length, timed batches)``: the inputs of :func:`ab_inputs`; every path
    timed on them in turn, round by round (:func:`re2_tf.benchmarking.time_in_turn`,
    :func:`re2_tf.benchmarking.time_table5`).

    Args:
        paths: ``{name: (export or converted model path, precision or None)}``: OpenVINO's
            precision, or ``bf16`` for a SavedModel under TensorFlow's bfloat16 rewrite.
        featurizers: the network's featurisers (they make the inputs).
        shapes: ``[(batch, length, timed batches)]``.
        rounds: how many times every path is timed at every shape.
        workdir: where the inputs (and outputs) are written.
        threads: intra-op threads of each timing process.
        outputs: also return each path's probabilities on the first round's batches.
        environments: ``{name: {variable: value}}``, environment variables a path's timing
            processes get beside the ones they inherit (:func:`environment`).
        requests: ``{name: {key: value}}``, more request keys of a path's timing processes
            (``re2_tf/serving/timing_worker.py``: ``onnxruntime_config``, ...);
            ``intra_op_threads`` there replaces ``threads`` for that path, and
            ``inter_op_threads`` its one inter-op thread.

    Returns:
        ``{"<name>@<batch>": [median ms per round]}``; with ``outputs``, also
        ``{(name, batch): float32 [pairs, classes]}``.
    """
    import numpy as np

    from re2_tf import benchmarking
    from re2_tf.serving import runtimes

    workdir = Path(workdir)
    by_batch = {shape[0]: shape for shape in shapes}
    specs, probabilities = {}, {}
    for batch, length, _ in shapes:
        specs[batch] = ab_inputs(featurizers, batch, length, workdir)

    def time_one(name, batch, round_):
        path, precision = paths[name]
        options = {"inputs_file": str(workdir / f"inputs_{batch}.npz")}
        options.update(
            (k, v) for k, v in (requests or {}).get(name, {}).items() if k not in _THREAD_KEYS
        )
        path_threads = _path_threads(requests, name, threads)
        if precision:
            options["precision"] = precision
        keep = outputs and round_ == 0
        if keep:
            options["outputs_file"] = str(workdir / "outputs.npz")
        with environment((environments or {}).get(name)):
            timed = benchmarking.time_table5(
                path, runtimes.SIGNATURE, specs[batch], **path_threads,
                batches=by_batch[batch][2], options=options,
            )  # fmt: skip
        if keep:
            probabilities[(name, batch)] = np.load(workdir / "outputs.npz")["probabilities"]
        return timed["median_ms"]

    timings, _ = benchmarking.time_in_turn(paths, by_batch, rounds, time_one, required=paths)
    medians = {f"{name}@{batch}": ms for (name, batch), ms in timings.items()}
    return (medians, probabilities) if outputs else medians


def ab_agreement(outputs, reference):
    """Each path's probabilities against the ``reference`` path's at the same batch, from
    :func:`alternate_paths` with ``outputs=True``: ``{"<name>@<batch>": {"max_abs_dp": max
    |dp|, "argmax_agreement": share of pairs with the same argmax}}``."""
    import numpy as np

    return {
        f"{name}@{batch}": {
            "max_abs_dp": float(np.abs(p - outputs[(reference, batch)]).max()),
            "argmax_agreement": float(
                (p.argmax(-1) == outputs[(reference, batch)].argmax(-1)).mean()
            ),
        }
        for (name, batch), p in outputs.items()
    }


def ab_profiles(
    paths, featurizers, shapes, workdir, *, top=8, environments=None, requests=None, threads=2
):
    """Profile every SavedModel among an A/B's ``paths`` (the ones that are directories;
    converted models have no ``tf.profiler`` trace; ``bf16`` under TensorFlow's bfloat16
    rewrite, as :func:`alternate_paths` times it) once per shape on :func:`ab_inputs`'s
    batches (its file), with :func:`profile_export` (20 calls at batch <= 64, 3 above; 3
    untimed), each in ``environments``' variables for its name and with ``threads`` intra-op
    threads or its ``requests``' ``intra_op_threads`` (and ``inter_op_threads``), as
    :func:`alternate_paths` times it.

    Returns:
        ``{"<name>@<batch>": {"wall_ms", "op_ms", "kinds", "ops", "phases"}}``: ms per call
        under the profiler, thread-ms in ops, the ``top`` largest op kinds and ops
        (thread-ms), and ``{phase: median ms over the profiled calls}`` of where a call's
        time went (``re2_lab/profile_worker.py``'s ``phases``).
    """
    import statistics

    from re2_tf.serving import runtimes

    profiles = {}
    for batch, length, _ in shapes:
        input_spec = ab_inputs(featurizers, batch, length, workdir)
        for name, (path, precision) in paths.items():
            if not Path(path).is_dir():
                continue
            with environment((environments or {}).get(name)):
                traced = profile_export(
                    path,
                    runtimes.SIGNATURE,
                    input_spec,
                    calls=20 if batch <= 64 else 3,
                    warmup=3,
                    **_path_threads(requests, name, threads),
                    precision=precision or "f32",
                    inputs_file=Path(workdir) / f"inputs_{batch}.npz",
                )
            kinds, _ = kind_times(traced)
            profiles[f"{name}@{batch}"] = {
                "wall_ms": traced["wall_ms"],
                "op_ms": sum(traced["ops"].values()),
                "kinds": dict(list(kinds.items())[:top]),
                "ops": dict(sorted(traced["ops"].items(), key=lambda kv: -kv[1])[:top]),
                "phases": {
                    phase: statistics.median(call[phase] for call in traced["phases"])
                    for phase in traced["phases"][0]
                },
            }
    return profiles
