"""DRCN (Kim et al., AAAI 2019) as a Keras functional model on the shared path.

Densely-connected Recurrent and Co-attentive neural Network: word representation (Eq. 1) ->
``num_layers`` x [BiLSTM -> co-attention (Eq. 5) -> dense connection (Eq. 6) -> optional
autoencoder bottleneck] -> masked max pooling -> interaction ``[p; q; p+q; p-q; |p-q|]``
(Eq. 7) -> two ReLU FC layers -> logits. Both texts share every weight.

There is no official code; readings of what the paper leaves open are stated in
:func:`build_drcn` and in each layer's docstring (``re2_tf/layers/char_cnn.py``,
``recurrent.py``, ``co_attention.py``, ``autoencoder.py``, ``interaction.py``).

**Parameter count.** At the paper's SNLI settings (300-d embeddings, 16-d char embeddings
convolved to 32, exact match, 5 BiLSTM layers of 100 units per direction, autoencoders of 200
units, FC 1000 x 2 with batch normalisation, 3 classes) and this module's readings where the
paper is silent (a width-5 char convolution, autoencoders after layers 3 and 5) the network
has 6,671,228 trainable parameters outside the two word-embedding matrices, plus ``16 x``
(character vocabulary size) for the character embedding: the paper's "6.7m"
(``tests/test_drcn.py`` derives it by hand; without batch normalisation, 6,667,228). Two
readings decide it: 100 units *per direction* (100 in total, 50 per direction, would give
4,088,628) and pooling the *code* of the last autoencoder (the 200-d output of layer 5's
bottleneck, so ``v`` is 1000-d; pooling the 1000-d concatenation before it would give
10,671,228). Without autoencoders (Table 6 (2)) the network has 20,312,595.

**Dataset lengths** (paper, "Implementation Details"): ``max_len`` 35 for SNLI and 25 for
Quora, 50 for TrecQA (the ``snli`` / ``quora`` / ``trecqa`` presets) and 55 for MultiNLI (not
in the dataset registry: pass ``--max_len=55``). Longer training texts are truncated
(``long_pairs="truncate"``): the paper fixes the sequence length rather than dropping pairs.
Batch normalisation is on for the one-way (asymmetric) datasets only: SNLI (and MultiNLI,
TrecQA) yes, Quora no.
"""

from __future__ import annotations

import keras

from re2_tf.layers import (
    Autoencoder,
    CharCNN,
    CoAttention,
    InteractionPrediction,
    MaskedBiLSTM,
    MaskedMaxPooling,
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

#: Connection variants (paper Eq. 6 and Table 6 models (8) and (9)); see :func:`build_drcn`.
DRCN_CONNECTIONS = ("dense", "residual", "residual_no_dense")

#: Autoencoder encoder activations (not in the paper).
DRCN_AUTOENCODER_ACTIVATIONS = ("relu", "tanh", "sigmoid", "linear")

#: DRCN's hyper-parameters (:data:`SPEC`'s ``hparams``), the one place their defaults, help
#: and ranges are stated: the paper's settings ("Implementation Details") and the readings in
#: :func:`build_drcn`; batch norm is per dataset (the spec's presets).
DRCN_HPARAMS = {
    "embedding_dim": HParam(
        300,
        "Word embedding width when no --embeddings are given (with vectors, their width).",
        low=1,
    ),
    "trainable_embedding": HParam(
        True, "Use the trainable word embedding E_tr (Eq. 1; Table 6 (4))."
    ),
    "fixed_embedding": HParam(
        True,
        "Use the fixed word embedding E_fix (Eq. 1; Table 6 (3)). Without --embeddings it is "
        "a frozen copy of E_tr's random initial values.",
    ),
    "char_cnn": HParam(True, "Use the character CNN representation (Eq. 1)."),
    "char_embedding_dim": HParam(16, "Character embedding width.", low=1),
    "char_filters": HParam(32, "Character CNN output width.", low=1),
    "char_kernel_size": HParam(
        5, "Character convolution width (not in the paper; DIIN's 5).", low=1
    ),
    "exact_match": HParam(True, "Use the exact-match flag (Eq. 1)."),
    "embedding_dropout": HParam(
        0.5,
        "Dropout drop rate after word and character embeddings (keep 0.5).",
        low=0,
        high=1,
        high_open=True,
    ),
    "num_layers": HParam(5, "Stacked BiLSTM layers.", low=1, high=10),
    "hidden_size": HParam(100, "LSTM units per direction.", low=1),
    "co_attention": HParam(True, "Co-attention after every BiLSTM (False = Table 6 (11))."),
    "connection": HParam(
        "dense",
        "dense (Eq. 6), residual (Table 6 (8)) or residual_no_dense (Table 6 (9)).",
        DRCN_CONNECTIONS,
    ),
    "autoencoder_layers": HParam(
        "3,5",
        "Layers followed by an autoencoder bottleneck, e.g. '3,5'; '' or 'none' = no "
        "autoencoder (Table 6 (2)).",
    ),
    "autoencoder_units": HParam(200, "Autoencoder code width.", low=1),
    "autoencoder_dropout": HParam(
        0.2, "Dropout drop rate on the autoencoder code.", low=0, high=1, high_open=True
    ),
    "autoencoder_activation": HParam(
        "relu", "Autoencoder encoder activation (not in the paper).", DRCN_AUTOENCODER_ACTIVATIONS
    ),
    "reconstruction_weight": HParam(
        1.0, "Factor on each autoencoder's reconstruction (MSE) loss.", low=0
    ),
    "fc_units": HParam(1000, "Width of the hidden fully-connected layers.", low=1),
    "fc_layers": HParam(2, "Hidden fully-connected ReLU layers.", low=0),
    "fc_dropout": HParam(
        0.2,
        "Dropout drop rate before each hidden FC layer (keep 0.8).",
        low=0,
        high=1,
        high_open=True,
    ),
    "batch_norm": HParam(
        False, "Batch normalisation on the FC layers (the paper: one-way tasks only)."
    ),
    "l2": HParam(1e-6, "L2 factor on every kernel (not embeddings, biases, batch norm).", low=0),
}

#: ``{name: default}`` of :data:`DRCN_HPARAMS` (the builder's keyword defaults).
DRCN_DEFAULTS = {name: hparam.default for name, hparam in DRCN_HPARAMS.items()}


def parse_layer_positions(value, num_layers):
    """Autoencoder positions as a sorted tuple of 1-based layer numbers.

    Args:
        value: ``"3,5"``-style string (``""`` or ``"none"``: no autoencoder) or a sequence
            of ints.
        num_layers: int, the number of recurrent layers.

    Raises:
        ValueError: a position that is not an integer in ``[1, num_layers]``, or repeated.
    """
    if isinstance(value, str):
        text = value.strip().lower()
        items = [] if text in ("", "none") else [v.strip() for v in text.split(",")]
        try:
            positions = [int(v) for v in items]
        except ValueError:
            raise ValueError(
                f"autoencoder_layers must be comma-separated layer numbers, "
                f"'' or 'none'; got {value!r}"
            ) from None
    else:
        positions = [int(v) for v in value]
    if len(set(positions)) != len(positions) or any(not 1 <= p <= num_layers for p in positions):
        raise ValueError(
            f"autoencoder_layers must be distinct layer numbers in [1, {num_layers}], got {value!r}"
        )
    return tuple(sorted(positions))


def build_drcn(
    vocab_size,
    char_vocab_size,
    num_classes,
    embeddings=None,
    embedding_dim=DRCN_DEFAULTS["embedding_dim"],
    trainable_embedding=DRCN_DEFAULTS["trainable_embedding"],
    fixed_embedding=DRCN_DEFAULTS["fixed_embedding"],
    char_cnn=DRCN_DEFAULTS["char_cnn"],
    char_embedding_dim=DRCN_DEFAULTS["char_embedding_dim"],
    char_filters=DRCN_DEFAULTS["char_filters"],
    char_kernel_size=DRCN_DEFAULTS["char_kernel_size"],
    exact_match=DRCN_DEFAULTS["exact_match"],
    embedding_dropout=DRCN_DEFAULTS["embedding_dropout"],
    num_layers=DRCN_DEFAULTS["num_layers"],
    hidden_size=DRCN_DEFAULTS["hidden_size"],
    co_attention=DRCN_DEFAULTS["co_attention"],
    connection=DRCN_DEFAULTS["connection"],
    autoencoder_layers=DRCN_DEFAULTS["autoencoder_layers"],
    autoencoder_units=DRCN_DEFAULTS["autoencoder_units"],
    autoencoder_dropout=DRCN_DEFAULTS["autoencoder_dropout"],
    autoencoder_activation=DRCN_DEFAULTS["autoencoder_activation"],
    reconstruction_weight=DRCN_DEFAULTS["reconstruction_weight"],
    fc_units=DRCN_DEFAULTS["fc_units"],
    fc_layers=DRCN_DEFAULTS["fc_layers"],
    fc_dropout=DRCN_DEFAULTS["fc_dropout"],
    batch_norm=DRCN_DEFAULTS["batch_norm"],
    l2=DRCN_DEFAULTS["l2"],
    return_attention=False,
    name="drcn",
):
    """Build DRCN as a Keras functional model.

    The keyword defaults are :data:`DRCN_DEFAULTS` (:data:`SPEC`'s hyper-parameters;
    ``re2-train --model=drcn --helpfull`` lists them with each dataset's preset). Values
    marked "paper" are the paper's figures ("Implementation Details"), a default written
    ``<name>=<value>`` is this module's choice where the paper is silent
    (``tests/test_stated_once.py`` checks it against the spec).

    **Word representation** (Eq. 1): ``x^1 = [E_tr(w); E_fix(w); CharConv(w); f(w)]`` with
    dropout (``embedding_dropout``, paper: keep 0.5) on each word embedding and on the
    character embeddings (:class:`re2_tf.layers.CharCNN`); the exact-match flag ``f`` is
    not dropped. With ``embeddings`` both ``E_tr`` (trainable, layer ``embedding``) and
    ``E_fix`` (frozen, layer ``fixed_embedding``) start from those vectors. Without them,
    ``E_tr`` is random (Keras' ``uniform(-0.05, 0.05)``) and ``E_fix`` is a frozen copy of
    ``E_tr``'s initial values (as with vectors, the two start equal; the frozen one is a
    fixed random projection of the word ids). Without ``trainable_embedding`` and without
    vectors, ``E_fix`` is its own frozen random draw.

    **Layers** ``l = 1 .. num_layers`` (all shared by the two texts)::

        h^l = BiLSTM_l(x^l)                     masked; 2 * hidden_size wide
        a^l = CoAttention(h^l_p, h^l_q)         Eq. 5, cosine similarity (if co_attention)
        f^l = [h^l; a^l]                        (h^l alone without co-attention)
        x^{l+1} = connection(f^l, x^l)
        x^{l+1} = Autoencoder_l(x^{l+1})        if l in autoencoder_layers

    ``connection`` (paper Eq. 6 and Table 6):

    - ``"dense"`` (DRCN, Eq. 6): ``x^{l+1} = [h^l; a^l; x^l]``; every layer's recurrent and
      co-attentive features and the word representation reach the top (until an
      autoencoder compresses them).
    - ``"residual"`` (Table 6 model (8), "dense connection replaced by residual connection
      only over recurrent and co-attentive features"): a running sum
      ``r^l = f^l + r^{l-1}`` (``r^1 = f^1``) of the recurrent and co-attentive features,
      and ``x^{l+1} = [r^l; x^1]``: only the word representation stays densely connected.
    - ``"residual_no_dense"`` (Table 6 model (9), (8) "without the additional dense
      connection over word embedding features"): ``x^{l+1} = r^l`` (Eq. 3's
      ``x^{l+1} = h^l + x^l`` from layer 2 on, with ``[h; a]`` for ``h``; layer 1's input
      ``x^1`` has another width, so the sum starts at ``f^1``).

    With an autoencoder after layer ``l`` in a residual variant, the code replaces only the
    next layer's input; the running sum ``r`` keeps its full width (it could not be added
    to a 200-d code otherwise).

    **Autoencoder positions** (``autoencoder_layers="3,5"``): the paper runs 5
    layers with the bottleneck "optional for each repetition" and does not list where; after
    layers 3 and 5 is the placement of the most faithful public port, and it is the one
    that reproduces the paper's 6.7M parameters (the module docstring). ``""`` or
    ``"none"`` switches it off (Table 6 model (2), "- autoencoder").

    **Pooling and prediction**: masked max pooling over positions of ``x^{num_layers + 1}``
    (after its autoencoder if any), then :class:`re2_tf.layers.InteractionPrediction`.

    **Regularisation**: L2 ``l2 * sum(W**2)`` (Keras' ``L2``; the paper's lambda = 1e-6)
    on every kernel (LSTM input and recurrent kernels, character convolution, autoencoder,
    FC and output layers); not on biases, batch-norm parameters or the word and character
    embedding matrices.

    Args:
        vocab_size: int, word ids ``0 .. vocab_size - 1`` (0 = padding, 1 = unknown).
        char_vocab_size: int or None, character ids (needed when ``char_cnn``).
        num_classes: int, number of logits.
        embeddings: optional float ``[vocab_size, dim]`` pretrained vectors for both word
            embeddings (``embedding_dim`` is then ``dim``).
        embedding_dim: int, word embedding width without vectors (paper: 300).
        trainable_embedding, fixed_embedding, char_cnn, exact_match: bools, the four parts
            of Eq. 1 (Table 6 models (3)-(4) drop one embedding; "encoding-based" DRCN drops
            co-attention and exact match). At least one must be on.
        char_embedding_dim, char_filters, char_kernel_size: the character CNN (paper:
            16-d character embeddings, 32 filters; it gives no width:
            ``char_kernel_size=5``, DIIN's).
        embedding_dropout: float in [0, 1), dropout on word and character embeddings
            (paper: keep rate 0.5).
        num_layers: int in [1, 10], stacked BiLSTM layers (paper: 5).
        hidden_size: int, LSTM units per direction (paper: 100 hidden units, read as per
            direction: the module docstring).
        co_attention: bool; False drops ``a^l`` everywhere (Table 6 model (11)).
        connection: one of :data:`DRCN_CONNECTIONS`.
        autoencoder_layers: str or sequence, 1-based layer numbers followed by an
            autoencoder.
        autoencoder_units, autoencoder_dropout, autoencoder_activation: the bottleneck
            (paper: 200 units, dropout rate 0.2; it names no activation:
            ``autoencoder_activation="relu"``); see :class:`re2_tf.layers.Autoencoder`.
        reconstruction_weight: float >= 0, factor on each reconstruction loss.
        fc_units, fc_layers, fc_dropout, batch_norm: the classifier (paper: two ReLU layers
            of 1000 units, keep rate 0.8 before them, batch normalisation for one-way tasks
            only, which the dataset presets set).
        l2: float >= 0, L2 factor (paper: 1e-6).
        return_attention: bool; if True the model returns a dict with ``logits`` and, per
            layer ``l`` (1-based), ``attention_{l}_text2`` (``alpha``, softmax over text2
            positions, axis 2) and ``attention_{l}_text1`` (``beta``, softmax over text1
            positions, axis 1), each ``[batch, len1, len2]``. For analysis (the paper's
            attention maps), not serving; needs ``co_attention``.
        name: model name.

    Returns:
        ``keras.Model`` with inputs ``text1``, ``text2`` int32 ``[batch, len]`` (0 =
        padding), ``text1_chars``, ``text2_chars`` int32 ``[batch, len, max_word_length]``
        (0 = padding character) and ``text1_exact_match``, ``text2_exact_match`` float32
        ``[batch, len]`` (inputs an option switches off are accepted and ignored), and
        float32 logits ``[batch, num_classes]``. Each autoencoder adds one reconstruction
        loss per call (``model.losses``; logged as ``loss_layer/layer{l}_autoencoder``).
        Padding never changes a logit or a loss; an empty text pools to zeros.

    Raises:
        ValueError: an option outside the ones above, no word-representation part, a
            missing ``char_vocab_size`` with ``char_cnn``, or ``embeddings`` whose shape does
            not match ``vocab_size``.

    Reference: Kim, Kang and Kwak, "Semantic Sentence Matching with Densely-connected
    Recurrent and Co-attentive Information", AAAI 2019: Eq. 1-7, Table 6,
    "Implementation Details".
    """
    for option, value in (
        ("connection", connection),
        ("num_layers", num_layers),
        ("embedding_dropout", embedding_dropout),
        ("autoencoder_dropout", autoencoder_dropout),
        ("fc_dropout", fc_dropout),
    ):
        check_hparam(DRCN_HPARAMS, option, value)
    if not (trainable_embedding or fixed_embedding or char_cnn or exact_match):
        raise ValueError(
            "the word representation needs at least one of trainable_embedding, "
            "fixed_embedding, char_cnn, exact_match"
        )
    if return_attention and not co_attention:
        raise ValueError("return_attention needs co_attention=True")
    if char_cnn and not char_vocab_size:
        raise ValueError("char_cnn needs char_vocab_size (the char_ids vocabulary size)")
    ae_positions = parse_layer_positions(autoencoder_layers, num_layers)
    if embeddings is not None:
        embeddings = check_embeddings(embeddings, vocab_size)
        embedding_dim = embeddings.shape[1]
    l2 = float(l2)

    inputs = {
        "text1": keras.Input(shape=(None,), dtype="int32", name="text1"),
        "text2": keras.Input(shape=(None,), dtype="int32", name="text2"),
        "text1_chars": keras.Input(shape=(None, None), dtype="int32", name="text1_chars"),
        "text2_chars": keras.Input(shape=(None, None), dtype="int32", name="text2_chars"),
        "text1_exact_match": keras.Input(shape=(None,), dtype="float32", name="text1_exact_match"),
        "text2_exact_match": keras.Input(shape=(None,), dtype="float32", name="text2_exact_match"),
    }
    padding_mask = PaddingMask(name="padding_mask")
    mask1, mask2 = padding_mask(inputs["text1"]), padding_mask(inputs["text2"])

    # ---------------------------------------------------------------- word representation
    trainable = fixed = None
    parts = ([], [])
    dropout = keras.layers.Dropout(embedding_dropout, name="embedding_dropout")
    if trainable_embedding:
        trainable = keras.layers.Embedding(vocab_size, embedding_dim, name="embedding")
    if fixed_embedding:
        fixed = keras.layers.Embedding(
            vocab_size, embedding_dim, trainable=False, name="fixed_embedding"
        )
    chars = (
        CharCNN(
            char_vocab_size,
            char_embedding_dim,
            char_filters,
            char_kernel_size,
            embedding_dropout,
            l2=l2,
            name="char_cnn",
        )
        if char_cnn
        else None
    )
    flag = keras.layers.Reshape((-1, 1), name="exact_match_flag") if exact_match else None
    for k, side in enumerate(("text1", "text2")):
        for embedding in (trainable, fixed):
            if embedding is not None:
                parts[k].append(dropout(embedding(inputs[side])))
        if chars is not None:
            parts[k].append(chars(inputs[f"{side}_chars"]))
        if flag is not None:
            parts[k].append(flag(inputs[f"{side}_exact_match"]))
    if len(parts[0]) > 1:
        concat = keras.layers.Concatenate(name="word_representation")
        word1, word2 = concat(parts[0]), concat(parts[1])
    else:
        word1, word2 = parts[0][0], parts[1][0]

    # ------------------------------------------- densely-connected recurrent co-attention
    x1, x2 = word1, word2
    sum1 = sum2 = None
    attention = {}
    for layer in range(1, num_layers + 1):
        bilstm = MaskedBiLSTM(hidden_size, l2=l2, name=f"layer{layer}_bilstm")
        h1, h2 = bilstm(x1, mask1), bilstm(x2, mask2)
        features1, features2 = [h1], [h2]
        if co_attention:
            co = CoAttention(name=f"layer{layer}_co_attention")
            if return_attention:
                a1, a2, alpha, beta = co(h1, h2, mask1, mask2, return_attention_scores=True)
                attention[f"attention_{layer}_text2"] = alpha
                attention[f"attention_{layer}_text1"] = beta
            else:
                a1, a2 = co(h1, h2, mask1, mask2)
            features1.append(a1)
            features2.append(a2)
        link = keras.layers.Concatenate(name=f"layer{layer}_connection")
        if connection == "dense":
            x1, x2 = link(features1 + [x1]), link(features2 + [x2])
        else:
            if co_attention:
                join = keras.layers.Concatenate(name=f"layer{layer}_features")
                f1, f2 = join(features1), join(features2)
            else:
                f1, f2 = h1, h2
            if sum1 is None:
                sum1, sum2 = f1, f2
            else:
                add = keras.layers.Add(name=f"layer{layer}_residual")
                sum1, sum2 = add([f1, sum1]), add([f2, sum2])
            if connection == "residual":
                x1, x2 = link([sum1, word1]), link([sum2, word2])
            else:
                x1, x2 = sum1, sum2
        if layer in ae_positions:
            autoencoder = Autoencoder(
                autoencoder_units,
                autoencoder_dropout,
                autoencoder_activation,
                loss_weight=reconstruction_weight,
                l2=l2,
                name=f"layer{layer}_autoencoder",
            )
            x1, x2 = autoencoder(x1, x2, mask1, mask2)

    # ----------------------------------------------------------- interaction, prediction
    pooling = MaskedMaxPooling(name="pooling")
    pooled1, pooled2 = pooling(x1, mask1), pooling(x2, mask2)
    logits = InteractionPrediction(
        num_classes, fc_units, fc_layers, fc_dropout, batch_norm, l2=l2, name="prediction"
    )(pooled1, pooled2)
    outputs = {"logits": logits, **attention} if return_attention else logits
    model = keras.Model(inputs=inputs, outputs=outputs, name=name)
    if embeddings is not None:
        for embedding in (trainable, fixed):
            if embedding is not None:
                embedding.set_weights([embeddings])
    elif trainable is not None and fixed is not None:
        fixed.set_weights(trainable.get_weights())
    return model


# ------------------------------------------------------------------------------ model spec
def _build_from_spec(num_classes, vocab_sizes, embeddings=None, **hparams):
    return build_drcn(
        vocab_sizes["word_ids"],
        vocab_sizes.get("char_ids"),
        num_classes,
        embeddings=embeddings,
        **hparams,
    )


#: Our quick-run settings shared by the ``sample`` and ``sample_ranking`` presets.
_SAMPLE = dict(
    embedding_dim=100,
    num_layers=3,
    hidden_size=50,
    autoencoder_layers="3",
    autoencoder_units=100,
    fc_units=200,
    batch_norm=True,
    max_len=35,
    batch_size=64,
    min_df=2,
    eval_per_samples=8000,
    log_per_samples=1024,
)

#: What ``re2-analyze`` reads (:mod:`re2_tf.analysis`): each layer's co-attention (Eq. 5) in
#: both directions and their averages over layers, and where the final max pooling took each
#: feature (:class:`re2_tf.layers.CoAttention`, :class:`re2_tf.layers.MaskedMaxPooling`).
ANALYSIS = Analysis(
    layers=(
        AnalysisLayer(
            r"layer(?P<n>\d+)_co_attention",
            {"return_attention_scores": True},
            (
                AnalysisOutput(
                    "layer{n}_alpha",
                    "attention",
                    normalized_axis=1,
                    mean="mean_alpha",
                    description="alpha_ij = softmax_j cos(h_p_i, h_q_j) over text2 (DRCN Eq. 5)",
                ),
                AnalysisOutput(
                    "layer{n}_beta",
                    "attention",
                    normalized_axis=0,
                    mean="mean_beta",
                    description="softmax_i cos(h_p_i, h_q_j) over text1 (DRCN Eq. 5, mirrored)",
                ),
            ),
        ),
        AnalysisLayer(
            "pooling",
            {"return_positions": True},
            tuple(
                AnalysisOutput(
                    f"max_pool_rate_{side}",
                    "positions",
                    axes=(side,),
                    call=call,
                    description="share of the pooled features taken at each word (DRCN Eq. 7)",
                )
                for call, side in enumerate(("text1", "text2"))
            ),
        ),
    )
)

#: DRCN on the shared path (the paper's "Implementation Details").
SPEC = register(
    ModelSpec(
        name="drcn",
        build=_build_from_spec,
        hparams=DRCN_HPARAMS,
        features={"word_ids": {}, "char_ids": {"max_word_length": 16}, "exact_match": {}},
        presets={
            # Ours (not the paper's): a narrower, shallower DRCN for a quick CPU run on the
            # bundled samples (configs/drcn/sample*.flags): 3 layers of 50 units per
            # direction, one autoencoder (after layer 3), FC 200 x 2, 100-d embeddings,
            # texts cut at 35 words (SNLI's length), 2 passes, evaluated at the end of each
            # (eval_per_samples 8,000 = one pass of the SNLI sample). Its time: the README's
            # quick-start table (docs/runs/quick-start/).
            "sample": dict(_SAMPLE, epochs=2),
            "sample_ranking": dict(_SAMPLE, epochs=2),
            "snli": dict(max_len=35, batch_norm=True),
            "quora": dict(max_len=25, batch_norm=False),
            "trecqa": dict(max_len=50, batch_norm=True),
        },
        training={
            "optimizer": "rmsprop",
            "lr_schedule": "plateau",
            "lr": 1e-3,
            "plateau_factor": 0.85,
            "long_pairs": "truncate",
        },
        export_backend="keras",
        benchmark={"DRCN": {"hparams": dict(batch_norm=True)}},
        reference="Kim, Kang and Kwak, AAAI 2019 (no official code)",
        analysis=ANALYSIS,
        tiny=dict(
            embedding_dim=4,
            char_embedding_dim=3,
            char_filters=4,
            char_kernel_size=3,
            hidden_size=3,
            autoencoder_units=5,
            fc_units=6,
        ),
    )
)
