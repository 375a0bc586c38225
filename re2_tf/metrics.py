"""Evaluation metrics: accuracy, binary F1 / ROC-AUC, and trec_eval-compatible MAP / MRR.

Classification metrics use scikit-learn. Ranking metrics (WikiQA) reproduce ``trec_eval``
(``map`` and ``recip_rank``; the release runs ``trec_eval`` on ``.ref``/``.rank`` files):

* per question, candidates are sorted by score descending, **ties broken by document id in
  descending string order** -- trec_eval's ``comp_sim_docno`` in ``form_res_rels.c``
  compares ``strcmp(docno2, docno1)`` -- and scores are compared as C ``float``
  (float32), as trec_eval stores them, so values that differ only beyond float32
  precision tie;
* relevance is ``label >= 1``; candidates absent from the reference count as non-relevant;
* average precision = sum of precision at each relevant rank / number of relevant
  documents in the reference; reciprocal rank = 1 / rank of the first relevant document;
* only the *filtered* question set is averaged. The corpus' ``WikiQA-*-filtered.ref`` files
  keep exactly the questions with at least one correct **and** at least one incorrect
  candidate (checked against ``WikiQA-{dev,test}.txt``: dev 122 of the 126 questions with a
  correct answer, test 237 of 243; the dropped ones have only correct candidates), and
  trec_eval averages over questions present in both files. :func:`ranking_metrics` applies
  the same rule by default (``require_negative=True``) so in-memory and file-based scores
  agree; ``require_negative=False`` keeps every question with a correct candidate.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Sequence

import numpy as np
from sklearn import metrics as skm

__all__ = [
    "accuracy",
    "f1",
    "roc_auc",
    "classification_metrics",
    "ranking_metrics",
    "read_trec_ref",
    "read_trec_rank",
    "write_trec_rank",
    "ranking_metrics_from_files",
]


def accuracy(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """Fraction of ``predictions == labels`` (``sklearn.metrics.accuracy_score``)."""
    return float(skm.accuracy_score(labels, predictions))


def f1(labels: Sequence[int], predictions: Sequence[int], positive: int = 1) -> float:
    """Binary F1 of class ``positive`` (``sklearn.metrics.f1_score``; 0 if undefined)."""
    return float(
        skm.f1_score(labels, predictions, pos_label=positive, average="binary", zero_division=0)
    )


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Binary ROC-AUC of ``scores`` (e.g. P(class 1)) against 0/1 ``labels`` (scikit-learn).

    Returns ``nan`` when ``labels`` contain a single class (AUC undefined).
    """
    labels = np.asarray(labels)
    if np.unique(labels).size < 2:
        return float("nan")
    return float(skm.roc_auc_score(labels, np.asarray(scores, dtype=np.float64)))


def classification_metrics(labels: Sequence[int], probabilities: np.ndarray) -> dict[str, float]:
    """``{"acc"}`` and, for two classes, ``{"f1", "auc"}`` from class probabilities.

    Args:
      labels: int ``[n]`` gold class ids.
      probabilities: float ``[n, num_classes]`` (softmax output); the prediction is the argmax.
    """
    probabilities = np.asarray(probabilities)
    predictions = probabilities.argmax(axis=-1)
    result = {"acc": accuracy(labels, predictions)}
    if probabilities.shape[-1] == 2:
        result["f1"] = f1(labels, predictions)
        result["auc"] = roc_auc(labels, probabilities[:, 1])
    return result


def _question_scores(
    ranked_relevance: list[list[int]], num_relevant: list[int]
) -> tuple[float, float, int]:
    aps, rrs = [], []
    for rels, total in zip(ranked_relevance, num_relevant):
        if total == 0:
            continue
        hits, precision_sum, rr = 0, 0.0, 0.0
        for rank, rel in enumerate(rels, 1):
            if rel:
                hits += 1
                precision_sum += hits / rank
                if rr == 0.0:
                    rr = 1.0 / rank
        aps.append(precision_sum / total)
        rrs.append(rr)
    if not aps:
        raise ValueError("no question has a relevant candidate")
    return float(np.mean(aps)), float(np.mean(rrs)), len(aps)


def _rank(candidates: list[tuple[str, float, int]]) -> list[int]:
    """[(docid, score, rel)] -> relevance in trec_eval order (score desc, docid desc)."""
    # Two stable sorts: by docid descending, then by float32 score descending.
    candidates = sorted(candidates, key=lambda c: c[0], reverse=True)
    candidates.sort(key=lambda c: np.float32(c[1]), reverse=True)
    return [c[2] for c in candidates]


def ranking_metrics(
    qids: Sequence,
    docids: Sequence,
    labels: Sequence[int],
    scores: Sequence[float],
    require_negative: bool = True,
) -> dict[str, float]:
    """MAP and MRR as trec_eval computes them, from per-candidate arrays.

    Args:
      qids: question id per candidate (any type; compared for equality).
      docids: candidate id per candidate (converted with ``str`` for the tie-break, which
        is a string comparison as in trec_eval), unique within a question.
      labels: 0/1 (or graded, relevant if >= 1) per candidate.
      scores: model score per candidate (higher = more likely correct).
      require_negative: also skip questions whose candidates are all relevant, as the
        corpus' filtered ``.ref`` files do (default); False = keep them (they score 1).

    Returns:
      ``{"map": float, "mrr": float, "num_questions": int}`` over questions with >= 1
      relevant (and, by default, >= 1 non-relevant) candidate.

    Raises:
      ValueError: length mismatch, duplicate ``(qid, docid)``, or no relevant candidate.
    """
    n = len(qids)
    if not (len(docids) == len(labels) == len(scores) == n):
        raise ValueError("qids, docids, labels and scores must have the same length")
    groups: dict = collections.OrderedDict()
    for q, d, y, s in zip(qids, docids, labels, scores):
        groups.setdefault(q, {})
        d = str(d)
        if d in groups[q]:
            raise ValueError(f"duplicate candidate {d!r} for question {q!r}")
        groups[q][d] = (d, float(s), int(y) >= 1)
    ranked = [_rank(list(g.values())) for g in groups.values()]
    if require_negative:
        ranked = [r for r in ranked if not all(r)]
    totals = [sum(r) for r in ranked]
    mean_ap, mrr, count = _question_scores(ranked, totals)
    return {"map": mean_ap, "mrr": mrr, "num_questions": count}


def _read_trec_table(path, layout: str, value_column: int, convert, what: str) -> dict:
    """``{qid: {docid: convert(fields[value_column])}}`` of a whitespace-separated TREC file
    whose lines have the fields named in ``layout``; ``what`` names the value in errors."""
    n_fields = len(layout.split())
    table: dict[str, dict] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != n_fields:
                raise ValueError(f"{os.fspath(path)}:{lineno}: expected '{layout}'")
            qid, docid, raw = fields[0], fields[2], fields[value_column]
            try:
                value = convert(raw)
            except ValueError:
                raise ValueError(f"{os.fspath(path)}:{lineno}: bad {what} {raw!r}") from None
            if docid in table.setdefault(qid, {}):
                raise ValueError(f"{os.fspath(path)}:{lineno}: duplicate doc {docid!r}")
            table[qid][docid] = value
    return table


def read_trec_ref(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Reads a TREC qrels file (``qid iter docid relevance`` per line, whitespace-separated).

    Returns:
      ``{qid: {docid: relevance}}``.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count, a non-integer relevance or
        a duplicate ``(qid, docid)``.
    """
    return _read_trec_table(path, "qid iter docid rel", 3, int, "relevance")


def read_trec_rank(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Reads a TREC results file (``qid iter docid rank score run`` per line).

    The rank column is ignored, as trec_eval ignores it.

    Returns:
      ``{qid: {docid: score}}``.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count, non-numeric score or a
        duplicate ``(qid, docid)``.
    """
    return _read_trec_table(path, "qid iter docid rank score run", 4, float, "score")


def write_trec_rank(
    path: str | os.PathLike,
    qids: Sequence,
    docids: Sequence,
    scores: Sequence[float],
    run_name: str = "re2",
) -> None:
    """Writes ``qid 0 docid 0 score run_name`` lines (the layout of WikiQA's ``.rank`` files)."""
    with open(path, "w", encoding="utf-8") as f:
        for q, d, s in zip(qids, docids, scores):
            f.write(f"{q} 0 {d} 0 {float(s):.9g} {run_name}\n")


def ranking_metrics_from_files(
    ref_path: str | os.PathLike, rank_path: str | os.PathLike
) -> dict[str, float]:
    """MAP / MRR of a ``.rank`` file against a ``.ref`` file, as ``trec_eval -m map -m recip_rank``.

    Questions are those in both files with at least one relevant (``rel >= 1``) document in
    the reference; ranked documents missing from the reference are non-relevant; the number
    of relevant documents comes from the reference (relevant documents that were not ranked
    lower average precision, as in trec_eval).

    Returns:
      ``{"map": float, "mrr": float, "num_questions": int}``.

    Raises:
      ValueError: malformed files (see :func:`read_trec_ref`, :func:`read_trec_rank`) or no
        evaluable question.
    """
    ref = read_trec_ref(ref_path)
    run = read_trec_rank(rank_path)
    ranked, totals = [], []
    for qid, docs in run.items():
        if qid not in ref:
            continue
        judged = ref[qid]
        ranked.append(_rank([(d, s, judged.get(d, 0) >= 1) for d, s in docs.items()]))
        totals.append(sum(rel >= 1 for rel in judged.values()))
    mean_ap, mrr, count = _question_scores(ranked, totals)
    return {"map": mean_ap, "mrr": mrr, "num_questions": count}
