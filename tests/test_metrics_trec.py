"""re2_tf.metrics' MAP / MRR against trec_eval itself, on real WikiQA questions with tied scores.

The reference is trec_eval's own C code through ``pytrec_eval`` (PyPI ``pytrec_eval-terrier``),
run as the RE2 release runs trec_eval: the corpus' ``WikiQA-<split>-filtered.ref`` as qrels and
every candidate of the split ranked. Scores are a lexical overlap (share of the question's
distinct lower-cased words that the candidate contains) rounded to one decimal, so most
questions have tied candidates and the tie-break decides the figures. trec_eval breaks ties by
document number in descending ``strcmp`` order (``"9"`` before ``"10"``); re2_tf must agree.

Skipped when ``pytrec_eval`` is not installed or ``../shared/data`` is absent.
"""

import statistics

import numpy as np
import pytest

from re2_tf import metrics
from re2_tf.data.readers import read_wikiqa_txt

pytrec_eval = pytest.importorskip("pytrec_eval")

SPLITS = ("dev", "test")


def _overlap_scores(examples):
    """Share of the question's distinct lower-cased tokens found in the candidate, to 0.1."""
    scores = []
    for example in examples:
        question = set(example.text1.lower().split())
        answer = set(example.text2.lower().split())
        scores.append(round(len(question & answer) / len(question), 1))
    return scores


def _qrels(path):
    qrels = {}
    for line in path.read_text().splitlines():
        qid, _, docid, rel = line.split()
        qrels.setdefault(qid, {})[docid] = int(rel)
    return qrels


def _trec_eval(qrels, examples, scores):
    """(MAP, MRR, questions) as trec_eval reports them: means of the per-question values."""
    run = {}
    for example, s in zip(examples, scores):
        run.setdefault(example.qid, {})[example.docid] = float(s)
    per_question = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank"}).evaluate(run)
    return (
        statistics.fmean(v["map"] for v in per_question.values()),
        statistics.fmean(v["recip_rank"] for v in per_question.values()),
        len(per_question),
    )


@pytest.fixture(params=SPLITS)
def wikiqa(request, shared_data):
    split = request.param
    examples = read_wikiqa_txt(shared_data / "wikiqa" / f"WikiQA-{split}.txt")
    ref = shared_data / "wikiqa" / f"WikiQA-{split}-filtered.ref"
    return examples, ref


def test_tie_break_decides_the_figures(wikiqa):
    # Guard on the test itself: the rounded overlap leaves ties whose order changes MAP/MRR,
    # so agreement below is agreement on the tie-break, not luck.
    examples, ref = wikiqa
    qrels = _qrels(ref)
    scores = _overlap_scores(examples)
    values = {(e.qid, s) for e, s in zip(examples, scores)}
    assert len(values) < 0.5 * len(examples)  # most candidates share a score with another
    # Ties broken the other way (ascending docid): < 0.05 in total never reorders distinct
    # scores, which differ by >= 0.1.
    reverse = [s + 1e-3 * int(e.docid) for e, s in zip(examples, scores)]
    assert (
        abs(_trec_eval(qrels, examples, scores)[0] - _trec_eval(qrels, examples, reverse)[0]) > 1e-3
    )


def test_ranking_metrics_equal_trec_eval(wikiqa, tmp_path):
    examples, ref = wikiqa
    scores = _overlap_scores(examples)
    expected_map, expected_mrr, questions = _trec_eval(_qrels(ref), examples, scores)

    # In memory, labels from the .txt (the path training and re2-evaluate take).
    ours = metrics.ranking_metrics(
        [e.qid for e in examples], [e.docid for e in examples], [e.label for e in examples], scores
    )
    assert ours["num_questions"] == questions
    assert ours["map"] == pytest.approx(expected_map, abs=1e-6)
    assert ours["mrr"] == pytest.approx(expected_mrr, abs=1e-6)

    # From files, as the release does: a written .rank against the filtered .ref.
    rank = tmp_path / "run.rank"
    metrics.write_trec_rank(rank, [e.qid for e in examples], [e.docid for e in examples], scores)
    from_files = metrics.ranking_metrics_from_files(ref, rank)
    assert from_files["num_questions"] == questions
    assert from_files["map"] == pytest.approx(expected_map, abs=1e-6)
    assert from_files["mrr"] == pytest.approx(expected_mrr, abs=1e-6)


def test_float32_ties_equal_trec_eval(wikiqa):
    # trec_eval keeps scores as C floats: values apart by less than float32 resolution tie.
    # Nudge every candidate by a docid-dependent 1e-12 (distinct in float64, equal in float32).
    examples, ref = wikiqa
    scores = [s + 1e-12 * int(e.docid) for e, s in zip(examples, _overlap_scores(examples))]
    assert len({np.float32(s) for s in scores}) < len(set(scores))
    expected_map, expected_mrr, _ = _trec_eval(_qrels(ref), examples, scores)
    ours = metrics.ranking_metrics(
        [e.qid for e in examples], [e.docid for e in examples], [e.label for e in examples], scores
    )
    assert ours["map"] == pytest.approx(expected_map, abs=1e-6)
    assert ours["mrr"] == pytest.approx(expected_mrr, abs=1e-6)
