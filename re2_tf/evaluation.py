"""Scoring a matching network on a list of pairs: encoding, batched prediction, metrics."""

import weakref

import numpy as np
import tensorflow as tf

from re2_tf import metrics as metrics_lib
from re2_tf.data.pipeline import encode_pairs, make_dataset


_INFERENCE_FUNCTIONS = weakref.WeakKeyDictionary()


def inference_function(network):
    """``network`` in inference mode as a ``tf.function`` over int32 ``[None, None]`` ids, traced
    once (Keras' ``predict`` would retrace for every new pair of batch lengths)."""
    if network not in _INFERENCE_FUNCTIONS:
        spec = tf.TensorSpec([None, None], tf.int32)
        _INFERENCE_FUNCTIONS[network] = tf.function(
            lambda inputs: network(inputs, training=False),
            input_signature=[{"text1": spec, "text2": spec}],
        )
    return _INFERENCE_FUNCTIONS[network]


def inference_dataset(text1_ids, text2_ids, batch_size=256):
    """Unlabelled, in-order batches for :func:`predict_probabilities` (nothing dropped)."""
    return make_dataset(text1_ids, text2_ids, None, batch_size=batch_size, training=False)[0]


def predict_probabilities(network, dataset):
    """Softmax probabilities ``float32 [n, num_classes]`` over a :func:`inference_dataset`."""
    forward = inference_function(network)
    logits = np.concatenate([forward(batch).numpy() for batch in dataset], axis=0)
    logits = logits - logits.max(axis=-1, keepdims=True)
    probabilities = np.exp(logits)
    return (probabilities / probabilities.sum(axis=-1, keepdims=True)).astype("float32")


def score(spec, examples, probabilities):
    """All metrics of a dataset: ``acc`` (+ ``f1``/``auc`` for two classes, + ``map``/``mrr``
    over the filtered question set for ranking datasets such as WikiQA).

    Args:
        spec: ``re2_tf.data.datasets.DatasetSpec``.
        examples: the scored ``PairExample`` list (labels, and ``qid``/``docid`` when ranking).
        probabilities: float ``[n, num_classes]``.
    """
    labels = np.array([ex.label for ex in examples])
    result = metrics_lib.classification_metrics(labels, probabilities)
    if spec.ranking:
        ranking = metrics_lib.ranking_metrics(
            [ex.qid for ex in examples], [ex.docid for ex in examples], labels, probabilities[:, 1]
        )
        result.update(map=ranking["map"], mrr=ranking["mrr"], questions=ranking["num_questions"])
    return result


def evaluate(network, spec, examples, vocab, batch_size=256):
    """Encode, predict and score ``examples``; returns the metrics dict of :func:`score`."""
    ids1, ids2, _ = encode_pairs(examples, vocab)
    dataset = inference_dataset(ids1, ids2, batch_size)
    return score(spec, examples, predict_probabilities(network, dataset))


def format_metrics(result):
    """``"acc 0.8123 | f1 0.7000"`` with four decimals, counts as integers."""
    parts = []
    for key, value in result.items():
        parts.append(f"{key} {value:d}" if isinstance(value, int) else f"{key} {value:.4f}")
    return " | ".join(parts)
