"""BERT+MatchLSTM's input split and head aggregations: :class:`PairSegmentSplit` on
hand-packed ``[CLS] a [SEP] b [SEP]`` rows (empty a, empty b, a row filling all 128
positions) checked position by position, XLA; :class:`MaskedMeanPooling` and
:class:`MultiWindowCNN` against NumPy re-computations with random weights and padding."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from roundtrip import assert_round_trips

from re2_tf.layers import MaskedMeanPooling, MatchLSTM, MultiWindowCNN, PairSegmentSplit

CLS, SEP = 101, 102
LENGTH, DIM = 128, 5


# --------------------------------------------------------------------------- packed pairs
def packed_batch():
    """Four rows packed by hand, padded to 128 (token id 0 = padding):

    0: [CLS] a1 a2 [SEP] b1 b2 b3 [SEP] 0 ...    A = [CLS] a1 a2        B = [SEP] b1 b2 b3 [SEP]
    1: [CLS] [SEP] b1 b2 [SEP] 0 ...             A = [CLS]              B = [SEP] b1 b2 [SEP]
    2: [CLS] a1 a2 a3 a4 [SEP] [SEP] 0 ...       A = [CLS] a1 .. a4     B = [SEP] [SEP]
    3: [CLS] a1 .. a60 [SEP] b1 .. b65 [SEP]     (128 tokens, no padding: a truncated pair)
    """
    rows = [
        ([CLS, 2023, 2003, SEP, 1037, 3231, 2005, SEP], [0, 0, 0, 0, 1, 1, 1, 1]),
        ([CLS, SEP, 7592, 2088, SEP], [0, 0, 1, 1, 1]),
        ([CLS, 2054, 2003, 1996, 3437, SEP, SEP], [0, 0, 0, 0, 0, 0, 1]),
        (
            [CLS] + list(range(1000, 1060)) + [SEP] + list(range(2000, 2065)) + [SEP],
            [0] * 62 + [1] * 66,
        ),
    ]
    ids = np.zeros((4, LENGTH), "int32")
    segments = np.zeros((4, LENGTH), "int32")
    for b, (tokens, segment) in enumerate(rows):
        ids[b, : len(tokens)] = tokens
        segments[b, : len(segment)] = segment
    assert len(rows[3][0]) == LENGTH and ids[3, -1] == SEP
    padding_mask = (ids != 0).astype("int32")
    # Hidden state of position t of row b: [b, t, noise...], so every output can be traced
    # back to the position it was read from.
    rng = np.random.default_rng(0)
    hidden = rng.normal(0.0, 1.0, (4, LENGTH, DIM)).astype("float32")
    hidden[:, :, 0] = np.arange(4)[:, None]
    hidden[:, :, 1] = np.arange(LENGTH)[None, :]
    return hidden, ids, segments, padding_mask


# The positions each output row must hold, by hand (-1 = padding).
WANT_A = [[0, 1, 2], [0], [0, 1, 2, 3, 4], list(range(0, 61))]
WANT_B = [[3, 4, 5, 6, 7], [1, 2, 3, 4], [5, 6], list(range(61, 128))]


def padded(rows, width):
    return np.array([row + [-1] * (width - len(row)) for row in rows])


def check_split(hidden, ids, h_a, mask_a, h_b, mask_b):
    h_a, mask_a, h_b, mask_b = (np.asarray(x) for x in (h_a, mask_a, h_b, mask_b))
    assert h_a.shape == (4, 61, DIM) and mask_a.shape == (4, 61, 1)
    assert h_b.shape == (4, 67, DIM) and mask_b.shape == (4, 67, 1)
    assert mask_a.dtype == np.float32 and mask_b.dtype == np.float32
    for out, mask, want in ((h_a, mask_a, padded(WANT_A, 61)), (h_b, mask_b, padded(WANT_B, 67))):
        np.testing.assert_array_equal(mask[..., 0], (want >= 0).astype("float32"))
        for b in range(4):
            for k, position in enumerate(want[b]):
                if position >= 0:
                    np.testing.assert_array_equal(out[b, k], hidden[b, position])
                else:
                    np.testing.assert_array_equal(out[b, k], 0.0)
    # A starts at [CLS] and stops before the first [SEP]; B runs from that [SEP] to the last.
    for b in range(4):
        assert ids[b, WANT_A[b][0]] == CLS and SEP not in ids[b, WANT_A[b]]
        assert ids[b, WANT_B[b][0]] == SEP and ids[b, WANT_B[b][-1]] == SEP


def test_split_by_hand():
    hidden, ids, segments, padding_mask = packed_batch()
    outputs = PairSegmentSplit()(hidden, segments, padding_mask)
    check_split(hidden, ids, *outputs)
    # The padding mask may be bool or float; padding's segment id does not matter.
    segments_one = np.where(padding_mask > 0, segments, 1)
    for mask in (padding_mask > 0, padding_mask.astype("float32")):
        check_split(hidden, ids, *PairSegmentSplit()(hidden, segments_one, mask))


def test_split_under_xla_and_in_a_functional_model():
    hidden, ids, segments, padding_mask = packed_batch()
    split = PairSegmentSplit()

    def run(hidden, segments, padding_mask):
        with tf.GradientTape() as tape:
            tape.watch(hidden)
            h_a, mask_a, h_b, mask_b = split(hidden, segments, padding_mask)
            loss = tf.reduce_sum(h_a * 2.0) + tf.reduce_sum(h_b)
        return (h_a, mask_a, h_b, mask_b), tape.gradient(loss, hidden)

    outputs, gradient = tf.function(run, jit_compile=True)(
        *(tf.constant(x) for x in (hidden, segments, padding_mask))
    )
    check_split(hidden, ids, *outputs)
    # d loss / d hidden: 2 on A's positions, 1 on B's, 0 on padding.
    want = np.zeros((4, LENGTH))
    for b in range(4):
        want[b, WANT_A[b]] = 2.0
        want[b, WANT_B[b]] = 1.0
    np.testing.assert_array_equal(gradient, np.repeat(want[..., None], DIM, -1))

    inputs = [
        keras.Input((None, DIM)),
        keras.Input((None,), dtype="int32"),
        keras.Input((None,), dtype="int32"),
    ]
    model = keras.Model(inputs, PairSegmentSplit(name="split")(*inputs))
    check_split(hidden, ids, *model([hidden, segments, padding_mask]))
    config = PairSegmentSplit(name="s").get_config()
    assert PairSegmentSplit.from_config(config).get_config() == config


def test_split_then_match_lstm_compiles_with_xla():
    """The split's widths are data-dependent; the MatchLSTM's scan still compiles on them."""
    hidden, _, segments, padding_mask = (x[:3, :10] for x in packed_batch())
    split = PairSegmentSplit()
    match = MatchLSTM(3, go_backwards=True, return_sequences=True)

    def run(hidden, segments, padding_mask):
        h_a, mask_a, h_b, mask_b = split(hidden, segments, padding_mask)
        return match(h_b, h_a, mask_b, mask_a)

    args = [tf.constant(x) for x in (hidden, segments, padding_mask)]
    (last, sequence), (want_last, want_sequence) = (
        tf.function(run, jit_compile=True)(*args),
        run(*args),
    )
    assert sequence.shape == (3, 5, 3)  # B's widths 5, 4, 2
    np.testing.assert_allclose(last, want_last, atol=1e-6, rtol=0)
    np.testing.assert_allclose(sequence, want_sequence, atol=1e-6, rtol=0)


# --------------------------------------------------------------------------- heads
LENGTHS = np.array([7, 1, 0, 3, 2])
WIDTH = 7


def head_batch(seed):
    rng = np.random.default_rng(seed)
    mask = (np.arange(WIDTH)[None, :] < LENGTHS[:, None]).astype("float32")
    x = rng.normal(0.0, 1.0, (len(LENGTHS), WIDTH, DIM))
    x = np.where(mask[..., None] > 0, x, 1e4)  # large padding: must be ignored
    return x.astype("float32"), mask


def test_masked_mean_pooling_matches_numpy():
    x, mask = head_batch(1)
    got = MaskedMeanPooling()(x, mask[..., None])
    want = np.zeros((len(LENGTHS), DIM))
    for b, n in enumerate(LENGTHS):
        for t in range(n):
            want[b] += x[b, t].astype(np.float64) / n
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(got[2], 0.0)  # empty row
    np.testing.assert_allclose(
        MaskedMeanPooling()(x, (mask > 0).astype("int32")), want, atol=1e-6, rtol=0
    )
    assert MaskedMeanPooling().compute_output_shape((None, None, DIM)) == (None, DIM)


def cnn_reference(weights, x, lengths, window_sizes):
    """Eq. 5 with ReLU and max-over-time, window by window: only windows inside the true
    tokens; 0 when a text has none."""
    x = np.asarray(x, np.float64)
    out = []
    for b, n in enumerate(lengths):
        features = []
        for size in window_sizes:
            kernel = weights[f"kernel_{size}"].astype(np.float64)  # [size, d, filters]
            bias = weights[f"bias_{size}"].astype(np.float64)
            filters = bias.shape[0]
            windows = []
            for i in range(n - size + 1):
                z = bias.copy()
                for k in range(size):
                    for f in range(filters):
                        z[f] += x[b, i + k] @ kernel[k, :, f]
                windows.append(np.maximum(z, 0.0))
            features.append(np.max(windows, axis=0) if windows else np.zeros(filters))
        out.append(np.concatenate(features))
    return np.array(out)


def test_multi_window_cnn_matches_numpy(tmp_path):
    window_sizes, filters = (1, 2, 3), 4
    layer = MultiWindowCNN(filters, window_sizes=window_sizes, name="cnn")
    layer.build((None, None, DIM))
    rng = np.random.default_rng(2)
    for w in layer.weights:
        w.assign(rng.normal(0.0, 0.5, tuple(w.shape)).astype("float32"))
    weights = {w.name: w.numpy() for w in layer.weights}
    assert {k: v.shape for k, v in weights.items()} == {
        "kernel_1": (1, DIM, 4),
        "bias_1": (4,),
        "kernel_2": (2, DIM, 4),
        "bias_2": (4,),
        "kernel_3": (3, DIM, 4),
        "bias_3": (4,),
    }
    # By hand: filters * (l * d + 1) = 4 * (5 + 1) + 4 * (10 + 1) + 4 * (15 + 1) = 132.
    assert layer.count_params() == 132

    x, mask = head_batch(3)
    got = layer(x, mask).numpy()
    want = cnn_reference(weights, x, LENGTHS, window_sizes)
    assert got.shape == (5, 12)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    # Row 1 (one token) has no 2- or 3-window, row 2 (empty) none at all: 0 there.
    np.testing.assert_array_equal(got[1, 4:], 0.0)
    np.testing.assert_array_equal(got[2], 0.0)
    np.testing.assert_array_equal(got[4, 8:], 0.0)  # two tokens: no 3-window
    assert (got[0] > 0).mean() > 0.5  # the full row's features are not all cut
    # Appending padding changes nothing.
    wider = np.concatenate([x, np.full((5, 3, DIM), -7.0, "float32")], axis=1)
    np.testing.assert_allclose(layer(wider, np.pad(mask, [(0, 0), (0, 3)])), got, atol=1e-6)

    config = layer.get_config()
    assert MultiWindowCNN.from_config(config).get_config() == config
    inputs = [keras.Input((None, DIM)), keras.Input((None,))]
    features = keras.layers.Concatenate()([layer(*inputs), MaskedMeanPooling()(*inputs)])
    model = keras.Model(inputs, features)
    loaded = assert_round_trips(model, [x, mask], tmp_path / "heads.keras")
    assert loaded.get_layer("cnn").window_sizes == window_sizes


def test_multi_window_cnn_rejects_bad_arguments():
    with pytest.raises(ValueError, match="filters"):
        MultiWindowCNN(0)
    with pytest.raises(ValueError, match="window_sizes"):
        MultiWindowCNN(3, window_sizes=(2, 2))
    with pytest.raises(ValueError, match="window_sizes"):
        MultiWindowCNN(3, window_sizes=(0, 1))
    with pytest.raises(ValueError, match="inputs"):
        MultiWindowCNN(3).build((None, None, None))


def test_input_width_pads_both_texts_to_the_input_length_under_xla():
    """``width="input"``: the same positions as by hand, both outputs L = 128 wide (zeros and
    mask 0 after each row's text), under XLA; the config keeps the width."""
    hidden, ids, segments, padding_mask = packed_batch()
    split = PairSegmentSplit(width="input")
    outputs = tf.function(split, jit_compile=True)(
        *(tf.constant(x) for x in (hidden, segments, padding_mask))
    )
    h_a, mask_a, h_b, mask_b = (np.asarray(x) for x in outputs)
    assert h_a.shape == h_b.shape == (4, LENGTH, DIM) and mask_a.shape == (4, LENGTH, 1)
    for out, mask, want in (
        (h_a, mask_a, padded(WANT_A, LENGTH)),
        (h_b, mask_b, padded(WANT_B, LENGTH)),
    ):
        np.testing.assert_array_equal(mask[..., 0], (want >= 0).astype("float32"))
        for b in range(4):
            taken = want[b] >= 0
            np.testing.assert_array_equal(out[b, taken], hidden[b, want[b, taken]])
            np.testing.assert_array_equal(out[b, ~taken], 0.0)
    assert PairSegmentSplit.from_config(split.get_config()).width == "input"
    with pytest.raises(ValueError, match="width must be one of"):
        PairSegmentSplit(width="longest")
