"""re2_lab.roofline: FLOP counts read from XLA's HLO, against counts worked out by hand."""

from pathlib import Path

import numpy as np
import pytest

from re2_lab import roofline


def test_a_dense_layer_costs_two_flops_per_multiply_add():
    import keras

    layer = keras.layers.Dense(7)
    x = np.ones((5, 11), "float32")
    layer(x)
    counts = roofline.function_flops(lambda t: layer(t), x)
    assert counts == {"dot": 2 * 5 * 11 * 7, "convolution": 0, "total": 2 * 5 * 11 * 7}


def test_a_batched_matmul_and_a_conv1d_by_hand():
    import keras
    import tensorflow as tf

    conv = keras.layers.Conv1D(6, 3, padding="same")
    a, b = np.ones((4, 9, 5), "float32"), np.ones((4, 5, 8), "float32")
    x = np.ones((2, 10, 12), "float32")
    conv(x)
    # [4, 9, 5] x [4, 5, 8]: 4 * 9 * 8 outputs, 5 multiply-adds each
    assert roofline.function_flops(lambda p, q: tf.matmul(p, q), a, b)["dot"] == 2 * 4 * 9 * 8 * 5
    # length 10 kept ("same"), 6 filters, each output 3 taps x 12 input features
    assert roofline.function_flops(lambda t: conv(t), x)["convolution"] == 2 * 2 * 10 * 6 * 3 * 12


def test_a_dot_s_batched_shape_takes_its_batch_out_of_m():
    import tensorflow as tf

    a, b = np.ones((4, 9, 5), "float32"), np.ones((4, 5, 8), "float32")
    w = np.ones((5, 7), "float32")
    module = roofline.parse_hlo(
        roofline.function_hlo(lambda p, q: (tf.matmul(p, q), tf.matmul(p, w)), a, b)
    )
    dots = [i for i in module.live(module.entry) if i.op == "dot"]
    # [4, 9, 5] x [4, 5, 8]: 4 products of 9 x 5 by 5 x 8; [4, 9, 5] x [5, 7]: one of
    # 36 x 5 by 5 x 7 (no batch dimension on the kernel)
    assert sorted(module.dot_batched_shape(d) for d in dots) == [(1, 36, 5, 7), (4, 9, 5, 8)]


def test_malformed_hlo_is_named():
    line = "  %dot.1 = f32[2,2]{1,0} dot(f32[2,3]{1,0} %a, f32[3,2]{1,0} %b)"
    with pytest.raises(ValueError, match="dot without lhs_contracting_dims"):
        roofline.hlo_flops(line)


def _re2_table5_by_hand(batch=8, length=20, emb=300, hidden=150, blocks=3, enc_layers=3, k=3):
    """RE2's Table 5 network (the release's widths: enc-in concatenation, full fusion, full
    prediction), its matmul and convolution FLOPs written out layer by layer."""
    rows = batch * length
    total = 0
    for block in range(blocks):
        enc_in = emb if block == 0 else emb + hidden  # embedding (+ previous block's output)
        align_in = enc_in + hidden  # encoder input and output, concatenated
        for _ in range(2):  # each text
            total += 2 * rows * k * enc_in * hidden  # first convolution
            total += (enc_layers - 1) * 2 * rows * k * hidden * hidden
            total += 2 * rows * align_in * hidden  # alignment projection
            total += 2 * batch * length * length * align_in  # the aligned (attended) vectors
            total += 3 * 2 * rows * (2 * align_in) * hidden  # fusion: orig, sub, mul
            total += 2 * rows * (3 * hidden) * hidden  # fusion projection
        total += 2 * batch * length * length * hidden  # alignment scores e_ij
        total += 2 * batch * length * length  # the padding mask's outer product
    total += 2 * batch * (4 * hidden) * hidden + 2 * batch * hidden * 3  # prediction
    return total


def test_re2_table5_model_by_hand():
    from re2_tf import benchmarking
    from re2_tf.models import get_spec

    spec = get_spec("re2")
    hparams = dict(spec.defaults(), **spec.benchmark["RE2 3 blocks"]["hparams"])
    featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
    model = spec.build(3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
    ids = np.random.default_rng(0).integers(2, 1000, size=(8, 20)).astype("int32")
    counts = roofline.model_flops(model, {"text1": ids, "text2": ids})
    assert counts["total"] == _re2_table5_by_hand() == 1_868_666_400


def test_a_training_step_of_a_dense_layer_is_its_forward_and_weight_gradient_matmuls():
    # forward x W, and the backward pass's gradient for W (x^T g); the input's own gradient
    # is not asked for. Forward 2 b n m, dW 2 n b m: 4 b n m in all.
    import keras

    model = keras.Sequential([keras.Input((11,)), keras.layers.Dense(7)])
    x = np.ones((5, 11), "float32")
    assert roofline.train_step_flops(model, x)["dot"] == 4 * 5 * 11 * 7


def test_a_loop_body_counts_once_per_iteration_and_its_steps_chain():
    import tensorflow as tf

    w = tf.constant(np.ones((6, 6), "float32"))

    def fn(x):  # i = 3 .. 12: ten iterations
        return tf.while_loop(lambda i, h: i < 13, lambda i, h: (i + 1, tf.matmul(h, w)), (3, x))[1]

    hlo = roofline.function_hlo(fn, np.ones((4, 6), "float32"))
    assert roofline.hlo_flops(hlo)["dot"] == 10 * 2 * 4 * 6 * 6
    module = roofline.parse_hlo(hlo)
    ((caller, loop),) = [
        (name, i) for name, c in module.computations.items() for i in c if i.op == "while"
    ]
    assert module.trip_count(loop, caller) == 10
    shapes = []
    assert roofline.dependency_floor(hlo, lambda s: shapes.append(s) or 0.5) == 10 * 0.5
    assert shapes == [(4, 6, 6)]


def test_a_loop_body_xla_wraps_in_a_call_still_costs_its_steps():
    """A loop-invariant transposed kernel makes XLA wrap the body in a ``call`` (the loop
    carries it in another layout); the body's product is still found: ten iterations."""
    import tensorflow as tf

    w = tf.constant(np.arange(36, dtype="float32").reshape(6, 6))

    def fn(x):  # i = 3 .. 12
        wt = tf.transpose(w * x[0, 0])
        body = lambda i, h: (i + 1, tf.matmul(wt, h))  # noqa: E731
        return tf.while_loop(lambda i, h: i < 13, body, (3, tf.transpose(x)))[1]

    hlo = roofline.function_hlo(fn, np.ones((4, 6), "float32"))
    module = roofline.parse_hlo(hlo)
    assert any(i.op == "call" for c in module.computations.values() for i in c)
    assert roofline.hlo_flops(hlo)["dot"] == 10 * 2 * 6 * 6 * 4
    shapes = []
    assert roofline.dependency_floor(hlo, lambda s: shapes.append(s) or 0.5) == 10 * 0.5
    assert shapes == [(6, 6, 4)]


def test_an_lstm_by_hand_and_its_directions_overlap_while_stacked_layers_chain():
    # Keras' LSTM: every step multiplies x_t [b, d] by W [d, 4h] and h [b, h] by U [h, 4h].
    # (Its TensorFlow backend also computes a first step before the loop, only to learn the
    # output's shape; XLA drops it as dead code, and so does the count.)
    import keras

    b, t, d, h = 3, 7, 5, 4
    x = np.ones((b, t, d), "float32")
    lstm = keras.layers.LSTM(h, return_sequences=True)
    bi = keras.layers.Bidirectional(keras.layers.LSTM(h, return_sequences=True))
    second = keras.layers.LSTM(h)
    second(bi(lstm(x)))
    assert roofline.function_flops(lambda v: lstm(v), x)["dot"] == t * (
        2 * b * d * 4 * h + 2 * b * h * 4 * h
    )
    hlo = roofline.function_hlo(lambda v: bi(v), np.ones((b, t, h), "float32"))
    assert roofline.hlo_flops(hlo)["dot"] == 2 * t * (2 * b * h * 4 * h + 2 * b * h * 4 * h)
    assert roofline.dependency_floor(hlo, lambda s: 1.0) == t  # the directions overlap
    stacked = roofline.function_hlo(lambda v: second(bi(lstm(v))), x)
    assert roofline.dependency_floor(stacked, lambda s: 1.0) == 3 * t


def test_an_lstm_training_step_by_hand_its_gradient_loop_runs_as_often_as_the_forward():
    # forward: t steps of x_t W and h U; backward, t steps of dW += x_t^T g, dU += h^T g and
    # the recurrent gradient g U^T (the input's own gradient is not needed: it is no weight)
    import keras

    b, t, d, h = 3, 7, 5, 4
    model = keras.Sequential([keras.Input((t, d)), keras.layers.LSTM(h)])
    forward = t * (2 * b * d * 4 * h + 2 * b * h * 4 * h)
    backward = t * (2 * d * b * 4 * h + 2 * h * b * 4 * h + 2 * b * 4 * h * h)
    x = np.ones((b, t, d), "float32")
    assert roofline.train_step_flops(model, x)["dot"] == forward + backward == 14_784


def test_a_loop_bounded_by_a_static_shape_counts_that_many_iterations():
    # tf.shape(x)[1] reaches XLA as constants through reshape / slice / concatenate
    # (BERT+MatchLSTM's MatchLSTM loops over its second segment this way)
    import tensorflow as tf

    w = tf.constant(np.ones((6, 6), "float32"))

    def fn(x):
        n = tf.shape(x)[1]
        body = lambda i, h: (i + 1, tf.matmul(h, w))  # noqa: E731
        return tf.while_loop(lambda i, h: i < n, body, (0, x[:, 0, :]))[1]

    hlo = roofline.function_hlo(fn, np.ones((4, 9, 6), "float32"))
    assert roofline.hlo_flops(hlo)["dot"] == 9 * 2 * 4 * 6 * 6
    assert roofline.dependency_floor(hlo, lambda s: 1.0) == 9


def test_a_loop_without_a_constant_bound_is_named():
    import tensorflow as tf

    def fn(x, n):
        return tf.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 2.0), (0, x))[1]

    hlo = roofline.function_hlo(fn, np.ones(3, "float32"), np.int32(4))
    with pytest.raises(ValueError, match="while loop %.*no constant trip count"):
        roofline.hlo_flops(hlo)


def test_cpu_units_follow_the_cpu_flags():
    assert roofline.cpu_units(["avx2"]) == {"float32": True, "bfloat16": False, "int8": False}
    assert roofline.cpu_units(["avx2", "avx512f", "avx512_vnni", "avx512_bf16"]) == {
        "float32": True,
        "bfloat16": True,
        "int8": True,
    }
    assert roofline.cpu_units(["amx_bf16", "amx_int8"])["bfloat16"] is True


def test_the_report_tables_of_a_hand_written_record():
    record = {
        "cpu": "Some CPU",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-11-26",
        "threads": 2,
        "units": {"float32": True, "bfloat16": False, "int8": False},
        "peaks": {"float32": 100e9, "bfloat16": None, "int8": None},
        "batch": 8,
        "length": 20,
        "throughput_batch": 512,
        "serving": [
            {
                "variant": "Net",
                "export": "savedmodel_fp32",
                "flops": 2.5e9,
                "median_ms": 50.0,
                "flop_floor_ms": 25.0,
                "sequential_steps": 40,
                "dependency_floor_ms": 4.0,
                "times_floor": 2.0,
                "bound": "FLOPs",
                "throughput_pairs_per_s": 1234.4,
                "percent_of_peak": 61.7,
            }
        ],
        "training": [
            {
                "model": "net",
                "batch_size": 64,
                "length": 24,
                "flops_per_update": 12.345e9,
                "pairs_per_s": 80.04,
                "floor_pairs_per_s": 518.4,
                "percent_of_peak": 15.4,
            }
        ],
    }
    assert roofline.markdown(record).splitlines() == [
        "2 cores of Some CPU (avx2), 2026-11-26; 2 threads; measured peak: float32 100 "
        "GFLOP/s, no bfloat16 units, no int8 units.",
        "",
        "| model | export | GFLOP per 8×20 batch | median ms | FLOP floor ms | sequential steps "
        "| dependency floor ms | × floor | pairs/s @ 512 | % of peak @ 512 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| Net | savedmodel_fp32 | 2.500 | 50.0 | 25.0 | 40 | 4.00 | 2.0 (FLOPs) | 1,234 | 62 % |",
        "",
        "| model (training) | batch × length | GFLOP per update | pairs/s | floor pairs/s "
        "| % of peak |",
        "|---|---:|---:|---:|---:|---:|",
        "| net | 64×24 | 12.35 | 80.0 | 518 | 15 % |",
    ]
    record["serving"][0]["profile"] = {
        "wall_ms": 52.0,
        "op_ms": 60.5,
        "matmul_ms": 40.0,
        "matmul_percent_of_peak": 62.5,
        "kinds": {},
        "largest": [["concat.1 (concatenate)", 5.0], ["Softmax:_MklSoftmax (_MklSoftmax)", 0.25]],
    }
    assert roofline.markdown(record).splitlines()[-4:] == [
        "",
        "| model (profiled) | export | ms per call | thread ms in ops | in matrix products "
        "| their % of peak | largest other ops (thread ms) |",
        "|---|---|---:|---:|---:|---:|---|",
        "| Net | savedmodel_fp32 | 52.0 | 60.5 | 40.0 | 62 % | concat.1 (concatenate) 5.00; "
        "Softmax:_MklSoftmax (_MklSoftmax) 0.25 |",
    ]


def test_texts_of_single_position_words_are_exactly_their_length_for_wordpiece():
    pytest.importorskip("keras_hub")
    from re2_tf import benchmarking
    from re2_tf.models import get_spec

    spec = get_spec("bert_matchlstm")
    featurizers = benchmarking.synthetic_featurizers(spec, spec.defaults(), 100)
    words = roofline.single_position_words(featurizers, ["the", "dog", "unaffordable", "xqzv"])
    assert words == ["the", "dog"]  # the others are more than one WordPiece
    batch = roofline.pair_batch(featurizers, 3, 20, words)
    # [CLS] 20 tokens [SEP] 20 tokens [SEP]: no padding in any row
    assert {k: tuple(v.shape) for k, v in batch.items()} == {k: (3, 43) for k in batch}
    assert int(batch["token_ids"].numpy().min()) > 0


def test_a_chain_of_dependent_matmuls_takes_time():
    assert 0 < roofline.loop_step_seconds((4, 8, 8), iterations=50, repeats=2) < 0.01


@pytest.mark.slow
def test_the_roofline_report_of_match_srnn_has_its_fields():
    record = roofline.report(
        ["match_srnn"], batches=3, throughput_batch=16, updates=2, log=lambda *_: None
    )
    assert [r["variant"] for r in record["serving"]] == ["Match-SRNN", "Bi-Match-SRNN"]
    for row in record["serving"]:
        assert row["sequential_steps"] == 39  # 20 + 20 - 1 anti-diagonals of the 20 x 20 grid
        assert row["flops"] > 0 and row["median_ms"] > 0 and row["dependency_floor_ms"] > 0
        assert row["flops_throughput_batch"] == 2 * row["flops"]  # 16 pairs against 8
    (training,) = record["training"]
    assert training["model"] == "match_srnn" and training["pairs_per_s"] > 0
    assert "Match-SRNN" in roofline.markdown(record)


def _profile_worker():
    import importlib.util

    path = Path(roofline.__file__).parent / "profile_worker.py"
    module_spec = importlib.util.spec_from_file_location("profile_worker", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _plane(hlo_ops, events):
    """``(XSpace, its one plane)`` whose stat metadata holds ``hlo_op`` (id 1) and
    ``hlo_ops`` (``{id: instruction name}``), and whose event metadata holds ``events``
    (``{id: event name}``)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(name="/host:CPU")
    for key, name in {1: "hlo_op", **hlo_ops}.items():
        plane.stat_metadata[key].id, plane.stat_metadata[key].name = key, name
    for key, name in events.items():
        plane.event_metadata[key].id, plane.event_metadata[key].name = key, name
    return space, plane


def test_profiled_op_times_are_exclusive_and_skip_framework_events():
    names = {10: "while", 11: "dot", 12: "fusion", 13: "ThunkExecutor::Execute"}
    names.update({14: "model/Softmax:_MklSoftmax", 15: "signature_wrapper"})
    space, plane = _plane({2: "while.3", 3: "dot.9", 4: "fusion.1"}, names)

    def add(line, metadata, start, duration, hlo=None):
        event = line.events.add(metadata_id=metadata, offset_ps=start, duration_ps=duration)
        if hlo:
            event.stats.add(metadata_id=1, ref_value=hlo)

    worker = plane.lines.add(name="tf_numa_-1_Eigen/1")
    add(worker, 13, 0, 100)  # the executor's own event: not an op
    add(worker, 10, 0, 50, hlo=2)  # while.3 [0, 50) encloses dot.9 and fusion.1
    add(worker, 11, 5, 20, hlo=3)
    add(worker, 12, 30, 10, hlo=4)
    add(worker, 11, 60, 7, hlo=3)  # dot.9 again
    add(worker, 14, 70, 4)  # a TensorFlow kernel outside XLA
    python = plane.lines.add(name="python")
    add(python, 15, 0, 100)
    totals, counts = _profile_worker().exclusive_op_times(space)
    assert totals == {"while.3": 20, "dot.9": 27, "fusion.1": 10, "model/Softmax:_MklSoftmax": 4}
    assert counts == {"while.3": 1, "dot.9": 2, "fusion.1": 1, "model/Softmax:_MklSoftmax": 1}


def test_a_profiled_call_splits_into_python_s_dispatch_tensorflow_s_kernels_and_xla_s_thunks():
    names = {10: "TFE_Py_ExecuteCancelable", 11: "TFE_Py_Execute", 12: "KernelAndDeviceFunc::Run"}
    names.update({13: "CpuExecutable::ExecuteAsyncOnStream", 14: "ThunkExecutor::Execute"})
    names.update({15: "f/Pad:Pad", 16: "f/s:StridedSlice", 17: "f/Softmax:_MklSoftmax"})
    names.update({18: "g/Add:AddV2", 19: "dot", 20: "fusion", 21: "convolution"})
    space, plane = _plane({2: "dot.1", 3: "fusion.2", 4: "convolution.3"}, names)
    us = 1_000_000  # picoseconds

    def add(line, metadata, start, end, hlo=None):
        event = line.events.add(
            metadata_id=metadata, offset_ps=start * us, duration_ps=(end - start) * us
        )
        if hlo:
            event.stats.add(metadata_id=1, ref_value=hlo)

    python = plane.lines.add(name="python")
    add(python, 10, 0, 1000)  # call 1: an XLA executable between TensorFlow kernels
    add(python, 12, 100, 950)
    add(python, 11, 2000, 2600)  # call 2: TensorFlow kernels only
    add(python, 12, 2050, 2550)
    compute = plane.lines.add(name="tf_Compute/1")
    add(compute, 15, 150, 200)  # two kernels overlapping by 30 us: 70 us of kernels
    add(compute, 16, 180, 220)
    add(compute, 13, 300, 800)
    add(compute, 17, 850, 900)
    add(compute, 18, 2100, 2200)
    worker = plane.lines.add(name="tf_numa_-1_Eigen/2")
    add(worker, 14, 310, 790)  # the thunk executor's own event: not a thunk, not a kernel
    add(worker, 19, 320, 500, hlo=2)  # thunks overlapping by 50 us: 280 us, then 50
    add(worker, 20, 450, 600, hlo=3)
    add(worker, 21, 700, 750, hlo=4)
    first, second = _profile_worker().call_phases(space)
    assert first == pytest.approx(
        {"execute": 1.0, "eager": 0.15, "run": 0.85, "before_xla": 0.2, "xla": 0.5}
        | {"xla_ops": 0.33, "xla_between_ops": 0.17, "after_xla": 0.15, "tf_kernels": 0.12}
    )
    assert second == pytest.approx(
        {"execute": 0.6, "eager": 0.1, "run": 0.5, "before_xla": 0.5, "xla": 0.0}
        | {"xla_ops": 0.0, "xla_between_ops": 0.0, "after_xla": 0.0, "tf_kernels": 0.1}
    )


def test_a_profile_summary_splits_matrix_products_from_the_rest():
    traced = {
        "wall_ms": 3.0,
        "ops": {"dot.1": 1.0, "fusion.2": 0.5, "convolution": 0.5, "concat.4": 0.25},
        "kinds": {
            "dot.1": "dot",
            "fusion.2": "fusion with dot",
            "convolution": "convolution",
            "concat.4": "concatenate",
        },
    }
    summary = roofline.profile_summary(traced, flops=2e9, peak=1e12, top=1)
    assert summary["op_ms"] == 2.25 and summary["matmul_ms"] == 2.0
    # 2 GFLOP in 2 ms = 1 TFLOP/s = the whole peak
    assert summary["matmul_percent_of_peak"] == pytest.approx(100.0)
    assert summary["largest"] == [["concat.4 (concatenate)", 0.25]]
    assert summary["kinds"] == {
        "dot": 1.0,
        "fusion with dot": 0.5,
        "convolution": 0.5,
        "concatenate": 0.25,
    }


@pytest.mark.slow
def test_profiling_an_xla_savedmodel_names_its_matmul_by_opcode(tmp_path):
    import tensorflow as tf

    class Net(tf.Module):
        def __init__(self):
            self.w = tf.Variable(tf.random.stateless_normal([32, 64], seed=[1, 2]))

        @tf.function(
            input_signature=[tf.TensorSpec([None, 32], tf.float32, name="x")], jit_compile=True
        )
        def __call__(self, x):
            return {"y": tf.tanh(tf.matmul(x, self.w)) + 1.0}

    net = Net()
    tf.saved_model.save(net, str(tmp_path / "net"), signatures={"serving": net.__call__})
    spec = {"x": {"dtype": "float32", "shape": [16, 32], "low": 0, "high": 1}}
    traced = roofline.profile_export(tmp_path / "net", "serving", spec, calls=5, threads=1)
    assert traced["calls"] == 5 and traced["wall_ms"] > 0
    dots = [n for n, kind in traced["kinds"].items() if kind in ("dot", "fusion with dot")]
    assert len(dots) == 1 and traced["ops"][dots[0]] > 0
    # every call's phases: one XLA executable inside the run, which is inside the call
    assert len(traced["phases"]) == 5
    for call in traced["phases"]:
        assert call["python"] >= 0 and call["eager"] >= 0 and call["xla_between_ops"] >= 0
        assert call["before_xla"] + call["xla"] + call["after_xla"] == pytest.approx(call["run"])
        assert 0 < call["xla_ops"] <= call["xla"] < call["run"] < call["execute"]


@pytest.mark.slow
def test_a_profile_runs_on_the_batches_file_and_counts_a_loops_runs(tmp_path):
    import numpy as np
    import tensorflow as tf

    from re2_tf import benchmarking

    class Net(tf.Module):
        def __init__(self):
            # large enough for XLA to run the product as its own thunk, not inlined
            self.w = tf.Variable(tf.random.stateless_normal([128, 128], seed=[1, 2]))

        @tf.function(
            input_signature=[tf.TensorSpec([None, 3], tf.int32, name="x")], jit_compile=True
        )
        def __call__(self, x):
            # a run-time trip count: the batch's largest id
            _, h = tf.while_loop(
                lambda k, h: k < tf.reduce_max(x),
                lambda k, h: (k + 1, tf.tanh(tf.matmul(h, self.w))),
                (tf.constant(0), tf.ones([64, 128])),
            )
            return {"y": h}

    net = Net()
    tf.saved_model.save(net, str(tmp_path / "net"), signatures={"serving": net.__call__})
    # 4 batches whose largest ids are 2, 4, 6 and 8: 5 runs of the loop's product per call
    # over 4 calls; a batch drawn from the spec (ids 0 or 1) would run it at most once
    batches = [{"x": np.array([[1, 0, t], [0, 1, 1]], np.int32)} for t in (2, 4, 6, 8)]
    spec = benchmarking.write_batches(batches, tmp_path / "inputs.npz")
    traced = roofline.profile_export(
        tmp_path / "net",
        "serving",
        spec,
        calls=4,
        warmup=3,
        threads=1,
        inputs_file=tmp_path / "inputs.npz",
    )
    dots = [n for n, kind in traced["kinds"].items() if kind in ("dot", "fusion with dot")]
    assert [traced["runs"][n] for n in dots] == [5.0]
    drawn = roofline.profile_export(tmp_path / "net", "serving", spec, calls=4, threads=1)
    assert all(drawn["runs"].get(n, 0) <= 1 for n in dots)


def test_an_ab_record_names_its_command_and_machine_and_its_inputs_are_table5s(tmp_path):
    record = roofline.ab_record(
        "docs/runs/x.py", {"rounds": "3", "variants": "RE2 1 block"}, 3, variants={}
    )
    assert record["command"] == 'python docs/runs/x.py --rounds=3 --variants="RE2 1 block"'
    assert (record["rounds"], record["threads"], record["variants"]) == (3, 2, {})
    assert {"cpu", "date", "versions"} <= set(record)
    # the inputs: the first 4 batches of table5_inputs with no length spread, as serving_ids
    from re2_tf import benchmarking

    featurizers = benchmarking.synthetic_featurizers(
        _re2_spec(), dict(_re2_spec().benchmark["RE2 1 block"]["hparams"]), 100
    )
    spec = roofline.ab_inputs(featurizers, 8, 20, tmp_path)
    saved = np.load(tmp_path / "inputs_8.npz")
    want = benchmarking.table5_inputs(featurizers, 8, 20, length_spread=0).id_batches()
    assert len(want) == 4 and set(spec) == set(want[0])
    assert all(spec[name]["shape"][:2] == [8, 20] for name in want[0])
    assert sorted(saved.files) == sorted(f"{i}/{k}" for i, b in enumerate(want) for k in b)
    for i, batch in enumerate(want):
        for name, array in batch.items():
            np.testing.assert_array_equal(saved[f"{i}/{name}"], array)


def _re2_spec():
    from re2_tf.models import get_spec

    return get_spec("re2")


def test_kind_times_sum_ops_by_kind_and_name_an_unkinded_op_by_its_type():
    # by hand: two MatMul kernels 1.0 + 2.0, a Cast the trace gives no kind -> "Cast" 0.5
    traced = {
        "ops": {"a/mm:_MklMatMul": 1.0, "b/mm:_MklMatMul": 2.0, "c/cast:Cast": 0.5},
        "kinds": {"a/mm:_MklMatMul": "_MklMatMul", "b/mm:_MklMatMul": "_MklMatMul"},
    }
    kinds, counts = roofline.kind_times(traced)
    assert list(kinds.items()) == [("_MklMatMul", 3.0), ("Cast", 0.5)]
    assert counts == {"_MklMatMul": 2, "Cast": 1}


def test_ab_agreement_compares_each_path_with_the_reference_at_its_batch():
    """Hand-worked: at batch 2, path b differs from a by at most 0.2 and flips the second
    pair's argmax; at batch 1 it equals a."""
    import numpy as np

    from re2_lab.roofline import ab_agreement

    a2 = np.array([[0.2, 0.8], [0.6, 0.4]], "float32")
    b2 = np.array([[0.3, 0.7], [0.4, 0.6]], "float32")
    a1 = np.array([[0.9, 0.1]], "float32")
    got = ab_agreement({("a", 2): a2, ("b", 2): b2, ("a", 1): a1, ("b", 1): a1.copy()}, "a")
    assert got["a@2"] == {"max_abs_dp": 0.0, "argmax_agreement": 1.0}
    assert got["b@2"]["max_abs_dp"] == pytest.approx(0.2)
    assert got["b@2"]["argmax_agreement"] == 0.5
    assert got["b@1"] == {"max_abs_dp": 0.0, "argmax_agreement": 1.0}


def test_an_environment_reaches_the_processes_started_inside_it_and_is_undone(monkeypatch):
    import json
    import subprocess
    import sys

    monkeypatch.setenv("RE2_LAB_KEPT", "outer")
    monkeypatch.delenv("RE2_LAB_ADDED", raising=False)
    names = ("RE2_LAB_KEPT", "RE2_LAB_ADDED")
    script = f"import json, os; print(json.dumps([os.environ.get(k) for k in {names!r}]))"

    def child():
        return json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                         text=True, check=True).stdout)  # fmt: skip

    with roofline.environment({"RE2_LAB_KEPT": "inner", "RE2_LAB_ADDED": "1"}):
        assert child() == ["inner", "1"]
    assert child() == ["outer", None]
    with pytest.raises(RuntimeError), roofline.environment({"RE2_LAB_ADDED": "2"}):
        raise RuntimeError("a failed timing")
    assert child() == ["outer", None]
    with roofline.environment(None):
        assert child() == ["outer", None]
