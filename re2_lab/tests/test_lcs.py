"""Match-SRNN's LCS simulation (re2_lab.experiments.lcs): the dynamic-programming table against
a hand-worked table and brute force, both back-traces, the gates recomputed from the grid
against the NumPy reference cell, the inputs, and a short training run that must beat the
mean predictor and write the figure."""

import itertools
import json

import match_srnn_numpy_reference as ref
import numpy as np
import pytest
from weights import randomize_weights

from re2_lab.experiments import lcs

# Figure 4(a) of the paper, worked by hand: rows A B C D E, columns F A C G D.
FIGURE_TABLE = np.array(
    [
        [0, 1, 1, 1, 1],
        [0, 1, 1, 1, 1],
        [0, 1, 2, 2, 2],
        [0, 1, 2, 2, 3],
        [0, 1, 2, 2, 3],
    ]
)


def brute_force_lcs(x, y):
    """Longest subsequence of x that is also a subsequence of y, by enumeration."""

    def is_subsequence(sub, seq):
        it = iter(seq)
        return all(ch in it for ch in sub)

    for size in range(min(len(x), len(y)), 0, -1):
        if any(is_subsequence(c, y) for c in itertools.combinations(x, size)):
            return size
    return 0


def test_table_of_the_paper_example():
    table = lcs.lcs_table("ABCDE", "FACGD")
    assert table.shape == (6, 6)
    assert (table[0] == 0).all() and (table[:, 0] == 0).all()
    np.testing.assert_array_equal(table[1:, 1:], FIGURE_TABLE)


def test_table_matches_brute_force_on_every_prefix():
    rng = np.random.default_rng(0)
    for x, y in lcs.random_pairs(25, rng, 1, 7):
        table = lcs.lcs_table(x, y)
        for i in range(len(x) + 1):
            for j in range(len(y) + 1):
                assert table[i, j] == brute_force_lcs(x[:i], y[:j])


def test_dp_backtrace_is_an_lcs():
    path, matches = lcs.lcs_backtrace("ABCDE", "FACGD")
    assert matches == [(1, 2), (3, 3), (4, 5)]  # A, C, D
    assert path[0] == (5, 5) and path[-1] == (1, 2)
    rng = np.random.default_rng(1)
    for x, y in lcs.random_pairs(50, rng, 1, 9):
        _, matches = lcs.lcs_backtrace(x, y)
        assert len(matches) == lcs.lcs_table(x, y)[-1, -1]
        assert all(x[i - 1] == y[j - 1] for i, j in matches)
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(matches, matches[1:]))


def one_hot_gates(x, y):
    """Gates ``(z_i, z_l, z_t, z_d)`` that make the DP's choice at every cell: diagonal on a
    match, else up when ``c[i-1, j] >= c[i, j-1]``, else left."""
    table = lcs.lcs_table(x, y)
    gates = np.zeros((len(x), len(y), 4))
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            if x[i - 1] == y[j - 1]:
                gates[i - 1, j - 1] = [0.3, 0.1, 0.1, 0.5]  # diagonal z_d + z_i = 0.8
            elif table[i - 1, j] >= table[i, j - 1]:
                gates[i - 1, j - 1] = [0.1, 0.2, 0.6, 0.1]  # up
            else:
                gates[i - 1, j - 1] = [0.1, 0.6, 0.2, 0.1]  # left
    return gates


def test_gate_backtrace_follows_the_largest_gate():
    x, y = "ABCDE", "FACGD"
    path, matches = lcs.gate_backtrace(one_hot_gates(x, y), x, y)
    assert (path, matches) == lcs.lcs_backtrace(x, y)
    # z_i and z_d together stand for the diagonal term: 0.3 + 0.3 beats z_l = 0.4.
    gates = np.tile([0.3, 0.4, 0.0, 0.3], (3, 3, 1))
    path, matches = lcs.gate_backtrace(gates, "ABC", "ABC")
    assert path == [(3, 3), (2, 2), (1, 1)] and matches == [(1, 1), (2, 2), (3, 3)]
    # Always left: the path runs along the last row and matches nothing on the way.
    gates = np.tile([0.1, 0.7, 0.1, 0.1], (2, 3, 1))
    path, matches = lcs.gate_backtrace(gates, "AB", "ABB")
    assert path == [(2, 3), (2, 2), (2, 1)] and matches == []


def test_gates_from_grid_match_the_reference_cell():
    from re2_tf.layers import SpatialGRU

    layer = SpatialGRU(1, reset_gates=False)
    layer.build((None, None, None, 1))
    randomize_weights(layer, 4)
    pairs = [("ABCA", "CAB"), ("JJ", "AJJB")]
    inputs = lcs.encode(pairs, 5)
    _, grid = layer(inputs["s"], inputs["mask1"], inputs["mask2"], return_grid=True)
    got = lcs.gates_from_grid(layer, inputs["s"], np.asarray(grid))
    params = {w.name: w.numpy() for w in layer.weights}
    params.update(reset_kernel=None, reset_bias=None)
    for b, (x, y) in enumerate(pairs):
        s = inputs["s"][b, : len(x), : len(y)]
        table = ref.spatial_gru_pair(params, s)  # [m + 1, n + 1, 1]
        for i in range(1, len(x) + 1):
            for j in range(1, len(y) + 1):
                _, want = ref.gru_cell(
                    params, table[i - 1, j], table[i, j - 1], table[i - 1, j - 1], s[i - 1, j - 1]
                )
                np.testing.assert_allclose(got[b, i - 1, j - 1], np.concatenate(want), atol=1e-5)


def test_inputs_and_targets():
    inputs = lcs.encode([("ABA", "AB")], 4)
    np.testing.assert_array_equal(
        inputs["s"][0, :, :, 0], [[1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(inputs["mask1"], [[1, 1, 1, 0]])
    np.testing.assert_array_equal(inputs["mask2"], [[1, 1, 0, 0]])
    pairs = [("ABCDE", "FACGD"), ("AB", "ABBA")]
    np.testing.assert_allclose(lcs.targets(pairs, "max_length", 10), [0.3, 0.2])
    np.testing.assert_allclose(lcs.targets(pairs, "longer"), [0.6, 0.5])
    np.testing.assert_allclose(lcs.targets(pairs, "shorter"), [0.6, 1.0])
    with pytest.raises(ValueError, match="longer than width"):
        lcs.encode([("ABCDEF", "A")], 5)
    with pytest.raises(ValueError, match="normalizer"):
        lcs.targets(pairs, "mean")
    lengths = [
        len(x) for pair in lcs.random_pairs(200, np.random.default_rng(2), 5, 10) for x in pair
    ]
    assert min(lengths) == 5 and max(lengths) == 10
    assert set("".join(p[0] for p in lcs.random_pairs(50, np.random.default_rng(3)))) == set(
        lcs.SYMBOLS
    )


def test_short_training_run_beats_the_mean_and_writes_the_figure(tmp_path):
    pytest.importorskip("matplotlib", reason="the figure needs the [plot] extra")
    results = lcs.run(tmp_path, train_pairs=1000, test_pairs=100, epochs=6, seed=3)
    assert results["mse"] < results["mse_mean_baseline"]
    assert -1.0 <= results["h_c_correlation"] <= 1.0
    assert 0.0 <= results["valid_lcs_paths"] <= 1.0 and results["pairs"] == 100
    assert json.loads((tmp_path / "results.json").read_text())["mse"] == results["mse"]
    figure = (tmp_path / "figure4.png").read_bytes()
    assert figure[:8] == b"\x89PNG\r\n\x1a\n" and len(figure) > 10_000
    assert results["figure_pair"]["lcs"] == 3
    assert (tmp_path / "lcs_model.keras").exists()
    assert tuple(results["figure_pair"]["dp_path"][0]) == (5, 5)
