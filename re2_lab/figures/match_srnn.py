"""Match-SRNN's Figure 5 (Wan et al., IJCAI 2016, §6.2): the interaction ``h_ij`` of one hidden
dimension of the spatial GRU (Eq. 3) over a question-answer pair, with the path back-traced
from the last cell through the largest gates (:func:`re2_tf.analysis.trace_path`).

Readings where the paper differs or is unclear:

- the paper's case is a Yahoo QA test pair; Yahoo QA is not available here, so the pair is a
  WikiQA dev pair with an exact-match chain, chosen by a fixed rule (:func:`choose_pair`);
- "the dimension with the largest weight in producing the final matching score": the unit
  whose weight in the linear score (Eq. 5, layer ``score``) is largest in absolute value; the
  map shows ``sign(w) * h_ij`` of that unit, so brighter always means a larger contribution to
  the score (the sign is stated in the caption);
- the paper's simplified model ties the gates of all dimensions together for the back-trace;
  ours has per-unit gates (the trained WikiQA model), and the path follows the chosen unit's
  gates ``z_l, z_t, z_d`` (ties to the first of left, top, diagonal);
- orientation as the paper's Figure 4 (and ``docs/match_srnn.md``'s copy of it): ``S1`` (the
  question, index ``i``) across the top, ``S2`` (the answer, index ``j``) down the side, so the
  path runs from the top-left cell to the bottom-right one.
"""

from __future__ import annotations

import numpy as np

from re2_lab.figures.base import (
    FigureRun,
    FigureSet,
    MissingRun,
    need,
    pyplot,
    register,
    run_caption,
    wrap,
    write_figure,
)

__all__ = ["choose_pair", "content_lcs"]

#: Words an exact-match chain does not count (function words; see :func:`content_lcs`).
FUNCTION_WORDS = frozenset(
    "the a an of to in on at by for and or is are was were be been it its as with from that "
    "this these those what which who whom whose when where why how did does do has have had "
    "not but if than then there their they he she his her him them we you your i my me our".split()
)

RUNS = (
    FigureRun(
        key="match_srnn",
        run_dir="checkpoints/compare/wikiqa/model-match_srnn/seed1",
        record="docs/runs/compare/wikiqa/model-match_srnn/seed1",
        command="python -m re2_lab.cli.compare --task=wikiqa --data_dir=<prepared wikiqa> --jobs=1 "
        "--models=match_srnn",
        about="Match-SRNN trained on WikiQA (random trainable 50-d embeddings, pairwise hinge), "
        "the comparison's budget; not the paper's Yahoo QA model.",
    ),
)


def content_lcs(tokens1, tokens2):
    """The longest chain of exact matches between two token lists, counting only content
    words (not in :data:`FUNCTION_WORDS`, at least 3 characters, with a letter).

    Returns:
        ``[(i, j)]``: 0-based positions of the matched words, increasing in both texts.
    """

    def content(token):
        return len(token) >= 3 and token not in FUNCTION_WORDS and any(c.isalpha() for c in token)

    m, n = len(tokens1), len(tokens2)
    table = np.zeros((m + 1, n + 1), np.int64)
    for i in range(m):
        for j in range(n):
            if tokens1[i] == tokens2[j] and content(tokens1[i]):
                table[i + 1, j + 1] = table[i, j] + 1
            else:
                table[i + 1, j + 1] = max(table[i, j + 1], table[i + 1, j])
    chain, i, j = [], m, n
    while i and j:
        if tokens1[i - 1] == tokens2[j - 1] and content(tokens1[i - 1]):
            chain.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif table[i - 1, j] >= table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return chain[::-1]


def choose_pair(examples, max_question=14, max_answer=22):
    """The Figure 5 pair: among correct answers (label 1) with a question of at most
    ``max_question`` and an answer of at most ``max_answer`` tokens, the one with the longest
    content-word exact-match chain (:func:`content_lcs`), ties to the shorter answer, then the
    first in the file.

    Returns:
        ``(example, chain)``. Raises ValueError: no pair with a chain of 2 or more.
    """
    best, best_key = None, None
    for index, example in enumerate(examples):
        q, a = example.text1.split(), example.text2.split()
        if example.label != 1 or len(q) > max_question or len(a) > max_answer:
            continue
        chain = content_lcs(q, a)
        key = (-len(chain), len(a), index)
        if best_key is None or key < best_key:
            best, best_key = (example, chain), key
    if best is None or len(best[1]) < 2:
        raise ValueError("no correct answer with an exact-match chain of 2 or more words")
    return best


def figure5(run_dir, record, about, out_dir, name="match_srnn_figure5"):
    """Match-SRNN Figure 5 from a trained WikiQA run on the dev pair of :func:`choose_pair`."""
    from re2_tf import runs
    from re2_tf.analysis import attention_maps, trace_path
    from re2_tf.runs import load_examples

    plt = pyplot()
    _, examples = load_examples(run_dir, "dev")
    example, chain = choose_pair(examples)
    model = runs.load_best_model(run_dir)
    units = int(model.get_layer("spatial_gru").units)
    weights = np.asarray(model.get_layer("score").kernel)[:units, 0]
    unit = int(np.argmax(np.abs(weights)))
    sign = 1.0 if weights[unit] >= 0 else -1.0
    maps = attention_maps(run_dir, example.text1, example.text2, dimension=unit)
    question, answer = maps.tokens["text1"], maps.tokens["text2"]
    h = sign * maps.arrays["h"]  # [question, answer]
    path = trace_path(maps.arrays["path_gates"])
    np.testing.assert_array_equal(path, maps.arrays["path"])
    matched = ", ".join(example.text1.split()[i] for i, _ in chain)
    caption = (
        f"Match-SRNN Figure 5 on a WikiQA dev pair (question {example.qid}, a correct answer; "
        f"chosen as the shortest pair with the longest exact-match chain of content words: "
        f"{matched}). Grey scale: sign(w) * h_ij of hidden "
        f"unit {unit}, the unit with the largest |weight| in the score (w = "
        f"{weights[unit]:+.3f}), brighter = larger; question (S1, i) across the top, answer "
        f"(S2, j) down the side; red: the path back-traced from the last cell through that "
        f"unit's largest gates (z_l, z_t, z_d of Eq. 3). Score of the pair "
        f"{maps.prediction['score']:.3f}. " + run_caption(record, about)
    )
    height = 0.36 * len(answer) + 4
    figure, ax = plt.subplots(figsize=(max(7.0, 0.42 * len(question) + 4), height))
    image = ax.imshow(h.T, cmap="gray", aspect="auto")
    ax.plot(path[:, 0], path[:, 1], color="red", linewidth=2, marker="o", markersize=3)
    ax.set_xticks(range(len(question)), question, rotation=90)
    ax.set_yticks(range(len(answer)), answer)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("question (S1, index i)")
    ax.set_ylabel("answer (S2, index j)")
    scale = f"sign(w) * h_ij, unit {unit} ({h.min():.2f} to {h.max():.2f})"
    figure.colorbar(image, ax=ax, label=scale)
    figure.suptitle(wrap(caption, 95), fontsize=7.5, y=0.995)
    figure.subplots_adjust(left=0.18, right=0.86, bottom=0.03, top=1 - 2.7 / height)
    data = {
        "run": record.to_json(),
        "question": question,
        "answer": answer,
        "qid": example.qid,
        "chain": [[int(i), int(j)] for i, j in chain],
        "unit": unit,
        "score_weights": weights.tolist(),
        "score": maps.prediction["score"],
        "h": h.tolist(),
        "path": path.tolist(),
    }
    return write_figure(out_dir, name, figure, data, caption)


def make(runs, out_dir):
    """Figure 5 from the ``match_srnn`` run."""
    run = RUNS[0]
    try:
        run_dir, record = need(runs, run.key, SET)
    except MissingRun as error:
        return [str(error)]
    return [figure5(run_dir, record, run.about, out_dir)]


SET = register(
    FigureSet(
        name="match_srnn",
        runs=RUNS,
        make=make,
        doc="Match-SRNN Figure 5 (interaction h_ij and the back-traced gate path)",
    )
)
