"""The shared path's seams for architectures other than RE2, through the real CLIs: a
test-only ranking spec (``tests/fixtures/tiny_ranker.py``: one score per pair, pairwise
hinge loss over ranking triples, AdaGrad, a kernel regulariser and an ``add_loss`` term) is
trained, evaluated and exported with no change to the scripts; and the evaluation of score
outputs is checked against hand computations."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from re2_tf.data.datasets import get_dataset
from re2_tf.data.readers import PairExample
from re2_tf.evaluation import score, to_probabilities

REPO = Path(__file__).resolve().parents[1]
RANKER = REPO / "tests" / "fixtures" / "tiny_ranker.py"
TOPICS = [
    "river",
    "piano",
    "comet",
    "tulip",
    "glacier",
    "violin",
    "desert",
    "harbor",
    "falcon",
    "marble",
    "lantern",
    "orchard",
]


def _write_ranking_data(directory, questions, seed):
    """WikiQA-style prepared files: each question has 1 correct answer (it says "yes") and 3
    incorrect ones (they say "no"), plus the .ids grouping."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True)
    rows, ids = [], []
    for q in range(questions):
        topic = TOPICS[q % len(TOPICS)]
        question = f"what about the {topic} number {q}"
        answers = [(f"yes the {topic} is {rng.choice(TOPICS)}", 1)] + [
            (f"no the {rng.choice(TOPICS)} is {rng.choice(TOPICS)}", 0) for _ in range(3)
        ]
        for d in rng.permutation(4):
            rows.append(f"{question}\t{answers[d][0]}\t{answers[d][1]}")
            ids.append(f"Q{q}\tD{q}-{d}")
    (directory.parent / f"{directory.name}.txt").write_text("\n".join(rows) + "\n")
    (directory.parent / f"{directory.name}.ids").write_text("\n".join(ids) + "\n")
    directory.rmdir()


def _run(*args):
    proc = subprocess.run(
        [sys.executable, str(RANKER), *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def ranker_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranker")
    data = root / "data"
    data.mkdir()
    for split, n, seed in (("train", 24, 0), ("dev", 8, 1), ("test", 8, 2)):
        _write_ranking_data(data / split, n, seed)
    run_dir = root / "run"
    log = _run(
        "train",
        "--model=tiny_ranker",
        "--dataset=wikiqa",
        f"--data_dir={data}",
        f"--run_dir={run_dir}",
        "--embeddings=",
        "--min_df=1",
        "--batch_size=8",
        "--epochs=6",
        "--eval_per_samples=24",
        "--tolerance_samples=100000",
        "--log_per_samples=8",
        "--progress=false",
    )
    return data, run_dir, log


def test_a_ranking_spec_trains_on_triples_with_its_own_losses(ranker_run):
    data, run_dir, log = ranker_run
    # 24 questions x 1 positive x 3 negatives = 72 triples, 9 updates per pass, 6 passes
    assert "72 ranking triples" in log and "Training complete after 54 updates" in log
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"] == "tiny_ranker" and config["output"] == "score"
    assert config["settings"]["optimizer"] == "adagrad" and config["model_kwargs"] == {"width": 8}
    tags = set()
    for event_file in (run_dir / "tensorboard").glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(event_file)):
            tags.update(value.tag for value in event.summary.value)
    assert {
        "train/loss",
        "train/loss_task",
        "train/loss_regularization",
        "train/loss_layer/activity",
        "train/pair_acc",
        "dev/mrr",
        "dev/map",
    } <= tags
    results = json.loads((run_dir / "results.json").read_text())
    # "yes" marks every correct answer: a ranker that learned anything ranks it first
    # (chance MRR with 1 of 4 candidates is 0.52).
    assert results["splits"]["test"]["mrr"] == 1.0
    assert results["splits"]["test"]["questions"] == 8


@pytest.mark.slow
def test_evaluate_and_export_serve_the_score(ranker_run, tmp_path):
    data, run_dir, _ = ranker_run
    out = _run(
        "evaluate", f"--run_dir={run_dir}", "--splits=test", f"--output={tmp_path / 'm.json'}"
    )
    assert (
        json.loads((tmp_path / "m.json").read_text())["test"]
        == json.loads((run_dir / "results.json").read_text())["splits"]["test"]
    )
    assert "test (32 pairs)" in out
    _run(
        "export",
        f"--run_dir={run_dir}",
        f"--export_dir={tmp_path / 'export'}",
        "--xla=false",
        "--precision=fp32",
        "--serving=savedmodel",  # the serving runtime's choice is tests/test_serving_choice.py's
    )
    import keras

    model = keras.saving.load_model(run_dir / "best.keras")
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    rows = [line.split("\t") for line in (data / "test.txt").read_text().splitlines()]
    served = loaded.signatures["serving_default"](
        text1=tf.constant([r[0] for r in rows]), text2=tf.constant([r[1] for r in rows])
    )
    vocab = (run_dir / "vocab.txt").read_text().splitlines()
    index = {w: i for i, w in enumerate(vocab)}
    scores = []
    for t1, t2, _ in rows:
        x = {
            name: np.array([[index.get(w, 1) for w in t.split()]], "int32")
            for name, t in (("text1", t1), ("text2", t2))
        }
        scores.append(float(model(x)[0, 0]))
    np.testing.assert_allclose(served["score"].numpy(), scores, atol=1e-5)
    sigmoid = 1 / (1 + np.exp(-np.asarray(scores)))
    np.testing.assert_allclose(
        served["probabilities"].numpy(), np.stack([1 - sigmoid, sigmoid], 1), atol=1e-5
    )


def test_score_outputs_are_ranked_as_they_are_and_read_as_logits_for_accuracy():
    spec = get_dataset("wikiqa")
    examples = [
        PairExample("q", "a", y, qid=q, docid=d)
        for y, q, d in ((0, "1", "a"), (1, "1", "b"), (0, "1", "c"), (1, "2", "a"), (0, "2", "b"))
    ]
    scores = np.array([2.0, 0.5, -1.0, -0.2, -3.0], "float32")
    result = score(spec, examples, scores)
    # question 1: the correct answer is ranked 2nd -> RR 1/2, AP 1/2; question 2: first -> 1
    assert result["mrr"] == pytest.approx(0.75) and result["map"] == pytest.approx(0.75)
    # accuracy thresholds the score at 0: predictions 1, 1, 0, 0, 0 vs labels 0, 1, 0, 1, 0
    assert result["acc"] == pytest.approx(3 / 5)
    # [n, 1] scores are the same thing; logits [n, 2] go through softmax
    np.testing.assert_allclose(to_probabilities(scores)[:, 1], 1 / (1 + np.exp(-scores)), rtol=1e-6)
    logits = np.array([[0.0, 1.0], [2.0, 0.0]])
    np.testing.assert_allclose(
        to_probabilities(logits)[0], [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-6
    )
    with pytest.raises(ValueError, match="3 classes"):
        score(get_dataset("snli"), examples, scores)
