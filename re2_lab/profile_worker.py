"""Profile one exported SavedModel in this (fresh) process; run as a script, never imported.

Invoked by :func:`re2_lab.roofline.profile_export` as ``python profile_worker.py '<json
request>'``; like ``timing_worker.py`` (whose input maker it uses) it imports only TensorFlow
and NumPy, never ``re2_tf``. It warms the signature up, runs ``calls`` calls under
``tf.profiler.experimental`` and reads the trace back (the XSpace protobuf TensorFlow writes,
``*.xplane.pb``). Prints one JSON line.

Request keys: ``path``, ``signature``, ``inputs``, ``seed``, ``intra_op_threads``,
``inter_op_threads`` as in ``timing_worker.py``; ``calls`` (profiled calls), ``warmup``
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
    kinds: ``{op name: kind}``: an XLA instruction's opcode from the optimised HLO module the
        trace carries (``dot``, ``convolution``, ``concatenate``, ...; a fusion is ``fusion``,
        or ``fusion with dot`` / ``fusion with convolution`` when its fused computation holds
        one), a TensorFlow kernel's type (``MatMul``, ``_MklSoftmax``, ...).
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

from timing_worker import TF_BF16_REWRITE_LISTS, make_inputs  # noqa: E402


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


def exclusive_op_times(space):
    """``{op name: total exclusive picoseconds}`` over every line of every plane of an
    XSpace (see the module docstring)."""
    totals = {}
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
                elif line.name == "python" or ":" not in name or " " in name or "::" in name:
                    continue
                events.append((event.offset_ps, event.offset_ps + event.duration_ps, name))
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
    return totals


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
    rng = np.random.default_rng(request.get("seed", 0))
    batch = next(iter(request["inputs"].values()))["shape"][0]
    feed = {k: tf.constant(v) for k, v in make_inputs(request["inputs"], batch, rng).items()}
    for _ in range(1 + request.get("warmup", 10)):
        function(**feed)
    calls = int(request.get("calls", 20))
    tf.profiler.experimental.start(request["logdir"])
    start = time.perf_counter()
    for _ in range(calls):
        function(**feed)
    wall = time.perf_counter() - start
    tf.profiler.experimental.stop()
    files = glob.glob(f"{request['logdir']}/**/*.xplane.pb", recursive=True)
    if not files:
        raise RuntimeError(f"the profiler wrote no trace under {request['logdir']}")
    space = xplane_pb2.XSpace()
    space.ParseFromString(Path(files[0]).read_bytes())
    ops = {k: v / 1e9 / calls for k, v in exclusive_op_times(space).items()}
    known = hlo_kinds(space)
    kinds = {k: known.get(k, k.rsplit(":", 1)[-1]) for k in ops}
    print(json.dumps({"calls": calls, "wall_ms": 1e3 * wall / calls, "ops": ops, "kinds": kinds}))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
