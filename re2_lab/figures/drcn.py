"""DRCN's attention-map figures (Kim et al., AAAI 2019, "Word Alignment and Importance" and the
appendix "Visualization on the comparable models"): for held-out pairs standing in for the
paper's two SNLI dev examples (the run's training data), the co-attention ``alpha_ij`` of
Eq. 5 on every layer, their average over the layers ("Avg(Layers)") and the rate of max-pooled
positions per word, for DRCN and for its ablation with residual instead of dense connections
(Table 6 (8), the paper's "Res2").

Everything is read from the trained graph by :func:`re2_tf.analysis.attention_maps` (the
spec's ``analysis``: each ``layer{n}_co_attention`` called with ``return_attention_scores``,
the final pooling with ``return_positions``). Readings where the paper is unclear: the map is
``alpha_ij`` (softmax over the hypothesis words for each premise word, rows sum to 1; premise
down the side, hypothesis across, as the paper's heat-maps); the max-pool rate is the share of
the pooled features taken at each word (:func:`re2_tf.analysis.max_pool_rate`), shown for the
hypothesis above Avg(Layers) (the paper's grey strip) and for the premise beside it; one colour
scale (0 to the largest weight shown) per figure, stated on its colour bar, since cosine
co-attention weights are far below 1.
"""

from __future__ import annotations

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
from re2_lab.figures.re2 import SNLI_CHECK_NOTE

__all__ = ["EXAMPLES", "attention_figure"]

#: The paper's two examples (its figures of attentive weights), exactly as printed there; both
#: are SNLI dev pairs, the learning check's training file, so each figure row is drawn on the
#: held-out pair most like one (:func:`re2_lab.figures.base.held_out_pair`), keyed by gold label.
EXAMPLES = {
    "entailment": (
        "two bicyclists in spandex and helmets in a race pedaling uphill.",
        "A pair of humans are riding their bicycle with tight clothing, competing with each other.",
    ),
    "contradiction": (
        "Several men in front of a white building.",
        "Several people in front of a gray building.",
    ),
}

RUNS = (
    FigureRun(
        key="drcn",
        run_dir="checkpoints/compare/snli_check/model-drcn/seed1",
        record="docs/runs/paper-figures/drcn/seed1",
        command="python -m re2_tf.cli.train "
        "--flagfile=docs/runs/paper-figures/drcn/seed1/flags.txt",
        about="DRCN (dense connections, Eq. 6), retrained from the flags of the comparison's "
        "record docs/runs/compare/snli_check/model-drcn/seed1; its scores differ from that "
        "record's, so it has a record of its own. " + SNLI_CHECK_NOTE,
    ),
    FigureRun(
        key="drcn_residual",
        run_dir="checkpoints/sweeps/drcn-ablations/connection-residual/seed1",
        record="docs/runs/paper-figures/drcn_residual/seed1",
        command="python -m re2_tf.cli.train "
        "--flagfile=docs/runs/paper-figures/drcn_residual/seed1/flags.txt",
        about="DRCN with residual connections over the recurrent and co-attentive features, the "
        "word representation still densely connected (connection=residual: Table 6 (8), the "
        "paper's Res2), retrained from the flags of the ablation sweep's record "
        "docs/runs/drcn-ablations/connection-residual/seed1; its scores differ from that "
        "record's, so it has a record of its own. " + SNLI_CHECK_NOTE,
    ),
)


def attention_figure(run_dir, record, about, out_dir, name):
    """One PNG (+ JSON) of one trained DRCN run: a row per example (entailment above,
    contradiction below), each with the co-attention ``alpha_ij`` of every layer and
    Avg(Layers) with the max-pool rate strips."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    from re2_tf.analysis import attention_maps

    plt = pyplot()
    pairs = {key: held_out_pair(run_dir, texts, key) for key, texts in EXAMPLES.items()}
    found = {key: attention_maps(run_dir, p.text1, p.text2) for key, p in pairs.items()}
    layers = sorted(
        int(n[len("layer") : -len("_alpha")])
        for n in next(iter(found.values())).arrays
        if n.startswith("layer") and n.endswith("_alpha")
    )
    names = [f"layer{k}_alpha" for k in layers] + ["mean_alpha"]
    titles = [f"layer {k}" for k in layers] + [f"Avg(Layers), {len(layers)} layers"]
    top = max(float(maps.arrays[n].max()) for maps in found.values() for n in names)
    figure = plt.figure(figsize=(3.4 * len(names) + 2, 11.5))
    rows = figure.subfigures(3, 1, height_ratios=[0.2, 1, 1])
    predictions, data = [], {"run": record.to_json(), "examples": {}}
    for e, (key, maps) in enumerate(found.items()):
        sub = rows[e + 1]
        axes = sub.subplots(1, len(names))
        sub.subplots_adjust(left=0.05, right=0.93, bottom=0.25, top=0.8, wspace=0.5)
        tokens1, tokens2 = maps.tokens["text1"], maps.tokens["text2"]
        probabilities = ", ".join(
            f"{k} {v:.3f}" for k, v in maps.prediction["probabilities"].items()
        )
        predictions.append(f"{key} example predicted {maps.prediction['label']} ({probabilities})")
        sub.suptitle(
            f"({'ab'[e]}) gold {key}, held-out ({pairs[key].split} line {pairs[key].line:,}): "
            f'premise "{pairs[key].text1}" / hypothesis "{pairs[key].text2}"; predicted '
            f"{maps.prediction['label']}",
            fontsize=10,
        )
        for ax, map_name, title in zip(axes, names, titles):
            image = ax.imshow(maps.arrays[map_name], cmap="Greys", vmin=0, vmax=top, aspect="auto")
            ax.set_xticks(range(len(tokens2)), tokens2, rotation=90, fontsize=8)
            ax.set_yticks(range(len(tokens1)), tokens1, fontsize=8)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("hypothesis", fontsize=8)
            if ax is axes[0]:
                ax.set_ylabel("premise", fontsize=8)
        divider = make_axes_locatable(axes[-1])
        above = divider.append_axes("top", size=0.22, pad=0.05)
        beside = divider.append_axes("right", size=0.22, pad=0.05)
        rate1 = maps.arrays["max_pool_rate_text1"]
        rate2 = maps.arrays["max_pool_rate_text2"]
        rate_top = max(float(rate1.max()), float(rate2.max()), 1e-9)
        above.imshow(rate2[None, :], cmap="Greys", vmin=0, vmax=rate_top, aspect="auto")
        beside.imshow(rate1[:, None], cmap="Greys", vmin=0, vmax=rate_top, aspect="auto")
        above.set_xticks([])
        above.set_yticks([])
        beside.set_yticks([])
        beside.set_xticks([])
        above.set_title(f"{titles[-1]}\nmax-pool rate strips (0-{rate_top:.2f})", fontsize=9)
        axes[-1].set_title("")
        data["examples"][key] = {
            "pair": pairs[key].to_json(),
            "premise": tokens1,
            "hypothesis": tokens2,
            "prediction": maps.prediction,
            "alpha": {f"layer{k}": maps.arrays[f"layer{k}_alpha"].tolist() for k in layers},
            "avg_layers": maps.arrays["mean_alpha"].tolist(),
            "max_pool_rate_premise": rate1.tolist(),
            "max_pool_rate_hypothesis": rate2.tolist(),
            "max_pool_rate_scale_max": rate_top,
        }
    caption = (
        f"DRCN attentive weights (alpha_ij of Eq. 5: each premise word's weights over the "
        f"hypothesis words, rows sum to 1; grey scale 0 (white) to {top:.3f} (black), shared "
        f"by all panels), layers 1-{layers[-1]} and their average Avg(Layers); the grey "
        f"strips beside Avg(Layers) are the rate of max-pooled positions per word (above: "
        f"hypothesis, right: premise; black = the largest rate). "
        + " ".join(f"({'ab'[e]}) The {pairs[k].caption()}." for e, k in enumerate(pairs))
        + f" {'; '.join(predictions)}. "
        + run_caption(record, about)
    )
    rows[0].suptitle(wrap(caption, 210), fontsize=9, y=0.95)
    colorbar = figure.add_axes((0.95, 0.15, 0.008, 0.55))
    figure.colorbar(image, cax=colorbar, label=f"alpha_ij, 0 to {top:.3f}")
    data["scale_max"] = top
    return write_figure(out_dir, name, figure, data, caption)


def make(runs, out_dir):
    """One figure per run: DRCN, then its residual-connection ablation."""
    made = []
    for run in RUNS:
        try:
            run_dir, record = need(runs, run.key, SET)
        except MissingRun as error:
            made.append(str(error))
            continue
        made.append(attention_figure(run_dir, record, run.about, out_dir, f"{run.key}_attention"))
    return made


SET = register(
    FigureSet(
        name="drcn",
        runs=RUNS,
        make=make,
        doc="DRCN's attentive-weight figures (its two examples), DRCN and Res2 (Table 6 (8))",
    )
)
