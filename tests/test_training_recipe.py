"""Training seams: task losses, the network's own losses, the non-finite guard, the triple
sampler, optimisers, schedules and the plateau controller, and learning-rate state on resume.
Every expected value is recomputed here in NumPy or worked by hand."""

import dataclasses
import itertools
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from re2_tf.data.readers import read_wikiqa_txt
from re2_tf.training import (
    TASK_LOSSES,
    MatchingTrainer,
    OptimizerRecipe,
    PlateauDecay,
    WarmupLinearDecay,
    build_optimizer,
    pairwise_triples,
)
from re2_tf.training.losses import PairwiseHinge

VOCAB = 12


# --------------------------------------------------------------------------- tiny networks
class Penalty(keras.layers.Layer):
    """Identity that adds ``weight * mean(x ** 2)`` as a model loss."""

    def __init__(self, weight, **kwargs):
        super().__init__(**kwargs)
        self.weight = weight

    def call(self, x):
        self.add_loss(self.weight * tf.reduce_mean(tf.square(x)))
        return x


def classifier(num_classes=3, l2=0.01, penalty=0.3):
    """Bag of embeddings -> inner functional model (Dense with an L2 kernel regulariser, then a
    layer calling add_loss) -> logits. Returns the network and a NumPy forward pass."""
    ids = keras.Input((None,), dtype="int32", name="text1")
    inner_in = keras.Input((4,))
    hidden = keras.layers.Dense(
        5, activation="tanh", name="hidden", kernel_regularizer=keras.regularizers.L2(l2)
    )(inner_in)
    inner = keras.Model(inner_in, Penalty(penalty, name="penalty")(hidden), name="inner")
    embedded = keras.layers.Embedding(VOCAB, 4, name="embed")(ids)
    pooled = keras.layers.Lambda(lambda t: tf.reduce_sum(t, 1))(embedded)
    logits = keras.layers.Dense(num_classes, name="out")(inner(pooled))
    network = keras.Model({"text1": ids}, logits)

    def numpy_forward(x):
        w = {
            layer.name: [v.numpy().astype(np.float64) for v in layer.weights]
            for layer in (
                network.get_layer("embed"),
                inner.get_layer("hidden"),
                network.get_layer("out"),
            )
        }
        h = np.tanh(w["embed"][0][x["text1"]].sum(1) @ w["hidden"][0] + w["hidden"][1])
        terms = {"penalty": penalty * np.mean(h**2), "l2": l2 * np.sum(w["hidden"][0] ** 2)}
        return h @ w["out"][0] + w["out"][1], terms

    return network, numpy_forward


def scorer():
    """score(text1, text2) = sum of a per-token weight over the non-padding (id != 0) tokens
    of both texts, as ``[batch, 1]``."""
    inputs = {k: keras.Input((None,), dtype="int32", name=k) for k in ("text1", "text2")}
    table = keras.layers.Embedding(VOCAB, 1, name="token_score")

    def side(ids):
        mask = keras.layers.Lambda(lambda t: tf.cast(t != 0, "float32")[..., None])(ids)
        return keras.layers.Lambda(lambda a: tf.reduce_sum(a[0] * a[1], 1))([table(ids), mask])

    network = keras.Model(
        inputs, keras.layers.Add()([side(inputs["text1"]), side(inputs["text2"])])
    )

    def numpy_score(x):
        w = table.embeddings.numpy()[:, 0].astype(np.float64)
        return sum(np.where(x[k] != 0, w[x[k]], 0.0).sum(1) for k in ("text1", "text2"))

    return network, numpy_score


def ids(rng, rows, length):
    out = rng.integers(1, VOCAB, size=(rows, length)).astype("int32")
    out[0, length - 1 :] = 0  # some padding
    return out


def softmax_xent(logits, labels):
    shifted = logits - logits.max(1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return -log_p[np.arange(len(labels)), labels].mean()


def all_variables(trainer):
    return [v.numpy().copy() for v in trainer.network.variables + trainer.optimizer.variables]


# --------------------------------------------------------------------------- task losses
def test_pairwise_hinge_hand_worked():
    inp = keras.Input((1,), name="s")
    identity = keras.Model({"s": inp}, inp)  # the score is the input: [b, 1]
    x = {
        "positive": {"s": np.array([[2.0], [0.5]], "float32")},
        "negative": {"s": np.array([[0.0], [1.0]], "float32")},
    }
    # margin 1: max(0, 1 - 2 + 0) = 0, max(0, 1 - 0.5 + 1) = 1.5 -> 0.75; one of two ranked right
    loss, metrics = TASK_LOSSES["pairwise_hinge"](identity, x, None, training=False)
    assert float(loss) == pytest.approx(0.75) and float(metrics["pair_acc"]) == 0.5
    loss, _ = PairwiseHinge(margin=0.5)(identity, x, None, training=False)  # 0 and 1.0
    assert float(loss) == pytest.approx(0.5)
    wide = keras.Model({"s": inp}, keras.layers.Concatenate()([inp, inp]))
    with pytest.raises(ValueError, match=r"\[batch\] or \[batch, 1\]"):
        TASK_LOSSES["pairwise_hinge"](wide, x, None, training=False)
    with pytest.raises(ValueError, match="positive"):
        TASK_LOSSES["pairwise_hinge"](identity, x["positive"], None, training=False)
    assert TASK_LOSSES["pairwise_hinge"].triples and not TASK_LOSSES["squared_error"].triples


def test_pairwise_hinge_step_matches_numpy_with_unequal_lengths():
    keras.utils.set_random_seed(1)
    network, numpy_score = scorer()
    network.get_layer("token_score").embeddings.assign(
        np.random.default_rng(1).normal(size=(VOCAB, 1))
    )
    rng = np.random.default_rng(2)
    query = ids(rng, 6, 4)
    x = {
        "positive": {"text1": query, "text2": ids(rng, 6, 3)},
        "negative": {"text1": query, "text2": ids(rng, 6, 7)},
    }  # padded to 7 in one call
    pos, neg = numpy_score(x["positive"]), numpy_score(x["negative"])
    trainer = MatchingTrainer(network, task_loss="pairwise_hinge")
    trainer.compile(optimizer=keras.optimizers.SGD(0.1))
    logs = trainer.train_on_batch(x, np.zeros(6, "float32"), return_dict=True)
    assert logs["loss"] == pytest.approx(np.maximum(0, 1 - pos + neg).mean(), rel=1e-5)
    assert logs["pair_acc"] == pytest.approx(np.mean(pos > neg))
    assert logs["loss_regularization"] == 0.0 and logs["nonfinite"] == 0.0


def test_squared_error_matches_numpy():
    keras.utils.set_random_seed(3)
    network, numpy_score = scorer()
    rng = np.random.default_rng(3)
    x = {"text1": ids(rng, 5, 4), "text2": ids(rng, 5, 6)}
    y = rng.uniform(size=5).astype("float32")
    loss, metrics = TASK_LOSSES["squared_error"](network, x, y, training=False)
    error = y - numpy_score(x)
    assert float(loss) == pytest.approx(np.mean(error**2), rel=1e-5)
    assert float(metrics["mae"]) == pytest.approx(np.mean(np.abs(error)), rel=1e-5)


# --------------------------------------------------------------------------- model losses
def test_step_adds_add_loss_and_regularisation_and_reports_each_term():
    keras.utils.set_random_seed(4)
    network, numpy_forward = classifier()
    rng = np.random.default_rng(4)
    trainer = MatchingTrainer(network, grad_clipping=1e6)
    trainer.compile(optimizer=keras.optimizers.SGD(0.5))
    for step in range(2):  # Keras resets add_loss terms per call: no accumulation across steps
        x = {"text1": ids(rng, 4, 5)}
        y = rng.integers(0, 3, size=4).astype("int32")
        logits, terms = numpy_forward(x)
        task = softmax_xent(logits, y)
        logs = trainer.train_on_batch(x, y, return_dict=True)
        assert logs["loss_task"] == pytest.approx(task, rel=1e-5)
        assert logs["loss_layer/penalty"] == pytest.approx(terms["penalty"], rel=1e-5)
        assert logs["loss_regularization"] == pytest.approx(terms["l2"], rel=1e-5)
        assert logs["loss"] == pytest.approx(task + terms["penalty"] + terms["l2"], rel=1e-5)
        assert logs["acc"] == np.mean(logits.argmax(1) == y)
        assert set(logs) == {
            "loss",
            "loss_task",
            "loss_regularization",
            "loss_layer/penalty",
            "grad_norm",
            "lr",
            "nonfinite",
            "acc",
        }, step


def written_out_gradient(network, x, y):
    """d(task + penalty + L2)/dw of a ``classifier(l2=0.5, penalty=2.0)`` network on the whole
    batch, the losses written out here directly."""
    inner = network.get_layer("inner")
    hidden = keras.Model(network.inputs, network.get_layer("out").input)  # the inner output
    with tf.GradientTape() as tape:
        h = hidden(x)
        logits = network.get_layer("out")(h)
        loss = (
            tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
            + 2.0 * tf.reduce_mean(tf.square(h))
            + 0.5 * tf.reduce_sum(tf.square(inner.get_layer("hidden").kernel))
        )
    return [
        tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, network.trainable_variables)
    ]


def test_model_losses_drive_the_gradient():
    # The update must follow d(task + penalty + L2)/dw, the losses written out here directly.
    keras.utils.set_random_seed(5)
    network, _ = classifier(l2=0.5, penalty=2.0)
    x = {"text1": ids(np.random.default_rng(5), 4, 5)}
    y = np.array([0, 1, 2, 1], "int32")
    grads = written_out_gradient(network, x, y)
    before = [v.numpy() for v in network.trainable_variables]
    trainer = MatchingTrainer(network, grad_clipping=1e6)
    trainer.compile(optimizer=keras.optimizers.SGD(0.1))
    trainer.train_on_batch(x, y)
    for w0, w1, g in zip(before, network.trainable_variables, grads):
        np.testing.assert_allclose(w0 - w1.numpy(), 0.1 * g, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("steps", [2, 3, 8])
def test_gradient_accumulation_takes_the_whole_batch_update(steps):
    # 5 rows in micro-batches of ceil(5 / k) rows (k = 8: five single rows): the update must be
    # the whole batch's gradient of task + penalty + L2, written out here directly; the logs
    # the whole batch's loss terms.
    from weights import randomize_weights

    keras.utils.set_random_seed(5)
    network, numpy_forward = classifier(l2=0.5, penalty=2.0)
    randomize_weights(network, 11)
    x = {"text1": ids(np.random.default_rng(7), 5, 6)}
    y = np.array([0, 1, 2, 1, 0], "int32")
    grads = written_out_gradient(network, x, y)
    logits, terms = numpy_forward(x)
    before = [v.numpy() for v in network.trainable_variables]
    trainer = MatchingTrainer(network, grad_clipping=1e6, accumulation_steps=steps)
    trainer.compile(optimizer=keras.optimizers.SGD(0.1))
    logs = trainer.train_on_batch(x, y, return_dict=True)
    assert logs["loss_task"] == pytest.approx(softmax_xent(logits, y), rel=1e-5)
    assert logs["loss_layer/penalty"] == pytest.approx(terms["penalty"], rel=1e-5)
    assert logs["loss_regularization"] == pytest.approx(terms["l2"], rel=1e-5)
    assert logs["acc"] == pytest.approx(np.mean(logits.argmax(1) == y), rel=1e-6)
    for w0, w1, g in zip(before, network.trainable_variables, grads):
        np.testing.assert_allclose(w0 - w1.numpy(), 0.1 * g, rtol=1e-4, atol=1e-7)


def test_gradient_accumulation_steps_must_be_positive():
    with pytest.raises(ValueError, match="accumulation_steps must be >= 1"):
        MatchingTrainer(classifier()[0], accumulation_steps=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_loss_updates_nothing(bad):
    keras.utils.set_random_seed(6)
    inputs = keras.Input((3,), name="f")
    network = keras.Model({"f": inputs}, keras.layers.Dense(2)(keras.layers.Dense(4)(inputs)))
    trainer = MatchingTrainer(network)
    trainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    good = {"f": np.random.default_rng(6).normal(size=(4, 3)).astype("float32")}
    y = np.array([0, 1, 1, 0], "int32")
    assert trainer.train_on_batch(good, y, return_dict=True)["nonfinite"] == 0.0  # slots set
    before = all_variables(trainer)
    poisoned = {"f": good["f"].copy()}
    poisoned["f"][2, 1] = bad
    logs = trainer.train_on_batch(poisoned, y, return_dict=True)
    assert logs["nonfinite"] == 1.0 and not np.isfinite(logs["loss"])
    after = all_variables(trainer)
    assert len(after) == len(before) and all(np.array_equal(a, b) for a, b in zip(before, after))
    assert int(trainer.optimizer.iterations.numpy()) == 1
    assert trainer.train_on_batch(good, y, return_dict=True)["nonfinite"] == 0.0
    assert int(trainer.optimizer.iterations.numpy()) == 2


# --------------------------------------------------------------------------- triples
def test_triples_hand_worked():
    qids = ["a", "a", "a", "b", "b", "c", "c", "a"]
    labels = [1, 0, 0, 0, 0, 1, 1, 1]
    triples, stats = pairwise_triples(qids, labels)
    assert triples.dtype == np.int64
    assert triples.tolist() == [[0, 1], [0, 2], [7, 1], [7, 2]]
    assert stats == dict(
        questions=3,
        questions_used=1,
        questions_without_positive=1,
        questions_without_negative=1,
        pairs_skipped=4,
        triples=4,
        triples_capped=0,
    )
    capped, stats = pairwise_triples(qids, labels, max_negatives=1, seed=0)
    assert capped.shape == (2, 2) and stats["triples_capped"] == 2
    with pytest.raises(ValueError, match="pair 1 .*label 2"):
        pairwise_triples(["a", "a"], [1, 2])
    with pytest.raises(ValueError, match="pair 0 has no qid"):
        pairwise_triples([None], [1])


@pytest.mark.slow
def test_triples_on_real_wikiqa(shared_data):
    path = shared_data / "wikiqa" / "WikiQA-train.txt"
    examples = read_wikiqa_txt(path)
    qids = [ex.qid for ex in examples]
    labels = [ex.label for ex in examples]
    # independent grouping: runs of identical question text, labels from the last column
    questions, previous = [], None
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")):
        if not line:
            continue
        question, _, label = line.rstrip("\r").split("\t")
        if question != previous:
            questions.append(([], []))
            previous = question
        questions[-1][0 if label == "1" else 1].append(i)
    expected = {(p, n) for pos, neg in questions for p, n in itertools.product(pos, neg)}
    triples, stats = pairwise_triples(qids, labels)
    assert len(triples) == len(expected) == stats["triples"]
    assert set(map(tuple, triples.tolist())) == expected  # each valid combination exactly once
    assert stats["questions"] == len(questions)
    assert stats["questions_without_positive"] == sum(not pos for pos, _ in questions)
    assert stats["questions_without_negative"] == sum(not neg for _, neg in questions)
    assert stats["questions_used"] == sum(bool(pos and neg) for pos, neg in questions)
    assert stats["pairs_skipped"] == sum(len(p) + len(n) for p, n in questions if not (p and n))
    for p, n in triples:
        assert qids[p] == qids[n] and labels[p] == 1 and labels[n] == 0

    capped, cstats = pairwise_triples(qids, labels, max_negatives=3, seed=7)
    again, _ = pairwise_triples(qids, labels, max_negatives=3, seed=7)
    other, _ = pairwise_triples(qids, labels, max_negatives=3, seed=8)
    assert np.array_equal(capped, again) and not np.array_equal(capped, other)
    assert set(map(tuple, capped.tolist())) <= expected
    per_positive = {p: len(neg) for pos, neg in questions if pos and neg for p in pos}
    counts = np.bincount(capped[:, 0], minlength=len(qids))
    assert all(counts[p] == min(3, n) for p, n in per_positive.items())
    assert cstats["triples"] + cstats["triples_capped"] == len(expected)


# --------------------------------------------------------------------------- schedules
def test_warmup_linear_decay_hand_worked():
    # peak 2e-5, 10 updates, 2 of warm-up (the BERT release's formula)
    schedule = WarmupLinearDecay(2e-5, total_steps=10, warmup_steps=2)
    expected = {0: 0.0, 1: 1e-5, 2: 2e-5 * 0.8, 5: 1e-5, 9: 2e-6, 10: 0.0, 15: 0.0}
    assert [float(schedule(s)) for s in expected] == pytest.approx(
        list(expected.values()), abs=1e-12
    )
    assert float(WarmupLinearDecay(1e-3, 4)(1)) == pytest.approx(7.5e-4)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert clone.get_config() == schedule.get_config()
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupLinearDecay(1e-3, total_steps=5, warmup_steps=6)


def test_plateau_sequence_hand_worked():
    optimizer, plateau = build_optimizer(
        OptimizerRecipe("rmsprop", lr=1e-3, schedule="plateau", plateau_factor=0.85)
    )
    assert isinstance(optimizer, keras.optimizers.RMSprop) and isinstance(plateau, PlateauDecay)
    improved = [True, False, False, True, False]
    expected = [1e-3, 8.5e-4, 7.225e-4, 7.225e-4, 6.14125e-4]
    for flag, lr in zip(improved, expected):
        assert plateau.on_evaluation(flag) == pytest.approx(lr, rel=1e-12)
        assert float(optimizer.learning_rate) == np.float32(lr)
    state = json.loads(json.dumps(plateau.get_state()))
    assert state["decays"] == 3
    _, fresh = build_optimizer(OptimizerRecipe("rmsprop", lr=1e-3, schedule="plateau"))
    fresh.set_state(state)
    assert fresh.decays == 3 and float(fresh.optimizer.learning_rate) == np.float32(6.14125e-4)
    _, other = build_optimizer(OptimizerRecipe("rmsprop", lr=2e-3, schedule="plateau"))
    with pytest.raises(ValueError, match="initial_lr"):
        other.set_state(state)


def test_build_optimizer_for_each_paper():
    adam, none = build_optimizer(
        OptimizerRecipe(
            "adam",
            lr=2e-3,
            schedule="release",
            min_lr=1e-4,
            warmup_steps=4,
            decay_rate=0.5,
            decay_steps=3,
        )
    )
    assert none is None and float(adam.learning_rate) == pytest.approx(1e-4)  # warm-up start
    adam.iterations.assign(7)
    assert float(adam.learning_rate) == pytest.approx(1e-3)  # 2e-3 * 0.5 ** floor(3 / 3)
    adagrad, _ = build_optimizer({"name": "adagrad", "lr": 0.05, "schedule": "constant"})
    assert isinstance(adagrad, keras.optimizers.Adagrad)
    assert float(adagrad.learning_rate) == np.float32(0.05)

    # AdamW at step 0 of a linear schedule without warm-up runs at the peak rate; with zero
    # gradients Adam's step is 0, so only the decoupled decay acts: w <- w (1 - lr * wd).
    adamw, _ = build_optimizer(
        OptimizerRecipe("adamw", lr=0.1, schedule="linear", total_steps=10, weight_decay=0.5)
    )
    assert isinstance(adamw, keras.optimizers.AdamW) and adamw.epsilon == 1e-6
    dense, norm = keras.layers.Dense(3), keras.layers.LayerNormalization()
    norm(dense(np.ones((1, 2), "float32")))
    variables = dense.trainable_variables + norm.trainable_variables
    for v in variables:
        v.assign(np.random.default_rng(0).normal(size=v.shape))
    before = {v.path: v.numpy() for v in variables}
    adamw.apply([tf.zeros_like(v) for v in variables], variables)
    for v in variables:
        factor = 0.95 if v.name == "kernel" else 1.0  # bias, gamma, beta are not decayed
        np.testing.assert_allclose(v.numpy(), before[v.path] * factor, rtol=1e-6)

    with pytest.raises(ValueError, match="unknown optimizer"):
        build_optimizer(OptimizerRecipe("sgd"))
    with pytest.raises(ValueError, match="unknown schedule"):
        build_optimizer(OptimizerRecipe("adam", schedule="cosine"))
    with pytest.raises(ValueError, match="adamw"):
        build_optimizer(OptimizerRecipe("rmsprop", schedule="constant", weight_decay=0.01))
    with pytest.raises(ValueError, match="total_steps"):
        build_optimizer(OptimizerRecipe("adamw", schedule="linear"))
    with pytest.raises(ValueError, match="factor"):
        build_optimizer(OptimizerRecipe("rmsprop", schedule="plateau", plateau_factor=0.0))


# --------------------------------------------------------------------------- resume
def make_trainer(recipe):
    keras.utils.set_random_seed(9)
    network, _ = classifier()
    optimizer, controller = build_optimizer(recipe)
    trainer = MatchingTrainer(network)
    trainer.compile(optimizer=optimizer)
    trainer({"text1": np.ones((1, 2), "int32")})  # builds the wrapper for save_weights
    optimizer.build(network.trainable_variables)
    return trainer, controller


@pytest.mark.parametrize(
    "recipe",
    [
        OptimizerRecipe("rmsprop", lr=1e-3, schedule="plateau"),
        OptimizerRecipe(
            "adam",
            lr=1e-3,
            schedule="release",
            min_lr=1e-4,
            warmup_steps=2,
            decay_rate=0.5,
            decay_steps=1,
        ),
    ],
    ids=["plateau", "release"],
)
def test_learning_rate_state_survives_a_resume(tmp_path, recipe):
    trainer, controller = make_trainer(recipe)
    rng = np.random.default_rng(9)
    for _ in range(3):
        trainer.train_on_batch({"text1": ids(rng, 4, 5)}, rng.integers(0, 3, 4).astype("int32"))
    if controller is not None:
        controller.on_evaluation(False)
        controller.on_evaluation(False)
        (tmp_path / "controller.json").write_text(json.dumps(controller.get_state()))
    lr = float(trainer.optimizer.learning_rate)
    saved = all_variables(trainer)
    trainer.save_weights(tmp_path / "state.weights.h5")

    resumed, fresh = make_trainer(recipe)
    assert int(resumed.optimizer.iterations.numpy()) == 0
    # a float rate is an optimizer variable in Keras 3 (saved with the weights); a schedule is not
    rate_variables = [v for v in resumed.optimizer.variables if v.name == "learning_rate"]
    assert len(rate_variables) == (1 if recipe.schedule == "plateau" else 0)
    resumed.load_weights(tmp_path / "state.weights.h5")
    assert int(resumed.optimizer.iterations.numpy()) == 3
    assert float(resumed.optimizer.learning_rate) == lr  # before any controller state is set
    if fresh is not None:
        assert lr == np.float32(1e-3 * 0.85**2)
        fresh.set_state(json.loads((tmp_path / "controller.json").read_text()))
        assert fresh.get_state() == controller.get_state()
        assert float(resumed.optimizer.learning_rate) == lr
    else:
        assert lr == pytest.approx(1e-3 * 0.5**1)  # update 3: floor((3 - 2) / 1) = 1 decay
    restored = all_variables(resumed)
    assert all(np.array_equal(a, b) for a, b in zip(saved, restored))
    assert dataclasses.asdict(recipe) == json.loads(json.dumps(dataclasses.asdict(recipe)))


# --------------------------------------------------------------------------- XLA training
def test_xla_step_on_padded_batches_equals_the_graph_step():
    """``--jit_compile --length_multiple``: the XLA-compiled step on batches padded further
    takes the same update as the plain graph step on the unpadded batch (Match-SRNN: its
    spatial GRU is a while loop, the hardest case for XLA gradients)."""
    from weights import randomize_weights

    from re2_tf.models import build_match_srnn

    x = {
        "text1": np.array([[3, 4, 5, 0], [6, 7, 0, 0], [8, 0, 0, 0]], "int32"),
        "text2": np.array([[9, 10, 0], [11, 3, 4], [0, 0, 0]], "int32"),
    }
    padded = {k: np.pad(v, [[0, 0], [0, 8 - v.shape[1]]]) for k, v in x.items()}
    y = np.array([0, 1, 2], "int32")
    results = []
    # Keras silently trains without XLA while op determinism is on, which another test in
    # this process may have turned on (it is process-wide); TensorFlow has no public switch
    # back, so its config module's is used, and restored after.
    from tensorflow.python.framework import config as tf_config

    determinism = tf_config.is_op_determinism_enabled()
    tf_config.disable_op_determinism()
    try:
        for jit, batch in ((False, x), (True, padded)):
            keras.utils.set_random_seed(0)
            network = build_match_srnn(
                VOCAB, 3, embedding_dim=4, slices=3, hidden_size=2, bidirectional=True
            )
            randomize_weights(network, 9)
            trainer = MatchingTrainer(network, grad_clipping=1e6)
            trainer.compile(optimizer=keras.optimizers.SGD(0.1), jit_compile=jit)
            assert trainer.jit_compile is jit  # XLA really compiles the second step
            logs = trainer.train_on_batch(batch, y, return_dict=True)
            results.append((logs, [w.numpy() for w in network.trainable_variables]))
    finally:
        if determinism:
            tf.config.experimental.enable_op_determinism()
    (plain_logs, plain_weights), (xla_logs, xla_weights) = results
    assert xla_logs["loss"] == pytest.approx(plain_logs["loss"], rel=1e-5)
    assert plain_logs["grad_norm"] > 0.1  # the step moves the weights
    for a, b in zip(plain_weights, xla_weights):
        np.testing.assert_allclose(b, a, atol=2e-5)
