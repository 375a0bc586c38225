"""(query, positive, negative) triples for pairwise ranking losses, from grouped ranking data."""

import numpy as np


def pairwise_triples(qids, labels, max_negatives=None, seed=0):
    """Pair every positive candidate of a question with its negative candidates.

    Match-SRNN's ranking loss is defined on triples ``(S1, S2+, S2-)`` of one question (Wan et
    al. 2016, §4.4); the paper does not say how they are drawn, so by default every
    (positive, negative) combination of a question is used, and ``max_negatives`` caps the
    negatives per positive with a seeded draw without replacement.

    Args:
        qids: sequence of question ids (hashable, e.g. ``PairExample.qid``), one per pair;
            pairs of a question need not be consecutive.
        labels: sequence of ints, one per pair: 1 = relevant, 0 = not.
        max_negatives: int >= 1 or None (all), negatives per positive.
        seed: int, seed of the draw (the output is a deterministic function of the inputs and
            ``seed``).

    Returns:
        ``(triples, stats)``: ``triples`` is int64 ``[num_triples, 2]``, rows (positive pair
        index, negative pair index) into ``qids``, ordered by question (first appearance),
        then positive, then negative index (the input of
        :func:`re2_tf.data.pipeline.make_triple_dataset`); ``stats`` is a dict of ints:
        ``questions``, ``questions_used``, ``questions_without_positive`` and
        ``questions_without_negative`` (skipped), ``pairs_skipped`` (pairs of the skipped
        questions), ``triples``, and ``triples_capped`` (combinations left out by
        ``max_negatives``).

    Raises:
        ValueError: lengths differ, a qid is None, a label is not 0/1, or ``max_negatives < 1``.
    """
    if len(qids) != len(labels):
        raise ValueError(f"{len(qids)} qids but {len(labels)} labels")
    if max_negatives is not None and max_negatives < 1:
        raise ValueError(f"max_negatives must be >= 1 or None, got {max_negatives}")
    groups = {}
    for index, (qid, label) in enumerate(zip(qids, labels)):
        if qid is None:
            raise ValueError(f"pair {index} has no qid: triples need grouped ranking data")
        if label not in (0, 1):
            raise ValueError(f"pair {index} (qid {qid}) has label {label!r}; expected 0 or 1")
        groups.setdefault(qid, ([], []))[1 - int(label)].append(index)
    rng = np.random.default_rng(seed)
    positive, negative = [], []
    stats = dict(
        questions=len(groups),
        questions_used=0,
        questions_without_positive=0,
        questions_without_negative=0,
        pairs_skipped=0,
        triples=0,
        triples_capped=0,
    )
    for pos, neg in groups.values():
        if not pos or not neg:
            stats["questions_without_positive" if not pos else "questions_without_negative"] += 1
            stats["pairs_skipped"] += len(pos) + len(neg)
            continue
        stats["questions_used"] += 1
        for p in pos:
            chosen = neg
            if max_negatives is not None and len(neg) > max_negatives:
                chosen = sorted(rng.choice(neg, size=max_negatives, replace=False).tolist())
                stats["triples_capped"] += len(neg) - max_negatives
            positive += [p] * len(chosen)
            negative += chosen
    stats["triples"] = len(positive)
    return np.asarray([positive, negative], "int64").T.reshape(-1, 2), stats
