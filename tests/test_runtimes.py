"""re2_tf.serving.runtimes: OpenVINO and ONNX Runtime (via tf2onnx) on an export's serving_ids,
checked against the TensorFlow SavedModel's own outputs on the same inputs (every weight
random), the converters' failures named by op, and re2-predict --backend on raw text."""

import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from weights import randomize_weights

from re2_tf import benchmarking, runs
from re2_tf.matcher import Matcher
from re2_tf.models import get_spec
from re2_tf.serving import runtimes
from re2_tf.serving.export import export_model
from re2_tf.serving.run_export import export_run
from re2_tf.training.losses import output_kind

LABELS = ["entailment", "neutral", "contradiction"]


def test_unsupported_ops_are_read_from_each_tools_message():
    # The messages as tf2onnx 1.17, OpenVINO 2026.4 and ONNX Runtime 1.32 print them.
    assert runtimes.unsupported_ops(
        "ERROR - Unsupported ops: Counter({'LowerBound': 2, 'StatefulPartitionedCall': 1})"
    ) == ["LowerBound", "StatefulPartitionedCall"]
    assert runtimes.unsupported_ops(
        "Summary:\n-- No conversion rule found for operations: DenseBincount, RaggedRange\n"
        "-- Conversion is failed for: HashTableV2\n"
    ) == ["DenseBincount", "RaggedRange", "HashTableV2"]
    assert runtimes.unsupported_ops(
        "[ONNXRuntimeError] : 10 : INVALID_GRAPH : ... No Op registered for Erfc with "
        "domain_version of 17"
    ) == ["Erfc"]
    assert runtimes.unsupported_ops("ValueError: input resource[0] expected type") == []


def test_a_missing_runtime_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    with pytest.raises(runtimes.MissingPackageError, match=r"pip install -e '\.\[onnx\]'"):
        runtimes.require("onnxruntime")


def test_agreement_measures_and_flags_a_difference():
    reference = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    close = runtimes.agreement(reference, reference + 1e-7)
    assert close["max_abs_dp"] == pytest.approx(1e-7) and close["argmax_agreement"] == 1.0
    assert runtimes.agrees(close["argmax_agreement"])
    flipped = runtimes.agreement(reference, reference[:, ::-1])
    assert flipped["max_abs_dp"] == pytest.approx(0.5) and flipped["argmax_agreement"] == 0.0
    assert not runtimes.agrees(flipped["argmax_agreement"])


def test_the_agreement_rule_is_99_percent_of_labels_and_a_non_finite_pair_is_a_change():
    # 100 pairs, most probable class 2 everywhere; the rule's line is 99 of 100 labels
    reference = np.tile([0.2, 0.3, 0.5], (100, 1))
    one = reference.copy()
    one[0] = [0.5, 0.3, 0.2]  # one label changed: 0.99, on the line
    two = one.copy()
    two[1] = [0.2, 0.5, 0.3]  # two: 0.98
    nan = reference.copy()
    nan[:2] = np.nan  # argmax of a NaN row would be class 0 or 2 by chance: counted changed
    assert runtimes.agreement(reference, one)["argmax_agreement"] == 0.99
    assert runtimes.agrees(0.99) and not runtimes.agrees(0.98)
    assert not runtimes.agrees(runtimes.agreement(reference, two)["argmax_agreement"])
    assert runtimes.agreement(reference, nan)["argmax_agreement"] == 0.98
    assert not runtimes.agrees(None)  # nothing measured
    assert runtimes.agrees(0.95, min_agreement=0.95)


def _tiny_export(name, path, xla=False, seed=0, precision="fp32", fmt="savedmodel"):
    """``name``'s tiny model, every weight random (biases included), exported like
    re2_tf.benchmarking's random-weight models; returns (export dir, featurisers)."""
    import keras

    spec = get_spec(name)
    keras.utils.set_random_seed(seed)
    hparams = dict(spec.defaults(), **spec.tiny)
    featurizers = benchmarking.synthetic_featurizers(spec, hparams, vocab_size=200)
    model = spec.build(3, {f.kind: f.vocab_size for f in featurizers}, None, **hparams)
    randomize_weights(model, seed)
    export_model(
        model,
        path,
        featurizers=featurizers,
        backend=spec.export_backend,
        output=output_kind(spec, hparams),
        label_names=LABELS,
        xla=xla,
        precision=precision,
        length_buckets=[8, 16],
        max_length=16,
        fmt=fmt,
    )
    return path, featurizers


def _batches(seed=1):
    """Id batches of several shapes; the second text shorter, some rows padded."""
    rng = np.random.default_rng(seed)
    batches = []
    for n, len1, len2 in ((8, 12, 9), (3, 5, 7)):
        x = {
            "text1": rng.integers(2, 200, (n, len1)).astype(np.int32),
            "text2": rng.integers(2, 200, (n, len2)).astype(np.int32),
        }
        x["text1"][0, len1 // 2 :] = 0  # padding
        x["text2"][1, 2:] = 0
        batches.append(x)
    return batches


@pytest.fixture(scope="module", params=["re2", pytest.param("match_srnn", marks=pytest.mark.slow)])
def tiny(request, tmp_path_factory):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    pytest.importorskip("openvino")
    path, _ = _tiny_export(request.param, tmp_path_factory.mktemp("runtimes") / "export")
    reference = runtimes.load(path, "savedmodel")
    return request.param, path, [reference(x)["probabilities"] for x in _batches()]


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_converted_runtime_gives_the_savedmodels_probabilities(tiny, backend):
    name, path, expected = tiny
    runtime = runtimes.load(path, backend, threads=1)
    assert runtime.path.parent == path / "runtimes" and runtime.precision == "f32"
    got = [runtime(x)["probabilities"] for x in _batches()]
    assert [g.shape for g in got] == [e.shape for e in expected]
    measured = runtimes.agreement(np.concatenate(expected), np.concatenate(got))
    # Match-SRNN's spatial GRU passes a loop state on unchanged, which OpenVINO's CPU
    # plugin runs wrong unless the conversion copies it (test_openvino_loop_...).
    np.testing.assert_allclose(np.concatenate(got), np.concatenate(expected), atol=1e-5)
    assert measured["argmax_agreement"] == 1.0 and runtimes.agrees(measured["argmax_agreement"])
    # Converted once: a second load reuses the file.
    mtime = runtime.path.stat().st_mtime_ns
    runtimes.load(path, backend)
    assert runtime.path.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_re2_converts_from_its_portable_signature(tiny, backend):
    """RE2's converted file comes from serving_ids_portable (its convolutions as matrix
    products): no convolution node where the SavedModel's serving_ids holds Conv2D."""
    name, path, _ = tiny
    if name != "re2":
        pytest.skip("only RE2's backend has a portable form")
    runtime = runtimes.load(path, backend, threads=1)
    if backend == "openvino":
        import openvino as ov

        ops = {op.get_type_name() for op in ov.Core().read_model(runtime.path).get_ops()}
        assert "MatMul" in ops and not {"Convolution", "GroupConvolution"} & ops
    else:
        import onnx

        graph = onnx.load(runtime.path).graph
        ops = {n.op_type for n in graph.node}
        assert "MatMul" in ops and "Conv" not in ops
    graph = tf.saved_model.load(str(path)).signatures["serving_ids"].graph.as_graph_def()
    assert "Conv2D" in {n.op for f in graph.library.function for n in f.node_def}


@pytest.mark.slow  # default-suite time: the slow tier runs it
def test_the_xla_export_fails_on_lowerbound(tmp_path):
    pytest.importorskip("openvino")
    path, _ = _tiny_export("re2", tmp_path / "xla", xla=True)
    with pytest.raises(runtimes.ConversionError, match="LowerBound.*--xla=false") as caught:
        runtimes.convert(path, "openvino")
    assert caught.value.converter == "openvino" and caught.value.ops == ["LowerBound"]
    assert not (path / "runtimes" / "serving_ids.xml").exists()


def _save_function(path, function, tracked=None):
    """A SavedModel whose ``serving_ids`` signature is ``function`` (one float32 input ``x``
    of shape ``[None, None]``, outputs a dict); ``tracked``: what holds its variables."""

    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
        def serve(self, x):
            return function(x)

    module = Module()
    module.tracked = tracked
    tf.saved_model.save(module, str(path), signatures={"serving_ids": module.serve})
    return path


@pytest.mark.slow
def test_tf2onnx_names_an_op_it_has_no_handler_for(tmp_path):
    pytest.importorskip("tf2onnx")
    pytest.importorskip("onnx")
    # tf2onnx 1.17 has no handler for Lgamma (nor ONNX an op).
    _save_function(tmp_path, lambda x: {"probabilities": tf.math.lgamma(x)})
    with pytest.raises(runtimes.ConversionError, match="unsupported op.*Lgamma") as caught:
        runtimes.convert(tmp_path, "onnxruntime")
    assert caught.value.converter == "tf2onnx" and caught.value.ops == ["Lgamma"]


@pytest.mark.slow
def test_erfc_converts_to_onnx_as_one_minus_erf(tmp_path):
    # GELU's exact form in keras-hub's BERT is 0.5 x erfc(-x / sqrt(2)); tf2onnx 1.17 has no
    # Erfc handler at any opset, so the conversion registers one (1 - Erf).
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    _save_function(tmp_path, lambda x: {"probabilities": tf.math.erfc(x)})
    x = np.array([[-3.0, -1.0, -0.25, 0.0], [0.5, 1.0, 2.0, 3.5]], np.float32)
    got = runtimes.load(tmp_path, "onnxruntime")({"x": x})["probabilities"]
    expected = [[math.erfc(v) for v in row] for row in x.tolist()]  # Python's own erfc
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_openvino_loop_that_passes_a_state_on_unchanged(tmp_path):
    # The minimal reproduction of docs/performance.md's OpenVINO report: Fibonacci as a
    # tf.while_loop whose second state takes the first one's incoming value unchanged.
    ov = pytest.importorskip("openvino")

    def fibonacci(x):
        def body(k, a, b):
            return k + 1, a + b, a

        _, a, b = tf.while_loop(lambda k, a, b: k < 5, body, (tf.constant(0), x, tf.zeros_like(x)))
        return {"a": a, "b": b}

    _save_function(tmp_path, fibonacci)
    x = np.array([[1.0, 2.0]], np.float32)
    # (a, b) = (x, 0) -> (x, x) -> (2x, x) -> (3x, 2x) -> (5x, 3x) -> (8x, 5x), by hand.
    expected = {"a": 8 * x, "b": 5 * x}
    got = runtimes.load(tmp_path, "openvino")({"x": x})
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key], value)
    # The plain conversion run by the CPU plugin is wrong (b reads a's new value: 16x and
    # 8x). If a release fixes it, this fails: update docs/performance.md.
    fn = tf.saved_model.load(str(tmp_path)).signatures["serving_ids"]
    compiled = ov.Core().compile_model(
        ov.convert_model(fn), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    plain = {o.get_any_name(): v for o, v in compiled({"x": x}).items()}
    np.testing.assert_array_equal(plain["a"], 16 * x)
    np.testing.assert_array_equal(plain["b"], 8 * x)


def _benchmark_agreement(spec_name, variant, backend, tmp_path):
    """Agreement (:func:`runtimes.agreement`) of ``backend`` with the SavedModel on the
    random-weight benchmark model ``variant`` (exported with ``xla=False``; for ``tflite``
    the same network's TFLite export) over its
    benchmark id batches (8 pairs of 20 words, 4 batches)."""
    spec = get_spec(spec_name)
    path, _, featurizers = benchmarking.export_benchmark_model(
        spec, spec.benchmark[variant]["hparams"], tmp_path / "export", xla=False
    )
    batches = benchmarking.table5_inputs(featurizers, 8, 20).id_batches()
    reference = runtimes.load(path, "savedmodel")
    if backend == "tflite":  # the same network (same seed), exported with --format=tflite
        benchmarking.export_benchmark_model(
            spec, spec.benchmark[variant]["hparams"], tmp_path / "tflite", fmt="tflite"
        )
        path = tmp_path / "tflite"
    runtime = runtimes.load(path, backend, threads=1)
    expected = np.concatenate([reference(x)["probabilities"] for x in batches])
    got = np.concatenate([runtime(x)["probabilities"] for x in batches])
    assert got.shape == expected.shape == (32, 3)
    return runtimes.agreement(expected, got)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["Match-SRNN", "Bi-Match-SRNN"])
def test_openvino_runs_the_match_srnn_benchmark_models(variant, tmp_path):
    pytest.importorskip("openvino")
    measured = _benchmark_agreement("match_srnn", variant, "openvino", tmp_path)
    assert measured["max_abs_dp"] <= 1e-5 and measured["argmax_agreement"] == 1.0, measured


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["BERT+MatchLSTM", "BERT (h_0)"])
def test_onnxruntime_runs_the_bert_benchmark_models(variant, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    pytest.importorskip("keras_hub")
    measured = _benchmark_agreement("bert_matchlstm", variant, "onnxruntime", tmp_path)
    assert measured["max_abs_dp"] <= 1e-5 and measured["argmax_agreement"] == 1.0, measured


def test_backend_must_fit_the_export(tmp_path):
    with pytest.raises(ValueError, match="backend must be one of"):
        runtimes.load(tmp_path, "tvm")
    with pytest.raises(ValueError, match="no model.tflite"):
        runtimes.load(tmp_path, "tflite")
    with pytest.raises(ValueError, match="not a SavedModel export"):
        runtimes.convert(tmp_path, "openvino")


@pytest.fixture(scope="module")
def run_export(tmp_path_factory):
    """A tiny RE2 run (sample vocabulary, whitespace tokeniser) exported with --xla=false."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    from re2_tf.data.vocab import Vocab
    from re2_tf.models import build_re2

    words = "a man woman dog is are sleeping playing the on in park guitar".split()
    vocab = Vocab(words)
    model = build_re2(len(vocab), 3, **get_spec("re2").tiny)
    randomize_weights(model, 3)
    run_dir = tmp_path_factory.mktemp("run")
    model.save(run_dir / runs.BEST_MODEL_FILE)
    vocab.save(run_dir / runs.VOCAB_FILE)
    (run_dir / runs.RUN_FLAGFILE).write_text(
        "".join(f"--{k}={v}\n" for k, v in get_spec("re2").tiny.items())
    )
    runs.save_config(
        run_dir,
        runs.RunConfig(
            model="re2",
            model_kwargs=get_spec("re2").tiny,
            dataset="sample",
            label_names=LABELS,
            tokenizer="whitespace",
            lower=True,
        ),
    )
    return export_run(
        run_dir, tmp_path_factory.mktemp("export") / "re2", xla=False, serving="savedmodel"
    )


@pytest.mark.slow  # default-suite time: the slow tier runs it
def test_predict_backend_onnxruntime_matches_the_savedmodel_on_raw_text(run_export, tmp_path):
    from re2_tf.serving.predictor import Predictor

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "A man is playing the guitar\ta man is sleeping\n"
        "the dog\tA woman in the park is playing with a dog\n"
        "\tan unknown word\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.predict", f"--export_dir={run_export}",
         f"--input={pairs}", "--backend=onnxruntime"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = [json.loads(line)["probabilities"] for line in proc.stdout.splitlines()]
    # The reference: TensorFlow on raw text, tokenised in the graph (serving_default).
    reference = Predictor(run_export, backend="savedmodel")
    assert reference.tokenize == "graph"
    records = Matcher.from_predictor(reference).predict(
        [
            {"text1": a, "text2": b}
            for a, b in (line.split("\t") for line in pairs.read_text().splitlines())
        ]
    )
    assert len(got) == len(records) == 3
    for row, record in zip(got, records):
        assert list(row) == LABELS
        np.testing.assert_allclose(
            [row[n] for n in LABELS], [record["probabilities"][n] for n in LABELS], atol=2e-6
        )
    with pytest.raises(ValueError, match="--backend=onnxruntime takes ids"):
        Predictor(run_export, tokenize="graph", backend="onnxruntime")


@pytest.mark.slow
def test_bench_backend_times_the_converted_model(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    rows, table = benchmarking.run_benchmark(
        "re2", ["RE2 1 block"], batches=3, warmup=1, throughput_batch=0, runtime="onnxruntime"
    )
    assert rows[0]["model"] == "RE2 1 block (onnxruntime, fp32)"
    assert rows[0]["interpreter"].startswith("onnxruntime ") and rows[0]["median_ms"] > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec_name, variant",
    [
        ("drcn", "DRCN"),
        ("fitn", "FITN"),
        ("match_srnn", "Match-SRNN"),
        ("match_srnn", "Bi-Match-SRNN"),
        ("bert_matchlstm", "BERT+MatchLSTM"),
    ],
)
def test_litert_runs_the_loop_models(spec_name, variant, tmp_path):
    # Every model with a tf.while_loop (BiLSTM, spatial GRU, MatchLSTM). Converted from an
    # unfrozen SavedModel, the weights a loop captures stayed unassigned LiteRT variables
    # (NaN outputs); x[..., None] was a tf.StridedSlice the converter refused; the BiLSTM's
    # output TensorArray a TensorListReserve it cannot lower; and LiteRT's WHILE gave the
    # spatial GRU's passed-on diagonal the new one. LiteRT must now give the SavedModel's
    # probabilities on random weights.
    if spec_name == "bert_matchlstm":
        pytest.importorskip("keras_hub")
    measured = _benchmark_agreement(spec_name, variant, "tflite", tmp_path)
    assert measured["max_abs_dp"] <= 1e-5 and measured["argmax_agreement"] == 1.0, measured


def _openvino_bf16_benchmark(model, variant, tmp_path):
    """``(IR path, featurizers)`` of ``variant``'s benchmark model (random weights) exported
    ``--xla=false`` and converted to OpenVINO; skips without OpenVINO or bfloat16 units."""
    pytest.importorskip("openvino")
    if not runtimes.cpu_has_bf16():
        pytest.skip("OpenVINO reports no bfloat16 units on this CPU")
    spec = get_spec(model)
    path, _, featurizers = benchmarking.export_benchmark_model(
        spec, spec.benchmark[variant]["hparams"], tmp_path / "export", xla=False
    )
    return runtimes.convert(path, "openvino"), featurizers


@pytest.mark.slow
def test_openvino_bf16_runs_bert_matchlstm_when_the_length_changes(tmp_path):
    # OpenVINO 2026.4's CPU plugin in bfloat16 killed the process (SIGSEGV) on the converted
    # BERT+MatchLSTM benchmark model when a batch of 8 x 51 word pieces followed 8 x 50, while
    # the MatchLSTM's masked softmax multiplied its weights by the mask; since it zeroes them
    # with a select (re2_tf.layers.masking.masked_softmax), the same calls run, whole or in
    # the IR's two parts (docs/performance.md, "OpenVINO bfloat16 on BERT+MatchLSTM").
    pytest.importorskip("keras_hub")
    xml, featurizers = _openvino_bf16_benchmark("bert_matchlstm", "BERT+MatchLSTM", tmp_path)
    batches = benchmarking.table5_inputs(featurizers, 8, 20).id_batches()
    assert [b["token_ids"].shape for b in batches[:3]] == [(8, 50), (8, 50), (8, 51)]

    def run(inputs, precision):
        spec_ = benchmarking.write_batches(inputs, tmp_path / "inputs.npz")
        options = {"inputs_file": str(tmp_path / "inputs.npz"), "precision": precision}
        return benchmarking.time_export(
            xml, runtimes.SIGNATURE, spec_, batches=2, warmup=0, intra_op_threads=2,
            inter_op_threads=1, options=options,
        )  # fmt: skip

    # the worker calls its first batch, then (no warm-up) the first and the second: 50, 50, 51
    crashing = [batches[0], batches[2], batches[2], batches[2]]
    # As served (runtimes.OPENVINO_PARTS beside the IR): the MatchLSTM in f32, no crash.
    assert all(xml.with_name("serving_ids" + s).exists() for s in runtimes.OPENVINO_PARTS)
    assert len(run(crashing, "bf16")["times_s"]) == 2
    # The whole network under the bf16 hint, and in f32.
    for suffix in runtimes.OPENVINO_PARTS:
        xml.with_name("serving_ids" + suffix).unlink()
    assert len(run(crashing, "f32")["times_s"]) == 2
    assert len(run(crashing, "bf16")["times_s"]) == 2


@pytest.mark.slow
def test_openvino_bf16_fitn_dies_in_the_shape_changes_probe_not_in_serving(tmp_path):
    # OpenVINO 2026.4's CPU plugin in bfloat16 kills the process (SIGSEGV) on the converted
    # FITN benchmark model on the call after a batch of 8 in which one text grew alone
    # (docs/performance.md, "OpenVINO bfloat16 on FITN"). The Table 5 draws (lengths 20 +- 5
    # per row, padding after) run; the timing worker's shape_changes, which the serving
    # choice asks of every candidate in its first round, die; float32 runs them.
    xml, featurizers = _openvino_bf16_benchmark("fitn", "FITN", tmp_path)
    request = benchmarking.table5_inputs(featurizers, 8, 20).request(ids=True)

    def run(precision, shape_changes):
        options = dict(request["options"], precision=precision, shape_changes=shape_changes)
        return benchmarking.time_table5(
            xml, threads=2, batches=20, **dict(request, options=options)
        )

    assert len(run("bf16", False)["times_s"]) == 20
    # The crash is a memory fault, not an exception, and not every process meets it
    # (docs/performance.md): up to 3 fresh processes, and one must die.
    died = []
    for _ in range(3):
        try:
            assert len(run("bf16", True)["times_s"]) == 20  # a process that lives times all
        except RuntimeError as error:
            died.append(str(error))
            break
    assert died and "killed by SIGSEGV" in died[0], died
    assert len(run("f32", True)["times_s"]) == 20


def test_a_failure_names_a_file_not_the_directory_it_had():
    # by hand: the worker's header line, its path cut to the file name
    error = RuntimeError("timing_worker failed on /tmp/tmpab12/xla/runtimes/serving_ids.xml "
                         "(killed by SIGSEGV):\n")  # fmt: skip
    assert runtimes.failure(error) == (
        "failed: timing_worker failed on serving_ids.xml (killed by SIGSEGV):"
    )
    assert runtimes.failure(RuntimeError("bad value 1/2 in a/b")) == "failed: bad value 1/2 in a/b"


def test_tensorflow_without_xla_is_the_xla_false_export_or_the_twin_kept_beside_it(tmp_path):
    plain, _ = _tiny_export("re2", tmp_path / "plain")
    assert runtimes.convert(plain, "savedmodel_noxla") == plain  # itself, not copied
    assert not (plain / "runtimes").exists()
    xla, _ = _tiny_export("re2", tmp_path / "xla", xla=True)
    with pytest.raises(ValueError, match="export with --xla=false"):
        runtimes.convert(xla, "savedmodel_noxla")  # nothing kept: XLA cannot be taken out
    kept = runtimes.convert(plain, "savedmodel_noxla", xla / "runtimes")
    assert kept == xla / "runtimes" / "savedmodel_noxla" and (kept / "saved_model.pb").exists()
    assert runtimes.convert(xla, "savedmodel_noxla") == kept
    reference, noxla = runtimes.load(xla, "savedmodel"), runtimes.load(xla, "savedmodel_noxla")
    assert noxla.path == kept
    for x in _batches():  # the same weights (seed 0), every one random
        np.testing.assert_allclose(
            noxla(x)["probabilities"], reference(x)["probabilities"], atol=1e-5
        )


def test_an_onnxruntime_session_config_entry_reaches_the_timing_worker(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    path, _ = _tiny_export("re2", tmp_path / "export")
    onnx = runtimes.convert(path, "onnxruntime")
    spec = {name: {"dtype": "int32", "shape": [2, 5], "low": 2, "high": 200}
            for name in ("text1", "text2")}  # fmt: skip
    timed = benchmarking.time_export(onnx, runtimes.SIGNATURE, spec, batches=2, warmup=0)
    assert timed["interpreter"].startswith("onnxruntime")
    # an entry ONNX Runtime acts on: read the .onnx file as its own ORT format, which fails
    with pytest.raises(RuntimeError, match="ORT model verification failed"):
        benchmarking.time_export(
            onnx, runtimes.SIGNATURE, spec, batches=2, warmup=0,
            options={"onnxruntime_config": {"session.load_model_format": "ORT"}},
        )  # fmt: skip


def _match_lstm_model(seed=3):
    """A small network with a MatchLSTM between two dense layers, every weight random:
    ``x`` float32 ``[batch, length]`` -> probabilities ``[batch, 3]``."""
    import keras

    from re2_tf.layers import BidirectionalMatchLSTM

    keras.utils.set_random_seed(seed)
    x = keras.Input(shape=(None,), name="x")
    h = keras.layers.Dense(6, name="encoder")(keras.ops.expand_dims(x, -1))
    s = BidirectionalMatchLSTM(4, name="match_lstm")(h, h)
    out = keras.layers.Dense(3, activation="softmax", name="logits")(s)
    model = keras.Model(x, out)
    randomize_weights(model, seed)
    return model


def test_float32_layers_names_the_outermost_flagged_layers():
    import keras

    from re2_tf.serving.export import float32_layers

    model = _match_lstm_model()
    # BidirectionalMatchLSTM and its two MatchLSTM directions are flagged; only the outer one
    # is named (its directions' ops are under its name).
    assert float32_layers(model) == ["match_lstm"]
    x = keras.Input(shape=(4,))
    assert float32_layers(keras.Model(x, keras.layers.Dense(2)(x))) == []


def test_the_float32_part_runs_in_float32_under_a_bf16_hint(tmp_path):
    ov = pytest.importorskip("openvino")
    model = _match_lstm_model()
    _save_function(tmp_path, lambda x: {"probabilities": model(x)}, tracked=model)
    (tmp_path / "assets").mkdir(exist_ok=True)
    (tmp_path / "assets" / "export_config.json").write_text(
        json.dumps({"float32_layers": ["match_lstm"]})
    )
    x = np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32)
    # Reference: Keras itself, not a converted graph.
    expected = np.asarray(model(x))
    xml = runtimes.convert(tmp_path, "openvino")
    parts = [xml.with_name("serving_ids" + suffix) for suffix in runtimes.OPENVINO_PARTS]
    assert all(p.exists() for p in parts)
    # The parts fed in turn, both in f32, compute what the network does.
    core = ov.Core()
    f32 = {"INFERENCE_PRECISION_HINT": "f32"}
    first, second = (core.compile_model(str(p), "CPU", f32) for p in parts)
    handed = {o.get_any_name(): v for o, v in first({"x": x}).items()}
    assert sorted(handed) == sorted(i.get_any_name() for i in second.inputs)
    assert all(name.startswith(runtimes.HANDED) for name in handed)
    got = {o.get_any_name(): v for o, v in second(handed).items()}
    np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5)
    # The MatchLSTM's loops are in the float32 part, the encoder's matmul in the other.
    kinds = [
        {op.get_type_name() for op in core.read_model(str(p)).get_ordered_ops()} for p in parts
    ]
    assert "Loop" in kinds[1] and "Loop" not in kinds[0]
    # Served under a bf16 hint: the float32 part's ops execute in f32 whatever the CPU.
    runtime = runtimes.load(tmp_path, "openvino", precision="bf16")
    np.testing.assert_allclose(runtime({"x": x})["probabilities"], expected, atol=2e-2)
    if not runtimes.cpu_has_bf16():
        pytest.skip("no bfloat16 units: OpenVINO runs the first part in f32 too")

    def executed(compiled):
        return {
            op.get_rt_info()["runtimePrecision"].astype(str)
            for op in compiled.get_runtime_model().get_ordered_ops()
        }

    # Compiled on its own under a bf16 hint, the float32 part would run in bf16 too...
    alone = core.compile_model(str(parts[1]), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    assert "bf16" in executed(alone)
    # ...as served, the first part runs in bf16 and the float32 part in f32 only.
    served = runtimes._compile_openvino(xml, "bf16")
    assert len(served) == 2 and "bf16" in executed(served[0])
    assert "bf16" not in executed(served[1])
    assert runtimes.load(tmp_path, "openvino", precision="bf16").precision == "bf16"


def test_the_bfloat16_rewrite_leaves_an_exports_output_softmax_in_float32(tmp_path):
    """Under TensorFlow's oneDNN bfloat16 rewrite an xla=False export's probabilities are
    float32 numbers: its softmax runs after the model function, on float32 logits. Inside
    it, the rewrite paints the softmax bfloat16 (it follows the logits' MatMul) and every
    probability comes out a bfloat16 number (docs/performance.md)."""
    from re2_tf.machine import cpu_units

    if not cpu_units()["bfloat16"]:
        pytest.skip("no bfloat16 units: TensorFlow leaves the graph in float32")
    path, _ = _tiny_export("re2", tmp_path / "export")
    plain = runtimes.load(path, "savedmodel_noxla")
    rewritten = runtimes.load(path, "savedmodel_noxla", precision="bf16")
    for x in _batches():
        p32, p16 = plain(x)["probabilities"], rewritten(x)["probabilities"]
        assert np.abs(p16 - p32).max() > 0  # the rewrite did convert the network
        # a bfloat16 number is a float32 whose low 16 bits are zero
        low_bits = np.asarray(p16, np.float32).view(np.uint32) & 0xFFFF
        assert (low_bits != 0).mean() > 0.9


def test_a_bfloat16_savedmodel_is_kept_beside_an_export_and_serves_in_its_own_precision(tmp_path):
    xla, _ = _tiny_export("re2", tmp_path / "xla", xla=True)
    bf16, _ = _tiny_export("re2", tmp_path / "bf16", precision="bf16")  # same weights: seed 0
    plain, _ = _tiny_export("re2", tmp_path / "plain")
    assert runtimes.convert(bf16, "savedmodel_bf16") == bf16  # itself, not copied
    with pytest.raises(ValueError, match="export with --xla=false --precision=bf16"):
        runtimes.convert(xla, "savedmodel_bf16")  # nothing kept
    with pytest.raises(ValueError, match="precision=fp32"):
        runtimes.convert(plain, "savedmodel_bf16", xla / "runtimes")  # float32 is no bf16 twin
    kept = runtimes.convert(bf16, "savedmodel_bf16", xla / "runtimes")
    assert kept == xla / "runtimes" / "savedmodel_bf16" and (kept / "saved_model.pb").exists()
    assert runtimes.convert(xla, "savedmodel_bf16") == kept
    served, reference = runtimes.load(xla, "savedmodel_bf16"), runtimes.load(xla, "savedmodel")
    assert (served.path, served.precision) == (kept, "bf16")
    for x in _batches():  # the same weights rounded to bfloat16: close, not equal
        got, want = served(x)["probabilities"], reference(x)["probabilities"]
        assert np.isfinite(got).all() and 0 < np.abs(got - want).max() < 5e-2
    with pytest.raises(ValueError, match="is a bf16 SavedModel: f32 is served by savedmodel_noxla"):
        runtimes.load(xla, "savedmodel_bf16", precision="f32")
    # what a runtime process is asked: nothing to rewrite in a bfloat16 graph
    assert runtimes.asked_precision("savedmodel_bf16", "bf16") is None
    assert runtimes.asked_precision("savedmodel_noxla", "bf16") == "bf16"
    assert [runtimes.served_precision(b) for b in runtimes.BACKENDS] == ["f32"] * 5 + ["bf16"] * 2


def test_a_bfloat16_xla_export_is_kept_beside_an_export_and_serves_in_its_own_precision(tmp_path):
    """BERT+MatchLSTM's bf16 XLA export (BERT's bfloat16 pass uncompiled, the head under XLA),
    kept as ``savedmodel_bf16_xla``: only such an export is one, it serves in bfloat16, close
    to the float32 SavedModel of the same random weights and to the xla=False bf16 export
    (the same bfloat16 BERT pass; the head compiled or not)."""
    pytest.importorskip("keras_hub")
    xla, featurizers = _tiny_export("bert_matchlstm", tmp_path / "xla", xla=True)
    bf16_xla, _ = _tiny_export("bert_matchlstm", tmp_path / "bf16_xla", xla=True, precision="bf16")
    bf16, _ = _tiny_export("bert_matchlstm", tmp_path / "bf16", precision="bf16")
    assert runtimes.convert(bf16_xla, "savedmodel_bf16_xla") == bf16_xla  # itself
    with pytest.raises(ValueError, match="export with --xla=true --precision=bf16"):
        runtimes.convert(xla, "savedmodel_bf16_xla")  # nothing kept
    with pytest.raises(ValueError, match="xla=False"):
        runtimes.convert(bf16, "savedmodel_bf16_xla", xla / "runtimes")  # not an XLA export
    kept = runtimes.convert(bf16_xla, "savedmodel_bf16_xla", xla / "runtimes")
    assert kept == xla / "runtimes" / "savedmodel_bf16_xla" and (kept / "saved_model.pb").exists()
    assert runtimes.convert(xla, "savedmodel_bf16_xla") == kept
    served = runtimes.load(xla, "savedmodel_bf16_xla")
    reference, uncompiled = runtimes.load(xla, "savedmodel"), runtimes.load(bf16, "savedmodel")
    assert (served.path, served.precision) == (kept, "bf16")
    assert runtimes.asked_precision("savedmodel_bf16_xla", "bf16") is None
    with pytest.raises(ValueError, match="is a bf16 SavedModel"):
        runtimes.load(xla, "savedmodel_bf16_xla", precision="f32")
    for x in benchmarking.table5_inputs(featurizers, 4, 6).id_batches():
        got, want = served(x)["probabilities"], reference(x)["probabilities"]
        assert np.isfinite(got).all() and 0 < np.abs(got - want).max() < 5e-2
        np.testing.assert_allclose(got, uncompiled(x)["probabilities"], atol=1e-4)


def test_savedmodel_noxla_in_bf16_runs_tensorflows_bfloat16_rewrite_for_its_calls_only(tmp_path):
    import ml_dtypes

    from re2_tf.machine import cpu_units

    rng = np.random.default_rng(0)
    w = tf.Variable(rng.normal(size=(64, 32)).astype(np.float32))
    _save_function(tmp_path, lambda x: {"probabilities": tf.nn.relu(tf.matmul(x, w))}, tracked=w)
    x = rng.normal(size=(4, 64)).astype(np.float32)
    # References: NumPy in float32, and with x and W rounded to bfloat16, the products summed
    # in float32 and the result rounded to bfloat16 (oneDNN's bf16 MatMul).
    f32 = np.maximum(x @ w.numpy(), 0)

    def bf16(a):
        return a.astype(ml_dtypes.bfloat16).astype(np.float32)

    rounded = bf16(np.maximum(bf16(x) @ bf16(w.numpy()), 0))
    plain = runtimes.load(tmp_path, "savedmodel_noxla")
    rewritten = runtimes.load(tmp_path, "savedmodel_noxla", precision="bf16")
    assert (plain.precision, rewritten.precision) == ("f32", "bf16")
    np.testing.assert_allclose(plain({"x": x})["probabilities"], f32, rtol=1e-5, atol=1e-5)
    got = rewritten({"x": x})["probabilities"]
    # The setting is the process's: it is back as it was after the call, and the float32
    # runtime called after it still computes in float32.
    assert not tf.config.optimizer.get_experimental_options().get(runtimes.TF_BF16_REWRITE)
    np.testing.assert_allclose(plain({"x": x})["probabilities"], f32, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="bf16 is served by openvino, savedmodel_noxla or"):
        runtimes.load(tmp_path, "savedmodel", precision="bf16")
    if not cpu_units()["bfloat16"]:
        pytest.skip("no bfloat16 units: TensorFlow leaves the graph in float32")
    np.testing.assert_allclose(got, rounded, rtol=2**-7, atol=1e-6)  # one bfloat16 step
    assert np.abs(got - f32).max() > 1e-3  # it did compute in bfloat16


def test_gelus_erfc_stays_float32_under_the_bfloat16_rewrite(tmp_path, monkeypatch):
    """BERT's GELU (exact form: ``Erfc``) after a product: under the rewrite the product runs
    in bfloat16, and with TF_BF16_REWRITE_LISTS its Erfc runs in float32 on the product's
    bfloat16 values (reference: NumPy's products of bfloat16-rounded x and W, rounded to
    bfloat16, then math.erfc in float64); without the list edits the Erfc runs in bfloat16
    too (every output a bfloat16 value). The environment is restored after each call, an
    edit the user already made kept beside ours."""
    import ml_dtypes

    from re2_tf.machine import cpu_units

    if not cpu_units()["bfloat16"]:
        pytest.skip("no bfloat16 units: TensorFlow leaves the graph in float32")
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.normal(0, 0.2, size=(64, 32)).astype(np.float32))
    _save_function(tmp_path, lambda x: {"probabilities": tf.math.erfc(tf.matmul(x, w))}, w)
    x = rng.normal(size=(16, 64)).astype(np.float32)

    def bf16(a):
        return a.astype(ml_dtypes.bfloat16).astype(np.float32)

    product = bf16(bf16(x).astype(np.float64) @ bf16(w.numpy()).astype(np.float64))
    reference = np.vectorize(math.erfc)(product.astype(np.float64))
    deny = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD"
    monkeypatch.setenv(deny, "Atan2")  # the user's own edit (an op on no list)
    got = runtimes.load(tmp_path, "savedmodel_noxla", precision="bf16")({"x": x})["probabilities"]
    assert os.environ[deny] == "Atan2"
    with runtimes.tf_bf16_rewrite():
        assert os.environ[deny] == "Atan2,Erfc"
    assert "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE" not in os.environ
    # float32 Erfc: within float32 rounding of the reference (a product summed in another
    # order can round to the neighbouring bfloat16 value: a few elements may differ more)
    close = np.isclose(got, reference, rtol=1e-5, atol=1e-7)
    assert close.mean() > 0.95, close.mean()
    assert (got != bf16(got)).mean() > 0.5  # most outputs are no bfloat16 values
    monkeypatch.setattr(runtimes, "TF_BF16_REWRITE_LISTS", {})
    without = runtimes.load(tmp_path, "savedmodel_noxla", precision="bf16")
    plain = without({"x": x})["probabilities"]
    np.testing.assert_array_equal(plain, bf16(plain))  # Erfc in bfloat16
    assert np.isclose(plain, reference, rtol=1e-5, atol=1e-7).mean() < 0.5


def test_the_timing_worker_edits_the_rewrites_lists_as_the_library_does():
    loader = importlib.util.spec_from_file_location("timing_worker", benchmarking.WORKER)
    worker = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(worker)
    assert worker.TF_BF16_REWRITE_LISTS == runtimes.TF_BF16_REWRITE_LISTS
    assert set(runtimes.TF_BF16_REWRITE_LISTS.values()) == {"Erfc"}


def test_an_empty_text_under_the_bfloat16_rewrite_gives_finite_probabilities(tmp_path):
    from re2_tf.machine import cpu_units

    if not cpu_units()["bfloat16"]:
        pytest.skip("no bfloat16 units: TensorFlow leaves the graph in float32")
    # RE2's folded serving graph fills masked scores with float32's minimum, which is -inf in
    # bfloat16: the softmax of a padding row is NaN there and must not reach the outputs.
    path, _ = _tiny_export("re2", tmp_path / "export")
    batch = _batches()[0]
    batch["text1"][2] = 0  # an empty text beside padded ones
    want = runtimes.load(path, "savedmodel")(batch)["probabilities"]
    got = runtimes.load(path, "savedmodel_noxla", precision="bf16")(batch)["probabilities"]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, atol=2e-2)
    from re2_tf.serving.predictor import Predictor

    with pytest.raises(ValueError, match="served by openvino, savedmodel_noxla or"):
        Predictor(path, backend="savedmodel", precision="bf16")
