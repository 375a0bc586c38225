"""FITN: Full Information Transmission Network (Qi et al., Findings of NAACL 2022).

The paper's network (Sec. 2, Eq. 1-17): word and character-CNN embedding, ``N = 3`` rounds of
BiLSTM encoding, memory-based attention (:class:`re2_tf.layers.MemoryBasedAttention`) and the
original-average mixed connection (:class:`re2_tf.layers.OAMixedConnection`), masked max
pooling and a two-layer feed-forward classifier. The attention variants of Table 2 and the
connection variants of Table 3 are options, so both tables can be rerun.

No code is public. Readings chosen where the paper is silent, and why:

- **Widths.** ``d_h = 100`` is read as 100 LSTM units *per direction* (``H`` is 200 wide), and
  the memory width ``d_m`` as ``memory_size=100`` (the paper's "hidden size of each layer
  ... 100d"). With a width-5 character convolution, 2 classes and no word embedding, the
  network has **2,521,405** parameters (+ 25 per character id), the reading nearest the
  paper's 2.5M among those considered: 100 units in total (50 per direction) gives 1,189,905
  (d_m = 100); ``d_m = 50`` gives 2,476,105; ``d_m = 200`` gives 2,642,005
  (``tests/test_fitn.py`` derives each by hand). ``O`` keeps ``H``'s width (``W_f`` is
  ``4 d_h x d_h``, Eq. 12), so ``I^l = [E; I_H^l]`` is 350 + 200 wide.
- **f** (Eq. 7, 8, 12 and the FFN hidden layer) is one activation, ``activation="relu"``.
- **Character CNN**: 25-d character embeddings, one convolution of width
  ``char_kernel_size=5`` to 50 filters, ReLU, max over the word's characters
  (:class:`re2_tf.layers.CharCNN`).
- **Word embedding** (300-d; fastText in the paper) is trainable: the paper "initialize[s]"
  it with the vectors. Without vectors it is random (Keras' uniform(-0.05, 0.05)).
- **Dropout** is not mentioned; ``dropout=0.2`` (RE2's rate) is applied to the word
  embedding, the character embeddings and before each FFN layer. ``--dropout=0`` removes it.
- **Prediction** reads ``V = [max(I_S^N); max(I_T^N)]`` (Eq. 16-17, the last round's next
  input) and a "two-layer feed-forward network with one hidden layer" of 500 units.
- **Optimiser**: Adam at 1e-3 (Sec. 3.1), ``lr_schedule="constant"`` (the paper names no
  schedule or L2).

Defaults: :data:`SPEC` (``hparams``, ``training``, ``presets``; ``re2-train --model=fitn
--helpfull`` lists them resolved); a default written ``<name>=<value>`` here is this module's
choice, the other figures are the paper's (Sec. 3.1 unless cited otherwise).
``tests/test_stated_once.py`` checks every ``<name>=<value>`` against the spec.
"""

from __future__ import annotations

import keras

from re2_tf.layers import (
    FITN_ACTIVATIONS,
    FITN_ATTENTIONS,
    FITN_CONNECTIONS,
    BlockOutput,
    CharCNN,
    MaskedBiLSTM,
    MaskedMaxPooling,
    MemoryBasedAttention,
    OAMixedConnection,
    PaddingMask,
)
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

#: FITN's hyper-parameters (:data:`SPEC`'s ``hparams``), the one place their defaults, help
#: and ranges are stated: the paper's settings (Sec. 3.1) and the readings in the module
#: docstring.
FITN_HPARAMS = {
    "embedding_dim": HParam(
        300,
        "Word embedding width when no --embeddings are given (with vectors, their width).",
        low=1,
    ),
    "trainable_embedding": HParam(
        True, "Fine-tune the word embedding (the paper initialises it with fastText)."
    ),
    "char_cnn": HParam(True, "Use the character CNN (Eq. 1)."),
    "char_embedding_dim": HParam(25, "Character embedding width (paper: 25).", low=1),
    "char_filters": HParam(50, "Character CNN output width (paper: 50).", low=1),
    "char_kernel_size": HParam(5, "Character convolution width (not in the paper).", low=1),
    "rounds": HParam(3, "Inference rounds N (1-10; paper 3, Figure 4 varies 1-5).", low=1, high=10),
    "hidden_size": HParam(100, "LSTM units per direction (d_h = 2 x this).", low=1),
    "memory_size": HParam(100, "Global interaction matrix width d_m (not in the paper).", low=1),
    "attention": HParam(
        "mem",
        "mem (Mem-Att), inter (Inter-Att), dot (Dot-Att) or wdot (wDot-Att): Table 2.",
        FITN_ATTENTIONS,
    ),
    "connection": HParam(
        "oa_mixed", "oa_mixed (Eq. 14-15), direct, dense or residual: Table 3.", FITN_CONNECTIONS
    ),
    "activation": HParam(
        "relu",
        "The nonlinearity f of Eq. 7, 8, 12 and the FFN (not named in the paper).",
        FITN_ACTIVATIONS,
    ),
    "fc_units": HParam(500, "Hidden units of the two-layer FFN.", low=1),
    "dropout": HParam(
        0.2,
        "Dropout drop rate on embeddings and before each FFN layer (not in the paper).",
        low=0,
        high=1,
        high_open=True,
    ),
}

#: ``{name: default}`` of :data:`FITN_HPARAMS` (the builder's keyword defaults).
FITN_DEFAULTS = {name: hparam.default for name, hparam in FITN_HPARAMS.items()}


def build_fitn(
    vocab_size,
    char_vocab_size,
    num_classes,
    embeddings=None,
    embedding_dim=FITN_DEFAULTS["embedding_dim"],
    trainable_embedding=FITN_DEFAULTS["trainable_embedding"],
    char_cnn=FITN_DEFAULTS["char_cnn"],
    char_embedding_dim=FITN_DEFAULTS["char_embedding_dim"],
    char_filters=FITN_DEFAULTS["char_filters"],
    char_kernel_size=FITN_DEFAULTS["char_kernel_size"],
    rounds=FITN_DEFAULTS["rounds"],
    hidden_size=FITN_DEFAULTS["hidden_size"],
    memory_size=FITN_DEFAULTS["memory_size"],
    attention=FITN_DEFAULTS["attention"],
    connection=FITN_DEFAULTS["connection"],
    activation=FITN_DEFAULTS["activation"],
    fc_units=FITN_DEFAULTS["fc_units"],
    dropout=FITN_DEFAULTS["dropout"],
    return_attention=False,
    name="fitn",
):
    """Build FITN as a Keras functional model.

    The keyword defaults are :data:`FITN_DEFAULTS` (:data:`SPEC`'s hyper-parameters); values
    marked "paper" are the paper's figures (Sec. 3.1).

    **Embedding module** (Eq. 1): ``E = [Emb(w); ChConv(w)]`` (``d_e`` =
    ``embedding_dim + char_filters``; paper: 300 + 50).

    **Interaction module**, rounds ``l = 0 .. rounds - 1`` (weights per round, shared by the
    two texts)::

        H^l        = BiLSTM^l(I^l)                         Eq. 2-3 (2 * hidden_size wide)
        A^l, Mbar^l = MemoryBasedAttention^l(H_S^l, H_T^l, Mbar^{l-1})   Eq. 4-9 / Eq. 18
        O^l        = BlockOutput^l(H^l, A^l)                Eq. 10-13
        I^{l+1}    = OAMixedConnection(E, I^l, O^l, I_H^l)  Eq. 14-15 / Table 3

    with ``I^0 = E``. **Prediction module** (Eq. 16-17): masked max pooling of
    ``I^rounds`` for each text, ``V = [V_S; V_T]``, a hidden layer of ``fc_units`` with
    ``f`` and the output layer (logits; the softmax is in the loss).

    Args:
        vocab_size: int, word ids ``0 .. vocab_size - 1`` (0 = padding, 1 = unknown).
        char_vocab_size: int or None, character ids (needed when ``char_cnn``).
        num_classes: int, number of logits.
        embeddings: optional float ``[vocab_size, dim]`` initial word vectors (the paper's
            fastText); ``embedding_dim`` is then ``dim``.
        embedding_dim: int, word embedding width without vectors (paper: 300).
        trainable_embedding: bool, fine-tune the word embedding.
        char_cnn: bool, use ``ChConv`` (Eq. 1).
        char_embedding_dim, char_filters, char_kernel_size: the character CNN (paper: 25-d
            characters, 50 filters; no width, ``char_kernel_size=5`` here).
        rounds: int in [1, 10], ``N`` (paper: 3; Sec. 3.3.3 and Figure 4 vary 1-5).
        hidden_size: int, LSTM units per direction (paper: 100, read as per direction).
        memory_size: int, ``d_m`` (not in the paper: ``memory_size=100``, the module
            docstring).
        attention: one of :data:`re2_tf.layers.FITN_ATTENTIONS` (Table 2).
        connection: one of :data:`re2_tf.layers.FITN_CONNECTIONS` (Table 3).
        activation: ``f``, one of ``relu``, ``tanh``, ``sigmoid``, ``gelu``, ``linear``.
        fc_units: int, the FFN hidden layer (paper: 500).
        dropout: float in [0, 1), on embeddings and before each FFN layer (not in the paper).
        return_attention: bool; the model returns a dict with ``logits`` and, per round
            ``l`` (0-based), ``attention_{l}_text2`` (softmax over text2 positions, axis 2)
            and ``attention_{l}_text1`` (over text1 positions, axis 1), ``[batch, m, n]``:
            for the paper's Table 4 / Figure 5 analyses, not serving.
        name: model name.

    Returns:
        ``keras.Model`` with inputs ``text1``, ``text2`` int32 ``[batch, len]`` (0 =
        padding) and ``text1_chars``, ``text2_chars`` int32 ``[batch, len, max_word_length]``
        (accepted and ignored without ``char_cnn``), and float32 logits
        ``[batch, num_classes]``. Padding never changes a logit; an empty text pools to
        zeros.

    Raises:
        ValueError: an option outside the ones above, a missing ``char_vocab_size`` with
            ``char_cnn``, or ``embeddings`` whose shape does not match ``vocab_size``.

    Reference: Qi, Zhang, Yin, Zheng, Wen, Li and Liu, "All Information is Valuable:
    Question Matching over Full Information Transmission Network", Findings of NAACL 2022,
    Sec. 2-3, Eq. 1-18, Tables 1-3.
    """
    for option, value in (
        ("attention", attention),
        ("connection", connection),
        ("activation", activation),
        ("rounds", rounds),
        ("dropout", dropout),
    ):
        check_hparam(FITN_HPARAMS, option, value)
    if char_cnn and not char_vocab_size:
        raise ValueError("char_cnn needs char_vocab_size (the char_ids vocabulary size)")
    if embeddings is not None:
        embeddings = check_embeddings(embeddings, vocab_size)
        embedding_dim = embeddings.shape[1]

    # === Inputs ===
    inputs = {
        "text1": keras.Input(shape=(None,), dtype="int32", name="text1"),
        "text2": keras.Input(shape=(None,), dtype="int32", name="text2"),
        "text1_chars": keras.Input(shape=(None, None), dtype="int32", name="text1_chars"),
        "text2_chars": keras.Input(shape=(None, None), dtype="int32", name="text2_chars"),
    }
    padding_mask = PaddingMask(name="padding_mask")
    mask1, mask2 = padding_mask(inputs["text1"]), padding_mask(inputs["text2"])

    # === Embedding module (Eq. 1) ===
    embedding = keras.layers.Embedding(
        vocab_size, embedding_dim, trainable=trainable_embedding, name="embedding"
    )
    embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
    chars = (
        CharCNN(
            char_vocab_size,
            char_embedding_dim,
            char_filters,
            char_kernel_size,
            dropout,
            name="char_cnn",
        )
        if char_cnn
        else None
    )
    embedded = []
    for side in ("text1", "text2"):
        parts = [embedding_dropout(embedding(inputs[side]))]
        if chars is not None:
            parts.append(chars(inputs[f"{side}_chars"]))
        embedded.append(
            keras.layers.Concatenate(name=f"{side}_embedding")(parts)
            if len(parts) > 1
            else parts[0]
        )
    e1, e2 = embedded

    # === Interaction module (Eq. 2-15) ===
    x1, x2 = e1, e2
    hidden1 = hidden2 = memory = None
    link = OAMixedConnection(connection, name="connection")
    attention_maps = {}
    for round_ in range(rounds):
        bilstm = MaskedBiLSTM(hidden_size, name=f"round{round_}_bilstm")
        h1, h2 = bilstm(x1, mask1), bilstm(x2, mask2)
        mem_att = MemoryBasedAttention(
            attention,
            memory_size,
            has_memory=attention == "mem" and round_ > 0,
            activation=activation,
            name=f"round{round_}_attention",
        )
        kwargs = {"memory": memory} if memory is not None else {}
        out = mem_att(h1, h2, mask1, mask2, return_attention_scores=return_attention, **kwargs)
        a1, a2 = out[:2]
        if attention == "mem":
            memory = out[2]
        if return_attention:
            attention_maps[f"attention_{round_}_text2"] = out[-2]
            attention_maps[f"attention_{round_}_text1"] = out[-1]
        block_output = BlockOutput(activation=activation, name=f"round{round_}_output")
        o1, o2 = block_output(h1, a1, mask1), block_output(h2, a2, mask2)
        x1, hidden1 = link(e1, x1, o1, hidden1)
        x2, hidden2 = link(e2, x2, o2, hidden2)

    # === Prediction module (Eq. 16-17) ===
    pooling = MaskedMaxPooling(name="pooling")
    features = keras.layers.Concatenate(name="pair_features")(
        [pooling(x1, mask1), pooling(x2, mask2)]
    )
    hidden = keras.layers.Dropout(dropout, name="fc_dropout_1")(features)
    hidden = keras.layers.Dense(fc_units, activation=activation, name="fc_hidden")(hidden)
    hidden = keras.layers.Dropout(dropout, name="fc_dropout_2")(hidden)
    logits = keras.layers.Dense(num_classes, name="logits")(hidden)
    outputs = {"logits": logits, **attention_maps} if return_attention else logits
    model = keras.Model(inputs=inputs, outputs=outputs, name=name)
    if embeddings is not None:
        embedding.set_weights([embeddings])
    return model


# ------------------------------------------------------------------------------ model spec
def _build_from_spec(num_classes, vocab_sizes, embeddings=None, **hparams):
    return build_fitn(
        vocab_sizes["word_ids"],
        vocab_sizes.get("char_ids"),
        num_classes,
        embeddings=embeddings,
        **hparams,
    )


#: Our quick-run settings shared by the ``sample`` and ``sample_ranking`` presets.
_SAMPLE = dict(
    embedding_dim=100,
    rounds=2,
    hidden_size=50,
    memory_size=50,
    fc_units=200,
    max_len=40,
    batch_size=64,
    min_df=2,
    eval_per_samples=4096,
    log_per_samples=1024,
)

#: What ``re2-analyze`` reads (:mod:`re2_tf.analysis`): each round's memory-based attention
#: weights (Eq. 8-9, or the Table 2 variant's) in both directions
#: (:class:`re2_tf.layers.MemoryBasedAttention`).
ANALYSIS = Analysis(
    layers=(
        AnalysisLayer(
            r"round(?P<n>\d+)_attention",
            {"return_attention_scores": True},
            (
                AnalysisOutput(
                    "round{n}_over_text2",
                    "attention",
                    normalized_axis=1,
                    description="Mem-Att softmax_j(Att_ij) over text2 (FITN Eq. 8-9)",
                ),
                AnalysisOutput(
                    "round{n}_over_text1",
                    "attention",
                    normalized_axis=0,
                    description="Mem-Att softmax_i(Att_ij) over text1 (FITN Eq. 8-9)",
                ),
            ),
        ),
    )
)

#: FITN on the shared path (the paper's Sec. 3.1).
SPEC = register(
    ModelSpec(
        name="fitn",
        build=_build_from_spec,
        hparams=FITN_HPARAMS,
        features={"word_ids": {}, "char_ids": {"max_word_length": 16}},
        presets={
            # Ours (not the paper's): a narrower FITN for a quick CPU run on the bundled
            # samples (configs/fitn/sample*.flags): 2 rounds, hidden and memory size 50, FC
            # 200, 100-d embeddings, texts cut at 40 words, 2 passes.
            "sample": dict(_SAMPLE, epochs=2),
            "sample_ranking": dict(_SAMPLE, epochs=2),
            "quora": dict(max_len=40),
            "snli": dict(max_len=40),
        },
        training={
            "optimizer": "adam",
            "lr_schedule": "constant",
            "lr": 1e-3,
            "long_pairs": "truncate",
        },
        export_backend="keras",
        benchmark={"FITN": {"hparams": {}}},
        reference="Qi et al., Findings of NAACL 2022 (no public code)",
        analysis=ANALYSIS,
        tiny=dict(
            embedding_dim=4,
            char_embedding_dim=3,
            char_filters=4,
            char_kernel_size=3,
            hidden_size=3,
            memory_size=5,
            fc_units=6,
        ),
    )
)
