"""What TensorFlow fuses into BERT's feed-forward product, in float32, under the oneDNN
bfloat16 rewrite and with bfloat16 weights (issue 51, item 1: where BERT's SavedModel time
goes after ``rewrite_profile_bert_erfc_f32.json``).

One layer: the intermediate feed-forward ``Dense`` of the BERT variants' benchmark backbone
(the default MiniLM checkpoint's ``hidden_size`` -> ``intermediate_size``, exact GELU, random
weights), in two forms that compute the same function:

- ``keras Dense``: ``keras.layers.Dense`` on ``[batch, length, hidden]``, as the backbone
  calls it;
- ``2-D MatMul + BiasAdd``: the same kernel and bias as ``tf.matmul`` on the ``[batch *
  length, hidden]`` rows, ``tf.nn.bias_add`` and ``tf.nn.gelu(approximate=False)``, reshaped
  back.

Each form is frozen (its variables as constants) and run in a ``tf.compat.v1.Session`` with 2
intra-op threads, on each path of ``--paths``: ``f32``; ``bf16 rewrite``, float32 under the
rewrite (``auto_mixed_precision_onednn_bfloat16`` with the library's
``runtimes.TF_BF16_REWRITE_LISTS``); ``bf16 weights``, the kernel and bias as bfloat16
constants and the input cast to bfloat16 in the graph (the output cast back to float32), no
rewrite, as a bfloat16 export holds its weights. The record keeps the kernels the session ran
after Grappler's rewrites (its partition graph, bookkeeping ops left out), the median ms of
``--calls`` calls per round on the same inputs, with form and path alternating within each
round, each path's max |difference| between the two forms and, per path and form, its max
|difference| from the same form in float32 (``max_abs_diff_from_f32``, where ``f32`` is among
the paths).

Writes ``--json_out`` (``gelu_fusion.json`` by default) beside this file.

    python docs/runs/roofline/gelu_fusion.py [--rounds=3] [--calls=20]
        [--paths="f32,bf16 rewrite"] [--json_out=gelu_fusion.json]
"""

import json
import os
import sys
from pathlib import Path
from time import perf_counter

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from re2_lab.roofline import ab_record
from re2_tf.layers.bert_backbone import default_bert_preset
from re2_tf.serving import runtimes

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 3))
CALLS = int(ARGS.get("calls", 20))
SHAPES = ((8, 20), (512, 20))  # batch, length
FORMS = ("keras Dense", "2-D MatMul + BiasAdd")
PATHS = ARGS.get("paths", "f32,bf16 rewrite").split(",")
KNOWN_PATHS = ("f32", "bf16 rewrite", "bf16 weights")
#: ops that move data or feed the graph, not kernels of the layer
BOOKKEEPING = {"_Arg", "_Retval", "_Recv", "_Send", "Const", "NoOp", "Placeholder", "Identity"}
BOOKKEEPING |= {"Shape", "StridedSlice", "Pack", "ConcatV2", "Reshape", "_MklReshape"}


def frozen_form(form, dense, hidden, intermediate):
    """The frozen GraphDef of one form and its input and output tensor names (``dense`` of
    dtype policy ``bfloat16``: the input cast to bfloat16, the output back to float32)."""
    dtype = dense.compute_dtype
    if form == "keras Dense":

        def fn(x):
            return tf.cast(dense(tf.cast(x, dtype)), tf.float32)
    else:

        def fn(x):
            rows = tf.matmul(tf.reshape(tf.cast(x, dtype), [-1, hidden]), dense.kernel)
            y = tf.nn.gelu(tf.nn.bias_add(rows, dense.bias), approximate=False)
            y = tf.cast(y, tf.float32)
            return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [intermediate]], 0))

    spec = tf.TensorSpec([None, None, hidden], tf.float32)
    concrete = convert_variables_to_constants_v2(tf.function(fn).get_concrete_function(spec))
    return concrete.graph.as_graph_def(), concrete.inputs[0].name, concrete.outputs[0].name


def session_config(path):
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=2, inter_op_parallelism_threads=1
    )
    if path == "bf16 rewrite":
        on = rewriter_config_pb2.RewriterConfig.ON
        config.graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 = on
    return config


def main():
    unknown = [path for path in PATHS if path not in KNOWN_PATHS]
    if unknown:
        raise SystemExit(f"--paths: {unknown} not among {list(KNOWN_PATHS)}")
    if not runtimes.cpu_has_bf16():
        raise SystemExit("this CPU has no bfloat16 units: the rewrite does not run")
    os.environ.update(runtimes.TF_BF16_REWRITE_LISTS)
    bert = json.loads((Path(default_bert_preset()) / "config.json").read_text())
    hidden, intermediate = bert["hidden_size"], bert["intermediate_size"]
    rng = np.random.default_rng(0)
    weights = [
        rng.normal(0, hidden**-0.5, (hidden, intermediate)).astype("float32"),
        rng.normal(0, 0.1, (intermediate,)).astype("float32"),
    ]
    graphs = {}
    for dtype in ("float32", "bfloat16"):
        dense = keras.layers.Dense(
            intermediate,
            activation=lambda x: keras.activations.gelu(x, approximate=False),
            dtype=dtype,
        )
        dense.build((None, None, hidden))
        dense.set_weights([w.astype(dense.variable_dtype) for w in weights])
        for form in FORMS:
            graphs[(form, dtype)] = frozen_form(form, dense, hidden, intermediate)
    inputs = {b: rng.normal(0, 1, (b, n, hidden)).astype("float32") for b, n in SHAPES}
    record = ab_record(
        "docs/runs/roofline/gelu_fusion.py", ARGS, ROUNDS, calls=CALLS, hidden=hidden,
        intermediate=intermediate, kernels={}, medians_ms={}, max_abs_diff={},
    )  # fmt: skip
    if "f32" in PATHS and len(PATHS) > 1:
        record["max_abs_diff_from_f32"] = {}
    outputs = {}
    for round_ in range(ROUNDS):
        for batch, _ in SHAPES:
            for path in PATHS:
                for form in FORMS:
                    dtype = "bfloat16" if path == "bf16 weights" else "float32"
                    graph_def, x_name, y_name = graphs[(form, dtype)]
                    with tf.Graph().as_default() as graph:
                        tf.compat.v1.import_graph_def(graph_def, name="")
                        x, y = graph.get_tensor_by_name(x_name), graph.get_tensor_by_name(y_name)
                        with tf.compat.v1.Session(graph=graph, config=session_config(path)) as s:
                            meta = tf.compat.v1.RunMetadata()
                            options = tf.compat.v1.RunOptions(output_partition_graphs=True)
                            feed = {x: inputs[batch]}
                            out = s.run(y, feed, options=options, run_metadata=meta)
                            times = []
                            for _ in range(CALLS):
                                start = perf_counter()
                                s.run(y, feed)
                                times.append(1000 * (perf_counter() - start))
                    key = f"{form} | {path} @{batch}"
                    record["medians_ms"].setdefault(key, []).append(float(np.median(times)))
                    if round_ == 0:
                        record["kernels"][key] = sorted(
                            node.op
                            for g in meta.partition_graphs
                            for node in g.node
                            if node.op not in BOOKKEEPING
                        )
                        outputs[key] = out
                    print(f"round {round_} {key}: {record['medians_ms'][key][-1]:.2f} ms")
    for batch, _ in SHAPES:
        for path in PATHS:
            a, b = (outputs[f"{form} | {path} @{batch}"] for form in FORMS)
            record["max_abs_diff"][f"{path} @{batch}"] = float(np.abs(a - b).max())
            if "max_abs_diff_from_f32" not in record or path == "f32":
                continue
            for form in FORMS:
                key, f32 = f"{form} | {path} @{batch}", outputs[f"{form} | f32 @{batch}"]
                record["max_abs_diff_from_f32"][key] = float(np.abs(outputs[key] - f32).max())
    for key, kernels in record["kernels"].items():
        print(f"{key}: {min(record['medians_ms'][key]):.2f} ms; {kernels}")
    out = Path(__file__).with_name(ARGS.get("json_out", "gelu_fusion.json"))
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
