"""Tests for re2_tf.data.pipeline.make_dataset."""
import numpy as np
import pytest
import tensorflow as tf

from re2_tf.data.pipeline import encode_pairs, make_dataset
from re2_tf.data.readers import PairExample
from re2_tf.data.vocab import Vocab

TEXT1 = [[5, 6, 7], [8], [], [9, 10], [11, 12, 13, 14, 15]]
TEXT2 = [[2], [3, 4], [5], [], [6]]
LABELS = [0, 1, 2, 1, 0]


def _batches(dataset):
    return [({k: v.numpy() for k, v in x.items()}, y.numpy()) for x, y in dataset]


def test_padding_per_batch_and_min_length():
    dataset, dropped = make_dataset(TEXT1, TEXT2, LABELS, batch_size=2, training=False)
    assert dropped == 0
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


def test_all_empty_batch_has_length_one():
    dataset, _ = make_dataset([[], []], [[], []], [1, 0], batch_size=2, training=False)
    (x, y), = _batches(dataset)
    assert x["text1"].shape == (2, 1) and x["text2"].shape == (2, 1)
    assert not x["text1"].any() and not x["text2"].any()


def test_training_drops_long_pairs_and_eval_does_not():
    # max_len 2: pair 0 (text1 len 3) and pair 4 (len 5) are dropped -> 2 dropped.
    dataset, dropped = make_dataset(TEXT1, TEXT2, LABELS, batch_size=10, training=True,
                                    max_len=2, seed=3)
    assert dropped == 2
    (x, y), = _batches(dataset)
    assert sorted(y.tolist()) == [1, 1, 2]
    assert x["text1"].shape[1] == 2
    dataset, dropped = make_dataset(TEXT1, TEXT2, LABELS, batch_size=10, training=False,
                                    max_len=2)
    assert dropped == 0
    (x, y), = _batches(dataset)
    np.testing.assert_array_equal(y, LABELS)  # nothing dropped, order kept
    assert x["text1"].shape == (5, 5)


def test_eval_order_preserved_and_features_only():
    n = 1000
    text1 = [[i + 2] * (i % 7) for i in range(n)]
    text2 = [[i + 2] for i in range(n)]
    dataset, _ = make_dataset(text1, text2, None, batch_size=64, training=False)
    assert isinstance(dataset.element_spec, dict)
    firsts = np.concatenate([x["text2"].numpy()[:, 0] for x in dataset])
    np.testing.assert_array_equal(firsts, np.arange(n) + 2)


def test_shuffle_is_deterministic_per_seed_and_reshuffles_each_epoch():
    n = 200
    text1 = [[i + 2] for i in range(n)]
    labels = list(range(n))

    def epochs(seed, count=2):
        dataset, _ = make_dataset(text1, text1, labels, batch_size=32, training=True, seed=seed)
        return [np.concatenate([y.numpy() for _, y in dataset]) for _ in range(count)]

    a, b = epochs(7), epochs(7)
    for epoch_a, epoch_b in zip(a, b):
        np.testing.assert_array_equal(epoch_a, epoch_b)   # same seed -> same order
    assert sorted(a[0].tolist()) == labels                # every pair once per epoch
    assert not np.array_equal(a[0], a[1])                 # reshuffled between epochs
    assert not np.array_equal(a[0], np.arange(n))         # actually shuffled
    assert not np.array_equal(a[0], epochs(8, 1)[0])      # another seed, another order


def test_errors():
    with pytest.raises(ValueError, match="length mismatch"):
        make_dataset([[1]], [[1], [2]], None, batch_size=1, training=False)
    with pytest.raises(ValueError, match="no pairs left"):
        make_dataset([[1, 2, 3]], [[1]], [0], batch_size=1, training=True, max_len=1)


def test_encode_pairs():
    vocab = Vocab(["the", "cat"], lower=True)
    examples = [PairExample("The cat", "a CAT", 1), PairExample("", "the", 0)]
    text1, text2, labels = encode_pairs(examples, vocab)
    assert text1 == [[2, 3], []] and text2 == [[1, 3], [2]] and labels == [1, 0]
    assert encode_pairs([PairExample("a", "b", None)], vocab)[2] is None
