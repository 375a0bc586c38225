"""Tests for re2_tf.metrics against hand-worked values and published WikiQA figures."""

import math

import numpy as np
import pytest

from re2_tf import metrics


def test_classification_hand_worked():
    labels = [1, 0, 1, 1, 0]
    predictions = [1, 0, 0, 1, 1]
    # 3 of 5 correct.
    assert metrics.accuracy(labels, predictions) == pytest.approx(0.6)
    # TP=2 (idx 0, 3), FP=1 (idx 4), FN=1 (idx 2): P = R = 2/3 -> F1 = 2/3.
    assert metrics.f1(labels, predictions) == pytest.approx(2 / 3)
    # Positives score {0.9, 0.4, 0.8}, negatives {0.1, 0.6}: 5 of the 6 pos/neg pairs are
    # ordered correctly (only 0.4 < 0.6 is not) -> AUC = 5/6.
    scores = [0.9, 0.1, 0.4, 0.8, 0.6]
    assert metrics.roc_auc(labels, scores) == pytest.approx(5 / 6)
    probabilities = np.stack([1 - np.array(scores), scores], axis=1)
    # argmax of [1-s, s] is 1 iff s > 0.5: predictions [1, 0, 0, 1, 1] as above.
    result = metrics.classification_metrics(labels, probabilities)
    assert result == pytest.approx({"acc": 0.6, "f1": 2 / 3, "auc": 5 / 6})
    assert math.isnan(metrics.roc_auc([1, 1], [0.2, 0.3]))
    three = metrics.classification_metrics([2, 0], np.array([[0.1, 0.2, 0.7], [0.3, 0.6, 0.1]]))
    assert three == {"acc": 0.5}


# Hand-worked ranking example (trec_eval rules: score desc, ties by docid desc as strings).
#   q "a": 1:0.9 rel0 | 2:0.5+1e-12 rel1 | 3:0.5 rel0 | 4:0.1 rel1
#          2 and 3 are equal as float32 -> tie -> docid desc: "3" before "2".
#          ranking 1(0) 3(0) 2(1) 4(1): AP = (1/3 + 2/4) / 2 = 5/12, RR = 1/3.
#   q "b": 9:0.2 rel1 | 10:0.2 rel0 -> tie, string desc: "9" > "10" -> 9 first: AP = RR = 1.
#          (numeric order would put 10 first and give AP = RR = 1/2.)
#   q "c": no relevant candidate -> not counted.
#   q "d": only relevant candidates -> not in the filtered set (AP = RR = 1 if counted).
#   MAP = (5/12 + 1) / 2 = 17/24;  MRR = (1/3 + 1) / 2 = 2/3.
#   With "d": MAP = (5/12 + 1 + 1) / 3 = 29/36;  MRR = (1/3 + 1 + 1) / 3 = 7/9.
RANKING = [
    ("a", "1", 0, 0.9),
    ("a", "2", 1, 0.5 + 1e-12),
    ("a", "3", 0, 0.5),
    ("a", "4", 1, 0.1),
    ("b", "9", 1, 0.2),
    ("b", "10", 0, 0.2),
    ("c", "1", 0, 0.7),
    ("c", "2", 0, 0.1),
    ("d", "1", 1, 0.3),
]


def test_ranking_metrics_hand_worked_with_ties():
    qids, docids, labels, scores = zip(*RANKING)
    result = metrics.ranking_metrics(qids, docids, labels, scores)
    assert result["num_questions"] == 2
    assert result["map"] == pytest.approx(17 / 24)
    assert result["mrr"] == pytest.approx(2 / 3)
    loose = metrics.ranking_metrics(qids, docids, labels, scores, require_negative=False)
    assert loose["num_questions"] == 3
    assert loose["map"] == pytest.approx(29 / 36)
    assert loose["mrr"] == pytest.approx(7 / 9)


def test_ranking_metrics_from_files_hand_worked(tmp_path):
    # q "x": ref A rel1, B rel0, C rel1; run A 0.3, B 0.9, Z 0.5 (Z unjudged = non-relevant,
    # C not retrieved). Ranking B(0) Z(0) A(1): AP = (1/3) / 2 relevant = 1/6, RR = 1/3.
    # q "y": ref only; not in the run -> not evaluated. q "z": in run only -> ignored.
    ref = tmp_path / "x.ref"
    ref.write_text("x 0 A 1\nx 0 B 0\nx 0 C 1\ny 0 A 1\ny 0 B 0\n")
    rank = tmp_path / "x.rank"
    rank.write_text("x 0 A 0 0.3 r\nx 0 B 0 0.9 r\nx 0 Z 0 0.5 r\nz 0 A 0 0.4 r\n")
    result = metrics.ranking_metrics_from_files(ref, rank)
    assert result == pytest.approx({"map": 1 / 6, "mrr": 1 / 3, "num_questions": 1})


def test_write_trec_rank_round_trip(tmp_path):
    qids, docids, labels, scores = zip(*RANKING)
    rank = tmp_path / "r.rank"
    metrics.write_trec_rank(rank, qids, docids, scores)
    ref = tmp_path / "r.ref"
    ref.write_text("".join(f"{q} 0 {d} {y}\n" for q, d, y, _ in RANKING if q in ("a", "b")))
    result = metrics.ranking_metrics_from_files(ref, rank)
    assert result == pytest.approx({"map": 17 / 24, "mrr": 2 / 3, "num_questions": 2})


def test_malformed_trec_files(tmp_path):
    bad = tmp_path / "bad.ref"
    bad.write_text("1 0 0 1\n1 0 1\n")
    with pytest.raises(ValueError, match=r"bad\.ref:2:"):
        metrics.read_trec_ref(bad)
    bad_rank = tmp_path / "bad.rank"
    bad_rank.write_text("1 0 0 0 0.5 r\n1 0 1 0 high r\n")
    with pytest.raises(ValueError, match=r"bad\.rank:2:"):
        metrics.read_trec_rank(bad_rank)
    with pytest.raises(ValueError, match="duplicate"):
        metrics.ranking_metrics(["q", "q"], ["1", "1"], [1, 0], [0.1, 0.2])


@pytest.mark.parametrize(
    "split, expected",
    [
        # Published CNN test figures of the WikiQA paper (Yang et al., 2015):
        # MAP 0.6190, MRR 0.6281.
        ("test", (0.6190, 0.6281, 237)),
    ],
)
def test_wikiqa_cnn_published_figures(shared_data, split, expected):
    wikiqa = shared_data / "wikiqa"
    result = metrics.ranking_metrics_from_files(
        wikiqa / f"WikiQA-{split}-filtered.ref", wikiqa / "emnlp-table" / f"WikiQA.CNN.{split}.rank"
    )
    assert (round(result["map"], 4), round(result["mrr"], 4), result["num_questions"]) == expected
    # The in-memory path (ids from the .txt, labels from the .txt) must agree.
    from re2_tf.data.readers import read_wikiqa_txt

    examples = read_wikiqa_txt(wikiqa / f"WikiQA-{split}.txt")
    run = metrics.read_trec_rank(wikiqa / "emnlp-table" / f"WikiQA.CNN.{split}.rank")
    in_memory = metrics.ranking_metrics(
        [e.qid for e in examples],
        [e.docid for e in examples],
        [e.label for e in examples],
        [run[e.qid][e.docid] for e in examples],
    )
    assert in_memory == pytest.approx(result)
