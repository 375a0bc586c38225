"""RE2's matrix products one at a time in each CPU runtime's own kernels: where the default
export's float32 time goes against ONNX Runtime at the Table 5 shape.

The products are read from the HLO of RE2's folded forward pass (``re2_tf/serving/folded.py``,
what the default export runs) at batch 8 x 20 and 512 x 20: every ``dot`` of its entry
computation (``re2_lab.roofline.parse_hlo``), as ``(batch, m, k, n)``. Each is timed alone,
float32, 2 threads, in a fresh process per runtime:

- ``xla``: ``tf.function(jit_compile=True)``, the default export's compiler, once per
  ``XLA_FLAGS`` setting of :data:`XLA_SETTINGS` (XLA's CPU options that route products to
  other kernels: XNNPACK, oneDNN, YNNPACK);
- ``tensorflow``: the same function without XLA (TensorFlow's oneDNN ``_MklMatMul``);
- ``onnxruntime``: an ONNX graph of the same products, ONNX Runtime's CPU provider (MLAS);
- ``openvino f32``: that ONNX graph compiled by OpenVINO's CPU plugin in float32.

Then the whole network, in the same run: the variant's default export (XLA), its
``--xla=false`` export, and ONNX Runtime and OpenVINO f32 converted from the latter, timed
alternately in fresh processes on the same batches (``re2_lab.roofline.alternate_paths``),
their probabilities against the default's, and the two SavedModels profiled once per shape
(``tf.profiler``), so the products' sum can be set beside the whole call.

A call computes ``R`` copies of one product (each with its own random right operand, then
``ReduceSum``) and another computes ``2 R``; one product's time is the difference of the two
calls' medians over ``R``, so the runtime's fixed cost per call cancels. Rounds take the
runtimes in turn. Writes ``product_kernels.json`` beside this file and prints a table.

    python docs/runs/roofline/product_kernels.py [--rounds=3] [--variant="RE2 1 block"]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
ROUNDS = int(ARGS.get("rounds", 3))
VARIANT = ARGS.get("variant", "RE2 1 block")
BATCHES = (8, 512)
LENGTH = 20
#: ``XLA_FLAGS`` of the ``xla`` runtime's settings (their names in the record).
XLA_SETTINGS = {
    "xla": "",
    "xla xnn dot": "--xla_cpu_experimental_xnn_fusion_type=dot",
    "xla onednn": "--xla_cpu_use_onednn=true",
    "xla onednn dot": "--xla_cpu_use_onednn=true --xla_cpu_experimental_onednn_fusion_type=dot",
    "xla ynn dot": "--xla_cpu_experimental_ynn_fusion_type=dot",
}
#: Copies per call and timed calls after 5 untimed ones, by batch.
REPEATS = {8: (8, 30), 512: (1, 5)}


def products(variant, batch):
    """``([(batch, m, k, n)], flops)``: every ``dot`` of RE2's folded forward pass at
    ``batch`` x :data:`LENGTH` (random weights; shapes only) and the pass's FLOPs
    (``re2_lab.roofline.HloModule.flops``: ``dot``, ``convolution``, ``total``)."""
    import numpy as np
    import tensorflow as tf

    from re2_lab import roofline
    from re2_tf import benchmarking
    from re2_tf.models import get_spec
    from re2_tf.serving.folded import fold_re2, re2_forward

    spec = get_spec("re2")
    hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
    featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
    model = spec.build(3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
    params = fold_re2(model)
    ids = tf.constant(np.random.default_rng(0).integers(1, 30000, (batch, LENGTH)), tf.int32)
    module = roofline.parse_hlo(
        roofline.function_hlo(lambda a, b: re2_forward(params, a, b), ids, ids)
    )
    shapes = []
    for inst in module.live(module.entry):
        if inst.op == "dot":
            shapes.append(module.dot_batched_shape(inst))
    total = module.flops()
    return shapes, total


def _arrays(shape, copies, seed=0):
    import numpy as np

    b, m, k, n = shape
    rng = np.random.default_rng(seed)
    lead = (b,) if b > 1 else ()
    x = rng.standard_normal(lead + (m, k), dtype=np.float32)
    ws = [rng.standard_normal(lead + (k, n), dtype=np.float32) for _ in range(copies)]
    return x, ws


def _median_ms(call, calls):
    for _ in range(5):
        call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _tensorflow_call(x, ws, jit):
    import tensorflow as tf

    weights = [tf.constant(w) for w in ws]

    def fn(x):
        return tf.add_n([tf.reduce_sum(tf.matmul(x, w)) for w in weights])

    compiled = tf.function(fn, jit_compile=jit)
    xt = tf.constant(x)
    return lambda: compiled(xt).numpy()


def _onnx_file(x, ws, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, sums = [], [], []
    for i, w in enumerate(ws):
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"]))
        nodes.append(helper.make_node("ReduceSum", [f"y{i}"], [f"s{i}"], keepdims=0))
        sums.append(f"s{i}")
    nodes.append(helper.make_node("Sum", sums, ["total"]))
    graph = helper.make_graph(
        nodes,
        "products",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("total", TensorProto.FLOAT, [])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def _onnxruntime_call(x, ws, path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
    session = ort.InferenceSession(
        _onnx_file(x, ws, path), options, providers=["CPUExecutionProvider"]
    )
    return lambda: session.run(None, {"x": x})


def _openvino_call(x, ws, path):
    import openvino as ov

    compiled = ov.Core().compile_model(
        _onnx_file(x, ws, path),
        "CPU",
        {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 2, "NUM_STREAMS": 1},
    )
    request = compiled.create_infer_request()
    return lambda: request.infer({"x": x})


def worker(runtime, shapes_file):
    """Time every product of ``shapes_file`` in ``runtime``; print ``{shape: ms per product}``."""
    if runtime in ("xla", "tensorflow"):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(2)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    shapes = json.loads(Path(shapes_file).read_text())
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, (shape, copies, calls) in shapes.items():
            medians = []
            for count in (copies, 2 * copies):
                x, ws = _arrays(shape, count)
                if runtime in ("xla", "tensorflow"):
                    call = _tensorflow_call(x, ws, runtime == "xla")
                elif runtime == "onnxruntime":
                    call = _onnxruntime_call(x, ws, f"{tmp}/{key}_{count}.onnx")
                else:
                    call = _openvino_call(x, ws, f"{tmp}/{key}_{count}.onnx")
                medians.append(_median_ms(call, calls))
            out[key] = (medians[1] - medians[0]) / copies
    print(json.dumps(out))


def networks(record):
    """The whole network's paths timed alternately (``record["variants"]``), their agreement
    with the default export and the SavedModels' profiles (module docstring)."""
    from re2_lab.roofline import ab_agreement, ab_profiles, alternate_paths
    from re2_tf import benchmarking
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    spec = get_spec("re2")
    hparams = spec.benchmark[VARIANT]["hparams"]
    shapes = [(batch, LENGTH, benchmarking.timed_batches(batch)) for batch in BATCHES]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        xla, _, featurizers = benchmarking.export_benchmark_model(spec, hparams, tmp / "xla")
        plain, _, _ = benchmarking.export_benchmark_model(spec, hparams, tmp / "noxla", xla=False)
        paths = {"savedmodel (XLA)": (xla, None), "savedmodel (xla=False)": (plain, None)}
        paths["onnxruntime"] = (runtimes.convert(plain, "onnxruntime", tmp / "ort"), None)
        paths["openvino f32"] = (runtimes.convert(plain, "openvino", tmp / "ov"), "f32")
        medians, outputs = alternate_paths(paths, featurizers, shapes, ROUNDS, tmp, outputs=True)
        record["variants"] = {VARIANT: medians}
        record["agreement"] = {VARIANT: ab_agreement(outputs, "savedmodel (XLA)")}
        record["profiles"] = {VARIANT: ab_profiles(paths, featurizers, shapes, tmp)}


def main():
    from re2_lab.roofline import ab_record

    record = ab_record("docs/runs/roofline/product_kernels.py", ARGS, ROUNDS, variant=VARIANT)
    record["xla_settings"] = XLA_SETTINGS
    record["batches"] = {}
    shapes = {}
    for batch in BATCHES:
        found, flops = products(VARIANT, batch)
        copies, calls = REPEATS[batch]
        entry = {"hlo_flops": flops, "products": []}
        for i, shape in enumerate(found):
            key = f"{batch}_{i}"
            entry["products"].append({"key": key, "shape": shape, "ms": {}})
            shapes[key] = (shape, copies, calls)
        record["batches"][str(batch)] = entry
    runtimes = {name: ("xla", flags) for name, flags in XLA_SETTINGS.items()}
    runtimes.update({"tensorflow": ("tensorflow", ""), "onnxruntime": ("onnxruntime", "")})
    runtimes["openvino f32"] = ("openvino", "")
    with tempfile.TemporaryDirectory() as tmp:
        shapes_file = Path(tmp) / "shapes.json"
        shapes_file.write_text(json.dumps(shapes))
        for round_ in range(ROUNDS):
            for name, (runtime, flags) in runtimes.items():
                env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", XLA_FLAGS=flags)
                proc = subprocess.run(
                    [sys.executable, __file__, f"--worker={runtime}", f"--shapes={shapes_file}"],
                    capture_output=True, text=True, env=env, check=False,
                )  # fmt: skip
                if proc.returncode != 0:
                    raise RuntimeError(f"{name} failed:\n{proc.stderr[-2000:]}")
                times = json.loads(proc.stdout.strip().splitlines()[-1])
                for entry in record["batches"].values():
                    for product in entry["products"]:
                        product["ms"].setdefault(name, []).append(times[product["key"]])
                print(f"round {round_ + 1} {name} done", flush=True)
    for batch, entry in record["batches"].items():
        for product in entry["products"]:
            b, m, k, n = product["shape"]
            gflop = 2 * b * m * k * n / 1e9
            cells = " | ".join(
                f"{name} {statistics.median(v):.3f} ms ({gflop / statistics.median(v) * 1e3:.0f})"
                for name, v in product["ms"].items()
            )
            print(f"| {batch} | {product['shape']} | {cells} |")
    networks(record)
    for key, times in record["variants"][VARIANT].items():
        print(f"{VARIANT} {key}: {statistics.median(times):.2f} ms", flush=True)
    out = Path(__file__).with_name("product_kernels.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if "worker" in ARGS:
        worker(ARGS["worker"], ARGS["shapes"])
    else:
        main()
