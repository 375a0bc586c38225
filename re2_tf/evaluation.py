"""Scoring a matching network on a list of pairs: featurising, batched prediction, metrics.

Networks give one of two output kinds (``ModelSpec.output``):

- ``logits``: float ``[n, num_classes]``; probabilities are their softmax.
- ``score``: one ranking / matching score per pair, ``[n]`` or ``[n, 1]`` (Match-SRNN trained
  with a pairwise hinge loss). Ranking metrics (MAP, MRR) use the score as it is. For
  classification metrics of a two-class dataset the score is read as the logit of class 1:
  ``p(1) = sigmoid(score)``, so accuracy thresholds the score at 0 and ROC-AUC ranks by it.
"""

import weakref
from typing import NamedTuple

import keras
import numpy as np
import tensorflow as tf

from re2_tf import metrics as metrics_lib
from re2_tf.data.pipeline import encode_examples, make_dataset, pair_lengths

OUTPUT_KINDS = ("logits", "score")
_INFERENCE_FUNCTIONS = weakref.WeakKeyDictionary()


def inference_function(network):
    """``network`` in inference mode as a ``tf.function`` over its inputs with every length
    dynamic, traced once (Keras' ``predict`` would retrace for every new batch shape)."""
    if network not in _INFERENCE_FUNCTIONS:
        signature = keras.tree.map_structure(
            lambda t: tf.TensorSpec([None] * len(t.shape[:2]) + list(t.shape[2:]), t.dtype),
            network.input,
        )
        _INFERENCE_FUNCTIONS[network] = tf.function(
            lambda inputs: network(inputs, training=False), input_signature=[signature]
        )
    return _INFERENCE_FUNCTIONS[network]


class InferenceData(NamedTuple):
    """Feature batches for inference and the order they hold the pairs in.

    Attributes:
        dataset: unlabelled feature batches (``re2_tf.data.pipeline.make_dataset``).
        order: int64 ``[n]``: the ``k``-th pair of the batches is input pair ``order[k]``.
    """

    dataset: tf.data.Dataset
    order: np.ndarray


def inference_dataset(encoded, batch_size=256, by_length=True):
    """Unlabelled feature batches of :func:`re2_tf.data.pipeline.encode_examples` output,
    nothing dropped. With ``by_length`` the pairs are batched shortest first (stable), so that a
    batch pads to little more than its pairs' own length; the order is returned with them and
    :func:`predict_outputs` puts the outputs back in input order.

    Returns:
        :class:`InferenceData`.
    """
    order = (
        np.argsort(pair_lengths(encoded), kind="stable") if by_length else np.arange(len(encoded))
    )
    return InferenceData(
        make_dataset(
            encoded, batch_size=batch_size, training=False, with_labels=False, order=order
        ),
        order,
    )


def predict_outputs(network, data):
    """The network's raw outputs over an :func:`inference_dataset` (or a plain dataset of
    feature batches in input order), in input order: float32 logits ``[n, num_classes]`` or
    scores ``[n]``."""
    forward = inference_function(network)
    dataset, order = data if isinstance(data, InferenceData) else (data, None)
    outputs = np.concatenate([np.asarray(forward(batch)) for batch in dataset], axis=0)
    if order is not None:
        unsorted = np.empty_like(outputs)
        unsorted[order] = outputs
        outputs = unsorted
    if outputs.ndim == 2 and outputs.shape[1] == 1:
        outputs = outputs[:, 0]
    return outputs.astype("float32")


def to_probabilities(outputs):
    """Class probabilities ``[n, C]`` of logits ``[n, C]`` (softmax) or of scores ``[n]``
    (``[1 - sigmoid(s), sigmoid(s)]``; see the module docstring)."""
    outputs = np.asarray(outputs, np.float64)
    if outputs.ndim == 1:
        positive = 1.0 / (1.0 + np.exp(-outputs))
        return np.stack([1.0 - positive, positive], axis=-1).astype("float32")
    shifted = np.exp(outputs - outputs.max(axis=-1, keepdims=True))
    return (shifted / shifted.sum(axis=-1, keepdims=True)).astype("float32")


def predict_probabilities(network, dataset):
    """Class probabilities ``float32 [n, num_classes]`` over an :func:`inference_dataset`."""
    return to_probabilities(predict_outputs(network, dataset))


def score(spec, examples, outputs, *, kind="logits"):
    """All metrics of a dataset: ``acc`` (+ ``f1``/``auc`` for two classes, + ``map``/``mrr``
    over the filtered question set for ranking datasets such as WikiQA).

    Args:
        spec: ``re2_tf.data.datasets.DatasetSpec``.
        examples: the scored ``PairExample`` list (labels, and ``qid``/``docid`` when ranking).
        outputs: network outputs (:func:`predict_outputs`): logits ``[n, num_classes]`` or
            scores ``[n]``; with ``kind="probabilities"``, class probabilities
            ``[n, num_classes]`` (an export's output).
        kind: ``logits`` or ``probabilities``: what a 2-D ``outputs`` holds.

    Raises:
        ValueError: scores for a dataset with more than two classes, or an unknown ``kind``.
    """
    if kind not in ("logits", "probabilities"):
        raise ValueError(f"kind must be logits or probabilities, got {kind!r}")
    outputs = np.asarray(outputs)
    if outputs.ndim == 1 and spec.num_classes != 2:
        raise ValueError(f"a single score cannot be scored on {spec.num_classes} classes")
    if kind == "probabilities" and outputs.ndim == 2:
        probabilities = outputs.astype("float32")
    else:
        probabilities = to_probabilities(outputs)
    labels = np.array([ex.label for ex in examples])
    result = metrics_lib.classification_metrics(labels, probabilities)
    if spec.ranking:
        ranking = metrics_lib.ranking_metrics(
            [ex.qid for ex in examples],
            [ex.docid for ex in examples],
            labels,
            outputs if outputs.ndim == 1 else probabilities[:, 1],
        )
        result.update(map=ranking["map"], mrr=ranking["mrr"], questions=ranking["num_questions"])
    return result


def evaluate_examples(network, spec, examples, featurizers, batch_size=256):
    """Featurise, predict and score ``examples`` (prepared ``PairExample`` s) with a Keras
    network; returns the metrics dict of :func:`score`. The public way to evaluate is
    :meth:`re2_tf.Matcher.evaluate`, which calls this for a run's matcher."""
    encoded = encode_examples(examples, featurizers)
    return score(spec, examples, predict_outputs(network, inference_dataset(encoded, batch_size)))


def format_metrics(result):
    """``"acc 0.8123 | f1 0.7000"`` with four decimals, counts as integers."""
    parts = []
    for key, value in result.items():
        parts.append(f"{key} {value:d}" if isinstance(value, int) else f"{key} {value:.4f}")
    return " | ".join(parts)
