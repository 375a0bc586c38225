"""RE2's analysis figures (Yang et al., ACL 2019, §3.7): Figure 2, the occlusion sensitivity of
the three parts of the alignment and fusion input, and Figure 3, the case study's alignment of
the first and last block.

**Occlusion on the trained graph.** In block ``n`` the alignment layer (Eq. 2-3) and the fusion
layer (Eq. 4) both read one tensor, the output of the concatenation layer
``block{n}_features``: ``[x^(n); encoder(x^(n))]`` where the block input ``x^(n)`` is the
embedding (``n = 0``, 0-based) or the augmented residual connection's ``[x^(1); residual]``
(§2.1, Eq. 1). Its three parts (:func:`feature_slices`) are ``embed`` (the original point-wise
features, the embedding width), ``residual`` (the previous aligned features, the summed
outputs of the earlier blocks; none in block 0) and ``enc-out`` (the contextual features, the
encoder's output). :func:`occluded_model` re-runs the trained graph
(``keras.models.clone_model`` with every layer object itself, so the same weights) with that
one concatenation replaced by the same layer followed by zeroing the part: the alignment and
fusion of that block see it as zeros (and so does the aligned representation, a weighted sum
of the zeroed features), every other block's own input is untouched (later blocks see the
changed block output, as in the paper's protocol: "mask one feature in one block to zeros at a
time"). Nothing of RE2 is recomputed outside its layers.

Reading where the paper is unclear: the paper's Figure 2 reports "changes in accuracy" per
category; we report, per class, the accuracy on the pairs whose gold label is that class
(recall) of the occluded model minus the intact model's, in percentage points.
"""

from __future__ import annotations

import numpy as np

from re2_lab.figures.base import (
    FigureRun,
    FigureSet,
    MissingRun,
    held_out_pair,
    need,
    pyplot,
    register,
    run_caption,
    wrap,
    write_figure,
)

__all__ = [
    "FEATURES",
    "feature_slices",
    "occluded_model",
    "occlusion_sensitivity",
    "per_class_accuracy",
]

#: The three parts of a block's alignment and fusion input, in their order in it (§2.1).
FEATURES = ("embed", "residual", "enc-out")

#: The case study's pair (§3.7, Figure 3), an SNLI dev pair, and its gold label. SNLI dev is
#: the learning check's training file, so the figure is drawn on the held-out pair most like it
#: (:func:`re2_lab.figures.base.held_out_pair`).
CASE = ("A green bike is parked next to a door", "The bike is chained to the door")
CASE_LABEL = "neutral"


def feature_slices(model, block):
    """Where ``embed``, ``residual`` and ``enc-out`` lie in block ``block``'s alignment and
    fusion input (the last axis of the ``block{block}_features`` concatenation).

    Args:
        model: a functional RE2 ``keras.Model`` (:func:`re2_tf.models.re2.build_re2`) built
            with ``enc_in=True``.
        block: int, 0-based block index.

    Returns:
        ``{feature: (start, stop)}`` over :data:`FEATURES`; ``residual`` is absent in block 0
        (and with ``parallel_blocks``), where the block input is the embedding alone.

    Raises:
        ValueError: no ``block{block}_features`` layer (``enc_in=False`` or no such block), or
            a block fed by the plain residual connection (Table 6 "residual conn."), whose
            input mixes the embedding and the block outputs into one sum that has no separate
            parts to occlude.
    """
    from re2_tf.layers import AugmentedResidualConnection

    names = {layer.name for layer in model.layers}
    if f"block{block}_features" not in names:
        raise ValueError(
            f"model {model.name!r} has no layer block{block}_features (enc_in=False, or fewer "
            f"blocks): nothing to occlude"
        )
    block_input, encoded = model.get_layer(f"block{block}_features")._inbound_nodes[0].input_tensors
    width, enc_width = int(block_input.shape[-1]), int(encoded.shape[-1])
    embed = int(model.get_layer("embedding").output_dim)
    connection = f"block{block}_connection"
    slices = {"embed": (0, embed)}
    if connection in names:
        if not isinstance(model.get_layer(connection), AugmentedResidualConnection):
            raise ValueError(
                f"block {block} is fed by {type(model.get_layer(connection)).__name__}: "
                "occlusion needs the augmented residual connection's [embed; residual] input"
            )
        slices["residual"] = (embed, width)
    elif width != embed:
        raise ValueError(f"block {block}'s input is {width} wide, the embedding {embed}")
    slices["enc-out"] = (width, width + enc_width)
    return slices


def _occluder_class():
    import keras
    from keras import ops

    class Occluded(keras.layers.Layer):
        """``inner`` (the same concatenation layer object), then ``[start, stop)`` of the
        last axis set to 0."""

        def __init__(self, inner, start, stop):
            super().__init__(name=inner.name, dtype=inner.dtype_policy)
            self.inner, self.start, self.stop = inner, int(start), int(stop)
            self.built = True

        def call(self, *args, **kwargs):
            x = self.inner(*args, **kwargs)
            return ops.concatenate(
                [
                    x[..., : self.start],
                    ops.zeros_like(x[..., self.start : self.stop]),
                    x[..., self.stop :],
                ],
                axis=-1,
            )

    return Occluded


def occluded_model(model, block, feature):
    """RE2's trained graph with ``feature`` zeroed in block ``block``'s alignment and fusion
    input only (the paper's occlusion, §3.7 Figure 2).

    Args:
        model: a functional RE2 ``keras.Model`` (``enc_in=True``, augmented residual
            connections for ``residual``).
        block: int, 0-based block.
        feature: one of :data:`FEATURES`.

    Returns:
        ``keras.Model`` with ``model``'s inputs and output (logits float32
        ``[batch, classes]``), sharing every layer object (and weight) with ``model``.

    Raises:
        ValueError: ``feature`` not in :data:`FEATURES` or not in that block (``residual`` in
            block 0), or see :func:`feature_slices`.
    """
    import keras

    if feature not in FEATURES:
        raise ValueError(f"feature must be one of {FEATURES}, got {feature!r}")
    slices = feature_slices(model, block)
    if feature not in slices:
        raise ValueError(f"block {block} has no {feature!r} part (the first block has none)")
    occluded = _occluder_class()
    target = f"block{block}_features"

    def clone_function(layer):
        return occluded(layer, *slices[feature]) if layer.name == target else layer

    clone = keras.models.clone_model(model, clone_function=clone_function)
    return keras.Model(clone.input, clone.output, name=f"{model.name}_occluded")


def per_class_accuracy(labels, predictions, classes):
    """``[classes]`` float64: per gold class the share of its pairs predicted as it (NaN for
    a class without pairs)."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return np.array(
        [
            (predictions[labels == c] == c).mean() if (labels == c).any() else np.nan
            for c in range(classes)
        ]
    )


def occlusion_sensitivity(run_dir, split="dev", batch_size=256):
    """The paper's Figure 2 numbers for a trained RE2 run on a split of its data.

    Args:
        run_dir: a trained RE2 run directory (``best.keras``, featurisers, ``flags.txt``).
        split: a split name of the run's ``--data_dir`` or a file
            (:func:`re2_tf.runs.load_examples`).
        batch_size: pairs per prediction batch.

    Returns:
        ``dict``: ``labels`` (class names), ``pairs`` (int, per class ``pairs_per_class``),
        ``accuracy`` (the intact model's per-class accuracy) and ``changes``: ``{block
        (1-based, str): {feature: [per-class change in percentage points]}}`` for every
        feature the block has.

    Raises:
        FileNotFoundError: a missing run or data file. ValueError: not an RE2 with
        ``enc_in``, see :func:`feature_slices`.
    """
    from re2_tf import runs
    from re2_tf.data.pipeline import encode_examples
    from re2_tf.evaluation import inference_dataset, predict_outputs
    from re2_tf.runs import load_examples

    spec, examples = load_examples(run_dir, split)
    model = runs.load_best_model(run_dir)
    labels = np.array([ex.label for ex in examples])
    data = inference_dataset(
        encode_examples(examples, runs.load_featurizers(run_dir)), batch_size=batch_size
    )
    classes = spec.num_classes

    def accuracy(network):
        return per_class_accuracy(labels, predict_outputs(network, data).argmax(-1), classes)

    intact = accuracy(model)
    blocks = sorted(
        int(layer.name[len("block") : -len("_features")])
        for layer in model.layers
        if layer.name.startswith("block") and layer.name.endswith("_features")
    )
    changes = {}
    for block in blocks:
        changes[str(block + 1)] = {
            feature: (100 * (accuracy(occluded_model(model, block, feature)) - intact)).tolist()
            for feature in feature_slices(model, block)
        }
    return {
        "labels": list(spec.label_names),
        "pairs": int(len(examples)),
        "pairs_per_class": [int((labels == c).sum()) for c in range(classes)],
        "accuracy": intact.tolist(),
        "changes": changes,
    }


# ----------------------------------------------------------------------------------- figures
SNLI_CHECK_NOTE = (
    "A model of the SNLI learning check (trained on the 9,842 pairs of the SNLI dev file, "
    "random trainable embeddings, selected on half of SNLI test), not the paper's SNLI model "
    "(550k training pairs, GloVe)."
)

RUNS = (
    FigureRun(
        key="re2",
        run_dir="checkpoints/compare/snli_check/model-re2/seed1",
        record="docs/runs/compare/snli_check/model-re2/seed1",
        command="python -m re2_lab.cli.compare --task=snli_check "
        "--data_dir=<SNLI learning-check dir> "
        "--models=re2",
        about=SNLI_CHECK_NOTE,
    ),
)


def figure2(run_dir, record, out_dir, name="re2_figure2_occlusion"):
    """RE2 Figure 2: one bar chart per class (entailment, neutral, contradiction), the change
    of its accuracy per block when each feature is occluded; written with its data."""
    plt = pyplot()
    data = occlusion_sensitivity(run_dir, "dev")
    split_file = "the run's dev.txt"
    caption = (
        f"RE2 Figure 2 (occlusion sensitivity): change of per-class accuracy (percentage "
        f"points; accuracy on the pairs of that gold class) on {split_file} "
        f"({data['pairs']:,} pairs) when one part of one block's alignment and fusion input "
        "is set to zero: embed (original point-wise features), residual (previous aligned "
        "features; absent in block 1), enc-out (contextual features). This is the learning "
        "check's dev split (the split the run selected on), not the full SNLI dev file, which "
        "is this run's training data. " + run_caption(record, SNLI_CHECK_NOTE)
    )
    blocks = sorted(data["changes"], key=int)
    colours = {"embed": "#4c72b0", "residual": "#dd8452", "enc-out": "#55a868"}
    figure, axes = plt.subplots(1, len(data["labels"]), figsize=(13, 4.6), sharey=True)
    width = 0.26
    for c, (ax, label) in enumerate(zip(axes, data["labels"])):
        for f, feature in enumerate(FEATURES):
            xs = [b for b, block in enumerate(blocks) if feature in data["changes"][block]]
            ys = [data["changes"][blocks[b]][feature][c] for b in xs]
            ax.bar(np.array(xs) + (f - 1) * width, ys, width, label=feature, color=colours[feature])
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(blocks)), [f"block {b}" for b in blocks])
        ax.set_title(
            f"({'abc'[c]}) {label} (intact acc {100 * data['accuracy'][c]:.1f}%)", fontsize=10
        )
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("change of accuracy (percentage points)")
    axes[0].legend(title="occluded part", fontsize=9)
    figure.suptitle(wrap(caption, 150), fontsize=7.5)
    figure.tight_layout(rect=(0, 0, 1, 0.86))
    return write_figure(out_dir, name, figure, {"run": record.to_json(), **data}, caption)


def figure3(run_dir, record, out_dir, name="re2_figure3_case"):
    """RE2 Figure 3: the alignment weights (normalised ``e_ij``, Eq. 3) of the held-out pair
    standing in for the paper's case pair (:data:`CASE`) in the first and the last block: per
    premise word its softmax over the hypothesis words (rows sum to 1; premise down the side,
    hypothesis across), read from the trained graph by :func:`re2_tf.analysis.attention_maps`."""
    from re2_tf.analysis import attention_maps

    plt = pyplot()
    pair = held_out_pair(run_dir, CASE, CASE_LABEL)
    maps = attention_maps(run_dir, pair.text1, pair.text2)
    blocks = sorted(
        int(n[len("block") : -len("_over_text2")])
        for n in maps.arrays
        if n.startswith("block") and n.endswith("_over_text2")
    )
    shown = [blocks[0], blocks[-1]]
    probabilities = ", ".join(f"{k} {v:.3f}" for k, v in maps.prediction["probabilities"].items())
    shown_maps = [maps.arrays[f"block{b}_over_text2"] for b in shown]
    low = min(float(m.min()) for m in shown_maps)
    high = max(float(m.max()) for m in shown_maps)
    caption = (
        f"RE2 Figure 3 (case study) on a {pair.caption()}. "
        f"Alignment weights softmax_j(e_ij) of Eq. 3 (each premise word's "
        f"weights over the hypothesis words, rows sum to 1; colour scale from the smallest "
        f"shown weight {low:.4f} to the largest {high:.4f}; a uniform row is "
        f"1/{len(maps.tokens['text2'])} = {1 / len(maps.tokens['text2']):.4f}) in block "
        f"{shown[0] + 1} (first) and block {shown[1] + 1} (last). Predicted "
        f"{maps.prediction['label']} ({probabilities}). " + run_caption(record, SNLI_CHECK_NOTE)
    )
    tokens1, tokens2 = maps.tokens["text1"], maps.tokens["text2"]
    figure, axes = plt.subplots(1, 2, figsize=(11, 5.6))
    for ax, block in zip(axes, shown):
        image = ax.imshow(
            maps.arrays[f"block{block}_over_text2"], cmap="Blues", vmin=low, vmax=high
        )
        ax.set_xticks(range(len(tokens2)), tokens2, rotation=60, ha="right")
        ax.set_yticks(range(len(tokens1)), tokens1)
        ax.set_xlabel("hypothesis")
        ax.set_ylabel("premise")
        ax.set_title(f"block {block + 1} ({'first' if block == shown[0] else 'last'})")
    figure.colorbar(
        image, ax=axes, label=f"softmax_j(e_ij), {low:.4f} to {high:.4f}", shrink=0.8, format="%.4f"
    )
    figure.suptitle(wrap(caption, 120), fontsize=7.5)
    figure.subplots_adjust(top=0.74, bottom=0.2, right=0.78, wspace=0.45)
    data = {
        "run": record.to_json(),
        "pair": pair.to_json(),
        "premise": tokens1,
        "hypothesis": tokens2,
        "prediction": maps.prediction,
        "scale": [low, high],
        "maps": {
            f"block{b + 1}_over_hypothesis": maps.arrays[f"block{b}_over_text2"].tolist()
            for b in shown
        },
    }
    return write_figure(out_dir, name, figure, data, caption)


def make(runs, out_dir):
    """Figures 2 and 3 from the ``re2`` run (a 3-block RE2)."""
    try:
        run_dir, record = need(runs, "re2", SET)
    except MissingRun as error:
        return [str(error)]
    return [figure2(run_dir, record, out_dir), figure3(run_dir, record, out_dir)]


SET = register(
    FigureSet(
        name="re2",
        runs=RUNS,
        make=make,
        doc="RE2 Figure 2 (occlusion sensitivity) and Figure 3 (case study)",
    )
)
