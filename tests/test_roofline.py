"""re2_tf.roofline: FLOP counts read from XLA's HLO, against counts worked out by hand."""

import numpy as np
import pytest

from re2_tf import roofline


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
