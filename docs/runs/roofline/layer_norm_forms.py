"""Which LayerNorm forms TensorFlow runs as oneDNN's fused kernel (issue 51, item 2: where the
bfloat16 BERT SavedModel's time goes besides its products).

TensorFlow's graph optimiser (Grappler's remapper) has patterns that replace a LayerNorm
written in plain ops by oneDNN's ``_MklLayerNorm``. This script writes one LayerNorm over
BERT's width (the default MiniLM checkpoint's ``hidden_size``; scale and offset
``tf.Variable``s, as an export holds them) in each form below, in float32 and in bfloat16 (the
input cast inside the function), runs it as a ``tf.function`` with 2 intra-op threads and
records the kernels TensorFlow ran after Grappler (the function's partition graphs, from
``context.export_run_metadata``; bookkeeping ops left out), the median ms of ``--calls`` calls
per round (forms alternating within each round) and the max |difference| from float64 NumPy
on the same (rounded) inputs, scale and offset:

- ``moments, float32 statistics``: ``tf.nn.moments`` on the input cast to float32, then the
  normalisation and the affine part in float32, cast back (``re2_tf/serving/folded_bert.py``
  before it named the fused kernel);
- ``moments + batch_normalization``: ``tf.nn.moments`` and ``tf.nn.batch_normalization`` in
  the input's dtype;
- ``mean, square, rsqrt``: ``beta + (x - mean(x)) * (rsqrt(mean((x - mean(x))^2) + eps) *
  gamma)`` in the input's dtype;
- ``FusedBatchNormV3``: the input reshaped to ``[1, rows, hidden, 1]`` and normalised by
  ``FusedBatchNormV3`` in training mode with unit scale and zero offset, then ``* gamma +
  beta`` (Keras 2's LayerNormalization);
- ``keras LayerNormalization``: Keras 3's layer of the input's dtype;
- ``re2_tf``: ``re2_tf.serving.folded_bert._layer_norm`` (oneDNN's kernel named in the graph
  for bfloat16 where TensorFlow registers it).

Writes ``--json_out`` (``layer_norm_forms.json`` by default) beside this file.

    python docs/runs/roofline/layer_norm_forms.py [--rounds=3] [--calls=50]
        [--json_out=layer_norm_forms.json]
"""

import json
import sys
from pathlib import Path
from time import perf_counter

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context

from re2_lab.roofline import ab_record
from re2_tf.layers.bert_backbone import default_bert_preset
from re2_tf.serving import folded_bert

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 3))
CALLS = int(ARGS.get("calls", 50))
#: rows of BERT (h_0)'s packed pairs at 8 x 20 and 512 x 20 (20 + 20 words and 3 special
#: tokens per pair)
ROWS = (8 * 43, 512 * 43)
EPSILON = 1e-12
FORMS = (
    "moments, float32 statistics",
    "moments + batch_normalization",
    "mean, square, rsqrt",
    "FusedBatchNormV3",
    "keras LayerNormalization",
    "re2_tf",
)
#: ops that move data or feed the graph, not kernels of the LayerNorm
BOOKKEEPING = {"_Arg", "_Retval", "_Recv", "_Send", "Const", "NoOp", "Identity", "Shape"}
BOOKKEEPING |= {"StridedSlice", "Pack", "Reshape", "_MklReshape", "ReadVariableOp"}


def form_function(form, dtype, gamma, beta, hidden):
    """The LayerNorm of ``form`` on a float32 ``[rows, hidden]`` input computed in ``dtype``,
    float32 out."""
    layer = None
    if form == "keras LayerNormalization":
        layer = keras.layers.LayerNormalization(epsilon=EPSILON, dtype=dtype)
        layer.build((None, hidden))
        layer.set_weights([gamma.numpy(), beta.numpy()])

    def norm(x):
        g, b = tf.cast(gamma, dtype), tf.cast(beta, dtype)
        if form == "moments, float32 statistics":
            x32 = tf.cast(x, tf.float32)
            mean, variance = tf.nn.moments(x32, axes=[-1], keepdims=True)
            y = (x32 - mean) * tf.math.rsqrt(variance + EPSILON)
            return tf.cast(y * gamma + beta, dtype)
        if form == "moments + batch_normalization":
            mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
            return tf.nn.batch_normalization(x, mean, variance, b, g, EPSILON)
        if form == "mean, square, rsqrt":
            d = x - tf.reduce_mean(x, axis=-1, keepdims=True)
            variance = tf.reduce_mean(tf.square(d), axis=-1, keepdims=True)
            return b + d * (tf.math.rsqrt(variance + tf.constant(EPSILON, dtype)) * g)
        if form == "FusedBatchNormV3":
            rows = tf.shape(x)[0]
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(
                tf.reshape(x, tf.stack([1, rows, hidden, 1])),
                scale=tf.ones(tf.reshape(rows, [1])),
                offset=tf.zeros(tf.reshape(rows, [1])),
                epsilon=EPSILON,
                data_format="NCHW",
            )
            return b + tf.reshape(y, tf.shape(x)) * g
        if form == "keras LayerNormalization":
            return layer(x)
        return folded_bert._layer_norm(x, gamma, beta, EPSILON)

    return tf.function(lambda x: tf.cast(norm(tf.cast(x, dtype)), tf.float32))


def kernels_run(function, x):
    """The kernels one call of ``function`` (a ``tf.function`` not called before: its graphs
    are reported when it is instantiated) ran, after Grappler (sorted op names)."""
    context.enable_run_metadata()
    try:
        context.export_run_metadata()  # what earlier calls left in the buffer
        function(x)
        metadata = context.export_run_metadata()
    finally:
        context.disable_run_metadata()
    return sorted(
        node.op
        for graphs in metadata.function_graphs
        for graph in graphs.partition_graphs
        for node in graph.node
        if node.op not in BOOKKEEPING
    )


def main():
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    hidden = json.loads((Path(default_bert_preset()) / "config.json").read_text())["hidden_size"]
    rng = np.random.default_rng(0)
    gamma = tf.Variable(rng.normal(1.0, 0.3, hidden).astype("float32"))
    beta = tf.Variable(rng.normal(0.0, 0.5, hidden).astype("float32"))
    inputs = {rows: rng.normal(2.0, 3.0, (rows, hidden)).astype("float32") for rows in ROWS}
    record = ab_record(
        "docs/runs/roofline/layer_norm_forms.py", ARGS, ROUNDS, calls=CALLS, hidden=hidden,
        rows=list(ROWS), fused_kernel_registered=folded_bert._has_fused_layer_norm(tf.bfloat16),
        kernels={}, medians_ms={}, max_abs_diff_from_numpy={},
    )  # fmt: skip
    functions = {
        (form, dtype): form_function(form, dtype, gamma, beta, hidden)
        for form in FORMS
        for dtype in ("float32", "bfloat16")
    }
    for (form, dtype), function in functions.items():
        key = f"{form} | {dtype}"
        record["kernels"][key] = kernels_run(
            form_function(form, dtype, gamma, beta, hidden), tf.constant(inputs[ROWS[0]])
        )
        for rows in ROWS:
            x = tf.constant(inputs[rows])
            # float64 NumPy on what the form reads: the input, scale and offset in its dtype
            x64, g64, b64 = (
                np.asarray(tf.cast(tf.cast(t, dtype), tf.float64)) for t in (x, gamma, beta)
            )
            mean = x64.mean(-1, keepdims=True)
            variance = ((x64 - mean) ** 2).mean(-1, keepdims=True)
            expected = (x64 - mean) / np.sqrt(variance + EPSILON) * g64 + b64
            got = function(x).numpy().astype(np.float64)
            difference = float(np.abs(got - expected).max())
            record["max_abs_diff_from_numpy"][f"{key} @{rows}"] = difference
        print(f"{key}: {record['kernels'][key]}", flush=True)
    for _ in range(ROUNDS):
        for rows in ROWS:
            x = tf.constant(inputs[rows])
            for (form, dtype), function in functions.items():
                function(x)
                times = []
                for _ in range(CALLS if rows == ROWS[0] else max(CALLS // 10, 3)):
                    start = perf_counter()
                    function(x)
                    times.append(1000 * (perf_counter() - start))
                key = f"{form} | {dtype} @{rows}"
                record["medians_ms"].setdefault(key, []).append(float(np.median(times)))
                print(f"{key}: {record['medians_ms'][key][-1]:.3f} ms", flush=True)
    out = Path(__file__).with_name(ARGS.get("json_out", "layer_norm_forms.json"))
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
