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

#: Defaults of the release (``src/args``-level defaults; per-dataset values live in configs/).
RE2_DEFAULTS = dict(
    embedding_dim=300,
    blocks=2,
    enc_layers=2,
    kernel_size=3,
    hidden_size=150,
    dropout_rate=0.2,
    alignment="linear",
    fusion="full",
    connection="aug",
    prediction="full",
    enc_in=True,
    parallel_blocks=False,
)


def _check_range(name, value, low, high):
    if not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")


def build_re2(
    vocab_size,
    num_classes,
    embeddings=None,
    embedding_dim=RE2_DEFAULTS["embedding_dim"],
    blocks=RE2_DEFAULTS["blocks"],
    enc_layers=RE2_DEFAULTS["enc_layers"],
    kernel_size=RE2_DEFAULTS["kernel_size"],
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
        kernel_size: int, convolution width (paper: 3).
        hidden_size: int, width of encoder, alignment, fusion and prediction layers.
        dropout_rate: float in [0, 1), drop probability (release: 0.2, i.e. keep 0.8).
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
        ``[batch, num_classes]``.

    Raises:
        ValueError: for an option outside the ones above, or an ``embeddings`` array whose
            shape does not match ``vocab_size``.

    Reference: RE2 paper §2 and Table 6; ``../shared/docs/re2_original_release.md``.
    """
    _check_range("blocks", blocks, 1, 5)
    _check_range("enc_layers", enc_layers, 1, 5)
    for option, value, choices in (
        ("alignment", alignment, ALIGNMENTS),
        ("fusion", fusion, FUSIONS),
        ("connection", connection, CONNECTIONS),
        ("prediction", prediction, PREDICTIONS),
    ):
        if value not in choices:
            raise ValueError(f"{option} must be one of {choices}, got {value!r}")
    if not 0.0 <= float(dropout_rate) < 1.0:
        raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate!r}")
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
            hidden_size, enc_layers, kernel_size, dropout_rate, name=f"block{i}_encoder"
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


def count_parameters(model, include_embedding=False):
    """Number of trainable scalars in ``model``, the embedding left out by default.

    This is the paper's "Params" column (Table 1: 2.8M on SNLI, embeddings excluded); it
    counts weight-norm ``g`` vectors, biases and alignment temperatures.
    """
    total = 0
    for weight in model.trainable_weights:
        if not include_embedding and weight.path.startswith("embedding/"):
            continue
        total += int(np.prod(weight.shape))
    return total
