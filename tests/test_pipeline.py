"""Tests for re2_tf.data.pipeline: featurising pairs, per-batch padding of every feature, the
drop/truncate policy for long training pairs, shuffling, and ranking-triple batches."""

import numpy as np
import pytest
import tensorflow as tf

from re2_tf.data.features import CharIds, WordIds
from re2_tf.data.pipeline import encode_examples, make_dataset, make_triple_dataset
from re2_tf.data.readers import PairExample
from re2_tf.data.vocab import Vocab

WORDS = [f"w{i}" for i in range(2, 40)]
VOCAB = Vocab(WORDS, lower=True)  # "w<i>" has id i


def _pair(ids1, ids2, label):
    return PairExample(" ".join(f"w{i}" for i in ids1), " ".join(f"w{i}" for i in ids2), label)


TEXT1 = [[5, 6, 7], [8], [], [9, 10], [11, 12, 13, 14, 15]]
TEXT2 = [[2], [3, 4], [5], [], [6]]
LABELS = [0, 1, 2, 1, 0]
EXAMPLES = [_pair(a, b, y) for a, b, y in zip(TEXT1, TEXT2, LABELS)]


def _batches(dataset):
    return [({k: v.numpy() for k, v in x.items()}, y.numpy()) for x, y in dataset]


def _encode(examples=EXAMPLES, **kwargs):
    return encode_examples(examples, [WordIds(VOCAB)], **kwargs)


def test_padding_per_batch_and_min_length():
    dataset = make_dataset(_encode(), batch_size=2, training=False)
    assert dataset.cardinality().numpy() == 3
    spec_x, spec_y = dataset.element_spec
    assert spec_x["text1"].dtype == tf.int32 and spec_y.dtype == tf.int32
    batches = _batches(dataset)
    # batch 1: text1 longest 3, text2 longest 2 (independently).
    np.testing.assert_array_equal(batches[0][0]["text1"], [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(batches[0][0]["text2"], [[2, 0], [3, 4]])
    np.testing.assert_array_equal(batches[0][1], [0, 1])
    # batch 2: the empty text1 becomes [0]; the empty text2 too.
    np.testing.assert_array_equal(batches[1][0]["text1"], [[0, 0], [9, 10]])
    np.testing.assert_array_equal(batches[1][0]["text2"], [[5], [0]])
    # last, partial batch is kept.
    np.testing.assert_array_equal(batches[2][0]["text1"], [[11, 12, 13, 14, 15]])
    np.testing.assert_array_equal(batches[2][1], [0])


def test_every_feature_is_padded_per_batch_including_character_ids():
    chars = CharIds(max_word_length=4, lower=True)
    chars.fit(["ab", "abc", "b"])
    # the character ids themselves are tested in test_features.py; here: where they land.
    a_, b_, c_ = (int(chars.python([c], [])["text1_chars"][0, 0]) for c in "abc")
    assert len({a_, b_, c_, 0, 1}) == 5
    examples = [PairExample("ab abc", "b", 0), PairExample("c", "", 1)]
    encoded = encode_examples(examples, [WordIds(Vocab(["ab", "abc", "b", "c"])), chars])
    ((x, _),) = _batches(make_dataset(encoded, batch_size=2, training=False))
    assert x["text1_chars"].shape == (2, 2, 4) and x["text2_chars"].shape == (2, 1, 4)
    np.testing.assert_array_equal(x["text1_chars"][0], [[a_, b_, 0, 0], [a_, b_, c_, 0]])
    np.testing.assert_array_equal(x["text1_chars"][1], [[c_, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(x["text2_chars"][:, 0], [[b_, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(x["text1"], [[2, 3], [5, 0]])


def test_all_empty_batch_has_length_one():
    encoded = _encode([PairExample("", "", 1), PairExample("", "", 0)])
    ((x, y),) = _batches(make_dataset(encoded, batch_size=2, training=False))
    assert x["text1"].shape == (2, 1) and x["text2"].shape == (2, 1)
    assert not x["text1"].any() and not x["text2"].any()


def test_training_drops_long_pairs_and_eval_does_not():
    # max_len 2: pair 0 (text1 len 3) and pair 4 (len 5) are dropped -> 2 dropped.
    encoded = _encode(max_len=2, training=True)
    assert (encoded.dropped, encoded.truncated) == (2, 0)
    np.testing.assert_array_equal(encoded.kept, [1, 2, 3])
    ((x, y),) = _batches(make_dataset(encoded, batch_size=10, training=True, seed=3))
    assert sorted(y.tolist()) == [1, 1, 2]
    assert x["text1"].shape[1] == 2
    encoded = _encode(max_len=2, training=False)
    assert encoded.dropped == 0
    ((x, y),) = _batches(make_dataset(encoded, batch_size=10, training=False))
    np.testing.assert_array_equal(y, LABELS)  # nothing dropped, order kept
    assert x["text1"].shape == (5, 5)


def test_training_can_truncate_long_pairs_instead_and_counts_them():
    encoded = _encode(max_len=2, training=True, long_pairs="truncate")
    assert (encoded.dropped, encoded.truncated) == (0, 2)
    ((x, y),) = _batches(make_dataset(encoded, batch_size=10, training=False))
    np.testing.assert_array_equal(x["text1"], [[5, 6], [8, 0], [0, 0], [9, 10], [11, 12]])
    np.testing.assert_array_equal(y, LABELS)
    with pytest.raises(ValueError, match="long_pairs"):
        _encode(max_len=2, training=True, long_pairs="wrap")


def test_eval_order_preserved_and_features_only():
    n = 1000
    examples = [PairExample(" ".join(["w5"] * (i % 7)), f"w{2 + i % 38}", None) for i in range(n)]
    encoded = _encode(examples)
    assert encoded.labels is None
    dataset = make_dataset(encoded, batch_size=64, training=False)
    assert isinstance(dataset.element_spec, dict)
    firsts = np.concatenate([x["text2"].numpy()[:, 0] for x in dataset])
    np.testing.assert_array_equal(firsts, 2 + np.arange(n) % 38)


def test_shuffle_is_deterministic_per_seed_and_reshuffles_each_epoch():
    n = 200
    encoded = _encode([_pair([2 + i % 38], [2], i) for i in range(n)])
    labels = list(range(n))

    def epochs(seed, count=2):
        dataset = make_dataset(encoded, batch_size=32, training=True, seed=seed)
        return [np.concatenate([y.numpy() for _, y in dataset]) for _ in range(count)]

    a, b = epochs(7), epochs(7)
    for epoch_a, epoch_b in zip(a, b):
        np.testing.assert_array_equal(epoch_a, epoch_b)  # same seed -> same order
    assert sorted(a[0].tolist()) == labels  # every pair once per epoch
    assert not np.array_equal(a[0], a[1])  # reshuffled between epochs
    assert not np.array_equal(a[0], np.arange(n))  # actually shuffled
    assert not np.array_equal(a[0], epochs(8, 1)[0])  # another seed, another order


def test_triple_batches_gather_the_positive_and_negative_pairs():
    encoded = _encode()
    triples = np.array([[0, 1], [3, 4], [2, 0]])
    dataset = make_triple_dataset(encoded, triples, batch_size=3, seed=1)
    ((x, y),) = [(tf.nest.map_structure(lambda t: t.numpy(), x), y.numpy()) for x, y in dataset]
    assert y.shape == (3,)
    # whatever the shuffled order, row k of "positive" and of "negative" form one triple.
    firsts = {tuple(TEXT1[i][:1]) or (0,): i for i in range(5)}
    seen = {
        (firsts[(int(p[0]),)], firsts[(int(n[0]),)])
        for p, n in zip(x["positive"]["text1"], x["negative"]["text1"])
    }
    assert seen == {tuple(t) for t in triples.tolist()}


def test_errors():
    with pytest.raises(ValueError, match="no pairs left"):
        _encode([_pair([2, 3, 4], [2], 0)], max_len=1, training=True)
    with pytest.raises(ValueError, match="batch_size"):
        make_dataset(_encode(), batch_size=0, training=False)


def test_length_multiple_pads_every_feature_to_a_multiple_with_zeros():
    chars = CharIds(max_word_length=4, lower=True)
    chars.fit(["w5", "w6"])
    encoded = encode_examples(EXAMPLES, [WordIds(VOCAB), chars])
    plain = _batches(make_dataset(encoded, batch_size=2, training=False))
    padded = _batches(make_dataset(encoded, batch_size=2, training=False, length_multiple=4))
    for (x, y), (px, py) in zip(plain, padded):
        np.testing.assert_array_equal(py, y)
        for name, value in x.items():
            length = value.shape[1]
            assert px[name].shape[1] == -(-length // 4) * 4  # next multiple of 4
            assert px[name].shape[2:] == value.shape[2:]  # inner axes unchanged
            np.testing.assert_array_equal(px[name][:, :length], value)
            assert not px[name][:, length:].any()
    # batch 3 holds one text1 of 5 tokens: padded to 8
    assert padded[2][0]["text1"].shape == (1, 8)
    triples = make_triple_dataset(
        encoded, np.array([[0, 4]]), batch_size=1, seed=0, length_multiple=3
    )
    ((x, _),) = list(triples)
    assert x["positive"]["text1"].shape == (1, 3) and x["negative"]["text1"].shape == (1, 6)
    with pytest.raises(ValueError, match="length_multiple"):
        make_dataset(encoded, batch_size=2, training=False, length_multiple=-1)


def _length_examples(n, seed=0):
    """n pairs whose text1 has a distinct length 1..n (label = that length), text2 one word."""
    order = np.random.default_rng(seed).permutation(n) + 1
    return [_pair([2 + (k % 38)] * int(k), [3], int(k)) for k in order]


def test_group_by_length_one_window_cuts_the_sorted_pairs_into_consecutive_batches():
    # 12 pairs of text1 lengths 1..12, batch 3, one window holding the whole pass: whatever
    # the shuffle, the batches are {1,2,3}, {4,5,6}, {7,8,9}, {10,11,12} (worked by hand).
    encoded = _encode(_length_examples(12))
    dataset = make_dataset(encoded, batch_size=3, training=True, seed=5, group_by_length=4)
    assert dataset.cardinality().numpy() == 4
    for _ in range(2):  # and again on the next pass
        batches = _batches(dataset)
        assert sorted(tuple(sorted(y.tolist())) for _, y in batches) == [
            (1, 2, 3),
            (4, 5, 6),
            (7, 8, 9),
            (10, 11, 12),
        ]
        for x, y in batches:  # padded to the batch's longest
            assert x["text1"].shape[1] == max(y) and x["text2"].shape[1] == 1


def test_group_by_length_windows_keep_every_pair_once_and_are_seeded():
    n, batch, window = 103, 4, 5
    encoded = _encode(_length_examples(n, seed=1))

    def passes(seed, group, count=2):
        dataset = make_dataset(
            encoded, batch_size=batch, training=True, seed=seed, group_by_length=group
        )
        assert dataset.cardinality().numpy() == -(-n // batch)
        return [[y.numpy().tolist() for _, y in dataset] for _ in range(count)]

    grouped, again, plain = passes(3, window), passes(3, window), passes(3, 0)
    assert grouped == again  # same seed, same batches
    for one_pass in grouped:
        assert len(one_pass) == -(-n // batch)
        assert sorted(sum(one_pass, [])) == list(range(1, n + 1))  # every pair once
    assert grouped[0] != grouped[1]  # reshuffled between passes

    # grouping is what cuts the padding: sum over batches of (longest - shortest) in a batch.
    def spread(batches):
        return sum(max(b) - min(b) for b in batches)

    assert spread(grouped[0]) < spread(plain[0])
    with pytest.raises(ValueError, match="group_by_length"):
        make_dataset(encoded, batch_size=2, training=True, group_by_length=-1)


def test_group_by_length_is_ignored_for_evaluation_and_applies_to_triples():
    encoded = _encode(_length_examples(12))
    in_order = [
        y.numpy().tolist()
        for _, y in make_dataset(encoded, batch_size=5, training=False, group_by_length=3)
    ]
    assert sum(in_order, []) == [e.label for e in _length_examples(12)]
    # triples (pair of length k, pair of length k + 1), k = 1..11: their cost keys
    # (2k + 1 + 2) grow with k. Pairs are stored in shuffled order, so look positions up.
    position = {e.label: i for i, e in enumerate(_length_examples(12))}
    triples = np.array([[position[k], position[k + 1]] for k in range(1, 12)])
    dataset = make_triple_dataset(encoded, triples, batch_size=2, seed=0, group_by_length=6)
    assert dataset.cardinality().numpy() == 6
    firsts = []
    for x, _ in dataset:
        lengths = (x["positive"]["text1"].numpy() > 0).sum(axis=1)
        firsts.append(tuple(sorted(lengths.tolist())))
    # one window (6 batches x 2 >= 11 triples): consecutive triples by length, (1,2),(3,4),...
    assert sorted(firsts) == [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11,)]


def test_order_emits_the_pairs_in_that_order_and_is_for_evaluation_only():
    encoded = _encode()
    got = [
        y.numpy().tolist()
        for _, y in make_dataset(encoded, batch_size=2, training=False, order=[4, 2, 0, 1, 3])
    ]
    assert got == [[LABELS[4], LABELS[2]], [LABELS[0], LABELS[1]], [LABELS[3]]]
    with pytest.raises(ValueError, match="permutation"):
        make_dataset(encoded, batch_size=2, training=False, order=[0, 1, 2, 3, 3])
    with pytest.raises(ValueError, match="order is for evaluation"):
        make_dataset(encoded, batch_size=2, training=True, order=[0, 1, 2, 3, 4])


def test_inference_batches_by_length_and_outputs_come_back_in_input_order():
    import keras

    from re2_tf.evaluation import inference_dataset, predict_outputs

    # A network whose outputs per pair are [sum of text1 ids, sum of text2 ids] (padding 0
    # adds nothing), so the right answer for every pair is known without the network.
    text1 = keras.Input((None,), dtype="int32", name="text1")
    text2 = keras.Input((None,), dtype="int32", name="text2")
    sums = keras.layers.Lambda(
        lambda t: keras.ops.cast(
            keras.ops.stack([keras.ops.sum(t[0], axis=1), keras.ops.sum(t[1], axis=1)], axis=1),
            "float32",
        )
    )([text1, text2])
    network = keras.Model({"text1": text1, "text2": text2}, sums)
    examples = _length_examples(23, seed=4)
    encoded = _encode(examples)
    expected = np.array(
        [
            [sum(VOCAB.encode(e.text1.split())), sum(VOCAB.encode(e.text2.split()))]
            for e in examples
        ],
        np.float32,
    )
    data = inference_dataset(encoded, batch_size=4)
    lengths = np.array([len(e.text1.split()) + 1 for e in examples])
    assert (np.diff(lengths[data.order]) >= 0).all()  # shortest first
    widths = [x["text1"].shape[1] for x in data.dataset]
    assert widths == sorted(widths) and widths[0] == 4  # lengths 1..4 in the first batch
    np.testing.assert_array_equal(predict_outputs(network, data), expected)
    plain = inference_dataset(encoded, batch_size=4, by_length=False)
    np.testing.assert_array_equal(plain.order, np.arange(23))
    np.testing.assert_array_equal(predict_outputs(network, plain), expected)
