"""Training throughput records, their tables and the ring all-reduce scaling model
(re2_lab/throughput.py), checked against hand-worked figures; the README's and
docs/distributed.md's tables against the committed records (docs/runs/throughput/)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from re2_lab import throughput

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "runs" / "throughput"


def _record(model, mode, pairs, precision="none", batch=128, parameters=1_000_000):
    return {
        "model": model,
        "mode": mode,
        "mixed_precision": precision,
        "pairs_per_s": pairs,
        "seconds_per_update": batch / pairs,
        "batch_size": batch,
        "trainable_parameters": parameters,
        "allreduce_bytes": 4 * parameters,
    }


def test_ring_all_reduce_prediction_by_hand():
    # 2 s per update of 128 pairs on one host; 12.5 MB (10^8 bits) all-reduced per update.
    # 2 hosts at 10 Gbit/s: 2 / 2 + 2 * 1 / 2 * 1e8 / 1e10 = 1.01 s -> 126.73 pairs/s,
    # efficiency 126.73 / (2 * 64) = 0.990.
    pairs, efficiency = throughput.predict(2.0, 12_500_000, 2, 10, 128)
    assert pairs == pytest.approx(128 / 1.01)
    assert efficiency == pytest.approx(0.5 / 1.01 * 2)
    # 32 hosts at 100 Gbit/s: 2 / 32 + 2 * 31 / 32 * 1e8 / 1e11 = 0.0625 + 0.0019375
    pairs, efficiency = throughput.predict(2.0, 12_500_000, 32, 100, 128)
    assert pairs == pytest.approx(128 / 0.0644375)
    assert efficiency == pytest.approx(2.0 / 32 / 0.0644375)
    # one host: no all-reduce
    assert throughput.predict(2.0, 12_500_000, 1, 10, 128) == pytest.approx((64.0, 1.0))


def test_efficiency_table_by_hand():
    records = [
        _record("re2", "one_process", 60.0),
        _record("re2", "mirrored", 30.0),
        _record("re2", "two_workers", 36.0),
        _record("re2", "one_process", 20.0, precision="bf16"),
        _record("drcn", "one_process", 16.0, batch=64),
    ]
    lines = throughput.efficiency_table(records).splitlines()
    assert lines[0].startswith("| model | batch | 1 process (pairs/s) |")
    assert lines[0].endswith("| 1 process bf16 (pairs/s) |")
    # 30 / (2 * 60) = 0.25; 36 / (2 * 60) = 0.30
    assert lines[2] == "| re2 | 128 | 60.0 | 30.0 | 0.25 | 36.0 | 0.30 | 20.0 |"
    assert lines[3] == "| drcn | 64 | 16.0 | not measured | - | not measured | - | not measured |"
    # an XLA-compiled record adds its column; it is not the float32 one-process record
    records.append(dict(_record("re2", "one_process", 75.0), jit_compile=True))
    lines = throughput.efficiency_table(records).splitlines()
    assert lines[0].endswith("| 1 process bf16 (pairs/s) | 1 process, XLA-compiled (pairs/s) |")
    assert lines[2] == "| re2 | 128 | 60.0 | 30.0 | 0.25 | 36.0 | 0.30 | 20.0 | 75.0 |"
    assert lines[3].endswith("| not measured | not measured |")


def test_gpu_step_time_scales_by_the_peak_ratio():
    # a CPU at 50 GFLOP/s taking 2 s: the P100's 9.3 TFLOP/s takes 2 * 50e9 / 9.3e12 s
    assert throughput.gpu_step_time(2.0, 50e9) == pytest.approx(2.0 * 50e9 / 9.3e12)


def _recorded():
    records = throughput.load_records(RECORDS)
    if not records:
        pytest.skip("no throughput records committed")
    return records


def test_distributed_page_throughput_table_is_generated_from_the_records():
    table = throughput.efficiency_table(_recorded())
    assert table in (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")


def test_docs_tables_are_the_records_report():
    from re2_lab.cli.throughput import report

    machine = json.loads((RECORDS / "machine.json").read_text())
    text = (RECORDS / "throughput.md").read_text()
    assert _report_of_a_copy(report, machine) == text
    docs = (ROOT / "docs" / "distributed.md").read_text(encoding="utf-8")
    records = _recorded()
    assert throughput.scaling_table(records, machine["matmul_flops"]) in docs
    assert throughput.loopback_table(records) in docs


def _report_of_a_copy(report, machine):
    """``report`` of the committed records into a temporary copy (the committed file is the
    expected text)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(RECORDS / throughput.RECORDS, tmp)
        return report(tmp, machine["matmul_flops"])


def test_every_model_and_mode_is_recorded_on_one_cpu_in_one_run():
    records = _recorded()
    models = {r["model"] for r in records}
    assert models == {"re2", "drcn", "fitn", "match_srnn", "bert_matchlstm"}
    for model in models:
        for mode in throughput.MODES:
            assert (model, mode, "none") in {
                (r["model"], r["mode"], r["mixed_precision"]) for r in records
            }
    assert len({r["cpu"] for r in records}) == 1
    for r in records:
        assert r["updates"] >= 10 and r["pairs_per_s"] == pytest.approx(
            r["batch_size"] / r["seconds_per_update"]
        )
        assert r["allreduce_bytes"] == 4 * r["trainable_parameters"]


def snli_cut(shared_data, data, train):
    """A small SNLI directory at ``data``: the first ``train`` pairs of the SNLI dev file to
    train on, the next 64 as both dev and test."""
    data.mkdir()
    lines = (shared_data / "snli/re2_processed/dev.txt").read_text().splitlines()
    (data / "train.txt").write_text("\n".join(lines[:train]) + "\n")
    for split in ("dev", "test"):
        (data / f"{split}.txt").write_text("\n".join(lines[train : train + 64]) + "\n")
    return data


@pytest.mark.slow
def test_measure_runs_each_mode_and_resumes(tmp_path, shared_data):
    # Two timed updates of RE2 at its SNLI settings on a cut of the SNLI dev file, in one
    # process and in two local workers; measured twice, the second call measures nothing.
    data = snli_cut(shared_data, tmp_path / "snli", 600)
    modes = ("one_process", "two_workers")
    records = throughput.measure(
        ["re2"], data, tmp_path / "out", modes=modes, warmup=1, updates=2, jit_compile=(False, True)
    )
    # XLA-compiled training is measured in one process only
    assert [(r["model"], r["mode"], r["jit_compile"]) for r in records] == [
        ("re2", "one_process", False),
        ("re2", "two_workers", False),
        ("re2", "one_process", True),
    ]
    for r in records:
        assert r["updates"] == 2 and r["batch_size"] == 128 and r["pairs_per_s"] > 0
        # the run's one evaluation (it ends before its first scheduled one) is at the closing
        # update: 1 warm-up + 2 timed + 1, outside the timed ones
        assert r["evaluated_at_update"] == 4
        # the trainable parameters of RE2's SNLI architecture: 2,774,559 outside the
        # 300-d word embedding (whose rows depend on the vocabulary of the cut)
        embedding = r["trainable_parameters"] - 2_774_559
        assert embedding > 0 and embedding % 300 == 0
    again = throughput.measure(
        ["re2"], data, tmp_path / "out", modes=modes, jit_compile=(False, True)
    )
    assert again == records


def test_the_rate_reads_the_timed_updates_only():
    # stamps at the end of updates 1..6 (s): warm-up 2, timed 3 (updates 3, 4, 5: from 2.0 to
    # 5.0 s, 1 s each); update 6 ends with the run's evaluation (+7 s) and is not read
    times = [0.5, 2.0, 3.0, 4.0, 5.0, 12.0]
    assert throughput.timed_rate(times, 2, 3, 128) == (128.0, 1.0)
    assert throughput.timed_rate(times[:5], 2, 3, 64) == (64.0, 1.0)
    with pytest.raises(RuntimeError, match="5 updates were timed, 2 warm-up and 4 timed needed"):
        throughput.timed_rate(times[:5], 2, 4, 128)


def test_docs_prose_figures_follow_from_the_records():
    records = {
        (r["model"], r["mode"], r["mixed_precision"]): r
        for r in _recorded()
        if not r.get("jit_compile")
    }
    docs = " ".join((ROOT / "docs" / "distributed.md").read_text(encoding="utf-8").split())
    machine = json.loads((RECORDS / "machine.json").read_text())
    flops = machine["matmul_flops"]
    models = ["re2", "drcn", "fitn", "match_srnn", "bert_matchlstm"]
    one = {m: records[(m, "one_process", "none")] for m in models}
    bf16 = {
        m: records[(m, "one_process", "bf16")]["pairs_per_s"] / one[m]["pairs_per_s"]
        for m in models
    }
    assert f"RE2 trains at {bf16['re2']:.2f}x its float32 speed" in docs
    assert f"BERT+MatchLSTM at {bf16['bert_matchlstm']:.2f}x" in docs
    rest = [bf16[m] for m in ("drcn", "fitn", "match_srnn")]
    assert f"DRCN, FITN and Match-SRNN at {min(rest):.2f}-{max(rest):.2f}x" in docs
    seconds = [one[m]["seconds_per_update"] for m in models]
    ring = [one[m]["allreduce_bytes"] * 8 / 10e9 * 1e3 for m in models]  # ms, n = 2
    megabytes = [one[m]["allreduce_bytes"] / 1e6 for m in models]
    assert (
        f"({min(seconds):.1f}-{max(seconds):.1f} s per update against {min(ring):.1f}-"
        f"{max(ring):.0f} ms to all-reduce {min(megabytes):.1f}-{max(megabytes):.0f} MB"
    ) in docs

    def efficiency(model, n, link, seconds=None):
        r = one[model]
        t = r["seconds_per_update"] if seconds is None else seconds
        return throughput.predict(t, r["allreduce_bytes"], n, link, r["batch_size"])

    cpu = [m for m in models if m != "bert_matchlstm"]
    eight = [efficiency(m, 8, 10)[1] for m in cpu]
    thirty_two = [efficiency(m, 32, 10)[1] for m in cpu]
    assert f"8 hosts scale at {min(eight):.2f}-{max(eight):.2f}" in docs
    assert f"32 at {min(thirty_two):.2f}-{max(thirty_two):.2f} over 10 Gbit/s" in docs
    assert f"exception: {efficiency('bert_matchlstm', 8, 10)[1]:.2f} at 8" in docs
    gpu = {
        m: efficiency(m, 2, 10, throughput.gpu_step_time(one[m]["seconds_per_update"], flops))[1]
        for m in models
    }
    others = [gpu[m] for m in models if m != "match_srnn"]
    assert f"(efficiency {min(others):.2f}-{max(others):.2f} except Match-SRNN" in docs
    snli = 550_000 * 30
    assert f"about {snli / one['re2']['pairs_per_s'] / 3600:.0f} hours at the measured" in docs
    assert f"about {snli / efficiency('re2', 8, 10)[0] / 3600:.0f} hours on 8 hosts" in docs
    gpu_pairs = efficiency(
        "re2", 1, 10, throughput.gpu_step_time(one["re2"]["seconds_per_update"], flops)
    )[0]
    assert snli / gpu_pairs < 3600 and "under an hour on one GPU" in docs


@pytest.mark.skipif(shutil.which("lscpu") is None, reason="lscpu is not installed")
def test_cpu_features_are_lscpus_flags():
    # lscpu reads the CPU's flags on its own (util-linux), not through re2_tf's parser
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    (line,) = [line for line in out.splitlines() if line.startswith("Flags:")]
    flags = line.split(":", 1)[1].split()
    assert throughput.cpu_features() == [f for f in throughput.VECTOR_FEATURES if f in flags]
