"""Match-SRNN's LCS simulation (Wan et al., IJCAI 2016, Sec. 5.1-5.2 and Figure 4).

The spatial GRU is degenerated to an exact-matching model: the neural tensor network is
replaced by the indicator ``s_ij = 1[x_i = y_j]``, the hidden size is 1 and the reset gates
are disabled; a linear score of the state at each pair's true corner is trained by
regression (squared error, Eq. 6) on the normalised length of the pairs' longest common
subsequence (LCS). The paper's claim: the learned ``h_ij`` reproduces the dynamic-programming
table ``c[i, j]`` (Eq. 7), and back-tracing from ``(m, n)`` along the largest gate recovers
the LCS path (Figure 4c).

Data (the paper gives the alphabet and the split sizes, not the lengths): sequences over the
ten symbols ``A``-``J``, each symbol uniform; each sequence's length drawn uniformly from
``--min_length`` .. ``--max_length`` (5 .. 10 by default; the paper's example is 5 x 5),
independently for the two sequences; 10,000 training and 1,000 test pairs. The target is
``LCS / --max_length`` by default (``--normalizer=max_length``: a fixed scale, so the target
is proportional to ``c[m, n]``, as the paper's analysis ``h_ij ~ c[i, j]`` assumes);
``--normalizer=longer`` / ``shorter`` divide by the pair's longer / shorter length instead.

Reported on the held-out pairs:

- ``mse``: mean squared error of the predicted normalised LCS (and ``mse_mean_baseline``,
  predicting the training mean, for scale);
- ``h_c_correlation``: Pearson correlation between the learned ``h_ij`` and ``c[i, j]`` over
  every true cell ``1 <= i <= m``, ``1 <= j <= n`` of every test pair, with ``h`` oriented
  by the sign of the score weight (negating ``h`` and every weight that reads it gives the
  same network, so the raw sign is arbitrary);
- ``valid_lcs_paths``: the share of pairs whose path back-traced from ``(m, n)`` by the
  largest gate is a valid LCS alignment of the true length (:func:`gate_backtrace`).

Training: the paper uses AdaGrad and does not give its learning rate. AdaGrad at 0.1 barely
moved in a 2,000-pair, 10-epoch trial (held-out MSE 0.0094 against 0.0096 for predicting the
mean), Adam at 0.02 fitted (0.0016 after 20 epochs), so Adam 0.02 is the default and
``--optimizer=adagrad`` remains.

It writes ``results.json``, ``figure4.png`` (the paper's three panels for ``ABCDE`` vs
``FACGD``), ``flags.txt`` (the run's flags) and the trained ``lcs_model.keras`` to
``--output_dir``::

    python -m re2_lab.experiments.lcs --output_dir=checkpoints/lcs
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SYMBOLS = "ABCDEFGHIJ"
NORMALIZERS = ("max_length", "longer", "shorter")
#: The paper's Figure 4 example.
FIGURE_PAIR = ("ABCDE", "FACGD")


# --------------------------------------------------------------------------- LCS itself
def lcs_table(x, y):
    """The dynamic-programming table of Eq. 7.

    Args:
        x, y: sequences (strings or lists) of lengths ``m``, ``n``.

    Returns:
        int ``[m + 1, n + 1]``: ``c[i, j]`` = LCS length of ``x[:i]`` and ``y[:j]``
        (1-based prefixes; row and column 0 are the zero boundary).
    """
    m, n = len(x), len(y)
    c = np.zeros((m + 1, n + 1), dtype=np.int64)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            c[i, j] = max(c[i, j - 1], c[i - 1, j], c[i - 1, j - 1] + (x[i - 1] == y[j - 1]))
    return c


def lcs_backtrace(x, y, table=None):
    """The dynamic-programming back-trace from ``(m, n)`` (Figure 4a's grey path).

    At ``(i, j)``: a match ``x_i = y_j`` steps to ``(i - 1, j - 1)``; otherwise to the larger
    of ``c[i - 1, j]`` (up; ties go up) and ``c[i, j - 1]`` (left).

    Returns:
        ``(path, matches)``: the visited cells ``(i, j)`` (1-based, from ``(m, n)`` until a
        boundary), and the matched cells in increasing order (an LCS: ``len(matches) ==
        c[m, n]``).
    """
    c = lcs_table(x, y) if table is None else table
    i, j = len(x), len(y)
    path, matches = [], []
    while i > 0 and j > 0:
        path.append((i, j))
        if x[i - 1] == y[j - 1]:
            matches.append((i, j))
            i, j = i - 1, j - 1
        elif c[i - 1, j] >= c[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return path, matches[::-1]


def gate_backtrace(gates, x, y):
    """Back-trace from ``(m, n)`` along the largest gate (the paper's Figure 4c).

    At ``(i, j)`` the three moves compete with the gates of the three terms of Eq. 7 they
    stand for (Sec. 5.1): left ``z_l`` (``c[i, j - 1]``), up ``z_t`` (``c[i - 1, j]``),
    diagonal ``z_d + z_i`` (``c[i - 1, j - 1] + 1[x_i = y_j]``); the largest wins (ties:
    diagonal, then left). A diagonal step at a cell with ``x_i = y_j`` is a match.

    Args:
        gates: float ``[m, n, 4]``, the normalised update gates ``(z_i, z_l, z_t, z_d)`` of
            each cell (0-based ``[i - 1, j - 1]``), e.g. from :func:`gates_from_grid`.
        x, y: the two sequences.

    Returns:
        ``(path, matches)`` as in :func:`lcs_backtrace`. The matches are always a common
        subsequence; the path is a valid LCS alignment when ``len(matches)`` equals the LCS
        length.
    """
    i, j = len(x), len(y)
    path, matches = [], []
    while i > 0 and j > 0:
        path.append((i, j))
        z_i, z_l, z_t, z_d = gates[i - 1, j - 1]
        moves = ((z_d + z_i, "diagonal"), (z_l, "left"), (z_t, "up"))
        move = max(moves, key=lambda item: item[0])[1]
        if move == "diagonal":
            if x[i - 1] == y[j - 1]:
                matches.append((i, j))
            i, j = i - 1, j - 1
        elif move == "left":
            j -= 1
        else:
            i -= 1
    return path, matches[::-1]


# --------------------------------------------------------------------------- data
def random_pairs(count, rng, min_length=5, max_length=10):
    """``count`` pairs of random strings over :data:`SYMBOLS` (uniform symbols; each length
    uniform in ``min_length .. max_length``, independently)."""
    if not 1 <= min_length <= max_length:
        raise ValueError(f"need 1 <= min_length <= max_length, got {min_length}, {max_length}")

    def one():
        length = int(rng.integers(min_length, max_length + 1))
        return "".join(rng.choice(list(SYMBOLS), size=length))

    return [(one(), one()) for _ in range(count)]


def targets(pairs, normalizer="max_length", max_length=10):
    """float32 ``[count]``: each pair's LCS length divided by ``max_length`` (``max_length``),
    the longer length (``longer``) or the shorter (``shorter``)."""
    if normalizer not in NORMALIZERS:
        raise ValueError(f"normalizer must be one of {NORMALIZERS}, got {normalizer!r}")
    out = []
    for x, y in pairs:
        scale = {
            "max_length": max_length,
            "longer": max(len(x), len(y)),
            "shorter": min(len(x), len(y)),
        }[normalizer]
        out.append(lcs_table(x, y)[-1, -1] / scale)
    return np.asarray(out, np.float32)


def encode(pairs, width):
    """Model inputs for ``pairs``: ``{"s": float32 [count, width, width, 1]`` with
    ``s_ij = 1[x_i = y_j]`` (0 on padding), ``"mask1"``, ``"mask2"``: float32
    ``[count, width]``}. Raises ValueError for a sequence longer than ``width``."""
    count = len(pairs)
    s = np.zeros((count, width, width, 1), np.float32)
    mask1 = np.zeros((count, width), np.float32)
    mask2 = np.zeros((count, width), np.float32)
    for b, (x, y) in enumerate(pairs):
        if len(x) > width or len(y) > width:
            raise ValueError(f"pair {b} ({x!r}, {y!r}) is longer than width {width}")
        xa, ya = np.array(list(x)), np.array(list(y))
        s[b, : len(x), : len(y), 0] = xa[:, None] == ya[None, :]
        mask1[b, : len(x)] = 1.0
        mask2[b, : len(y)] = 1.0
    return {"s": s, "mask1": mask1, "mask2": mask2}


# --------------------------------------------------------------------------- model
def build_lcs_model(width=None):
    """The degenerate Match-SRNN of Sec. 5.1: ``SpatialGRU(1, reset_gates=False)`` on
    ``s`` ``[batch, m, n, 1]`` with the two masks, then ``Dense(1)`` (Eq. 5) on the corner.

    Returns:
        ``keras.Model`` with inputs ``s``, ``mask1``, ``mask2`` and a float32 score
        ``[batch, 1]``; the scan is the layer named ``spatial_gru``.
    """
    import keras

    from re2_tf.layers import SpatialGRU

    s = keras.Input(shape=(width, width, 1), name="s")
    mask1 = keras.Input(shape=(width,), name="mask1")
    mask2 = keras.Input(shape=(width,), name="mask2")
    corner = SpatialGRU(1, reset_gates=False, name="spatial_gru")(s, mask1, mask2)
    score = keras.layers.Dense(1, name="score")(corner)
    return keras.Model({"s": s, "mask1": mask1, "mask2": mask2}, score, name="lcs_match_srnn")


def gates_from_grid(layer, s, grid):
    """The normalised update gates of every cell, recomputed from the layer's weights and
    its state grid (Eq. 3, ``H = 1``, no reset gates).

    Args:
        layer: the built ``SpatialGRU(1, reset_gates=False)``.
        s: float ``[batch, m, n, 1]``, the indicator inputs.
        grid: float ``[batch, m, n, 1]``, ``h_ij`` from ``layer(..., return_grid=True)``.

    Returns:
        float64 ``[batch, m, n, 4]``: ``(z_i, z_l, z_t, z_d)`` per cell (each row sums to 1).
    """
    h = np.pad(np.asarray(grid, np.float64), [[0, 0], [1, 0], [1, 0], [0, 0]])
    top, left, diagonal = h[:, :-1, 1:], h[:, 1:, :-1], h[:, :-1, :-1]
    q = np.concatenate([top, left, diagonal, np.asarray(s, np.float64)], axis=-1)
    logits = q @ np.asarray(layer.update_kernel, np.float64) + np.asarray(
        layer.update_bias, np.float64
    )
    logits -= logits.max(axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=-1, keepdims=True)


def analyse(model, pairs, width):
    """Predictions, grids, gates and the three held-out measures for ``pairs`` (one scan:
    the predictions are the score layer on the scan's corners).

    Returns:
        ``(measures, predictions, details)``: ``measures`` = ``{"h_c_correlation",
        "valid_lcs_paths", "pairs"}``; ``predictions`` float ``[len(pairs)]``; ``details``
        = per-pair dicts with ``x``, ``y``, ``prediction``, ``h`` ``[m, n]`` (oriented by
        the sign of the score weight, as ``h_c_correlation`` is), ``gates`` ``[m, n, 4]``,
        ``table``, ``gate_path``, ``gate_matches``, ``valid``.
    """
    inputs = encode(pairs, width)
    layer = model.get_layer("spatial_gru")
    # h -> -h (with the weights that read it negated) is the same network: orient h so that
    # a larger h means a larger score.
    sign = 1.0 if float(np.asarray(model.get_layer("score").kernel)[0, 0]) >= 0 else -1.0
    corner, grid = layer(inputs["s"], inputs["mask1"], inputs["mask2"], return_grid=True)
    predictions = np.asarray(model.get_layer("score")(corner))[:, 0]
    grid = np.asarray(grid)
    gates = gates_from_grid(layer, inputs["s"], grid)
    hs, cs, details, valid = [], [], [], 0
    for b, (x, y) in enumerate(pairs):
        m, n = len(x), len(y)
        table = lcs_table(x, y)
        path, matches = gate_backtrace(gates[b, :m, :n], x, y)
        ok = len(matches) == table[m, n]
        valid += ok
        hs.append(sign * grid[b, :m, :n, 0].ravel())
        cs.append(table[1:, 1:].ravel())
        details.append(
            dict(
                x=x,
                y=y,
                prediction=float(predictions[b]),
                h=sign * grid[b, :m, :n, 0],
                gates=gates[b, :m, :n],
                table=table,
                gate_path=path,
                gate_matches=matches,
                valid=bool(ok),
            )
        )
    h_all, c_all = np.concatenate(hs), np.concatenate(cs).astype(np.float64)
    correlation = float(np.corrcoef(h_all, c_all)[0, 1]) if h_all.std() > 0 else 0.0
    return (
        {
            "h_c_correlation": correlation,
            "valid_lcs_paths": valid / len(pairs),
            "pairs": len(pairs),
        },
        predictions,
        details,
    )


# --------------------------------------------------------------------------- figure
def plot_figure4(detail, path):
    """The paper's Figure 4 for one pair, as a PNG: (a) ``c[i, j]`` with the DP back-trace,
    (b) the learned ``h_ij`` with the gate back-trace, (c) the gates ``z_l / z_t / z_d + z_i``
    of each cell with the same path. Laid out as the paper's figure: ``S1`` (``x``, index
    ``i``) across the top, ``S2`` (``y``, index ``j``) down the side.

    Raises:
        ImportError: matplotlib is not installed (``pip install re2_tf[plot]``).
    """
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError(
            "the LCS figure needs matplotlib, an optional dependency of "
            "re2_tf: pip install 're2_tf[plot]' (or pip install -e '.[plot]' "
            "in a checkout)"
        ) from error

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, y = detail["x"], detail["y"]
    m, n = len(x), len(y)
    dp_path, _ = lcs_backtrace(x, y, detail["table"])
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2))
    panels = (
        ("(a) LCS table c[i, j] and DP back-trace", detail["table"][1:, 1:], dp_path, "{:.0f}"),
        ("(b) Match-SRNN h_ij and gate back-trace", detail["h"], detail["gate_path"], "{:.2f}"),
        ("(c) gates z_l / z_t / z_d+z_i", None, detail["gate_path"], None),
    )
    for ax, (title, values, trace, fmt) in zip(axes, panels):
        on_path = np.zeros((m, n), bool)
        for i, j in trace:
            on_path[i - 1, j - 1] = True
        ax.imshow(on_path.T, cmap="Greys", vmin=0, vmax=2.5)  # S1 across, S2 down
        for i in range(m):
            for j in range(n):
                if values is not None:
                    text = fmt.format(values[i, j])
                else:
                    z_i, z_l, z_t, z_d = detail["gates"][i, j]
                    text = f"{z_l:.2f}\n{z_t:.2f}\n{z_d + z_i:.2f}"
                ax.text(
                    i, j, text, ha="center", va="center", fontsize=9 if values is not None else 7
                )
        ax.set_xticks(range(m), list(x))
        ax.set_yticks(range(n), list(y))
        ax.xaxis.tick_top()
        ax.set_title(title, fontsize=10, pad=22)
    fig.suptitle(
        f"LCS simulation: {x} vs {y} (LCS length {detail['table'][m, n]}; model "
        f"output {detail['prediction']:.3f}, the normalised length)",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- run
def run(
    output_dir,
    train_pairs=10000,
    test_pairs=1000,
    min_length=5,
    max_length=10,
    normalizer="max_length",
    epochs=30,
    batch_size=128,
    optimizer="adam",
    lr=0.02,
    seed=1,
    verbose=0,
):
    """Generate the data, train, analyse, write ``results.json`` and ``figure4.png``.

    Returns:
        the results dict (also written to ``output_dir/results.json``).
    """
    import keras

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    train = random_pairs(train_pairs, rng, min_length, max_length)
    test = random_pairs(test_pairs, rng, min_length, max_length)
    y_train = targets(train, normalizer, max_length)
    y_test = targets(test, normalizer, max_length)
    model = build_lcs_model(max_length)
    optimizers = {"adagrad": keras.optimizers.Adagrad, "adam": keras.optimizers.Adam}
    model.compile(optimizer=optimizers[optimizer](learning_rate=lr), loss="mse", jit_compile=False)
    history = model.fit(
        encode(train, max_length),
        y_train,
        batch_size=batch_size,
        epochs=epochs,
        verbose=verbose,
        shuffle=True,
    )
    measures, predictions, _ = analyse(model, test, max_length)
    _, _, (figure,) = analyse(model, [FIGURE_PAIR], max_length)
    plot_figure4(figure, output_dir / "figure4.png")
    results = {
        "settings": dict(
            train_pairs=train_pairs,
            test_pairs=test_pairs,
            min_length=min_length,
            max_length=max_length,
            normalizer=normalizer,
            epochs=epochs,
            batch_size=batch_size,
            optimizer=optimizer,
            lr=lr,
            seed=seed,
        ),
        "train_loss_final": float(history.history["loss"][-1]),
        "mse": float(np.mean((predictions - y_test) ** 2)),
        "mse_mean_baseline": float(np.mean((y_train.mean() - y_test) ** 2)),
        **measures,
        "figure_pair": {
            "x": figure["x"],
            "y": figure["y"],
            "h": np.round(figure["h"], 4).tolist(),
            "lcs": int(figure["table"][-1, -1]),
            "gate_path": figure["gate_path"],
            "gate_matches": figure["gate_matches"],
            "dp_path": lcs_backtrace(*FIGURE_PAIR)[0],
            "valid": figure["valid"],
        },
    }
    (output_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    model.save(output_dir / "lcs_model.keras")
    return results


def main(argv):
    from absl import flags

    FLAGS = flags.FLAGS
    if len(argv) > 1:
        raise SystemExit(f"Unexpected arguments: {argv[1:]}")
    from re2_tf.cli.common import write_run_flags

    write_run_flags(FLAGS.output_dir, __name__)
    results = run(
        FLAGS.output_dir,
        FLAGS.train_pairs,
        FLAGS.test_pairs,
        FLAGS.min_length,
        FLAGS.max_length,
        FLAGS.normalizer,
        FLAGS.epochs,
        FLAGS.batch_size,
        FLAGS.optimizer,
        FLAGS.lr,
        FLAGS.seed,
        verbose=2 if FLAGS.progress else 0,
    )
    rows = [
        ("held-out MSE (normalised LCS)", f"{results['mse']:.5f}"),
        ("  predicting the training mean", f"{results['mse_mean_baseline']:.5f}"),
        ("Pearson r of h_ij vs c[i, j]", f"{results['h_c_correlation']:.4f}"),
        (
            "gate back-trace = an LCS",
            f"{results['valid_lcs_paths']:.3f} of {results['pairs']} pairs",
        ),
        (
            f"Figure 4 pair {'/'.join(FIGURE_PAIR)}",
            "valid LCS path" if results["figure_pair"]["valid"] else "not an LCS path",
        ),
    ]
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print(f"wrote results.json, figure4.png, flags.txt and lcs_model.keras to {FLAGS.output_dir}")


def define_flags():
    """The experiment's flags, defined only when it runs as a script."""
    from absl import flags

    flags.DEFINE_string("output_dir", "checkpoints/lcs", "Where results.json and figure4.png go.")
    flags.DEFINE_integer("train_pairs", 10000, "Training pairs (paper: 10,000).")
    flags.DEFINE_integer("test_pairs", 1000, "Held-out pairs (paper: 1,000).")
    flags.DEFINE_integer("min_length", 5, "Shortest sequence (not in the paper).")
    flags.DEFINE_integer("max_length", 10, "Longest sequence (not in the paper).")
    flags.DEFINE_enum(
        "normalizer",
        "max_length",
        list(NORMALIZERS),
        "Divide the LCS length by max_length, the longer or the shorter length.",
    )
    flags.DEFINE_integer("epochs", 30, "Passes over the training pairs.")
    flags.DEFINE_integer("batch_size", 128, "Pairs per update (the paper's Sec. 6.1).")
    flags.DEFINE_enum(
        "optimizer",
        "adam",
        ["adagrad", "adam"],
        "Optimiser (paper: AdaGrad; see the module docstring).",
    )
    flags.DEFINE_float("lr", 0.02, "Learning rate (the paper does not give it).")
    flags.DEFINE_integer("seed", 1, "Seed of the data, the initialisation and the shuffling.")
    flags.DEFINE_bool("progress", False, "Print Keras' per-epoch progress.")


if __name__ == "__main__":
    from absl import app

    define_flags()
    app.run(main)
