"""Time one exported model in this (fresh) process; run as a script, never imported.

Invoked by :mod:`re2_tf.benchmarking` as ``python timing_worker.py '<json request>'``; imports
only TensorFlow / NumPy (the LiteRT interpreter for ``.tflite``, ONNX Runtime for ``.onnx``,
OpenVINO for an IR ``.xml``), never ``re2_tf``, so the measurement sees exactly what a serving
process sees. Prints one JSON line.

Request keys:
    path: SavedModel directory, or a ``.tflite``, ``.onnx`` or OpenVINO ``.xml`` file.
    signature: signature name (``serving_ids``, ``serving_default``, ...).
    inputs: ``{name: {"dtype": "int32"|"string", "shape": [batch, length?],
            "low": int, "high": int, "words": [...], "side": str}}`` -- int inputs are
            uniform in ``[low, high)``; string inputs join ``length`` random ``words`` per row.
    length_spread: each row's text length is drawn uniformly from ``length -
            length_spread .. length + length_spread`` (at least 1; default 0: exactly
            ``length``). String rows join that many words; the other inputs get, per row,
            that many values then padding (0), and the batch is as wide as its longest row.
            Inputs with the same ``side`` (default: their name) share the row lengths.
    batches: timed batches; warmup: untimed batches after the first call. Every one of them
            is a fresh draw (fresh words or ids, fresh lengths), so an export that compiles
            per input length or value shows it in the times; with ``inputs_file`` they cycle
            through its 4 batches.
    throughput_batch: if > 0, also time ``throughput_batches`` batches of this size.
    intra_op_threads, inter_op_threads: 0 = TensorFlow's default.
    seed: input RNG seed.
    inputs_file: optional ``.npz`` of the 4 batches (keys ``<i>/<input name>``), used
            instead of drawing them (``inputs`` then only gives the batch size).
    shape_changes: if true, after the first call and before the warm-up, untimed, the
            model is called on :func:`shape_change_inputs` (texts that change length one
            side at a time, as serving brings): a runtime that dies on such a change dies
            here, not later in a server (OpenVINO's bfloat16 FITN: ``docs/performance.md``,
            the failures section). Needs ``inputs`` that can be drawn (not a packed pair).
    outputs_file: optional ``.npz`` written after timing: ``probabilities`` of 4 batches (the
            first call's and 3 more, drawn before timing; or ``inputs_file``'s).
    precision: OpenVINO's ``INFERENCE_PRECISION_HINT`` (``f32``, ``bf16``; absent: OpenVINO's
            default). Unless ``f32``, an IR with its two parts beside it
            (``re2_tf.serving.runtimes.OPENVINO_PARTS``) runs as they are served: the first
            part at that precision, the float32 part in f32. For a SavedModel, ``bf16`` turns
            on TensorFlow's oneDNN bfloat16 rewrite
            (``re2_tf.serving.runtimes.TF_BF16_REWRITE``, with the op-list edits
            :data:`TF_BF16_REWRITE_LISTS`) before it is loaded; otherwise it runs as
            exported.
    onnxruntime_config: optional ``{key: value}`` session config entries for ONNX Runtime
            (``SessionOptions.add_session_config_entry``, e.g.
            ``{"session.intra_op.allow_spinning": "0"}``).
    then: optional list of more requests timed after this one in the same process, on the
            same loaded model: each a request of the keys above without the model's
            (:data:`MODEL_KEYS`: ``path``, ``signature``, ``precision``, threads, ONNX
            Runtime's config are the first request's; a ``then`` request that gives one is
            an error) and without ``then``; its other keys are its own, with their
            defaults where absent. Each draws its batches from a fresh generator of its
            ``seed``, so it times the inputs a process of its own would (the same
            ``inputs_sha256``). The serving choice times every shape of a round in one
            process so (``re2_tf.serving.serving_choice``).

Output keys (for the first request; with ``then``, also ``then``: one such dict per request
there, in order): ``first_call_s`` (first call at these inputs' shape, includes XLA
compilation / TFLite allocation),
``times_s`` (list, one per timed batch), ``throughput_pairs_per_s`` (or null), ``interpreter``,
for a SavedModel ``tf_threads`` (``[intra, inter]`` as TensorFlow reports its pools after the
run, 0 for a pool's default),
``inputs_sha256`` (:func:`inputs_digest` of the 4 batches drawn or loaded before timing: the
same digest means the same inputs), ``length_spread`` (as requested) and ``load_average``
(``os.getloadavg()``'s 1-minute load before the first call and after the last timed one: other
processes sharing the CPU). Memory (:func:`process_memory_mib`: this process's own
``VmHWM`` / ``VmRSS`` from ``/proc/self/status``, MiB; null where there is no ``/proc``):
``loaded_hwm_mib`` (peak once the model is loaded, before any call), ``batches_hwm_mib`` (peak
after the first call, the warm-up and the timed batches: what serving ``batches`` batches
needed), ``peak_hwm_mib`` (peak at the end, after the throughput batches too) and
``rss_mib`` (resident at the end); with ``then``, a later request's peaks are the process's
so far, the earlier requests' included. Records written before these keys have ``loaded_rss_mib`` /
``peak_rss_mib`` instead: ``getrusage``'s ``ru_maxrss``, which on Linux a process inherits from
the one that started it, so they are at least that parent's peak, not the worker's own.
"""

import hashlib
import json
import os
import sys
import time

#: re2_tf.serving.runtimes.TF_BF16_REWRITE_LISTS (this process imports no re2_tf): GELU's
#: Erfc stays float32 under the bfloat16 rewrite
TF_BF16_REWRITE_LISTS = {
    "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE": "Erfc",
    "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD": "Erfc",
}


def process_memory_mib(status="/proc/self/status"):
    """This process's own memory from the kernel's ``status`` file: ``{"hwm": VmHWM, "rss":
    VmRSS}`` in MiB (the file gives kB = KiB), its peak and current resident set size. Unlike
    ``getrusage``'s ``ru_maxrss``, ``VmHWM`` belongs to the process's own address space, which
    ``exec`` replaces, so a parent's peak does not leak into it. Each value is ``None`` where
    the file or its line is missing (no ``/proc``: not Linux): unavailable, never a guess."""
    values = {"hwm": None, "rss": None}
    try:
        with open(status, encoding="ascii") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in ("VmHWM", "VmRSS"):
                    values["hwm" if name == "VmHWM" else "rss"] = int(rest.split()[0]) / 1024.0
    except OSError:
        pass
    return values


def inputs_digest(batches):
    """SHA-256 (hex) of a list of input batches (``[{name: np.ndarray}]``): every input's
    name, dtype, shape and values in order (strings as UTF-8, each ended by a NUL byte), so
    two runs with equal digests timed equal inputs."""
    digest = hashlib.sha256()
    for i, batch in enumerate(batches):
        for name in sorted(batch):
            value = batch[name]
            kind = "string" if value.dtype.kind in "OUS" else str(value.dtype)
            digest.update(f"{i}/{name}:{kind}:{list(value.shape)};".encode())
            if kind == "string":
                for item in value.reshape(-1):
                    text = item.decode() if isinstance(item, bytes) else str(item)
                    digest.update(text.encode("utf-8") + b"\0")
            else:
                digest.update(value.tobytes())
    return digest.hexdigest()


def make_inputs(spec, batch, rng, spread=0, exact=None):
    """One batch of fresh inputs (the module docstring's ``inputs`` and ``length_spread``);
    ``exact``: ``{side: length}``, every row of that side exactly that long."""
    # lazy: a fresh timing process imports only what its runtime needs
    import numpy as np

    out, lengths = {}, {}
    for name, s in spec.items():
        shape = [batch] + list(s["shape"][1:])
        length = shape[1] if len(shape) > 1 else 20
        side = s.get("side", name)
        if side not in lengths:
            if exact and side in exact:
                lengths[side] = np.full(batch, int(exact[side]))
            else:
                lengths[side] = rng.integers(max(length - spread, 1), length + spread + 1, batch)
        rows = lengths[side]
        if s["dtype"] == "string":
            words = np.asarray(s["words"], dtype=object)
            out[name] = np.asarray([" ".join(rng.choice(words, size=n)) for n in rows], object)
        else:
            if len(shape) > 1:
                shape[1] = int(rows.max())
            x = rng.integers(s.get("low", 0), s.get("high", 2), size=shape).astype(s["dtype"])
            if len(shape) > 1:
                x[np.arange(shape[1])[None, :] >= rows[:, None]] = 0  # padding after each row
            out[name] = x
    return out


def read_batches(path):
    """The 4 batches of an ``inputs_file`` (keys ``<i>/<input name>``), in order."""
    # lazy: as make_inputs, a fresh timing process imports only what its runtime needs
    import numpy as np

    data = np.load(path)
    return [
        {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith(f"{i}/")} for i in range(4)
    ]


def shape_change_inputs(spec, batch, rng, spread=0):
    """The batches ``shape_changes`` calls, in order: every text of every side ``L = length +
    spread + 1`` long (no padding; ``length`` the spec's, so longer than any batch drawn with
    that ``spread``); then for each side in turn (``side``, default the input's name, in
    ``spec``'s order), that side's texts ``L + 1`` long twice, the others ``L``, and every side
    ``L`` again. So each side in turn grows alone past every length seen before, and the call
    after it follows that change. ``1 + 3 * sides`` batches of ``batch`` rows."""
    base = {}
    for name, s in spec.items():
        length = s["shape"][1] if len(s["shape"]) > 1 else 20
        base.setdefault(s.get("side", name), length + spread + 1)
    out = [make_inputs(spec, batch, rng, exact=base)]
    for side, length in base.items():
        grown = dict(base, **{side: length + 1})
        out += [make_inputs(spec, batch, rng, exact=grown) for _ in range(2)]
        out.append(make_inputs(spec, batch, rng, exact=base))
    return out


def load(request):
    """The runtime of ``request`` (its ``path``, ``signature``, threads and ``precision``)
    loaded in this process: ``(call, interpreter_name)``, ``call(inputs) -> {output name:
    np.ndarray}``."""
    intra, inter = request.get("intra_op_threads", 0), request.get("inter_op_threads", 0)
    path = request["path"]
    if path.endswith(".tflite"):
        try:
            # lazy: a fresh timing process imports only what its runtime needs
            from ai_edge_litert.interpreter import Interpreter

            interpreter_name = "ai_edge_litert"
        except ImportError:  # fall back to TensorFlow's copy
            # lazy: a fresh timing process imports only what its runtime needs
            import tensorflow as tf

            Interpreter = tf.lite.Interpreter
            interpreter_name = "tf.lite"
        interpreter = Interpreter(model_path=path, num_threads=intra or None)
        runner = interpreter.get_signature_runner(request["signature"])

        def call(inputs):
            return runner(**inputs)
    elif path.endswith(".onnx"):
        # lazy: a fresh timing process imports only what its runtime needs
        import onnxruntime

        options = onnxruntime.SessionOptions()
        if intra:
            options.intra_op_num_threads = intra
        if inter:
            options.inter_op_num_threads = inter
        for key, value in request.get("onnxruntime_config", {}).items():
            options.add_session_config_entry(key, str(value))
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        interpreter_name = f"onnxruntime {onnxruntime.__version__}"

        def call(inputs):
            return dict(zip(names, session.run(None, inputs)))
    elif path.endswith(".xml"):
        # lazy: a fresh timing process imports only what its runtime needs
        import openvino

        config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
        if intra:
            config["INFERENCE_NUM_THREADS"] = intra
        if request.get("precision"):
            config["INFERENCE_PRECISION_HINT"] = request["precision"]
        # re2_tf.serving.runtimes.OPENVINO_PARTS: unless f32 is asked for (OpenVINO's default
        # is bf16 where the CPU has it), the float32 part in f32
        parts = [path[: -len(".xml")] + suffix for suffix in (".bf16_part.xml", ".f32_part.xml")]
        if request.get("precision") == "f32" or not all(map(os.path.exists, parts)):
            parts = [path]
        core = openvino.Core()
        compiled = [
            core.compile_model(
                part, "CPU", config if k == 0 else dict(config, INFERENCE_PRECISION_HINT="f32")
            )
            for k, part in enumerate(parts)
        ]
        infer_requests = [c.create_infer_request() for c in compiled]
        interpreter_name = f"openvino {openvino.__version__.split('-')[0]}"
        if len(parts) > 1:
            interpreter_name += " (float32 part in f32)"

        def call(inputs):
            outputs = {}
            for c, r in zip(compiled, infer_requests):
                if outputs:
                    inputs = {
                        k: outputs.pop(k)
                        for k in list(outputs)
                        if k.startswith("float32_part_input_")
                    }
                result = r.infer(inputs)
                outputs.update({o.get_any_name(): result[o] for o in c.outputs})
            return outputs
    else:
        # lazy: a fresh timing process imports only what its runtime needs
        import tensorflow as tf

        if intra:
            tf.config.threading.set_intra_op_parallelism_threads(intra)
        if inter:
            tf.config.threading.set_inter_op_parallelism_threads(inter)
        if request.get("precision") == "bf16":  # re2_tf.serving.runtimes.TF_BF16_REWRITE
            os.environ.update(TF_BF16_REWRITE_LISTS)
            tf.config.optimizer.set_experimental_options(
                {"auto_mixed_precision_onednn_bfloat16": True}
            )
        try:
            loaded = tf.saved_model.load(path)
        except Exception as error:  # BERT's WordPiece exports use TF Text ops: register them
            if "Op type not registered" not in str(error):
                raise
            # lazy: a fresh timing process imports only what its runtime needs
            import tensorflow_text  # noqa: F401

            loaded = tf.saved_model.load(path)
        fn = loaded.signatures[request["signature"]]
        interpreter_name = "tf.saved_model.load"
        if request.get("precision") == "bf16":
            interpreter_name += " (oneDNN bfloat16 rewrite)"

        def call(inputs):
            out = fn(**{k: tf.constant(v) for k, v in inputs.items()})
            return {k: v.numpy() for k, v in out.items()}

    return call, interpreter_name


def time_inputs(call, request):
    """Time ``call`` on ``request``'s inputs (the module docstring's keys other than the
    model's) from a fresh generator of its ``seed``: the output dict of one request."""
    # lazy: a fresh timing process imports only what its runtime needs
    import numpy as np

    rng = np.random.default_rng(request.get("seed", 0))
    spec, batch = request["inputs"], request["inputs"][next(iter(request["inputs"]))]["shape"][0]
    spread = int(request.get("length_spread", 0))
    if request.get("inputs_file"):
        batches = read_batches(request["inputs_file"])
    else:
        batches = [make_inputs(spec, batch, rng, spread) for _ in range(4)]

    def next_inputs(i):
        if request.get("inputs_file"):
            return batches[i % 4]
        return make_inputs(spec, batch, rng, spread)

    loaded = process_memory_mib()
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    call(batches[0])
    first = time.perf_counter() - start
    if request.get("shape_changes"):
        if request.get("inputs_file"):
            raise ValueError("shape_changes needs inputs drawn by the worker, not inputs_file")
        # its own generator: the warm-up and timed batches are the same draws either way
        probe_rng = np.random.default_rng([request.get("seed", 0), 1])
        for inputs in shape_change_inputs(spec, batch, probe_rng, spread):
            call(inputs)
    for i in range(request.get("warmup", 10)):
        call(next_inputs(i))
    times = []
    for i in range(request["batches"]):
        inputs = next_inputs(i)
        start = time.perf_counter()
        call(inputs)
        times.append(time.perf_counter() - start)
    load_after = os.getloadavg()[0]
    after_batches = process_memory_mib()
    throughput = None
    big = request.get("throughput_batch", 0)
    if big:
        big_inputs = make_inputs(spec, big, rng)
        call(big_inputs)  # compile / allocate this shape
        n = request.get("throughput_batches", 5)
        start = time.perf_counter()
        for _ in range(n):
            call(big_inputs)
        throughput = n * big / (time.perf_counter() - start)
    if request.get("outputs_file"):
        probabilities = [call(inputs)["probabilities"] for inputs in batches]
        np.savez(request["outputs_file"], probabilities=np.concatenate(probabilities))
    end = process_memory_mib()
    return {
        "first_call_s": first,
        "times_s": times,
        "throughput_pairs_per_s": throughput,
        "inputs_sha256": inputs_digest(batches),
        "loaded_hwm_mib": loaded["hwm"],
        "batches_hwm_mib": after_batches["hwm"],
        "peak_hwm_mib": end["hwm"],
        "rss_mib": end["rss"],
        "length_spread": spread,
        "load_average": [load_before, load_after],
    }


#: request keys that say which model runs and how: the first request's, never a ``then``'s
MODEL_KEYS = (
    "path",
    "signature",
    "precision",
    "intra_op_threads",
    "inter_op_threads",
    "onnxruntime_config",
)


def main(request):
    later = []
    for more in request.get("then", []):  # checked before the model is loaded
        given = sorted(set(more) & {*MODEL_KEYS, "then"})
        if given:
            raise ValueError(f"a then request gives the first request's keys: {given}")
        later.append(dict(more))
    call, interpreter_name = load(request)
    results = [time_inputs(call, r) for r in [request, *later]]
    ran = {"interpreter": interpreter_name}
    if interpreter_name.startswith("tf.saved_model.load"):  # the pools TensorFlow ran on
        threading = sys.modules["tensorflow"].config.threading
        ran["tf_threads"] = [
            threading.get_intra_op_parallelism_threads(),
            threading.get_inter_op_parallelism_threads(),
        ]
    for result in results:
        result.update(ran)
    if later:
        results[0]["then"] = results[1:]
    print(json.dumps(results[0]))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
