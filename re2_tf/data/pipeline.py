"""tf.data input pipeline: prepared pairs -> model features -> padded batches.

Two steps, shared by every architecture:

1. :func:`encode_examples` turns prepared pairs (texts whose tokens are separated by spaces, as
   ``re2-prepare`` writes them and the release reads them, ``src/interface.py``) into the
   features a model declares: each featuriser of :mod:`re2_tf.data.features` maps one
   tokenised pair to unpadded arrays (word ids ``[len]``, character ids ``[len, W]``, exact-match
   flags ``[len]``, packed sub-word pairs ``[len]``, ...). For training, a pair with a text longer
   than ``max_len`` tokens is **dropped** (the release's rule) or **truncated** to ``max_len``
   tokens (``long_pairs="truncate"``); both are counted. Evaluation keeps every pair whole.
2. :func:`make_dataset` batches them: every feature is packed once into a ``tf.RaggedTensor``
   (flat values + row lengths, built with NumPy), the dataset is a stream of example *indices*
   -- shuffled with ``Dataset.shuffle`` when training, reshuffled every pass -- and each index
   batch gathers its rows and pads them with 0 to the batch's own longest row
   (``RaggedTensor.to_tensor``), so text1 and text2 features are padded independently, per
   batch, as the release pads. An empty text is one padding position (length >= 1).
   :func:`make_triple_dataset` does the same for (positive pair, negative pair) index triples
   of a pairwise ranking loss.

   Optionally (``group_by_length=k > 0``, off by default and in the release) a training pass
   groups pairs of similar length into batches, as Hugging Face's ``group_by_length`` does:
   the shuffled indices are cut into windows of ``k`` batches, sorted by length inside each
   window, batched, and the batches shuffled again. Every pair is still seen once per pass,
   in ``ceil(n / batch_size)`` batches, but a batch pads to a length close to its pairs' own
   (WikiQA's training pairs packed for BERT, batch 32, windows of 50 batches: the mean batch
   width falls from 81.2 to 40.5 word pieces, against a mean pair length of 39.1), which is
   what a backbone's cost scales with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

__all__ = [
    "EncodedPairs",
    "LONG_PAIR_POLICIES",
    "encode_examples",
    "pack_ragged",
    "pair_lengths",
    "make_dataset",
    "make_triple_dataset",
]

#: What training does with a pair whose text exceeds ``max_len`` tokens.
LONG_PAIR_POLICIES = ("drop", "truncate")


@dataclasses.dataclass
class EncodedPairs:
    """Featurised pairs, unpadded.

    Attributes:
        features: ``{input name: list of n arrays}``, each ``[len]`` or ``[len, *inner_shape]``.
        specs: ``{input name: FeatureSpec}`` (dtype, inner shape, side).
        labels: int32 ``[n]`` class ids, or ``None`` when any pair is unlabelled.
        kept: int ``[n]`` indices of the encoded pairs in the input list.
        dropped: pairs removed because a text exceeded ``max_len`` (training, ``drop``).
        truncated: pairs cut to ``max_len`` tokens (training, ``truncate``).
    """

    features: dict
    specs: dict
    labels: np.ndarray | None
    kept: np.ndarray
    dropped: int = 0
    truncated: int = 0

    def __len__(self):
        return len(self.kept)


def encode_examples(
    examples,
    featurizers,
    *,
    max_len: int | None = None,
    long_pairs: str = "drop",
    training: bool = False,
) -> EncodedPairs:
    """Featurise prepared pairs with every featuriser a model declares.

    Args:
        examples: ``PairExample`` s (``text1``/``text2`` tokens separated by whitespace).
        featurizers: :class:`re2_tf.data.features.Featurizer` s whose inputs the model takes.
        max_len: longest text (in tokens) kept when ``training``; ``None`` = no limit.
        long_pairs: ``drop`` (release) or ``truncate``: what happens to a longer training pair.
        training: apply ``max_len``; evaluation data is never dropped or cut.

    Returns:
        :class:`EncodedPairs`.

    Raises:
        ValueError: unknown ``long_pairs``, or no pair left after dropping.
    """
    if long_pairs not in LONG_PAIR_POLICIES:
        raise ValueError(f"long_pairs must be one of {LONG_PAIR_POLICIES}, got {long_pairs!r}")
    specs = {s.name: s for f in featurizers for s in f.specs()}
    features = {name: [] for name in specs}
    labels, kept = [], []
    dropped = truncated = 0
    limit = max_len if training and max_len is not None else None
    for index, example in enumerate(examples):
        tokens1, tokens2 = example.text1.split(), example.text2.split()
        if limit is not None and (len(tokens1) > limit or len(tokens2) > limit):
            if long_pairs == "drop":
                dropped += 1
                continue
            tokens1, tokens2 = tokens1[:limit], tokens2[:limit]
            truncated += 1
        for featurizer in featurizers:
            for name, array in featurizer.python(tokens1, tokens2).items():
                features[name].append(array)
        labels.append(example.label)
        kept.append(index)
    if examples and not kept:
        raise ValueError(f"no pairs left: all {dropped} are longer than max_len={max_len}")
    labels = None if any(y is None for y in labels) else np.asarray(labels, np.int32)
    return EncodedPairs(features, specs, labels, np.asarray(kept, np.int64), dropped, truncated)


def pack_ragged(arrays: Sequence[np.ndarray], dtype="int32", inner_shape=()) -> tf.RaggedTensor:
    """Packs ``n`` arrays ``[len_i, *inner_shape]`` into a ``RaggedTensor [n, None, *inner]``.

    An empty array becomes one row of zeros (padding), so every row has length >= 1.
    """
    inner_shape = tuple(inner_shape)
    lengths = np.fromiter((max(len(a), 1) for a in arrays), dtype=np.int64, count=len(arrays))
    pad = np.zeros((1, *inner_shape), dtype)
    parts = [np.asarray(a, dtype).reshape(-1, *inner_shape) if len(a) else pad for a in arrays]
    values = np.concatenate(parts) if parts else np.zeros((0, *inner_shape), dtype)
    return tf.RaggedTensor.from_row_lengths(values, lengths, validate=False)


def _gatherer(encoded: EncodedPairs, length_multiple: int = 0):
    """``gather(indices)``: the padded features of those pairs; with ``length_multiple``
    ``k > 0`` every feature's length axis is padded further, with zeros, to a multiple of
    ``k`` (fewer distinct shapes for XLA; the models ignore padding)."""
    if length_multiple < 0:
        raise ValueError(f"length_multiple must be >= 0, got {length_multiple}")
    packed = {
        name: pack_ragged(arrays, encoded.specs[name].dtype, encoded.specs[name].inner_shape)
        for name, arrays in encoded.features.items()
    }

    def pad(x):
        if not length_multiple:
            return x
        extra = -tf.shape(x)[1] % length_multiple
        return tf.pad(x, [[0, 0], [0, extra]] + [[0, 0]] * (x.shape.rank - 2))

    def gather(indices):
        return {
            name: pad(tf.gather(ragged, indices).to_tensor(default_value=0))
            for name, ragged in packed.items()
        }

    return gather


def pair_lengths(encoded: EncodedPairs) -> np.ndarray:
    """int64 ``[n]``: each pair's padded cost key, the sum of its features' lengths (an empty
    feature counts 1, as it pads to one position)."""
    lengths = np.zeros(len(encoded), np.int64)
    for arrays in encoded.features.values():
        lengths += np.fromiter((max(len(a), 1) for a in arrays), np.int64, count=len(arrays))
    return lengths


def _index_batches(
    count: int,
    batch_size: int,
    *,
    shuffle: bool,
    seed: int | None,
    lengths: np.ndarray | None = None,
    group_by_length: int = 0,
    order: np.ndarray | None = None,
    endless: bool = False,
):
    """A dataset of int64 index batches ``[<= batch_size]`` covering ``range(count)`` once:
    in ``order`` (default: input order), shuffled, or shuffled and grouped by ``lengths`` (see
    the module docstring). With ``endless`` (shuffled only): passes ``0, 1, 2, ...`` one after
    another, pass ``p`` shuffled with the seed pair ``(seed, p)`` (see :func:`make_dataset`)."""
    if group_by_length < 0:
        raise ValueError(f"group_by_length must be >= 0, got {group_by_length}")
    if group_by_length and (lengths is None or len(lengths) != count):
        raise ValueError("group_by_length needs one length per element")
    if endless:
        if not shuffle:
            raise ValueError("an endless stream is a training stream: it is shuffled")
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))

        def one_pass(p):
            # Seeds are tensors of this pass: every iterator (and every copy a tf.distribute
            # strategy makes of the dataset) draws the same orders.
            return _one_pass(
                tf.data.Dataset.range(count),
                count,
                batch_size,
                (tf.constant(seed, tf.int64), p),
                lengths,
                group_by_length,
                reshuffle=False,
            )

        return tf.data.Dataset.range(2**62).flat_map(one_pass)
    if order is None:
        dataset = tf.data.Dataset.range(count)
    else:
        order = np.asarray(order, np.int64)
        if not np.array_equal(np.sort(order), np.arange(count)):
            raise ValueError(f"order must be a permutation of range({count})")
        dataset = tf.data.Dataset.from_tensor_slices(order)
    if not shuffle:
        return dataset.batch(batch_size)
    return _one_pass(dataset, count, batch_size, seed, lengths, group_by_length, reshuffle=True)


def _one_pass(dataset, count, batch_size, seed, lengths, group_by_length, reshuffle):
    """Shuffle ``dataset`` (``count`` indices), group by length, batch: one training pass.

    ``seed``: an int or ``None`` (the index shuffle's seed; the batch shuffle of
    ``group_by_length`` takes ``seed + 1``), or a pair of int64 scalar tensors ``(seed, p)``
    for pass ``p`` of an endless stream (op seeds ``1_000_003 * seed + 2p`` and ``+ 1``)."""
    if isinstance(seed, tuple):
        base, p = seed
        first, second = base * 1_000_003 + 2 * p, base * 1_000_003 + 2 * p + 1
    else:
        first, second = seed, None if seed is None else seed + 1
    dataset = dataset.shuffle(max(count, 1), seed=first, reshuffle_each_iteration=reshuffle)
    if not group_by_length:
        return dataset.batch(batch_size)
    table = tf.constant(lengths, tf.int64)

    def sort_window(indices):  # stable: equal lengths keep their shuffled order
        return tf.gather(indices, tf.argsort(tf.gather(table, indices), stable=True))

    dataset = dataset.batch(batch_size * group_by_length).map(sort_window).unbatch()
    dataset = dataset.batch(batch_size)
    return dataset.shuffle(group_by_length, seed=second, reshuffle_each_iteration=reshuffle)


def _map_batches(dataset, batch_of, parallel):
    """``dataset.map(batch_of)``, in parallel (``num_parallel_calls=AUTOTUNE``) or not.

    Training under op determinism maps its stream sequentially (``parallel=False``): an
    endless stream shuffles each pass inside ``Dataset.flat_map``, ``ShuffleDatasetV3`` is a
    stateful op tf.data does not list as deterministic, so with op determinism on, tf.data's
    ``make_deterministic`` graph rewrite turns every asynchronous node of the pipeline into
    its sequential form (the parallel map into a ``MapDataset``, prefetch into a 0-buffer
    one). That rewrite (``ConvertMapOrInterleave``, TensorFlow 2.21) keeps the parallel op's
    ``use_unbounded_threadpool`` attribute, which ``MapDataset``'s op definition lacks, and
    the runtime logs ``E0000 ... NodeDef mentions attribute use_unbounded_threadpool which is
    not in the op definition`` amid training's output. Asking for the sequential map that runs
    anyway leaves nothing to rewrite: the same batches, no error line.
    """
    if parallel:
        return dataset.map(batch_of, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.map(batch_of)


def make_dataset(
    encoded: EncodedPairs,
    *,
    batch_size: int,
    training: bool,
    seed: int | None = None,
    with_labels: bool = True,
    length_multiple: int = 0,
    group_by_length: int = 0,
    order: np.ndarray | None = None,
    endless: bool = False,
    parallel: bool = True,
) -> tf.data.Dataset:
    """Padded batches of featurised pairs.

    Args:
        encoded: :func:`encode_examples` output.
        batch_size: pairs per batch; the last batch may be smaller.
        training: shuffle (reshuffled every pass, deterministic for ``seed``); else input order.
        seed: shuffle seed.
        with_labels: yield ``(features, labels)``; else (or when there are no labels) only
            the feature dict.
        length_multiple: if > 0, pad each batch's length axis to a multiple of this (for
            ``jit_compile``: a bounded number of shapes to compile).
        group_by_length: if > 0 (training only), batches of pairs of similar length, sorted
            in windows of this many batches (see the module docstring); 0 = the release's
            plain shuffle.
        order: evaluation only: a permutation of the pairs' indices, the order to emit them
            in (e.g. by length, so that each batch pads little); default input order.
        endless: training only: instead of one pass that reshuffles each time the dataset is
            iterated, an endless stream of passes ``p = 0, 1, ...`` each shuffled with seeds
            of its own (``seed``, ``p``). The stream is a function of ``seed`` alone: every
            iterator of it, and every copy a ``tf.distribute`` strategy makes when it
            distributes it, yields the same batches (a reshuffling dataset's order depends on
            how often it was iterated, which a strategy does not promise). What training
            and its resume (``skip(updates done)``) read.
        parallel: gather index batches with ``num_parallel_calls=AUTOTUNE`` (default), else
            one at a time (the same batches). Training under op determinism asks for ``False``
            (why: ``_map_batches``).

    Returns:
        A dataset of ``{name: tensor [b, len_in_batch, *inner]}`` (and int32 ``[b]`` labels)
        with known cardinality ``ceil(n / batch_size)`` (infinite with ``endless``).

    Raises:
        ValueError: ``batch_size < 1``, ``length_multiple < 0``, ``group_by_length < 0``,
            ``order`` given for training or not a permutation, or ``endless`` without
            ``training``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    gather = _gatherer(encoded, length_multiple)
    labels = encoded.labels if with_labels else None
    targets = None if labels is None else tf.constant(labels)

    def batch_of(indices):
        x = gather(indices)
        return x if targets is None else (x, tf.gather(targets, indices))

    count = len(encoded)
    group = group_by_length if training else 0
    if training and order is not None:
        raise ValueError("order is for evaluation; training batches are shuffled")
    dataset = _index_batches(
        count,
        batch_size,
        shuffle=training,
        seed=seed,
        lengths=pair_lengths(encoded) if group else None,
        group_by_length=group,
        order=order,
        endless=endless,
    )
    dataset = _map_batches(dataset, batch_of, parallel)
    if not endless:
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(-(-count // batch_size)))
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_triple_dataset(
    encoded: EncodedPairs,
    triples: np.ndarray,
    *,
    batch_size: int,
    seed: int | None = None,
    length_multiple: int = 0,
    group_by_length: int = 0,
    endless: bool = False,
    parallel: bool = True,
) -> tf.data.Dataset:
    """Shuffled batches of (query, positive, negative) triples for a pairwise ranking loss.

    Args:
        encoded: featurised pairs; a triple names two of them that share their query.
        triples: int ``[m, 2]`` (positive pair index, negative pair index) into ``encoded``
            (positions, not ``kept`` indices), e.g. from :mod:`re2_tf.training.sampling`.
        batch_size, seed, length_multiple, group_by_length, endless, parallel: as
            :func:`make_dataset`
            (always shuffled, every pass; a triple's length is its two pairs' together).

    Returns:
        A dataset of ``({"positive": features, "negative": features}, float32 zeros [b])``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    triples = np.asarray(triples, np.int64).reshape(-1, 2)
    gather = _gatherer(encoded, length_multiple)
    table = tf.constant(triples)

    def batch_of(indices):
        rows = tf.gather(table, indices)
        x = {"positive": gather(rows[:, 0]), "negative": gather(rows[:, 1])}
        return x, tf.zeros(tf.shape(indices), tf.float32)

    lengths = None
    if group_by_length:
        per_pair = pair_lengths(encoded)
        lengths = per_pair[triples[:, 0]] + per_pair[triples[:, 1]]
    dataset = _index_batches(
        len(triples),
        batch_size,
        shuffle=True,
        seed=seed,
        lengths=lengths,
        group_by_length=group_by_length,
        endless=endless,
    )
    dataset = _map_batches(dataset, batch_of, parallel)
    if not endless:
        dataset = dataset.apply(
            tf.data.experimental.assert_cardinality(-(-len(triples) // batch_size))
        )
    return dataset.prefetch(tf.data.AUTOTUNE)
