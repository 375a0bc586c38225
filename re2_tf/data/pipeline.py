"""tf.data input pipeline: id sequences -> padded batches, as the release batches them.

Release behaviour (``src/interface.py``): every batch is padded with ``<PAD>`` (0) to its own
longest text, separately for text1 and text2, with a minimum length of 1; training pairs
that are too long are dropped; training data is reshuffled every epoch; evaluation data is
neither dropped nor reordered.

Implementation: the id lists are packed once into two ``tf.RaggedTensor`` (flat int32 values
+ row lengths, built with numpy, so 550k pairs take well under a second). The dataset is a
stream of example *indices* -- shuffled with ``Dataset.shuffle`` when training -- batched,
then each index batch gathers its rows and densifies them with
``RaggedTensor.to_tensor(0)``, i.e. pads to the batch maximum.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from re2_tf.data.vocab import PAD_ID

__all__ = ["make_dataset", "pack_ragged", "encode_pairs"]


def encode_pairs(examples, vocab) -> tuple[list[list[int]], list[list[int]], list[int] | None]:
    """Prepared :class:`~re2_tf.data.readers.PairExample` s -> id lists for :func:`make_dataset`.

    Texts are split on whitespace and encoded with ``vocab.encode`` (which lower-cases when
    ``vocab.lower``), as the release does at training time (``src/interface.py``).

    Returns:
      ``(text1_ids, text2_ids, labels)``; ``labels`` is ``None`` if any example is unlabelled.
    """
    text1 = [vocab.encode(ex.text1.split()) for ex in examples]
    text2 = [vocab.encode(ex.text2.split()) for ex in examples]
    labels = [ex.label for ex in examples]
    return text1, text2, (None if any(y is None for y in labels) else labels)


def pack_ragged(sequences: Sequence[Sequence[int]]) -> tf.RaggedTensor:
    """Packs id lists into an int32 ``RaggedTensor`` ``[n, None]``; an empty list -> ``[0]``.

    Raises:
      ValueError: if an id is negative or does not fit in int32.
    """
    lengths = np.fromiter((max(len(s), 1) for s in sequences), dtype=np.int64,
                          count=len(sequences))
    values = np.fromiter((i for s in sequences for i in (s if len(s) else (PAD_ID,))),
                         dtype=np.int64, count=int(lengths.sum()))
    if values.size and (values.min() < 0 or values.max() > np.iinfo(np.int32).max):
        raise ValueError("token ids must be in [0, 2**31)")
    return tf.RaggedTensor.from_row_lengths(values.astype(np.int32), lengths, validate=False)


def make_dataset(text1_ids: Sequence[Sequence[int]], text2_ids: Sequence[Sequence[int]],
                 labels: Sequence[int] | None, *, batch_size: int, training: bool,
                 max_len: int | None = None, seed: int | None = None
                 ) -> tuple[tf.data.Dataset, int]:
    """Batches id sequences into padded tensors.

    Args:
      text1_ids, text2_ids: ``n`` lists of token ids each (``list[list[int]]``).
      labels: ``n`` class ids, or ``None`` for unlabelled data.
      batch_size: pairs per batch; the last batch may be smaller.
      training: if True, drop pairs where either text is longer than ``max_len`` (when
        given) and shuffle -- reshuffled on each iteration (epoch), deterministic for a given
        ``seed``. If False, keep every pair in input order (``max_len`` is ignored).
      max_len: maximum text length for training; ``None`` = no limit.
      seed: shuffle seed (training only).

    Returns:
      ``(dataset, num_dropped)``. The dataset yields
      ``({"text1": int32[b, l1], "text2": int32[b, l2]}, int32[b])`` -- or only the feature
      dict when ``labels`` is None -- where ``l1``/``l2`` are the batch's longest text1/text2
      (at least 1; padding id 0; an empty text is ``[0]``). ``num_dropped`` is the number of
      pairs removed by ``max_len`` (always 0 when not training). Cardinality is known.

    Raises:
      ValueError: mismatched lengths, ``batch_size < 1``, or no pair left after dropping.
    """
    n = len(text1_ids)
    if len(text2_ids) != n or (labels is not None and len(labels) != n):
        raise ValueError(f"length mismatch: {n} text1, {len(text2_ids)} text2, "
                         f"{'no' if labels is None else len(labels)} labels")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    keep = np.arange(n)
    if training and max_len is not None:
        len1 = np.fromiter(map(len, text1_ids), dtype=np.int64, count=n)
        len2 = np.fromiter(map(len, text2_ids), dtype=np.int64, count=n)
        keep = np.flatnonzero((len1 <= max_len) & (len2 <= max_len))
    num_dropped = n - len(keep)
    if len(keep) == 0:
        raise ValueError(f"no pairs left (n={n}, dropped {num_dropped} longer than {max_len})")
    if num_dropped:
        text1_ids = [text1_ids[i] for i in keep]
        text2_ids = [text2_ids[i] for i in keep]
        labels = None if labels is None else [labels[i] for i in keep]
    text1 = pack_ragged(text1_ids)
    text2 = pack_ragged(text2_ids)
    targets = None if labels is None else tf.constant(np.asarray(labels, dtype=np.int32))

    def gather(indices):
        features = {"text1": tf.gather(text1, indices).to_tensor(default_value=PAD_ID),
                    "text2": tf.gather(text2, indices).to_tensor(default_value=PAD_ID)}
        if targets is None:
            return features
        return features, tf.gather(targets, indices)

    count = len(keep)
    dataset = tf.data.Dataset.range(count)
    if training:
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(gather, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE), num_dropped
