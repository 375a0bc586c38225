"""Task losses: how a batch is scored against its targets, one interface for every architecture.

A task loss is called as ``loss(network, x, y, training)`` and returns ``(scalar float32 loss,
{metric name: scalar float32})`` for the batch. Its attributes tell the data pipeline and the
trainer what it needs:

- ``triples``: False when ``x`` is the network's feature dict and ``y`` one target per pair;
  True when ``x = {"positive": features, "negative": features}`` (two candidates of one query
  per row, ``y`` unused; see :func:`re2_tf.training.sampling.pairwise_triples` and
  :func:`re2_tf.data.pipeline.make_triple_dataset`);
- ``output``: ``"logits"`` (``[batch, num_classes]``) or ``"score"`` (``[batch]`` or
  ``[batch, 1]``), what the network must return;
- ``metric_names``: the keys of the metrics dict.

:data:`TASK_LOSSES` maps names to instances with the papers' settings. A model spec
(:class:`re2_tf.models.spec.ModelSpec`) only names its loss; :func:`resolve_task_loss` turns
that name into the loss (and rejects unknown names), and :func:`output_kind` is the output the
model's network must return.

The network is called exactly once per batch, so its own losses (``add_loss`` terms, weight
regularisers), which Keras resets at every top-level call, describe the whole batch.
"""

import tensorflow as tf


def _scores(output):
    """``[b]`` float32 scores from a ``[b]`` or ``[b, 1]`` network output; ValueError otherwise."""
    rank, shape = output.shape.rank, output.shape
    if rank == 2 and shape[-1] == 1:
        output = output[:, 0]
    elif rank != 1:
        raise ValueError(
            f"a score loss needs network outputs of shape [batch] or [batch, 1], got {shape}"
        )
    return tf.cast(output, "float32")


def _pad_and_concat(a, b):
    """Concatenate two feature tensors along the batch axis, zero-padding every other axis to
    the larger size (0 is the padding id/mask value of every re2_tf input)."""
    shape = tf.maximum(tf.shape(a)[1:], tf.shape(b)[1:])

    def pad(t):
        extra = shape - tf.shape(t)[1:]
        return tf.pad(t, tf.concat([[[0, 0]], tf.stack([tf.zeros_like(extra), extra], 1)], 0))

    return tf.concat([pad(a), pad(b)], axis=0)


class SoftmaxCrossEntropy:
    """Mean softmax cross-entropy of logits ``[b, C]`` against int labels ``[b]`` in ``[0, C)``.

    Metric ``acc``: fraction of the batch whose argmax equals the label. This is the RE2
    release's classification loss (RE2 paper §3.2; release ``Model``), DRCN's and FITN's.
    """

    name = "softmax_cross_entropy"
    triples = False
    output = "logits"
    metric_names = ("acc",)

    def __call__(self, network, x, y, training):
        y = tf.cast(y, "int32")
        logits = network(x, training=training)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type="int32"), y), "float32")
        return loss, {"acc": tf.reduce_mean(correct)}


class PairwiseHinge:
    """Pairwise ranking hinge loss over (query, positive, negative) triples.

    ``loss = mean_i max(0, margin - M(q_i, d_i+) + M(q_i, d_i-))`` with ``M`` the network's
    score (Match-SRNN paper, Wan et al. 2016, §4.4; margin 1 there). Both sides of every triple
    are scored in one call on the ``2b`` pairs ``[positive; negative]``: each feature is
    zero-padded on its non-batch axes to the larger of the two shapes, so the features of the
    two sides may have different lengths.

    Args:
        margin: float > 0 (default 1.0, the paper's).

    Call arguments:
        x: ``{"positive": features, "negative": features}``, each the feature dict the network
            takes, with the same keys and ``b`` rows; ``y`` is ignored.

    Metric ``pair_acc``: fraction of triples with ``M(q, d+) > M(q, d-)`` (ties count as wrong).
    """

    name = "pairwise_hinge"
    triples = True
    output = "score"
    metric_names = ("pair_acc",)

    def __init__(self, margin=1.0):
        if not margin > 0:
            raise ValueError(f"margin must be > 0, got {margin}")
        self.margin = float(margin)

    def __call__(self, network, x, y, training):
        if not isinstance(x, dict) or set(x) != {"positive", "negative"}:
            got = sorted(x) if isinstance(x, dict) else type(x).__name__
            raise ValueError(
                "pairwise_hinge needs x = {'positive': features, 'negative': "
                f"features}}, got {got}"
            )
        positive, negative = x["positive"], x["negative"]
        if set(positive) != set(negative):
            raise ValueError(
                f"positive and negative features differ: {sorted(positive)} vs {sorted(negative)}"
            )
        both = {key: _pad_and_concat(positive[key], negative[key]) for key in positive}
        scores = _scores(network(both, training=training))
        b = tf.shape(scores)[0] // 2
        pos, neg = scores[:b], scores[b:]
        loss = tf.reduce_mean(tf.nn.relu(self.margin - pos + neg))
        return loss, {"pair_acc": tf.reduce_mean(tf.cast(pos > neg, "float32"))}


class SquaredError:
    """Mean squared error ``mean_i (y_i - M(S1_i, S2_i))^2`` of scores ``[b]``/``[b, 1]`` against
    float targets ``[b]`` (Match-SRNN paper Eq. 6; its LCS simulation, §5.2).

    Metric ``mae``: mean absolute error of the batch.
    """

    name = "squared_error"
    triples = False
    output = "score"
    metric_names = ("mae",)

    def __call__(self, network, x, y, training):
        error = tf.reshape(tf.cast(y, "float32"), [-1]) - _scores(network(x, training=training))
        return tf.reduce_mean(tf.square(error)), {"mae": tf.reduce_mean(tf.abs(error))}


TASK_LOSSES = {loss.name: loss for loss in (SoftmaxCrossEntropy(), PairwiseHinge(), SquaredError())}


def resolve_task_loss(spec, hparams=None):
    """The task loss (an instance of :data:`TASK_LOSSES`) that model spec ``spec`` trains with
    under ``hparams`` (missing ones take the spec's defaults), from
    :meth:`~re2_tf.models.spec.ModelSpec.task_loss_name`.

    Raises:
        ValueError: the spec names a loss that is not in :data:`TASK_LOSSES`; the message
            names the model, the loss and the known losses.
    """
    name = spec.task_loss_name(hparams)
    if name not in TASK_LOSSES:
        raise ValueError(
            f"model {spec.name!r} names an unknown task loss {name!r}; known: {sorted(TASK_LOSSES)}"
        )
    return TASK_LOSSES[name]


def output_kind(spec, hparams=None):
    """``"logits"`` or ``"score"``: what the network of model spec ``spec`` returns under
    ``hparams``, its task loss's ``output`` (:func:`resolve_task_loss`; same ValueError)."""
    return resolve_task_loss(spec, hparams).output


def get_task_loss(task_loss):
    """The task loss ``task_loss`` names in :data:`TASK_LOSSES`, or ``task_loss`` itself if it
    is already one (e.g. ``PairwiseHinge(margin=0.5)``).

    Raises:
        ValueError: unknown name.
    """
    if not isinstance(task_loss, str):
        return task_loss
    if task_loss not in TASK_LOSSES:
        raise ValueError(f"unknown task loss {task_loss!r}; known: {sorted(TASK_LOSSES)}")
    return TASK_LOSSES[task_loss]
