"""How close a model runs to what the CPU can do: FLOP counts from XLA's HLO and floors.

A model's FLOPs per call are counted from the HLO XLA builds for it (``tf.function(...,
jit_compile=True).experimental_get_compiler_ir(...)(stage="hlo")``, before fusion): every
``dot`` (``MatMul``, ``BatchMatMul``, ``Tensordot``, Keras ``Dense``) costs ``2 x`` its output
elements ``x`` its contracted length, every ``convolution`` ``2 x`` its output elements ``x``
its kernel's spatial size ``x`` its input features per group. That is the arithmetic a matrix
unit must do; element-wise work (activations, softmax, masks, additions) is left out, and so
is the embedding lookup (a gather, no FLOPs). For RE2's 3-block Table 5 model (batch 8, both
texts 20 tokens) this is 1,868,666,400 FLOP, which ``tests/test_roofline.py`` derives by hand
from the release's layer widths. TensorFlow's own profiler counts FLOPs only for the ops that
register a statistic and misses XLA-compiled functions, so the HLO is read instead (our
choice; the issue's other option).

The *FLOP floor* of a call is its FLOPs over the CPU's measured peak (:func:`peak_flops`, a
large matmul with TensorFlow at the thread count used): no implementation on that CPU can be
faster; the ratio of a measured time to it says how far from the hardware a model runs.
"""

from __future__ import annotations

import re

__all__ = ["function_flops", "hlo_flops", "model_flops", "peak_flops", "train_step_flops"]

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%\S+\s*=\s*(\w+)\[([\d,]*)\]\S*\s+(\w+)\((.*)$")
_OPERAND = re.compile(r"(\w+)\[([\d,]*)\](?:\{[\d,]*\})?\s+%")


def _dims(text):
    return [int(x) for x in text.split(",") if x]


def _product(values):
    out = 1
    for v in values:
        out *= v
    return out


def hlo_flops(hlo):
    """FLOPs of the ``dot`` and ``convolution`` instructions of an HLO module's text.

    Args:
        hlo: str, HLO text (``stage="hlo"``), one instruction per line, operands written with
            their shapes (``f32[8,20,150]{2,1,0} %name``).

    Returns:
        ``{"dot": int, "convolution": int, "total": int}`` FLOPs (a multiply-add counts 2).

    Raises:
        ValueError: naming the line, for a ``dot`` without ``lhs_contracting_dims`` or a
        ``convolution`` without ``dim_labels``.
    """
    counts = {"dot": 0, "convolution": 0}
    for line in hlo.splitlines():
        match = _INSTRUCTION.match(line)
        if not match or match.group(3) not in counts:
            continue
        _, out_shape, op, rest = match.groups()
        outputs = _product(_dims(out_shape))
        operands = _OPERAND.findall(rest)
        if op == "dot":
            contracting = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", rest)
            if contracting is None or not operands:
                raise ValueError(f"dot without lhs_contracting_dims: {line.strip()[:120]}")
            lhs = _dims(operands[0][1])
            length = _product(lhs[i] for i in _dims(contracting.group(1)))
            counts["dot"] += 2 * outputs * length
        else:
            labels = re.search(r"dim_labels=\w+_(\w+)->", rest)
            if labels is None or len(operands) < 2:
                raise ValueError(f"convolution without dim_labels: {line.strip()[:120]}")
            kernel = _dims(operands[1][1])
            groups = re.search(r"feature_group_count=(\d+)", rest)
            per_output = _product(d for d, label in zip(kernel, labels.group(1)) if label != "o")
            counts["convolution"] += (
                2 * outputs * per_output // (int(groups.group(1)) if groups else 1)
            )
    counts["total"] = counts["dot"] + counts["convolution"]
    return counts


def function_flops(fn, *args):
    """:func:`hlo_flops` of ``fn(*args)`` compiled by XLA (``fn`` a Python callable of
    tensors; traced once with these arguments' shapes and dtypes)."""
    import tensorflow as tf

    compiled = tf.function(fn, jit_compile=True)
    return hlo_flops(compiled.experimental_get_compiler_ir(*args)(stage="hlo"))


def model_flops(model, inputs, *, training=False):
    """FLOPs of one forward call of a Keras ``model`` on ``inputs`` (a dict or list of arrays;
    the batch and lengths are theirs), :func:`function_flops`."""
    return function_flops(lambda x: model(x, training=training), inputs)


def train_step_flops(model, inputs):
    """FLOPs of one training step's forward and backward pass of a Keras ``model`` on
    ``inputs`` (dropout on; the gradient of the sum of the outputs with respect to every
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
        return tape.gradient(total, model.trainable_variables)

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
