"""Profile one exported SavedModel in this (fresh) process; run as a script, never imported.

Invoked by :func:`re2_lab.roofline.profile_export` as ``python profile_worker.py '<json
request>'``; like ``timing_worker.py`` (whose input maker it uses) it imports only TensorFlow
and NumPy, never ``re2_tf``. It warms the signature up, runs ``calls`` calls under
``tf.profiler.experimental`` and reads the trace back (the XSpace protobuf TensorFlow writes,
``*.xplane.pb``). Prints one JSON line.

Request keys: ``path``, ``signature``, ``inputs``, ``seed``, ``intra_op_threads``,
``inter_op_threads``, ``inputs_file`` as in ``timing_worker.py`` (with ``inputs_file`` the
warm-up and profiled calls cycle its 4 batches; without it every call gets one batch drawn
from ``inputs``); ``calls`` (profiled calls), ``warmup``
(calls before the profiler starts), ``logdir`` (where the trace is written); ``precision``
``bf16`` turns on TensorFlow's oneDNN bfloat16 rewrite for the process, as in
``timing_worker.py`` (``re2_tf.serving.runtimes.TF_BF16_REWRITE``).

Output keys:
    calls: profiled calls.
    wall_ms: mean wall time of a profiled call, ms (the profiler adds a little).
    ops: ``{op name: ms per call}``, the *exclusive* time of each op (time inside it minus
        time inside the ops it encloses, e.g. a ``while`` thunk's body), summed over every
        thread. Ops are the XLA CPU runtime's thunks (events carrying an ``hlo_op`` stat),
        named by their HLO instruction, and TensorFlow's kernels outside XLA (events
        ``name:Type`` off the Python thread), named ``name:Type``; the executors' and Python's
        own events are not ops.
    phases: one ``{phase: ms}`` per profiled call, where its wall time went
        (:func:`call_phases`, plus ``python``: the call's wall time in this process, measured
        with ``time.perf_counter``, minus its ``execute`` span).
    kinds: ``{op name: kind}``: an XLA instruction's opcode from the optimised HLO module the
        trace carries (``dot``, ``convolution``, ``concatenate``, ...; a fusion is ``fusion``,
        or ``fusion with dot`` / ``fusion with convolution`` when its fused computation holds
        one), a TensorFlow kernel's type (``MatMul``, ``_MklSoftmax``, ...).
    runs: ``{op name: events per call}``, how many times each op ran in a call, counted over
        every thread (a thunk inside a ``while`` body runs once per iteration).
"""

import glob
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

# The library's timing worker (a script beside re2_tf/benchmarking.py, never imported as
# re2_tf: this process imports only TensorFlow) gives the input maker.
_RE2_TF = importlib.util.find_spec("re2_tf").submodule_search_locations[0]  # not imported
sys.path.insert(0, str(Path(_RE2_TF) / "serving"))

from timing_worker import TF_BF16_REWRITE_LISTS, make_inputs, read_batches  # noqa: E402


def hlo_kinds(space):
    """``{instruction name: kind}`` of every HLO module in the trace's metadata plane (see
    ``kinds`` in the module docstring)."""
    from tensorflow.compiler.xla.service import hlo_pb2

    kinds = {}
    for plane in space.planes:
        stats = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for meta in plane.event_metadata.values():
            for stat in meta.stats:
                if stats.get(stat.metadata_id) != "Hlo Proto":
                    continue
                proto = hlo_pb2.HloProto()
                proto.ParseFromString(stat.bytes_value)
                computations = {c.id: c for c in proto.hlo_module.computations}
                for computation in proto.hlo_module.computations:
                    for inst in computation.instructions:
                        kind = inst.opcode
                        if kind == "fusion":
                            fused = {
                                i.opcode
                                for c in inst.called_computation_ids
                                for i in computations[c].instructions
                            }
                            kind = next(
                                (f"fusion with {k}" for k in ("dot", "convolution") if k in fused),
                                "fusion",
                            )
                        kinds[inst.name] = kind
    return kinds


def _is_kernel(line, name):
    """Whether an event named ``name`` on the trace line ``line`` is a TensorFlow kernel
    outside XLA: ``name:Type`` off the Python thread (the executors' and Python's own events
    have spaces, ``::`` or no type)."""
    return line != "python" and ":" in name and " " not in name and "::" not in name


def exclusive_op_times(space):
    """``({op name: total exclusive picoseconds}, {op name: number of events})`` over every
    line of every plane of an XSpace (see the module docstring)."""
    totals, counts = {}, {}
    for plane in space.planes:
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        stats = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            events = []
            for event in line.events:
                name = names.get(event.metadata_id, "")
                xla = [s for s in event.stats if stats.get(s.metadata_id) == "hlo_op"]
                if xla:
                    name = stats.get(xla[0].ref_value, name)
                elif not _is_kernel(line.name, name):
                    continue
                events.append((event.offset_ps, event.offset_ps + event.duration_ps, name))
                counts[name] = counts.get(name, 0) + 1
            events.sort(key=lambda e: (e[0], -e[1]))
            stack = []  # [end, op, exclusive] of the enclosing events
            for start, end, op in events:
                while stack and stack[-1][0] <= start:
                    _, name, own = stack.pop()
                    totals[name] = totals.get(name, 0) + own
                if stack:
                    stack[-1][2] -= end - start
                stack.append([end, op, end - start])
            for _, name, own in stack:
                totals[name] = totals.get(name, 0) + own
    return totals, counts


#: The TensorFlow runtime's span of one call of a function from Python (on the Python
#: thread), and the XLA CPU executable's span of one run (``call_phases``).
EXECUTE_EVENT = "TFE_Py_Execute"  # a prefix: TFE_Py_ExecuteCancelable too
RUN_EVENT = "KernelAndDeviceFunc::Run"
XLA_EVENT = "CpuExecutable::ExecuteAsyncOnStream"


def _union_ps(intervals):
    """Total length of the union of ``[(start, end)]``."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def call_phases(space):
    """Where each call's time went in an XSpace: one ``{phase: ms}`` per call of a function
    from Python (each outermost :data:`EXECUTE_EVENT` span on the Python thread, in time
    order; a span holding no :data:`RUN_EVENT` is skipped):

    - ``execute``: the call's span in TensorFlow's C API (from Python handing over the
      inputs to the outputs coming back);
    - ``eager``: ``execute`` minus ``run``, TensorFlow's eager dispatch around the run
      (placing inputs, finding the kernel);
    - ``run``: the function's run (:data:`RUN_EVENT`);
    - ``before_xla`` / ``after_xla``: from the run's start to the first XLA executable
      (:data:`XLA_EVENT`) starting in it, and from the last one's end to the run's end:
      TensorFlow's executor and kernels around XLA (``before_xla`` is the whole run and
      ``after_xla`` 0 when no XLA executable ran);
    - ``xla``: the XLA executables' spans; ``xla_ops``: the time at least one thread was
      inside one of their thunks (the union of the intervals of events with an ``hlo_op``
      stat); ``xla_between_ops``: ``xla - xla_ops``, the executables' time in no thunk's
      event: scheduling and waiting, and work a thunk handed to Eigen's thread pool, which
      goes on after the thunk's event ends (XLA's convolution thunk when multi-threaded);
    - ``tf_kernels``: the time at least one thread was inside a TensorFlow kernel (events
      ``name:Type`` off the Python thread, as ``ops`` counts them) in ``before_xla`` and
      ``after_xla``.

    Args:
        space: the parsed ``XSpace`` of a ``tf.profiler`` trace.

    Returns:
        ``[{phase: float ms}]``, one per call.
    """
    executes, runs, executables, xla_ops, kernels = [], [], [], [], []
    for plane in space.planes:
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        stats = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names.get(event.metadata_id, "")
                start = line.timestamp_ns * 1000 + event.offset_ps
                span = (start, start + event.duration_ps)
                if any(stats.get(s.metadata_id) == "hlo_op" for s in event.stats):
                    xla_ops.append(span)
                elif line.name == "python":
                    if name.startswith(EXECUTE_EVENT):
                        executes.append(span)
                    elif name == RUN_EVENT:
                        runs.append(span)
                elif name == XLA_EVENT:
                    executables.append(span)
                elif _is_kernel(line.name, name):
                    kernels.append(span)
    executes.sort()
    executes = [
        e
        for i, e in enumerate(executes)
        if not any(o[0] <= e[0] and e[1] <= o[1] for o in executes[:i])
    ]  # outermost: one per call
    out = []
    for call_start, call_end in executes:
        inner = [r for r in runs if call_start <= r[0] and r[1] <= call_end]
        if not inner:
            continue
        start, end = min(r[0] for r in inner), max(r[1] for r in inner)
        inside = [x for x in executables if start <= x[0] < end]
        first = min((x[0] for x in inside), default=end)
        last = max((x[1] for x in inside), default=end)
        ops = [(max(a, start), min(b, end)) for a, b in xla_ops if a < end and b > start]
        tf = [
            (max(a, lo), min(b, hi))
            for lo, hi in ((start, first), (last, end))
            for a, b in kernels
            if a < hi and b > lo
        ]
        xla = sum(b - a for a, b in inside)
        busy = _union_ps(ops)
        out.append(
            {
                "execute": (call_end - call_start) / 1e9,
                "eager": (call_end - call_start - (end - start)) / 1e9,
                "run": (end - start) / 1e9,
                "before_xla": (first - start) / 1e9,
                "xla": xla / 1e9,
                "xla_ops": busy / 1e9,
                "xla_between_ops": (xla - busy) / 1e9,
                "after_xla": (end - last) / 1e9 if inside else 0.0,
                "tf_kernels": _union_ps(tf) / 1e9,
            }
        )
    return out


def main(request):
    import numpy as np
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    intra, inter = request.get("intra_op_threads", 0), request.get("inter_op_threads", 0)
    if intra:
        tf.config.threading.set_intra_op_parallelism_threads(intra)
    if inter:
        tf.config.threading.set_inter_op_parallelism_threads(inter)
    if request.get("precision") == "bf16":  # re2_tf.serving.runtimes.TF_BF16_REWRITE
        os.environ.update(TF_BF16_REWRITE_LISTS)
        tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": True})
    try:
        loaded = tf.saved_model.load(request["path"])
    except Exception as error:  # BERT's WordPiece exports use TF Text ops: register them
        if "Op type not registered" not in str(error):
            raise
        import tensorflow_text  # noqa: F401

        loaded = tf.saved_model.load(request["path"])
    function = loaded.signatures[request["signature"]]
    if request.get("inputs_file"):
        batches = read_batches(request["inputs_file"])
    else:
        rng = np.random.default_rng(request.get("seed", 0))
        batch = next(iter(request["inputs"].values()))["shape"][0]
        batches = [make_inputs(request["inputs"], batch, rng)]
    feeds = [{k: tf.constant(v) for k, v in b.items()} for b in batches]
    for i in range(1 + request.get("warmup", 10)):
        function(**feeds[i % len(feeds)])
    calls = int(request.get("calls", 20))
    tf.profiler.experimental.start(request["logdir"])
    walls = []
    for i in range(calls):
        start = time.perf_counter()
        function(**feeds[i % len(feeds)])
        walls.append(time.perf_counter() - start)
    tf.profiler.experimental.stop()
    files = glob.glob(f"{request['logdir']}/**/*.xplane.pb", recursive=True)
    if not files:
        raise RuntimeError(f"the profiler wrote no trace under {request['logdir']}")
    space = xplane_pb2.XSpace()
    space.ParseFromString(Path(files[0]).read_bytes())
    totals, counts = exclusive_op_times(space)
    ops = {k: v / 1e9 / calls for k, v in totals.items()}
    known = hlo_kinds(space)
    kinds = {k: known.get(k, k.rsplit(":", 1)[-1]) for k in ops}
    phases = call_phases(space)
    if len(phases) != calls:
        raise RuntimeError(f"the trace has {len(phases)} calls from Python, not {calls}")
    for phase, wall in zip(phases, walls):
        phase["python"] = 1e3 * wall - phase["execute"]
    wall_ms = 1e3 * sum(walls) / calls
    runs = {k: counts[k] / calls for k in ops}
    out = {
        "calls": calls,
        "wall_ms": wall_ms,
        "ops": ops,
        "kinds": kinds,
        "phases": phases,
        "runs": runs,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
