"""``re2-evaluate`` (``python -m re2_tf.cli.evaluate``) ``--file=F --format=processed`` on a WikiQA
run directory."""

import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from re2_tf import runs
from re2_tf.data.vocab import Vocab
from re2_tf.models import build_re2

REPO = Path(__file__).resolve().parents[1]

# A prepared (lower-cased) WikiQA file: questions 2 and 3 have the same text (they differed
# only in case in the corpus) and are told apart by the sibling .ids file alone.
PAIRS = [
    ("who wrote hamlet ?", "hamlet is a tragedy .", 0, "1", "0"),
    ("who wrote hamlet ?", "it was written by william shakespeare .", 1, "1", "1"),
    ("what is a pm ?", "pm may mean afternoon .", 1, "2", "0"),
    ("what is a pm ?", "pm is a time of day .", 0, "2", "1"),
    ("what is a pm ?", "a prime minister leads a government .", 1, "3", "0"),
    ("what is a pm ?", "pm is short for prime minister .", 0, "3", "1"),
    ("what is a pm ?", "it is two letters .", 0, "3", "2"),
]


def _write_processed(path, pairs):
    path.write_text("".join(f"{t1}\t{t2}\t{label}\n" for t1, t2, label, *_ in pairs))


@pytest.fixture(scope="module")
def wikiqa_run(tmp_path_factory):
    vocab = Vocab.build((t for p in PAIRS for text in p[:2] for t in text.split()), min_df=1)
    keras.utils.set_random_seed(3)
    model = build_re2(
        len(vocab), 2, embedding_dim=8, blocks=1, enc_layers=1, hidden_size=8, prediction="simple"
    )
    run_dir = tmp_path_factory.mktemp("wikiqa_run")
    model.save(run_dir / runs.BEST_MODEL_FILE)
    vocab.save(run_dir / runs.VOCAB_FILE)
    runs.save_config(
        run_dir,
        runs.RunConfig(
            model="re2",
            model_kwargs={"blocks": 1},
            dataset="wikiqa",
            label_names=["incorrect", "correct"],
            tokenizer="whitespace",
            lower=True,
            metric="mrr",
        ),
    )
    data = tmp_path_factory.mktemp("wikiqa_data")
    _write_processed(data / "test.txt", PAIRS)
    (data / "test.ids").write_text("".join(f"{q}\t{d}\n" for *_, q, d in PAIRS))
    return run_dir, data, model, vocab


def _evaluate(*args):
    return subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.evaluate", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _expected_map_mrr(model, vocab):
    """MAP/MRR worked out here: per question with a correct and an incorrect candidate, rank
    by p(correct); AP = mean precision at each correct one, RR = 1 / rank of the first."""
    rows = [vocab.encode(text.split()) for p in PAIRS for text in p[:2]]
    ids = np.zeros((len(rows), max(map(len, rows))), "int32")
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
    logits = model({"text1": ids[0::2], "text2": ids[1::2]}, training=False).numpy()
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    aps, rrs = [], []
    for qid in ("1", "2", "3"):
        idx = [i for i, pair in enumerate(PAIRS) if pair[3] == qid]
        labels = np.array([PAIRS[i][2] for i in idx])
        order = labels[np.argsort(-p[idx, 1], kind="stable")]
        hits = np.flatnonzero(order == 1) + 1
        aps.append(np.mean(np.arange(1, len(hits) + 1) / hits))
        rrs.append(1.0 / hits[0])
    return np.mean(aps), np.mean(rrs)


def test_processed_file_is_scored_with_its_sibling_ids(wikiqa_run, tmp_path):
    run_dir, data, model, vocab = wikiqa_run
    out = tmp_path / "metrics.json"
    proc = _evaluate(
        f"--run_dir={run_dir}",
        f"--file={data / 'test.txt'}",
        "--format=processed",
        f"--output={out}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(out.read_text())[str(data / "test.txt")]
    assert metrics["questions"] == 3  # 2 if the two "what is a pm ?" questions merged
    expected_map, expected_mrr = _expected_map_mrr(model, vocab)
    assert metrics["map"] == pytest.approx(expected_map, abs=1e-6)
    assert metrics["mrr"] == pytest.approx(expected_mrr, abs=1e-6)


def test_label_outside_the_runs_labels_names_file_and_line(wikiqa_run, tmp_path):
    run_dir = wikiqa_run[0]
    bad = tmp_path / "bad.txt"
    _write_processed(bad, PAIRS[:3] + [("what is a pm ?", "a snli label", 2)])
    (tmp_path / "bad.ids").write_text("1\t0\n1\t1\n2\t0\n2\t1\n")
    proc = _evaluate(f"--run_dir={run_dir}", f"--file={bad}", "--format=processed")
    assert proc.returncode != 0
    assert f"{bad}:4: label 2 is not one of wikiqa's labels" in proc.stderr


def test_evaluate_run_library_call_matches_the_hand_worked_map_mrr(wikiqa_run):
    from re2_tf.inference import evaluate_run

    run_dir, data, model, vocab = wikiqa_run
    expected_map, expected_mrr = _expected_map_mrr(model, vocab)
    by_file = evaluate_run(run_dir, data / "test.txt")  # a file (its .ids beside it)
    by_split = evaluate_run(model, "test", run_dir=run_dir, data_dir=data, batch_size=2)
    for metrics in (by_file, by_split):
        assert metrics["questions"] == 3
        assert metrics["map"] == pytest.approx(expected_map, abs=1e-6)
        assert metrics["mrr"] == pytest.approx(expected_mrr, abs=1e-6)
    with pytest.raises(ValueError, match="a model needs run_dir"):
        evaluate_run(model, "test")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        evaluate_run(run_dir, "test", data_dir=data, batch_size=0)
    with pytest.raises(FileNotFoundError):
        evaluate_run(run_dir, "dev", data_dir=data)  # no dev.txt there
