"""Match-SRNN (Wan et al., IJCAI 2016): a spatial GRU over a word-interaction tensor.

The paper's network (Sec. 4, Eq. 1-6): trainable word embeddings, a neural tensor network
giving each word pair ``(i, j)`` an interaction vector ``s_ij``
(:class:`re2_tf.layers.NeuralTensorNetwork`), a spatial GRU scanning the ``m x n`` grid from
the top-left (:class:`re2_tf.layers.SpatialGRU`, run as a wavefront over anti-diagonals) and
a linear function of the state at each pair's *true* bottom-right corner ``h_(m_b, n_b)``.
Bi-Match-SRNN (Sec. 6.1) adds a second scan from the bottom-right and concatenates the two
corner states.

Readings chosen where the paper is silent, and why:

- **Output and loss** follow the task (Sec. 4.4): ``loss="softmax_cross_entropy"`` gives
  ``num_classes`` logits (classification, e.g. SNLI; the paper's citation task); the ranking
  (``pairwise_hinge``, Eq. 7, margin 1) and regression (``squared_error``, Eq. 6) losses
  read one score ``M = W^(s) h + b^(s)`` (Eq. 5). The ``loss`` hyper-parameter chooses both
  (dataset presets: hinge on WikiQA and TrecQA).
- **Neural tensor network**: the bias sits inside the rectifier, and ``W`` acts on
  ``[u_i; v_j]`` with separate weights for the two words (see
  :class:`re2_tf.layers.NeuralTensorNetwork`).
- **Optimiser**: AdaGrad (Sec. 4.4) at a constant learning rate ``lr=0.05`` (the paper
  selects it on validation data and does not report it), batch 128 (Sec. 6.1; the common
  default ``batch_size=128``), gradients clipped at global norm ``grad_clipping=5.0`` (the
  common default; the paper names no clipping).
- **Initialisation**: the paper draws every weight from one uniform distribution whose scale
  it tunes; here Keras' defaults (Glorot uniform kernels, orthogonal ``U``, zero biases,
  uniform(-0.05, 0.05) embeddings).
- **Lengths**: the paper's QA data keeps texts of 5-50 words (Sec. 6); the presets truncate
  longer texts to ``max_len`` 50 (counted). Dropout is not in the paper; ``dropout=0.0``
  (none) applies to the word embedding.

Defaults: :data:`SPEC` (``hparams``, ``training``, ``presets``; ``re2-train
--model=match_srnn --helpfull`` lists them resolved); a default written ``<name>=<value>`` here
is this module's choice, the other figures are the paper's (Sec. 6.1 unless cited otherwise).
``tests/test_stated_once.py`` checks every ``<name>=<value>`` against the spec.
"""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf

from re2_tf.layers import NeuralTensorNetwork, PaddingMask, SpatialGRU, cell_by_cell_spatial_gru
from re2_tf.models.spec import (
    Analysis,
    AnalysisLayer,
    AnalysisOutput,
    HParam,
    ModelSpec,
    check_embeddings,
    check_hparam,
    register,
)

#: Task losses the network can be trained with (``re2_tf.training.losses``); the first
#: reads class logits, the other two one score.
MATCH_SRNN_LOSSES = ("softmax_cross_entropy", "pairwise_hinge", "squared_error")

#: Match-SRNN's hyper-parameters (:data:`SPEC`'s ``hparams``), the one place their defaults,
#: help and ranges are stated: the paper's settings (Sec. 6.1) and the readings in the module
#: docstring.
MATCH_SRNN_HPARAMS = {
    "embedding_dim": HParam(
        50, "Word embedding width when no --embeddings are given (paper: 50).", low=1
    ),
    "trainable_embedding": HParam(True, "Fine-tune the word embedding (paper: yes)."),
    "slices": HParam(10, "Neural tensor network slices c, the width of s_ij (paper: 10).", low=1),
    "hidden_size": HParam(10, "Spatial GRU hidden size (paper: 10).", low=1),
    "bidirectional": HParam(
        False, "Bi-Match-SRNN: add a scan from the bottom-right corner (Sec. 6.1)."
    ),
    "loss": HParam(
        "softmax_cross_entropy",
        "Task loss: softmax_cross_entropy (class logits), pairwise_hinge (ranking, one score) or "
        "squared_error (regression, one score); Sec. 4.4.",
        MATCH_SRNN_LOSSES,
    ),
    "dropout": HParam(
        0.0,
        "Dropout drop rate on the word embedding (not in the paper).",
        low=0,
        high=1,
        high_open=True,
    ),
}

#: ``{name: default}`` of :data:`MATCH_SRNN_HPARAMS` (the builder's keyword defaults).
MATCH_SRNN_DEFAULTS = {name: hparam.default for name, hparam in MATCH_SRNN_HPARAMS.items()}


def build_match_srnn(
    vocab_size,
    num_classes,
    embeddings=None,
    embedding_dim=MATCH_SRNN_DEFAULTS["embedding_dim"],
    trainable_embedding=MATCH_SRNN_DEFAULTS["trainable_embedding"],
    slices=MATCH_SRNN_DEFAULTS["slices"],
    hidden_size=MATCH_SRNN_DEFAULTS["hidden_size"],
    bidirectional=MATCH_SRNN_DEFAULTS["bidirectional"],
    loss=MATCH_SRNN_DEFAULTS["loss"],
    dropout=MATCH_SRNN_DEFAULTS["dropout"],
    name="match_srnn",
):
    """Build Match-SRNN (or Bi-Match-SRNN) as a Keras functional model.

    The keyword defaults are :data:`MATCH_SRNN_DEFAULTS` (:data:`SPEC`'s hyper-parameters);
    values marked "paper" are the paper's figures (Sec. 4.4 and 6.1).

    ::

        u, v   = Embedding(text1), Embedding(text2)          [batch, m, d], [batch, n, d]
        s      = NeuralTensorNetwork(u, v)                  [batch, m, n, c]   Sec. 4.1
        h      = SpatialGRU(s)[at (m_b, n_b)]               [batch, H]         Eq. 3-4
        h      = [h; SpatialGRU_backward(s)]                [batch, 2H]        Bi-Match-SRNN
        output = W^(s) h + b^(s)                            Eq. 5

    Args:
        vocab_size: int, word ids ``0 .. vocab_size - 1`` (0 = padding, 1 = unknown).
        num_classes: int, number of logits (classification loss only).
        embeddings: optional float ``[vocab_size, dim]`` initial word vectors (the paper's
            word2vec); ``embedding_dim`` is then ``dim``.
        embedding_dim: int, word embedding width without vectors (paper: 50).
        trainable_embedding: bool, fine-tune the word embedding (paper Sec. 4.4: yes).
        slices: int >= 1, neural tensor slices ``c`` (paper: 10).
        hidden_size: int >= 1, spatial GRU units ``H`` (paper: 10).
        bidirectional: bool, Bi-Match-SRNN (a second scan from each pair's true
            bottom-right corner; the two corner states are concatenated).
        loss: one of :data:`MATCH_SRNN_LOSSES`; ``softmax_cross_entropy`` gives float32
            logits ``[batch, num_classes]``, the others a float32 score ``[batch, 1]``.
        dropout: float in [0, 1), on the word embedding (not in the paper).
        name: model name.

    Returns:
        ``keras.Model`` with inputs ``text1``, ``text2`` int32 ``[batch, len]`` (0 = padding,
        after the tokens) and the output above (named ``logits`` or ``score``). Padding never
        changes an output; a pair with an empty text has zero corner states, so its output
        is the output layer's bias.

    Raises:
        ValueError: an option outside the ones above, or ``embeddings`` whose shape does not
            match ``vocab_size``.

    Reference: Wan, Lan, Guo, Xu, Pang and Cheng, "Match-SRNN: Modeling the Recursive
    Matching Structure with Spatial RNN", IJCAI 2016, Sec. 4 (Eq. 1-7) and 6.1.

    Example:

    ```python
    model = build_match_srnn(vocab_size=1000, num_classes=3)
    logits = model({"text1": np.array([[5, 6, 7, 0]]), "text2": np.array([[8, 9, 0, 0]])})
    ```
    """
    check_hparam(MATCH_SRNN_HPARAMS, "loss", loss)
    check_hparam(MATCH_SRNN_HPARAMS, "dropout", dropout)
    if embeddings is not None:
        embeddings = check_embeddings(embeddings, vocab_size)
        embedding_dim = embeddings.shape[1]

    # === Inputs ===
    inputs = {
        "text1": keras.Input(shape=(None,), dtype="int32", name="text1"),
        "text2": keras.Input(shape=(None,), dtype="int32", name="text2"),
    }
    padding_mask = PaddingMask(name="padding_mask")
    mask1, mask2 = padding_mask(inputs["text1"]), padding_mask(inputs["text2"])

    # === Word embedding ===
    embedding = keras.layers.Embedding(
        vocab_size, embedding_dim, trainable=trainable_embedding, name="embedding"
    )
    embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
    u = embedding_dropout(embedding(inputs["text1"]))
    v = embedding_dropout(embedding(inputs["text2"]))

    # === Neural tensor network (Sec. 4.1) ===
    s = NeuralTensorNetwork(slices, name="neural_tensor_network")(u, v)

    # === Spatial GRU (Sec. 4.2, Eq. 3-4); Bi-Match-SRNN (Sec. 6.1) ===
    h = SpatialGRU(hidden_size, name="spatial_gru")(s, mask1, mask2)
    if bidirectional:
        h_backward = SpatialGRU(hidden_size, go_backwards=True, name="spatial_gru_backward")(
            s, mask1, mask2
        )
        h = keras.layers.Concatenate(name="corner_states")([h, h_backward])

    # === Linear scoring function (Sec. 4.3, Eq. 5) ===
    if loss == "softmax_cross_entropy":
        output = keras.layers.Dense(num_classes, name="logits")(h)
    else:
        output = keras.layers.Dense(1, name="score")(h)
    model = keras.Model(inputs=inputs, outputs=output, name=name)
    if embeddings is not None:
        embedding.set_weights([embeddings])
    return model


# ------------------------------------------------------------------------------ benchmark
def benchmark_spatial_gru_scans(
    batch=8,
    batches=100,
    warmup=10,
    sizes=(20, 40),
    units=MATCH_SRNN_DEFAULTS["hidden_size"],
    channels=MATCH_SRNN_DEFAULTS["slices"],
    seed=0,
    train_batch=128,
    train_batches=10,
):
    """Time :class:`re2_tf.layers.SpatialGRU`'s wavefront scan against
    :func:`re2_tf.layers.cell_by_cell_spatial_gru` with the same weights, as ``tf.function``
    graphs and XLA-compiled, on ``batch`` random ``s`` grids of each size ``n x n`` (no
    padding), in this process. Both scans are checked to agree (1e-4) before timing. A last
    row times what training pays: forward and backward (gradients for ``s`` and the
    weights) of both scans as graphs, at the training batch (``train_batch``, the paper's
    128) on the first size, over ``train_batches`` calls.

    Returns:
        A Markdown table: per size and mode, median ms per call of each scan (``batches``
        timed calls after ``warmup``), and the wavefront's speed-up.
    """

    rng = np.random.default_rng(seed)
    layer = SpatialGRU(units)
    layer.build((None, None, None, channels))
    lines = [
        "| grid | batch | mode | wavefront ms | cell-by-cell ms | speed-up |",
        "|---|---:|---|---:|---:|---:|",
    ]

    def median_ms(fn, s, calls):
        for _ in range(warmup):
            tf.nest.map_structure(lambda t: t.numpy(), fn(s))
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            tf.nest.map_structure(lambda t: t.numpy(), fn(s))
            times.append(time.perf_counter() - start)
        return float(np.median(times)) * 1e3

    def with_gradients(scan):
        def run(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(scan(x) ** 2)
            return tape.gradient(loss, [x] + layer.trainable_weights)

        return tf.function(run)

    rows = []
    for size in sizes:
        s = tf.constant(rng.normal(size=(batch, size, size, channels)).astype("float32"))
        for mode, jit in (("graph", False), ("XLA", True)):
            wave = tf.function(lambda x: layer(x), jit_compile=jit)
            cell = tf.function(lambda x: cell_by_cell_spatial_gru(layer, x), jit_compile=jit)
            np.testing.assert_allclose(wave(s).numpy(), cell(s).numpy(), atol=1e-4)
            rows.append(
                (size, batch, mode, median_ms(wave, s, batches), median_ms(cell, s, batches))
            )
    size = sizes[0]
    s = tf.constant(rng.normal(size=(train_batch, size, size, channels)).astype("float32"))
    wave = with_gradients(lambda x: layer(x))
    cell = with_gradients(lambda x: cell_by_cell_spatial_gru(layer, x))
    for g_wave, g_cell in zip(wave(s), cell(s)):
        np.testing.assert_allclose(g_wave.numpy(), g_cell.numpy(), rtol=1e-3, atol=1e-3)
    rows.append(
        (
            size,
            train_batch,
            "graph, forward + backward",
            median_ms(wave, s, train_batches),
            median_ms(cell, s, train_batches),
        )
    )
    for size, rows_batch, mode, wave_ms, cell_ms in rows:
        lines.append(
            f"| {size}×{size} | {rows_batch} | {mode} | {wave_ms:.2f} | {cell_ms:.2f} | "
            f"{cell_ms / wave_ms:.1f}× |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------ model spec
def _build_from_spec(num_classes, vocab_sizes, embeddings=None, **hparams):
    return build_match_srnn(vocab_sizes["word_ids"], num_classes, embeddings=embeddings, **hparams)


#: Our quick-run settings shared by the ``sample`` and ``sample_ranking`` presets.
_SAMPLE = dict(max_len=20, batch_size=64, min_df=2, eval_per_samples=4096, log_per_samples=1024)

#: What ``re2-analyze`` reads (:mod:`re2_tf.analysis`): the (forward) spatial GRU's states
#: ``h_ij`` and its gates, from which the path through the largest gates is traced back
#: (the paper's Sec. 6.2; :class:`re2_tf.layers.SpatialGRU`).
ANALYSIS = Analysis(
    layers=(
        AnalysisLayer(
            "spatial_gru",
            {"return_grid": True, "return_gates": True},
            (
                AnalysisOutput(
                    "h", "states", description="spatial GRU state h_ij, one unit (Eq. 3)"
                ),
                AnalysisOutput(
                    "path",
                    "gates",
                    overlay="h",
                    description="back-traced path through the largest gates (Eq. 3, Sec. 6.2)",
                ),
            ),
        ),
    )
)

#: Match-SRNN on the shared path (the paper's Sec. 4.4 and 6.1).
SPEC = register(
    ModelSpec(
        name="match_srnn",
        build=_build_from_spec,
        hparams=MATCH_SRNN_HPARAMS,
        features={"word_ids": {}},
        presets={
            # Ours (not the paper's): quick CPU runs on the bundled samples
            # (configs/match_srnn/sample*.flags): the paper's widths, texts cut at 20 words
            # (the spatial GRU's sequential steps grow with m + n); 4 passes over the SNLI
            # sample, 2 over the ranking sample's triples (pairwise hinge, as for WikiQA).
            "sample": dict(_SAMPLE, epochs=4),
            "sample_ranking": dict(_SAMPLE, loss="pairwise_hinge", epochs=2),
            "wikiqa": dict(loss="pairwise_hinge", max_len=50),
            "trecqa": dict(loss="pairwise_hinge", max_len=50),
            "snli": dict(max_len=50),
            "quora": dict(max_len=50),
        },
        training={
            "optimizer": "adagrad",
            "lr_schedule": "constant",
            "lr": 0.05,
            "long_pairs": "truncate",
        },
        task_loss="hparam:loss",
        export_backend="keras",
        benchmark={
            "Match-SRNN": {"hparams": {}},
            "Bi-Match-SRNN": {"hparams": {"bidirectional": True}},
        },
        component_benchmarks={
            "Spatial GRU: wavefront vs cell-by-cell scan (same weights)": (
                benchmark_spatial_gru_scans
            )
        },
        reference="Wan et al., IJCAI 2016",
        analysis=ANALYSIS,
        tiny=dict(embedding_dim=4, slices=3, hidden_size=2),
    )
)
