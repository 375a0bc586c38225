"""RE2 (Yang et al., ACL 2019) as a Keras functional model, as the authors' release builds it.

Architecture (paper Figure 1): embedding -> ``blocks`` x [connection -> encoder -> alignment
-> fusion] -> masked max pooling -> prediction. Both texts share every weight.
"""

import keras
import numpy as np

from re2_tf.layers import (
    ALIGNMENTS,
    CONNECTIONS,
    FUSIONS,
    PREDICTIONS,
    Alignment,
    AugmentedResidualConnection,
    ConvEncoder,
    Fusion,
    MaskedMaxPooling,
    PaddingMask,
    Prediction,
    ResidualConnection,
)
from re2_tf.models.spec import (
    Analysis,
    AnalysisLayer,
    AnalysisOutput,
    HParam,
    ModelSpec,
    check_hparam,
    register,
)

#: RE2's hyper-parameters (:data:`SPEC`'s ``hparams``), the one place their defaults are
#: stated: the release's ``src/args``-level defaults. Per-dataset values are the spec's
#: presets (the release's ``configs/data/*.json5``).
RE2_HPARAMS = {
    "embedding_dim": HParam(
        300,
        "Embedding width when no --embeddings are given (with vectors, their width).",
        low=1,
    ),
    "hidden_size": HParam(150, "Hidden size of every layer.", low=1),
    "dropout_rate": HParam(
        0.2, "Dropout drop probability (the release's keep 0.8).", low=0, high=1, high_open=True
    ),
    "blocks": HParam(2, "Number of stacked blocks.", low=1, high=5),
    "enc_layers": HParam(2, "Convolutional layers per encoder.", low=1, high=5),
    "kernel_size": HParam(3, "Encoder convolution width.", low=1),
    "encoder_activation": HParam(
        "relu",
        "Encoder convolution activation: relu = the "
        "authors' TensorFlow release, gelu = their PyTorch port.",
        ("relu", "gelu"),
    ),
    "alignment": HParam("linear", "Alignment projection F (Eq. 2).", ALIGNMENTS),
    "fusion": HParam("full", "Fusion layer (Eq. 4 or simple).", FUSIONS),
    "connection": HParam(
        "aug",
        "Connection between blocks (augmented residual, Eq. 1, or residual).",
        CONNECTIONS,
    ),
    "prediction": HParam("full", "Prediction layer (Eq. 5/6/7).", PREDICTIONS),
    "enc_in": HParam(True, "Feed [x; encoder(x)] to alignment (False = ablation 'w/o enc-in')."),
    "parallel_blocks": HParam(False, "Ablation 'parallel blocks'."),
}

#: ``{name: default}`` of :data:`RE2_HPARAMS` (the builder's keyword defaults).
RE2_DEFAULTS = {name: hparam.default for name, hparam in RE2_HPARAMS.items()}


def build_re2(
    vocab_size,
    num_classes,
    embeddings=None,
    embedding_dim=RE2_DEFAULTS["embedding_dim"],
    blocks=RE2_DEFAULTS["blocks"],
    enc_layers=RE2_DEFAULTS["enc_layers"],
    kernel_size=RE2_DEFAULTS["kernel_size"],
    encoder_activation=RE2_DEFAULTS["encoder_activation"],
    hidden_size=RE2_DEFAULTS["hidden_size"],
    dropout_rate=RE2_DEFAULTS["dropout_rate"],
    alignment=RE2_DEFAULTS["alignment"],
    fusion=RE2_DEFAULTS["fusion"],
    connection=RE2_DEFAULTS["connection"],
    prediction=RE2_DEFAULTS["prediction"],
    enc_in=RE2_DEFAULTS["enc_in"],
    parallel_blocks=RE2_DEFAULTS["parallel_blocks"],
    return_attention=False,
    name="re2",
):
    """Build RE2 as a Keras functional model.

    The keyword defaults are :data:`RE2_DEFAULTS`, taken from :data:`SPEC`'s hyper-parameters
    (``re2-train --model=re2 --helpfull`` lists them with each dataset's preset); values
    below marked "paper" are the paper's figures, not necessarily the defaults.

    Args:
        vocab_size: int, rows of the embedding matrix (ids ``0..vocab_size-1``; 0 is
            ``<PAD>``, 1 is ``<UNK>``).
        num_classes: int, number of output logits.
        embeddings: optional float array ``[vocab_size, embedding_dim]`` of pretrained
            vectors; the embedding is then fixed (non-trainable), as in the release. When
            ``None`` the embedding is random and trainable.
        embedding_dim: int, embedding width (ignored when ``embeddings`` is given).
        blocks: int in [1, 5], number of stacked blocks (paper §2; Table 7).
        enc_layers: int in [1, 5], convolutions per encoder.
        kernel_size: int, convolution width (paper Sec. 3.2: 3).
        encoder_activation: activation of the encoder's convolutions (the paper names
            none): ``"relu"`` reproduces the authors' TensorFlow release, ``"gelu"`` (tanh
            approximation) the authors' PyTorch port; see
            :class:`re2_tf.layers.ConvEncoder`.
        hidden_size: int, width of encoder, alignment, fusion and prediction layers.
        dropout_rate: float in [0, 1), drop probability (paper Sec. 3.2 and the release:
            keep probability 0.8).
        alignment: ``"linear"`` or ``"identity"`` (Eq. 2's ``F``).
        fusion: ``"full"`` (Eq. 4) or ``"simple"`` (Table 6 "simple fusion").
        connection: ``"aug"`` (augmented residual, §2.1, as the release computes it) or
            ``"residual"`` (Table 6 "residual conn.").
        prediction: ``"full"`` (Eq. 5), ``"symmetric"`` (Eq. 6) or ``"simple"`` (Eq. 7).
        enc_in: bool; False is the Table 6 ablation "w/o enc-in" (alignment and fusion see
            only the encoder output, not ``[x; encoder(x)]``).
        parallel_blocks: bool; True is the Table 6 ablation "parallel blocks": every block
            reads the embeddings and the block outputs are summed before pooling.
        return_attention: bool; if True the model returns a dict with ``logits`` and, per
            block ``i``, ``attention_{i}_text1`` (softmax over text1 positions, axis 1) and
            ``attention_{i}_text2`` (softmax over text2 positions, axis 2), each
            ``[batch, len1, len2]``. For analysis, not serving.
        name: model name.

    Returns:
        ``keras.Model`` with inputs ``text1``, ``text2``: int32 ``[batch, length]`` token ids
        (0 = padding; the two lengths are independent and dynamic) and output float32 logits
        ``[batch, num_classes]``. An empty text (an all-padding row) is defined: it pools
        to zeros and the other text's alignment to it is zero (see
        :class:`re2_tf.layers.MaskedMaxPooling`, :class:`re2_tf.layers.Alignment`), so
        logits stay finite; pairs of non-empty texts get the release's logits.

    Raises:
        ValueError: for an option outside the ones above, or an ``embeddings`` array whose
            shape does not match ``vocab_size``.

    Reference: RE2 paper (Yang et al., ACL 2019) §2 and Table 6; the authors' TensorFlow
    release, github.com/alibaba-edu/simple-effective-text-matching (Apache-2.0), for the
    details the paper leaves out.
    """
    for option, value in (
        ("blocks", blocks),
        ("enc_layers", enc_layers),
        ("alignment", alignment),
        ("fusion", fusion),
        ("connection", connection),
        ("prediction", prediction),
        ("dropout_rate", dropout_rate),
    ):
        check_hparam(RE2_HPARAMS, option, value)
    if embeddings is not None:
        embeddings = np.asarray(embeddings, dtype="float32")
        if embeddings.ndim != 2 or embeddings.shape[0] != vocab_size:
            raise ValueError(
                f"embeddings must have shape [vocab_size={vocab_size}, dim], got {embeddings.shape}"
            )
        embedding_dim = embeddings.shape[1]

    text1 = keras.Input(shape=(None,), dtype="int32", name="text1")
    text2 = keras.Input(shape=(None,), dtype="int32", name="text2")
    padding_mask = PaddingMask(name="padding_mask")
    mask1, mask2 = padding_mask(text1), padding_mask(text2)

    embedding = keras.layers.Embedding(
        vocab_size, embedding_dim, trainable=embeddings is None, name="embedding"
    )
    embedding_dropout = keras.layers.Dropout(dropout_rate, name="embedding_dropout")
    emb1 = embedding_dropout(embedding(text1))
    emb2 = embedding_dropout(embedding(text2))

    a, b = emb1, emb2
    res_a, res_b = a, b
    outputs_a, outputs_b, attention = [], [], {}
    for i in range(blocks):
        if parallel_blocks:
            a, b = emb1, emb2
        elif i > 0:
            if connection == "aug":
                link = AugmentedResidualConnection(i, name=f"block{i}_connection")
            else:
                link = ResidualConnection(name=f"block{i}_connection")
            a, b = link(a, res_a), link(b, res_b)
            res_a, res_b = a, b
        encoder = ConvEncoder(
            hidden_size,
            enc_layers,
            kernel_size,
            dropout_rate,
            encoder_activation,
            name=f"block{i}_encoder",
        )
        enc_a, enc_b = encoder(a, mask1), encoder(b, mask2)
        if enc_in:
            concat = keras.layers.Concatenate(name=f"block{i}_features")
            a, b = concat([a, enc_a]), concat([b, enc_b])
        else:
            a, b = enc_a, enc_b
        aligner = Alignment(hidden_size, alignment, dropout_rate, name=f"block{i}_alignment")
        if return_attention:
            align_a, align_b, attn_1, attn_2 = aligner(
                a, b, mask1, mask2, return_attention_scores=True
            )
            attention[f"attention_{i}_text1"] = attn_1
            attention[f"attention_{i}_text2"] = attn_2
        else:
            align_a, align_b = aligner(a, b, mask1, mask2)
        fuse = Fusion(hidden_size, fusion, dropout_rate, name=f"block{i}_fusion")
        a, b = fuse(a, align_a), fuse(b, align_b)
        outputs_a.append(a)
        outputs_b.append(b)

    if parallel_blocks and blocks > 1:
        a = keras.layers.Add(name="parallel_sum")(outputs_a)
        b = keras.layers.Add(name="parallel_sum_text2")(outputs_b)
    pooling = MaskedMaxPooling(name="pooling")
    pooled_a, pooled_b = pooling(a, mask1), pooling(b, mask2)
    logits = Prediction(hidden_size, num_classes, prediction, dropout_rate, name="prediction")(
        pooled_a, pooled_b
    )
    outputs = {"logits": logits, **attention} if return_attention else logits
    model = keras.Model(inputs={"text1": text1, "text2": text2}, outputs=outputs, name=name)
    if embeddings is not None:
        embedding.set_weights([embeddings])
    return model


# ------------------------------------------------------------------------------ model spec
def _build_from_spec(num_classes, vocab_sizes, embeddings=None, **hparams):
    return build_re2(vocab_sizes["word_ids"], num_classes, embeddings=embeddings, **hparams)


#: What ``re2-analyze`` reads (:mod:`re2_tf.analysis`): each block's alignment weights, the
#: normalised ``e_ij`` of Eq. 3 in both directions (:class:`re2_tf.layers.Alignment`).
ANALYSIS = Analysis(
    layers=(
        AnalysisLayer(
            r"block(?P<n>\d+)_alignment",
            {"return_attention_scores": True},
            (
                AnalysisOutput(
                    "block{n}_over_text1",
                    "attention",
                    normalized_axis=0,
                    description="softmax_i(e_ij) over text1, weights of b'_j (RE2 Eq. 3)",
                ),
                AnalysisOutput(
                    "block{n}_over_text2",
                    "attention",
                    normalized_axis=1,
                    description="softmax_j(e_ij) over text2, weights of a'_i (RE2 Eq. 3)",
                ),
            ),
        ),
    )
)

#: Table 5's timed models (paper Sec. 3.6: 3 encoder layers; Sec. 3.2: hidden size 150,
#: 300-d GloVe vectors), with 1, 2 and 3 blocks.
_TABLE5 = dict(embedding_dim=300, enc_layers=3, hidden_size=150)

#: Our quick-run settings shared by the ``sample`` and ``sample_ranking`` presets: a smaller
#: version of the release's SNLI architecture, random trainable embeddings.
_SAMPLE = dict(
    embedding_dim=100,
    hidden_size=100,
    blocks=2,
    enc_layers=2,
    batch_size=64,
    lr=2e-3,
    min_lr=1e-4,
    lr_decay_rate=0.94,
    lr_decay_samples=16000,
    eval_per_samples=4096,
    tolerance_samples=100000,
    min_df=2,
    log_per_samples=1024,
)

#: RE2 on the shared path. Presets are the release's ``configs/data/*.json5`` settings; the
#: ``sample`` and ``sample_ranking`` presets are our choices (not the release's): quick CPU
#: runs on the bundled samples (``configs/re2/sample*.flags``; their times: the README's
#: quick-start table).
SPEC = register(
    ModelSpec(
        name="re2",
        build=_build_from_spec,
        hparams=RE2_HPARAMS,
        features={"word_ids": {}},
        presets={
            "sample": dict(_SAMPLE, epochs=3),
            # Ours: the ``sample`` architecture with the release's WikiQA prediction layer
            # (simple), 2 passes over the ranking sample's ~10k pairs, selected by dev MRR.
            "sample_ranking": dict(_SAMPLE, prediction="simple", epochs=2),
            "snli": dict(
                blocks=3,
                enc_layers=2,
                hidden_size=150,
                batch_size=512,
                epochs=30,
                lr=0.002,
                min_lr=0.0001,
                lr_decay_rate=0.94,
                lr_decay_samples=256000,
                lr_warmup_samples=2048000,
                eval_per_samples=12800,
                eval_warmup_samples=5120000,
                eval_per_samples_warmup=512000,
                min_samples=5120000,
                tolerance_samples=2560000,
            ),
            "scitail": dict(
                blocks=2,
                enc_layers=3,
                hidden_size=200,
                alignment="identity",
                batch_size=128,
                epochs=80,
                lr=0.001,
                lr_decay_rate=1.0,
                eval_per_samples=6400,
                tolerance_samples=400000,
                log_per_samples=1280,
            ),
            "quora": dict(
                blocks=2,
                enc_layers=2,
                hidden_size=200,
                prediction="symmetric",
                max_len=100,
                batch_size=512,
                epochs=30,
                lr=0.0012,
                min_lr=0.00006,
                lr_decay_rate=0.95,
                lr_decay_samples=256000,
                eval_per_samples=12800,
                eval_warmup_samples=3584000,
                eval_per_samples_warmup=512000,
                min_samples=5120000,
                tolerance_samples=2560000,
            ),
            "wikiqa": dict(
                blocks=2,
                enc_layers=3,
                hidden_size=200,
                prediction="simple",
                batch_size=128,
                epochs=30,
                lr=0.001,
                lr_decay_rate=1.0,
                eval_per_samples=1280,
                eval_epoch=False,
                tolerance_samples=256000,
                log_per_samples=256,
            ),
        },
        export_backend="re2_folded",
        benchmark={
            f"RE2 {n} block{'s' * (n > 1)}": {
                "hparams": dict(_TABLE5, blocks=n),
                "paper_seconds": s,
            }
            for n, s in ((1, 0.03), (2, 0.04), (3, 0.05))
        },
        reference="Yang et al., ACL 2019; the authors' TensorFlow release",
        analysis=ANALYSIS,
        tiny=dict(embedding_dim=8, hidden_size=8, blocks=2, enc_layers=2),
    )
)
