"""re2_lab.doc_tables: the README's and docs' tables generated from records, checked on
hand-written records whose tables are worked out here by hand."""

import json
from pathlib import Path

import pytest

from re2_lab import doc_tables


def _row(name, median_ms, mean_s, std_s, paper):
    return {
        "model": name,
        "params": 1000,
        "mean_s": mean_s,
        "std_s": std_s,
        "median_ms": median_ms,
        "p99_ms": median_ms + 2.0,
        "first_call_s": 0.5,
        "throughput_pairs_per_s": None,
        "peak_rss_mib": None,
        "paper": paper,
    }


def _record(export, medians, command):
    rows = [
        _row(f"RE2 {n} block{'s' * (n > 1)} ({export})", ms, ms / 1000 + 0.0001, 0.0002, s)
        for n, ms, s in zip((1, 2, 3), medians, (0.03, 0.04, 0.05))
    ]
    return {
        "command": command,
        "settings": {"batch": 8, "length": 20, "throughput_batch": 0},
        "cpu": "Test CPU",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-01-02",
        "rows": rows,
    }


@pytest.fixture
def records(tmp_path):
    (tmp_path / "a.json").write_text(
        json.dumps(_record("savedmodel, fp32, XLA", (2.5, 5.1, 8.1), "re2-bench"))
    )
    (tmp_path / "b.json").write_text(
        json.dumps(_record("tflite, int8", (1.3, 2.6, 4.1), "re2-bench --format=tflite"))
    )
    return tmp_path


def test_table5_puts_each_record_on_a_line_under_the_paper(records):
    table = doc_tables.generate("table5 a.json b.json", root=records)
    lines = table.splitlines()
    assert lines[0] == (
        "| export | RE2 1 block | RE2 2 blocks | RE2 3 blocks | RE2 3 blocks, mean ± std s/batch |"
    )
    assert lines[2] == "| paper Table 5 (Core i7 laptop, TF1) | 30 ms | 40 ms | 50 ms | |"
    assert lines[3] == "| savedmodel, fp32, XLA | 2.5 ms | 5.1 ms | 8.1 ms | 0.0082 ± 0.0002 |"
    assert lines[4] == "| tflite, int8 | 1.3 ms | 2.6 ms | 4.1 ms | 0.0042 ± 0.0002 |"
    assert lines[-1] == (
        "Measured on 2 cores of Test CPU (avx2), 2026-01-02: `re2-bench`; "
        "`re2-bench --format=tflite`."
    )


def test_bench_is_the_benchmark_table_then_the_machine(records):
    text = doc_tables.generate("bench b.json", root=records)
    lines = text.splitlines()
    assert lines[0].startswith("| model | params (w/o emb.) | mean ± std s/batch (8×20) |")
    assert lines[4] == (
        "| RE2 3 blocks (tflite, int8) | 1,000 | 0.0042 ± 0.0002 | 4.1 | 6.1 | 0.50 | — | — "
        "| 0.05 |"
    )
    assert lines[-1] == (
        "Measured on 2 cores of Test CPU (avx2), 2026-01-02: `re2-bench --format=tflite`."
    )


def test_update_rewrites_each_block_once_and_leaves_the_rest(records):
    page = records / "page.md"
    page.write_text(
        "intro\n<!-- generated: table5 a.json -->\nstale\n<!-- end generated -->\noutro\n"
    )
    assert doc_tables.update(page, root=records) == 1
    text = page.read_text()
    assert text.startswith("intro\n<!-- generated: table5 a.json -->\n| export |")
    assert text.endswith("`re2-bench`.\n<!-- end generated -->\noutro\n")
    assert "stale" not in text
    assert doc_tables.update(page, root=records) == 0
    ((spec, body),) = doc_tables.blocks(text)
    assert spec == "table5 a.json" and body.startswith("| export |")


def test_sweep_config_reads_grid_seeds_and_records(tmp_path):
    (tmp_path / "s.flags").write_text(
        "# comment\n--flagfile=x.flags\n--grid=a=1,2 | b=3\n--seeds=3\n--records=docs/runs/x\n"
    )
    assert doc_tables.sweep_config("s.flags", tmp_path) == ("a=1,2 | b=3", 3, "docs/runs/x")
    (tmp_path / "t.flags").write_text("--seeds=3\n")
    with pytest.raises(ValueError, match=r"t.flags: no --grid or --records line"):
        doc_tables.sweep_config("t.flags", tmp_path)


def test_a_sweep_block_can_name_its_columns(tmp_path):
    """`sweep <flagfile> <split>/<metric> ...` shows those metrics only, in that order; a
    metric no record has is named with the recorded ones."""
    (tmp_path / "s.flags").write_text("--grid=blocks=1,2\n--seeds=2\n--records=recs\n")
    for seed, (map_, mrr) in enumerate([(0.6, 0.7), (0.8, 0.9)], 1):
        run = tmp_path / "recs" / "blocks-1" / f"seed{seed}"
        run.mkdir(parents=True)
        splits = {"test": {"acc": 0.5, "map": map_, "mrr": mrr}, "dev": {"mrr": 0.1}}
        (run / "results.json").write_text(json.dumps({"best_step": seed, "splits": splits}))
    header, _, first, second = doc_tables.generate(
        "sweep s.flags test/mrr test/map", tmp_path
    ).splitlines()
    assert (
        header
        == "| cell | runs | test/mrr | test/map | best update | wall time (min) | CPU time (min) |"
    )
    # by hand: means 0.8 and 0.7, each with sample std sqrt(0.02 / 1) = 0.1414
    assert first == "| blocks=1 | 2/2 | 0.8000 ± 0.1414 | 0.7000 ± 0.1414 | 1, 2 |  |  |"
    assert second == "| blocks=2 | 0/2 |  |  |  |  |  |"
    everything = doc_tables.generate("sweep s.flags", tmp_path).splitlines()[0]
    assert "test/acc" in everything and "dev/mrr" in everything
    with pytest.raises(ValueError, match=r"no run recorded test/auc; recorded: test/acc"):
        doc_tables.generate("sweep s.flags test/auc", tmp_path)
    with pytest.raises(ValueError, match="unknown generated table 'sweep s.flags mrr'"):
        doc_tables.generate("sweep s.flags mrr", tmp_path)


def test_an_unknown_kind_is_named():
    with pytest.raises(ValueError, match="unknown generated table 'plot x'"):
        doc_tables.generate("plot x")


def test_a_roofline_block_is_the_reports_tables_and_its_command(tmp_path):
    import json

    record = {
        "command": "python -m re2_tf.benchmark --roofline",
        "cpu": "Some CPU",
        "cpu_features": [],
        "cpu_count": 2,
        "threads": 2,
        "units": {"float32": True, "bfloat16": False, "int8": False},
        "peaks": {"float32": 1e11, "bfloat16": None, "int8": None},
        "batch": 8,
        "length": 20,
        "throughput_batch": 512,
        "serving": [],
        "training": [],
    }
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert doc_tables.generate("roofline r.json", tmp_path).splitlines() == [
        "2 cores of Some CPU (vector units unknown); 2 threads; measured peak: float32 100 "
        "GFLOP/s, no bfloat16 units, no int8 units.",
        "",
        "| model | export | GFLOP per 8×20 batch | median ms | FLOP floor ms | sequential steps "
        "| dependency floor ms | × floor | pairs/s @ 512 | % of peak @ 512 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        "",
        "Command: `python -m re2_tf.benchmark --roofline`.",
    ]


def test_a_roofline_block_of_one_export_keeps_its_rows_and_drops_training(tmp_path):
    import json

    row = {
        "variant": "Net",
        "flops": 1e9,
        "median_ms": 20.0,
        "flop_floor_ms": 10.0,
        "sequential_steps": 0,
        "dependency_floor_ms": 0.0,
        "times_floor": 2.0,
        "bound": "FLOPs",
        "throughput_pairs_per_s": None,
        "percent_of_peak": None,
    }
    record = {
        "command": "c",
        "cpu": "Some CPU",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "threads": 2,
        "units": {"float32": True, "bfloat16": False, "int8": False},
        "peaks": {"float32": 1e11, "bfloat16": None, "int8": None},
        "batch": 8,
        "length": 20,
        "throughput_batch": 512,
        "serving": [dict(row, export="a"), dict(row, export="b", median_ms=30.0)],
        "training": [
            {
                "model": "net",
                "batch_size": 4,
                "length": 8,
                "flops_per_update": 1e9,
                "pairs_per_s": 1.0,
                "floor_pairs_per_s": 2.0,
                "percent_of_peak": 50.0,
            }
        ],
    }
    (tmp_path / "r.json").write_text(json.dumps(record))
    lines = doc_tables.generate("roofline r.json b", tmp_path).splitlines()
    assert lines[4:] == [
        "| Net | b | 1.000 | 30.0 | 10.0 | 0 | — | 2.0 (FLOPs) | — | — |",
        "",
        "Command: `c`.",
    ]
    assert len(doc_tables.generate("roofline r.json", tmp_path).splitlines()) == 12


def _runtimes_record():
    """A runtimes record (re2_lab.runtimes.report's schema) worked by hand: one model, two
    shapes; the default path is ONNX Runtime at 8x20 and OpenVINO bf16 at 512x20."""

    def row(batch, runtime, conversion, median_ms=None, dp=None, spread=None, argmax=None, ok=None):
        return {
            "model": "Net",
            "runtime": runtime,
            "precision": "bf16" if runtime.endswith("bf16") else "f32",
            "batch": batch,
            "length": 20,
            "conversion": conversion,
            "median_ms": median_ms,
            "max_abs_dp": dp,
            "dp_over_spread": spread,
            "argmax_agreement": argmax,
            "agrees": ok,
        }

    floors = {
        "8x20": {
            "flops": 1e9,
            "flop_floor_ms": {"float32": 5.0, "bfloat16": 2.5},
            "sequential_steps": 0,
            "dependency_floor_ms": 0.0,
        },
        "512x20": {
            "flops": 64e9,
            "flop_floor_ms": {"float32": 320.0, "bfloat16": 160.0},
            "sequential_steps": 40,
            "dependency_floor_ms": 400.0,
        },
    }
    choice = {
        "reason": "per timed batch, the fastest that agrees: ...",
        "pairs": 512,
        "candidates": [
            {
                "backend": "savedmodel",
                "precision": "f32",
                "label_agreement": 1.0,
                "max_abs_dp": 0.0,
            },
            {
                "backend": "onnxruntime",
                "precision": "f32",
                "label_agreement": 1.0,
                "max_abs_dp": 2e-7,
            },
            {
                "backend": "openvino",
                "precision": "bf16",
                "label_agreement": 0.998,
                "max_abs_dp": 2e-3,
            },
            {"backend": "openvino", "precision": "f32", "error": "failed: Loop"},
        ],
    }
    return {
        "command": "python -m re2_lab.cli.runtimes",
        "date": "2026-01-02",
        "cpu": "Some CPU",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "threads": 2,
        "shapes": [[8, 20], [512, 20]],
        "batches": 100,
        "rounds": 2,
        "versions": {"openvino": "1.0", "onnxruntime": "2.0", "onnx": None},
        "loadavg": [0.5, 1.25],
        "models": [
            {
                "model": "Net",
                "xla_export_openvino": "failed: LowerBound",
                "default": {"8x20": "onnxruntime", "512x20": "openvino bf16"},
                "floors": floors,
                "serving_choice": choice,
            }
        ],
        "rows": [
            row(8, "savedmodel (XLA)", "—", 10.0, 0.0, 0.0, 1.0, True),
            row(8, "savedmodel bf16 (xla=False)", "—", 7.0, 1e-3, 0.1, 1.0, True),
            row(8, "tflite", "failed: tf.StridedSlice"),
            row(8, "onnxruntime", "ok", 6.0, 2e-7, 0.01, 1.0, True),
            row(8, "openvino bf16", "ok", 5.0, 2e-3, 1.04, 0.96875, False),
            row(512, "savedmodel (XLA)", "—", 1000.0, 0.0, 0.0, 1.0, True),
            row(512, "savedmodel bf16 (xla=False)", "—", 880.0, 1e-3, 0.1, 1.0, True),
            row(512, "tflite", "failed: tf.StridedSlice"),
            row(512, "onnxruntime", "ok", 900.0, 2e-7, 0.01, 1.0, True),
            row(512, "openvino bf16", "ok", 800.0, 1e-3, 0.2, 0.998, True),
        ],
    }


def test_a_runtimes_table_puts_the_default_first_beside_the_fastest_and_the_floor(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(_runtimes_record()))
    header = (
        "2 cores of Some CPU (avx2), 2026-01-02; 2 thread(s); batches 8×20 and 512×20; per path "
        "the least of 2 round(s)' medians (each round a fresh process per path, in turn; 100 "
        "batches at batch ≤ 64 and 5 above, cycling the first 4 batches of the Table 5 inputs); "
        "1-minute load average 0.5 → 1.2 (at the start and "
        "after each model); the SavedModel paths on TensorFlow's intra-op + inter-op threads "
        "2 + 1 (Net). Versions: openvino 1.0, onnxruntime 2.0."
    )
    assert doc_tables.generate("runtimes r.json table", tmp_path).splitlines() == [
        header,
        "",
        "| model | batch | **default** (path) | SavedModel XLA | SavedModel bf16 rewrite no XLA | "
        "TFLite | ONNX Runtime | OpenVINO bf16 | default ÷ fastest | SavedModel ÷ fastest | "
        "floor ms (bound) | default × floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        # 8x20: OpenVINO bf16 is faster but wrong, so ONNX Runtime (6.0) is the fastest that
        # agrees; the fastest SavedModel is the bf16 one, 7.0 / 6.0 = 1.17; the floor is the
        # bfloat16 FLOP floor 2.5 ms; 6.0 / 2.5 = 2.4
        "| Net | 8×20 | **6.0** (ONNX Runtime) | 10.0 | 7.0 | fails | 6.0 | wrong (0.9688) | "
        "1.00 | 1.17 | 2.50 (bfloat16 FLOPs) | 2.4 |",
        # 512x20: 880 / 800 = 1.10; the dependency floor 400 ms exceeds the FLOP floors;
        # 800 / 400 = 2.0
        "| Net | 512×20 | **800.0** (OpenVINO bf16) | 1000.0 | 880.0 | fails | 900.0 | 800.0 | "
        "1.00 | 1.10 | 400.00 (dependency) | 2.0 |",
        "",
        "Command: `python -m re2_lab.cli.runtimes`.",
    ]
    lines = doc_tables.generate("runtimes r.json", tmp_path).splitlines()
    assert lines[0] == header
    assert (
        lines[4] == "| Net | 8×20 | savedmodel (XLA) | — | 10.00 | 1.00 | — | — | — | reference |"
    )
    assert lines[8] == (
        "| Net | 8×20 | openvino bf16 | ok | 5.00 | 0.50 | 2.0e-03 | 1.04 | 0.9688 | **no** |"
    )
    assert lines[9] == (
        "| Net | 512×20 | savedmodel (XLA) | — | 1000.00 | 1.00 | — | — | — | reference |"
    )
    assert lines[-3:] == [
        "The default (XLA) export through OpenVINO's converter: Net: failed: LowerBound.",
        "",
        "Command: `python -m re2_lab.cli.runtimes`.",
    ]
    with pytest.raises(ValueError, match="unknown generated table"):
        doc_tables.generate("runtimes r.json extra", tmp_path)
    # a record whose paths were timed on fresh draws says so (one without the key cycled)
    (tmp_path / "r.json").write_text(json.dumps(dict(_runtimes_record(), inputs="drawn")))
    drawn = doc_tables.generate("runtimes r.json table", tmp_path).splitlines()[0]
    assert drawn == header.replace(
        "cycling the first 4 batches of the Table 5 inputs",
        "each a fresh draw of the Table 5 inputs, the same draws for every path (a "
        "packed-pair model's first 4 batches cycled)",
    )


def test_a_brief_runtimes_table_dates_each_variants_rows_in_place_of_the_redo_history(tmp_path):
    record = _runtimes_record()
    other = json.loads(json.dumps(record["models"][0]))
    other["model"] = "Other"
    other["tf_threads"] = [1, 2]  # measured since the serving choice keeps its threads
    record["models"].append(other)
    record["rows"] += [dict(row, model="Other") for row in record["rows"]]
    record["redone"] = [
        {"model": "Other", "date": "2026-01-03", "reason": "a first reason"},
        {"model": "Other", "date": "2026-01-05", "reason": "a second reason"},
    ]
    (tmp_path / "r.json").write_text(json.dumps(record))
    full = doc_tables.generate("runtimes r.json table", tmp_path).splitlines()
    brief = doc_tables.generate("runtimes r.json table brief", tmp_path).splitlines()
    assert "Other measured again on 2026-01-05 (`--redo`: a second reason)" in full[0]
    assert "reason" not in brief[0] and "--redo" not in brief[0]
    # the record's own date for Net, the later of Other's two redos for Other
    assert brief[0].endswith(
        "(at the start and after each model); the SavedModel paths on TensorFlow's intra-op + "
        "inter-op threads 2 + 1 (Net); 1 + 2, as served (Other); each variant's rows from one "
        "run: Other on 2026-01-05; Net on 2026-01-02. Versions: openvino 1.0, onnxruntime 2.0."
    )
    assert brief[1:] == full[1:]
    # one date for every variant: nothing to add
    record["redone"] = []
    (tmp_path / "r.json").write_text(json.dumps(record))
    lines = doc_tables.generate("runtimes r.json table brief", tmp_path).splitlines()
    assert lines[0].endswith(
        "(at the start and after each model); the SavedModel paths on TensorFlow's intra-op + "
        "inter-op threads 2 + 1 (Net); 1 + 2, as served (Other). Versions: openvino 1.0, "
        "onnxruntime 2.0."
    )


def test_a_runtimes_standing_counts_the_shapes_where_the_default_is_fastest(tmp_path):
    record = _runtimes_record()
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert doc_tables.generate("runtimes r.json standing", tmp_path).splitlines() == [
        "- The default is the fastest path that agrees, or within 5% of it, at 2 of 2 "
        "model-shapes.",
        "- The fastest SavedModel runtime the variant's run timed is within 1.2× of the fastest "
        "path at 2 of 2 model-shapes.",
        "- The default over its floor at 8×20: Net 2.4× (bfloat16 FLOPs, 2.50 ms).",
    ]
    record["rows"][0]["round_medians_ms"] = [10.0, 25.0]
    record["rows"][3]["round_medians_ms"] = [6.0, 6.6]
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert doc_tables.generate("runtimes r.json standing", tmp_path).splitlines()[3] == (
        "- Between rounds, a path's median moved by up to 2.50× (Net, 8×20, savedmodel (XLA): "
        "10.00, 25.00 ms)."
    )
    # the default 10 % behind the fastest at 512x20: named, with both times
    record["rows"][8]["median_ms"] = 720.0  # ONNX Runtime, agreeing: now the fastest
    (tmp_path / "r.json").write_text(json.dumps(record))
    standing = doc_tables.generate("runtimes r.json standing", tmp_path).splitlines()
    assert standing[:2] == [
        "- The default is the fastest path that agrees, or within 5% of it, at 1 of 2 "
        "model-shapes; not at Net at 512×20: default openvino bf16 800.00 ms, fastest "
        "onnxruntime 720.00 ms (1.11×).",
        # 880 / 720 = 1.22
        "- The fastest SavedModel runtime the variant's run timed is within 1.2× of the fastest "
        "path at 1 of 2 model-shapes; not at Net 512×20 1.22× (savedmodel bf16 (xla=False) "
        "against onnxruntime).",
    ]
    # with the two paths' rounds (timed in turn), the difference round by round and its 95 %
    # interval, worked by hand: differences 80 and 100 ms, mean 90, standard error
    # 14.142 / sqrt(2) = 10, t(0.975, 1 degree of freedom) = 12.706 from tables
    record["rows"][9]["round_medians_ms"] = [800.0, 840.0]
    record["rows"][8]["round_medians_ms"] = [720.0, 740.0]
    (tmp_path / "r.json").write_text(json.dumps(record))

    def first_line():
        return doc_tables.generate("runtimes r.json standing", tmp_path).splitlines()[0]

    assert first_line().endswith(
        "fastest onnxruntime 720.00 ms (1.11×); round by round, default − fastest +90.00 ms, "
        "95 % interval -37.06 to +217.06 ms at n = 2 rounds: no difference detected."
    )
    # differences 80, 84, 82: mean 82, s = 2, standard error 2 / sqrt(3) = 1.1547,
    # t(0.975, 2) = 4.3027: half-width 4.968
    record["rows"][9]["round_medians_ms"] = [800.0, 810.0, 805.0]
    record["rows"][8]["round_medians_ms"] = [720.0, 726.0, 723.0]
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert first_line().endswith(
        "round by round, default − fastest +82.00 ms, 95 % interval +77.03 to +86.97 ms at "
        "n = 3 rounds: the default is slower."
    )
    # rounds that do not pair (a path timed in more rounds than the other): no interval
    record["rows"][8]["round_medians_ms"] = [720.0, 725.0]
    (tmp_path / "r.json").write_text(json.dumps(record))
    assert first_line().endswith("fastest onnxruntime 720.00 ms (1.11×).")
    # a default the record has no time for (its labels fail the rule on the record's pairs,
    # or it did not run there): said in words, not as a time
    wrong = json.loads(json.dumps(record))
    wrong["rows"][9].update(agrees=False, argmax_agreement=0.9805)  # OpenVINO bf16 at 512x20
    (tmp_path / "r.json").write_text(json.dumps(wrong))
    assert doc_tables.generate("runtimes r.json standing", tmp_path).splitlines()[0] == (
        "- The default is the fastest path that agrees, or within 5% of it, at 1 of 2 "
        "model-shapes; not at Net at 512×20: default openvino bf16, whose labels equal the "
        "reference's on 0.9805 of the record's pairs only (the rule: 0.99); fastest onnxruntime "
        "720.00 ms."
    )
    wrong["rows"][9].update(median_ms=None, conversion="failed: SIGSEGV")
    (tmp_path / "r.json").write_text(json.dumps(wrong))
    assert "default openvino bf16, which did not run in the record's run (failed: SIGSEGV); " in (
        doc_tables.generate("runtimes r.json standing", tmp_path)
    )
    # a variant measured before the bf16 SavedModel was a path: "—" in its cells, and its
    # fastest SavedModel is the one it timed (1000 / 720 = 1.39)
    record["rows"] = [r for r in record["rows"] if r["runtime"] != "savedmodel bf16 (xla=False)"]
    record["rows"].append(dict(record["rows"][0], runtime="savedmodel bf16 (xla=False)"))
    record["rows"] = [r for r in record["rows"] if r["runtime"] != "savedmodel bf16 (xla=False)"
                      or r["batch"] == 8]  # fmt: skip
    record["rows"][-1].update(median_ms=7.0)
    (tmp_path / "r.json").write_text(json.dumps(record))
    table = doc_tables.generate("runtimes r.json table", tmp_path).splitlines()
    assert table[5].startswith("| Net | 512×20 | **800.0** (OpenVINO bf16) | 1000.0 | — | fails |")
    assert table[5].split(" | ")[9] == "1.39"


def test_an_agreement_block_lists_each_runtime_of_each_run(tmp_path):
    record = {
        "command": "python agreement.py a=b",
        "cpu": "Some CPU",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-01-02",
        "runs": [
            {
                "run": "docs/runs/x/seed1",
                "model": "re2",
                "pairs": 1000,
                "candidates": [
                    {"backend": "onnxruntime", "precision": "f32", "error": "failed: Erfc"},
                    {"backend": "openvino", "precision": "bf16", "label_agreement": 0.997,
                     "max_abs_dp": 0.014},
                ],
            }
        ],
    }  # fmt: skip
    (tmp_path / "a.json").write_text(json.dumps(record))
    assert doc_tables.generate("agreement a.json", tmp_path).splitlines() == [
        "| run | model | dev pairs | runtime | labels as the SavedModel's | max abs Δp |",
        "|---|---|---:|---|---:|---:|",
        "| `docs/runs/x/seed1` | re2 | 1,000 | onnxruntime f32 | failed: Erfc | — |",
        "| `docs/runs/x/seed1` | re2 | 1,000 | openvino bf16 | 0.9970 | 1.4e-02 |",
        "",
        "2 cores of Some CPU (avx2), 2026-01-02. Command: `python agreement.py a=b`.",
    ]
    record["runs"][0]["date"] = "2026-01-05"  # measured again (--redo)
    (tmp_path / "a.json").write_text(json.dumps(record))
    assert doc_tables.generate("agreement a.json", tmp_path).splitlines()[-1] == (
        "2 cores of Some CPU (avx2), 2026-01-02; `docs/runs/x/seed1` measured again on "
        "2026-01-05. Command: `python agreement.py a=b`."
    )


def test_a_core_install_block_gives_each_batchs_default_beside_every_candidate(tmp_path):
    def row(backend, precision, small, large, agreement=1.0, dp=0.0):
        return {"backend": backend, "precision": precision,
                "median_ms": {"8x20": small, "512x20": large},
                "label_agreement": agreement, "max_abs_dp": dp}  # fmt: skip

    choice = {
        "shapes": [[8, 20], [512, 20]],
        "routes": [
            {"batch": 8, "backend": "tflite", "precision": "f32"},
            {"batch": 512, "backend": "savedmodel_bf16", "precision": "bf16"},
        ],
        "pairs": 1000,
        "candidates": [
            row("savedmodel", "f32", 10.0, 400.0),
            row("savedmodel_noxla", "f32", 12.0, 300.0),
            {"backend": "savedmodel_noxla", "precision": "bf16", "error": "failed: X"},
            row("savedmodel_bf16", "bf16", 11.0, 100.0, 0.999, 0.0023),
            row("tflite", "f32", 8.0, 500.0, 1.0, 3e-07),
        ],
    }
    record = {
        "command": "python core_install.py a=b",
        "cpu": "Some CPU",
        "cpu_features": ["avx512_bf16"],
        "cpu_count": 2,
        "versions": {"tensorflow": "2.21.0", "ai-edge-litert": "2.3.0"},
        "runs": [
            {"run": "docs/runs/x", "model": "re2", "date": "2026-01-02",
             "loadavg": [0.5, 1.25], "serving_choice": choice,
             "export_seconds": {"--serving=savedmodel": 30.4, "default": 199.6}},
        ],
    }  # fmt: skip
    (tmp_path / "c.json").write_text(json.dumps(record))
    lines = doc_tables.generate("core-install c.json", tmp_path).splitlines()
    # a column per path some run measured, none for the bf16 XLA twin no run had
    assert lines[0].split(" | ")[3:8] == [
        "savedmodel (XLA)",
        "savedmodel (xla=False)",
        "savedmodel bf16 (xla=False)",
        "savedmodel bf16 export (xla=False)",
        "tflite",
    ]
    assert lines[2:4] == [
        "| `docs/runs/x` | 8×20 | **8.0** (tflite) | 10.0 | 12.0 | fails | 11.0 | 8.0 | 0.80 | "
        "1.0000 (3.0e-07) |",
        "| `docs/runs/x` | 512×20 | **100.0** (savedmodel bf16 export (xla=False)) | 400.0 | "
        "300.0 | fails | 100.0 | 500.0 | 0.25 | 0.9990 (2.3e-03) |",
    ]
    assert lines[-1] == (
        "2 cores of Some CPU (avx512_bf16); `docs/runs/x` 2026-01-02 (load average 0.5 → 1.25, "
        "1,000 dev pairs; `re2-export` 200 s, with `--serving=savedmodel` 30 s). Versions: "
        "tensorflow 2.21.0, ai-edge-litert 2.3.0. Command (in a core install): "
        "`python core_install.py a=b`."
    )


def test_an_export_cost_block_sets_each_rounds_two_revisions_side_by_side(tmp_path):
    def timed(seconds, processes, large, date, load):
        routes = [
            {"batch": 8, "backend": "savedmodel", "precision": "f32"},
            {"batch": 512, "backend": large[0], "precision": large[1]},
        ]
        return {"seconds": seconds, "processes": processes, "routes": routes, "date": date,
                "loadavg": load}  # fmt: skip

    bf16 = ("savedmodel_bf16", "bf16")
    record = {
        "command": "python export_cost.py --before=aaaaaaa --rounds=2 x=docs/runs/x",
        "cpu": "Some CPU",
        "cpu_features": ["avx512_bf16"],
        "cpu_count": 2,
        "versions": {"tensorflow": "2.21.0"},
        "revisions": {"before": "a" * 40, "after": "b" * 40},
        "runs": {
            "docs/runs/x": {"run_dir": "x", "model": "re2", "rounds": [
                {"before": timed(200.0, 28, bf16, "d1", [0.5, 1.5]),
                 "after": timed(150.0, 18, ("savedmodel_noxla", "bf16"), "d2", [1.5, 1.25])},
                {"before": timed(240.0, 28, bf16, "d3", [1.0, 2.0])},  # left half done
            ]},
        },
    }  # fmt: skip
    (tmp_path / "c.json").write_text(json.dumps(record))
    lines = doc_tables.generate("export-cost c.json", tmp_path).splitlines()
    assert len(lines) == 5 and lines[2] == (
        "| `docs/runs/x` | 1 | 200 (28) | 150 (18) | 0.75 | savedmodel (XLA) / savedmodel bf16 "
        "export (xla=False) | savedmodel (XLA) / savedmodel bf16 (xla=False) |"
    )
    assert lines[-1] == (
        "2 cores of Some CPU (avx512_bf16); before = aaaaaaa, after = bbbbbbb; round 1 before "
        "d1 (load average 0.5 → 1.5); round 1 after d2 (load average 1.5 → 1.25). Versions: "
        "tensorflow 2.21.0. Command (in a core install): "
        "`python export_cost.py --before=aaaaaaa --rounds=2 x=docs/runs/x`."
    )


def test_a_figure_rule_block_lists_each_export_and_counts_each_revisions_choices(tmp_path):
    def export(revision, date, f32, bf16, seconds, processes, threads, large):
        routes = [
            {"batch": 8, "backend": "openvino", "precision": "bf16"},
            {"batch": 512, "backend": large, "precision": "bf16"},
        ]
        return {"revision": revision, "date": date, "seconds": seconds, "processes": processes,
                "peaks_before": {"float32": f32, "bfloat16": bf16, "int8": None},
                "tf_threads": threads, "routes": routes}  # fmt: skip

    record = {
        "command": "python figure_rule.py --before=aaaaaaa --repeats=2 run",
        "cpu": "Some CPU",
        "cpu_features": ["avx512_bf16"],
        "cpu_count": 2,
        "versions": {"python": "3.12", "tensorflow": "2.21.0", "onnx": None},
        "revisions": {"before": "a" * 40, "after": "b" * 40},
        "run": {"run_dir": "run", "model": "re2", "results": {}},
        "exports": [
            export("before", "2026-01-02 10:05 UTC", 2.9e11, 1.11e12, 200.4, 32, [2, 2],
                   "openvino"),
            export("after", "2026-01-02 10:09 UTC", 3.0e11, 6.5e11, 230.6, 40, [2, 1],
                   "openvino"),
            export("before", "2026-01-02 10:13 UTC", 2.2e11, 1.639e12, 190.0, 36, [2, 2],
                   "savedmodel_bf16"),
            export("after", "2026-01-02 10:17 UTC", 3.0e11, None, 250.0, 40, [2, 1],
                   "openvino"),
        ],
    }  # fmt: skip
    (tmp_path / "f.json").write_text(json.dumps(record))
    lines = doc_tables.generate("figure-rule f.json", tmp_path).splitlines()
    assert len(lines) == 8
    assert lines[2] == (
        "| 1 | before | 10:05 | 290 / 1,110 | 200 | 32 | 2 + 2: openvino bf16 / openvino bf16 |"
    )
    assert lines[4] == (
        "| 3 | before | 10:13 | 220 / 1,639 | 190 | 36 | 2 + 2: openvino bf16 / savedmodel bf16 "
        "export (xla=False) |"
    )
    assert (
        lines[5]
        == "| 4 | after | 10:17 | 300 / – | 250 | 40 | 2 + 1: openvino bf16 / openvino bf16 |"
    )
    assert lines[-1] == (
        "before (aaaaaaa): 2 exports, 190–200 s, 2 different choices; after (bbbbbbb): 2 "
        "exports, 231–250 s, one choice in all. 2 cores of Some CPU (avx512_bf16), 2026-01-02; "
        "run `run` "
        "(re2). Versions: tensorflow 2.21.0. Command: "
        "`python figure_rule.py --before=aaaaaaa --repeats=2 run`."
    )


def test_a_bf16_parts_block_lists_each_precision_of_the_two_parts(tmp_path):
    # the first row is a record's from before the non-finite count and compiles were kept: "—"
    record = {
        "command": "python bf16_parts.py",
        "cpu": "Some CPU",
        "cpu_features": ["avx512_bf16"],
        "cpu_count": 2,
        "date": "2026-01-02",
        "run": "docs/runs/q",
        "pairs": 1000,
        "batch": 64,
        "rows": [
            {"parts": 2, "encoder": "bf16", "match_lstm": "f32", "label_agreement": 0.997,
             "max_abs_dp": 0.00208},
            {"parts": 1, "encoder": "bf16", "match_lstm": "bf16", "label_agreement": 0.786,
             "max_abs_dp": 0.29, "non_finite_pairs": 3, "compile": 2},
        ],
    }  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(record))
    assert doc_tables.generate("bf16_parts p.json", tmp_path).splitlines() == [
        "| OpenVINO IR | BERT encoder | MatchLSTM and what follows | labels as the SavedModel's "
        "| compile | max abs Δp (finite pairs) | pairs not finite |",
        "|---|---|---|---:|---:|---:|---:|",
        "| two parts | bf16 | f32 | 0.9970 | — | 2.1e-03 | — |",
        "| whole | bf16 | bf16 | 0.7860 | 2 | 2.9e-01 | 3 |",
        "",
        "`docs/runs/q`, 1,000 dev pairs in batches of 64. 2 cores of Some CPU (avx512_bf16), "
        "2026-01-02. Command: `python bf16_parts.py`.",
    ]


def test_a_runtimes_order_and_choices_list_each_models_paths(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(_runtimes_record()))
    assert doc_tables.generate("runtimes r.json order", tmp_path).splitlines() == [
        "- Net, 8×20: **onnxruntime 6.00** < savedmodel bf16 (xla=False) 7.00 < savedmodel "
        "(XLA) 10.00 ms (default: place 1 of 3); wrong outputs: openvino bf16; not converted: "
        "tflite (failed: tf.StridedSlice).",
        "- Net, 512×20: **openvino bf16 800.00** < savedmodel bf16 (xla=False) 880.00 < "
        "onnxruntime 900.00 < savedmodel (XLA) 1000.00 ms (default: place 1 of 4); not "
        "converted: tflite (failed: tf.StridedSlice).",
    ]
    assert doc_tables.generate("runtimes r.json choices", tmp_path) == (
        "- Net: per timed batch, the fastest that agrees: .... Labels the same as the "
        "SavedModel's on 512 pairs: savedmodel (XLA) 1.0000 (max |Δp| 0.0e+00); onnxruntime "
        "1.0000 (max |Δp| 2.0e-07); openvino bf16 0.9980 (max |Δp| 2.0e-03); openvino f32 "
        "failed: Loop."
    )


def test_an_ab_block_gives_medians_and_ranges_of_the_rounds(tmp_path):
    machine = {"cpu": "X", "cpu_features": ["avx2"], "cpu_count": 2, "date": "2026-01-02 03:04"}
    profile = {"kinds": {"MatMul": 10.0, "AddN": 4.0, "Mul": 1.0, "Tanh": 0.5}}
    training = {
        "command": "c1",
        "before": "aaaaaaaaaa",
        "after": "bbbbbbbbbb",
        **machine,
        "batch_size": 128,
        "threads": 2,
        "rounds": 2,
        "models": {
            "m": {
                # 128 / 2.0 = 64 and 128 / 1.0 = 128 pairs/s: median 96
                "before": [
                    dict(profile, seconds_per_update=2.0, op_ms=300.0, in_loops_ms=200.0),
                    dict(profile, seconds_per_update=1.0, op_ms=100.0, in_loops_ms=50.0),
                ],
                "after": [
                    dict(profile, seconds_per_update=0.5, op_ms=80.0, in_loops_ms=10.0),
                    dict(profile, seconds_per_update=0.5, op_ms=60.0, in_loops_ms=30.0),
                ],
            }
        },
    }
    paths = {
        "command": "c2",
        **machine,
        "rounds": 3,
        "threads": 2,
        "variants": {"V": {"a@8": [3.0, 1.0, 2.0], "b@8": [4.0, 4.0, 5.0], "a@512": [9.0] * 3}},
    }
    (tmp_path / "t.json").write_text(json.dumps(training))
    (tmp_path / "p.json").write_text(json.dumps(paths))
    assert doc_tables.generate("ab t.json", tmp_path).splitlines()[2:5] == [
        "| m | before (`aaaaaaa`) | 96.0 (64.0-128.0) | 200 | 125 | MatMul 10; AddN 4; Mul 1 |",
        "| m | after (`bbbbbbb`) | 256.0 (256.0-256.0) | 70 | 20 | MatMul 10; AddN 4; Mul 1 |",
        "",
    ]
    lines = doc_tables.generate("ab p.json", tmp_path).splitlines()
    assert (
        lines[0]
        == "| variant | path | ms @ 8 x 20 (rounds' range) | ms @ 512 x 20 (rounds' range) |"
    )
    assert lines[2] == "| V | a | 2.00 (1.00-3.00) | 9.00 (9.00-9.00) |"
    assert lines[3].startswith("| V | b | 4.00 (4.00-5.00) |")
    assert lines[-1] == "3 rounds, 2 threads, on 2 cores of X (avx2), 2026-01-02: `c2`"


def test_an_ab_block_with_call_phases_gives_each_profiled_paths_phases(tmp_path):
    phases = {"python": 0.5, "eager": 0.125, "before_xla": 0.25, "after_xla": 0.0625}
    phases |= {"tf_kernels": 0.1, "xla_ops": 3.0, "xla_between_ops": 1.0}
    record = {
        "command": "c4",
        "cpu": "X",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-01-02 03:04",
        "rounds": 1,
        "threads": 2,
        "variants": {"V": {"a@8": [5.0], "b@8": [6.0]}},
        "agreement": {"V": {"a@8": {"max_abs_dp": 0.0, "argmax_agreement": 1.0}}},
        "profiles": {
            "V": {"a@8": {"wall_ms": 5.0, "op_ms": 3.0, "kinds": {"dot": 2.0}, "phases": phases}}
        },
    }
    (tmp_path / "c.json").write_text(json.dumps(record))
    lines = doc_tables.generate("ab c.json", tmp_path).splitlines()
    start = lines.index(
        "| variant | path @ batch | profiled ms per call | Python | eager dispatch "
        "| TensorFlow before XLA | TensorFlow after XLA | of those two, in kernels "
        "| XLA in thunks | XLA in no thunk |"
    )
    assert lines[start + 2 :] == [
        "| V | a @ 8 | 5.00 | 0.50 | 0.12 | 0.25 | 0.06 | 0.10 | 3.00 | 1.00 |",
        "",
        "1 rounds, 2 threads, on 2 cores of X (avx2), 2026-01-02: `c4`",
    ]
    # a record whose profiles have no phases has no such table
    del record["profiles"]["V"]["a@8"]["phases"]
    (tmp_path / "c.json").write_text(json.dumps(record))
    assert "| Python |" not in doc_tables.generate("ab c.json", tmp_path)


def test_a_product_kernels_record_reads_as_ms_gflops_and_summed_rounds(tmp_path):
    # 1 x 1000 x 500 x 200 is 2 * 1000 * 500 * 200 FLOP = 0.2 GFLOP: at a median of 2 ms,
    # 100 GFLOP/s; the batched 4 x 100 x 100 x 100 is 0.008 GFLOP: at 0.08 ms, 100 GFLOP/s
    record = {
        "command": "c3",
        "cpu": "X",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-01-02 10:00 UTC",
        "rounds": 3,
        "threads": 2,
        "xla_settings": {"xla": "", "xla f": "--f"},
        "batches": {
            "8": {
                "products": [
                    {
                        "shape": [1, 1000, 500, 200],
                        "ms": {"xla": [1.0, 2.0, 4.0], "xla f": [4.0] * 3, "ort": [2.0] * 3},
                    },
                    {
                        "shape": [4, 100, 100, 100],
                        "ms": {"xla": [0.04, 0.08, 0.16], "xla f": [0.08] * 3, "ort": [0.0] * 3},
                    },
                ]
            }
        },
    }
    (tmp_path / "k.json").write_text(json.dumps(record))
    lines = doc_tables.generate("products k.json", tmp_path).splitlines()
    assert lines[0] == (
        "| batch | product (batch × m × k × n) | GFLOP | xla ms (GFLOP/s) | "
        "xla f ms (GFLOP/s) | ort ms (GFLOP/s) |"
    )
    assert lines[2] == (
        "| 8 × 20 | 1 × 1000 × 500 × 200 | 0.2000 | 2.000 (100) | 4.000 (50) | 2.000 (100) |"
    )
    assert lines[3] == (
        "| 8 × 20 | 4 × 100 × 100 × 100 | 0.0080 | 0.080 (100) | 0.080 (100) | 0.000 (—) |"
    )
    # each round's sum: xla 1.04, 2.08, 4.16; xla f 4.08; ort 2.00
    assert lines[4] == (
        "| 8 × 20 | all 2, summed per round | 0.2080 | 2.08 (1.04-4.16) | 4.08 (4.08-4.08) | "
        "2.00 (2.00-2.00) |"
    )
    assert lines[-1] == "3 rounds, 2 threads, on 2 cores of X (avx2), 2026-01-02: `c3`"


def test_an_onednn_block_sets_each_primitive_before_beside_after(tmp_path):
    # by hand: before ran 4 gemm inner products (1.2 ms) and 2 reorders (0.3 ms) per call, 6
    # primitives in 1.5 ms; after 4 brgemm ones (0.6 ms), no reorder: 4 in 0.6 ms
    record = {
        "command": "c4",
        "cpu": "X",
        "cpu_features": ["avx2"],
        "cpu_count": 2,
        "date": "2026-01-02 10:00 UTC",
        "rounds": 1,
        "threads": 2,
        "before": "a" * 40,
        "after": "b" * 40,
        "calls": 20,
        "variants": {
            "V": {
                "before@8": {
                    "inner_product: x64:gemm:jit": {"per_call": 4, "ms": 1.2},
                    "reorder: jit:uni": {"per_call": 2, "ms": 0.3},
                },
                "after@8": {"inner_product: brgemm:avx512_core_bf16": {"per_call": 4, "ms": 0.6}},
            }
        },
    }
    (tmp_path / "o.json").write_text(json.dumps(record))
    lines = doc_tables.generate("onednn o.json", tmp_path).splitlines()
    assert lines[2:6] == [
        "| V | 8 × 20 | inner_product: x64:gemm:jit | 4 (1.200) | — |",
        "| V | 8 × 20 | reorder: jit:uni | 2 (0.300) | — |",
        "| V | 8 × 20 | inner_product: brgemm:avx512_core_bf16 | — | 4 (0.600) |",
        "| V | 8 × 20 | **all** | 6 (1.500) | 4 (0.600) |",
    ]
    assert lines[-1] == (
        "before = aaaaaaa, after = bbbbbbb; 20 calls per export and batch, 2 threads, on 2 "
        "cores of X (avx2), 2026-01-02: `c4`"
    )


def test_onednn_verbose_lines_are_summed_per_kind_and_implementation():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "onednn_primitives",
        Path(__file__).resolve().parents[2] / "docs/runs/roofline/onednn_primitives.py",
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    line = "onednn_verbose,v1,primitive,exec,cpu,{},{},fwd,src:bf16,,mb8ic4oc2,{}"
    stdout = "\n".join(
        [
            line.format("reorder", "jit:uni", 9.0),  # a warm-up call's: not counted
            "=== calls",
            line.format("inner_product", "x64:gemm:jit", 0.5),
            line.format("reorder", "jit:uni", 0.1),
            "onednn_verbose,v1,primitive,create:cache_miss,cpu,reorder,jit:uni,x,0.2",
            line.format("inner_product", "x64:gemm:jit", 0.7),
            "=== end",
            line.format("reorder", "jit:uni", 9.0),
        ]
    )
    # 2 calls: the gemm ran twice in 1.2 ms (1 per call, 0.6 ms), the reorder once in 0.1
    assert module.primitives(stdout, 2) == {
        "inner_product: x64:gemm:jit": {"per_call": 1.0, "ms": 0.6},
        "reorder: jit:uni": {"per_call": 0.5, "ms": 0.05},
    }


def test_a_bench_record_of_getrusage_memory_is_noted_as_such(tmp_path):
    # rows with getrusage's peak_rss_mib (before the worker read its own VmHWM): old header and
    # a note under the table; rows with the worker's own figures: their header, no note
    old = _record("savedmodel, fp32, XLA", (2.5, 5.1, 8.1), "re2-bench")
    for row in old["rows"]:
        row.update(peak_rss_mib=1000.4, loaded_rss_mib=1000.4)
    (tmp_path / "old.json").write_text(json.dumps(old))
    text = doc_tables.generate("bench old.json", root=tmp_path)
    assert "| peak RSS MiB (+ over loaded) |" in text.splitlines()[0]
    assert "| 1,000 (+0) |" in text.splitlines()[2]
    assert text.endswith(doc_tables.INHERITED_MEMORY)
    for row in old["rows"]:
        del row["peak_rss_mib"], row["loaded_rss_mib"]
        row.update(loaded_hwm_mib=300.2, batches_hwm_mib=352.0, peak_hwm_mib=360.0)
    (tmp_path / "new.json").write_text(json.dumps(old))
    text = doc_tables.generate("bench new.json", root=tmp_path)
    assert "| own peak MiB after the batches (+ over loaded) |" in text.splitlines()[0]
    assert "| 352 (+52) |" in text.splitlines()[2] and "predates" not in text


CI_LOG = """# bash .ci/run in a fresh clone of main at abc1234 (path .../main), CI=true,
# 2 cores of AMD EPYC (avx2), 2026-11-28; the lines below are the script's own output.
============ 800 passed, 40 skipped in 400.50s (0:06:40) ============
default suite, README install: 401 s
All checks passed!
===== 60 passed, 9 skipped, 2 xfailed in 80.00s (0:01:20) =====
default suite, tests that need an extra: 81 s
========== 150 passed, 1 deselected in 30.10s ==========
lab tests: 31 s
========== 100 passed in 1700.00s (0:28:20) ==========
========== 7 passed, 160 deselected in 300.00s (0:05:00) ==========
slow tier: 2001 s

real	46m5.200s
"""


def test_the_tests_block_is_the_ci_logs_steps_counts_and_times():
    """A hand-written CI log: each step's pytest outcomes (the slow tier's two sessions summed
    by hand: 100 + 7 passed, 160 deselected), its time as the script printed it, the commit, the
    machine and the whole run's time."""
    text = doc_tables.test_tiers(CI_LOG)
    assert "fresh clone of main at abc1234 on 2 cores of AMD EPYC (avx2), 2026-11-28" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split(" | ")[2:] for r in rows] == [
        ["800 passed, 40 skipped", "6 min 41 s |"],
        ["60 passed, 9 skipped, 2 xfailed", "1 min 21 s |"],
        ["150 passed, 1 deselected", "0 min 31 s |"],
        ["107 passed, 160 deselected", "33 min 21 s |"],
    ]
    assert text.endswith("The whole run: 46 min 5 s.")
    with pytest.raises(ValueError, match="no .ci/run step"):
        doc_tables.test_tiers("# bash .ci/run in a fresh clone of main at abc1234\nnothing\n")


def test_a_variant_measured_again_takes_its_own_place_in_the_runtimes_record():
    from re2_lab import runtimes

    record = {
        "loadavg": [0.5, 1.0, 3.1, 1.2],
        "models": [{"model": "A"}, {"model": "B", "old": True}, {"model": "C"}],
        "rows": [{"model": "A", "k": 1}, {"model": "B", "k": 2}, {"model": "B", "k": 3},
                 {"model": "C", "k": 4}],
    }  # fmt: skip
    runtimes.replace_variant(record, {"model": "B"}, [{"model": "B", "k": 5}], 1.4)
    assert record["models"] == [{"model": "A"}, {"model": "B"}, {"model": "C"}]
    assert [r["k"] for r in record["rows"]] == [1, 5, 4]
    assert record["loadavg"] == [0.5, 1.0, 1.4, 1.2]  # B's: the one after A's
    runtimes.replace_variant(record, {"model": "D"}, [{"model": "D", "k": 6}], 2.0)
    assert [m["model"] for m in record["models"]] == ["A", "B", "C", "D"]
    assert [r["k"] for r in record["rows"]] == [1, 5, 4, 6] and record["loadavg"][-1] == 2.0
    record["redone"] = [{"model": "B", "date": "2026-11-29"}]
    record.update(cpu="AMD EPYC", cpu_features=[], cpu_count=2, date="2026-11-28", threads=2,
                  shapes=[[8, 20]], batches=100, rounds=2, versions={},
                  peaks={"float32": 2.045e11, "bfloat16": None, "int8": None})  # fmt: skip
    header = runtimes._header(record)
    assert "measured peaks float32 204 GFLOP/s" in header
    assert "; B measured again on 2026-11-29 (`--redo`)." in header
    record["redone"].append(
        {"model": "C", "date": "2026-11-30", "reason": "a new candidate",
         "peaks": {"float32": 1.996e11, "bfloat16": 3.861e11, "int8": None}}
    )  # fmt: skip
    assert (
        "(`--redo`); C measured again on 2026-11-30 (`--redo`: a new candidate; peaks "
        "float32 200, bfloat16 386 GFLOP/s)."
    ) in runtimes._header(record)


def test_a_runtimes_run_keeps_the_best_of_its_peak_measurements_per_precision():
    from re2_lab import runtimes

    # worked by hand: a slowed float32 measurement (1.1e11) and a missing bfloat16 one
    measured = [
        {"float32": 1.8e11, "bfloat16": 3.6e11, "int8": None},
        {"float32": 1.1e11, "bfloat16": None, "int8": None},
        {"float32": 2.0e11, "bfloat16": 3.9e11, "int8": None},
    ]
    assert runtimes.best_peaks(measured) == {"float32": 2.0e11, "bfloat16": 3.9e11, "int8": None}
    with pytest.raises(ValueError, match="no measurement"):
        runtimes.best_peaks([])


def test_a_run_continues_a_record_only_within_the_peak_tolerance():
    from re2_lab import runtimes

    assert runtimes.PEAK_TOLERANCE == 0.15
    recorded = {"float32": 2.0e11, "bfloat16": 1.0e12, "int8": None}
    # worked by hand: 2.29e11 is 14.5 % above 2.0e11, 8.6e11 is 14 % below 1.0e12
    assert runtimes.peaks_apart(recorded, {"float32": 2.29e11, "bfloat16": 8.6e11}) == {}
    # 2.31e11 is 15.5 % above; 1.5e12 is 50 % above; a precision one side lacks is not compared
    got = runtimes.peaks_apart(recorded, {"float32": 2.31e11, "bfloat16": None, "int8": 1e12})
    assert got == {"float32": (2.0e11, 2.31e11)}
    got = runtimes.peaks_apart(recorded, {"float32": 1.9e11, "bfloat16": 1.5e12})
    assert got == {"bfloat16": (1.0e12, 1.5e12)}


def test_a_runtimes_record_judges_each_path_once_on_its_largest_shapes_pairs(tmp_path):
    from re2_lab import runtimes

    def row(model, runtime, batch, agreement):
        return {"model": model, "runtime": runtime, "batch": batch, "argmax_agreement": agreement}

    rows = [
        # one changed label of 32 pairs at 8: 0.969; 3 of 2048 at 512: 0.9985 -> agrees
        row("A", "openvino bf16", 8, 31 / 32),
        row("A", "openvino bf16", 512, 2045 / 2048),
        # every label at 8, 41 of 2048 changed at 512: 0.98 -> disagrees at both shapes
        row("A", "savedmodel bf16 (xla=False)", 8, 1.0),
        row("A", "savedmodel bf16 (xla=False)", 512, 2007 / 2048),
        # ran at 8 only (died at 512): judged on its 8 pairs
        row("B", "openvino bf16", 8, 1.0),
        {"model": "B", "runtime": "openvino bf16", "batch": 512, "median_ms": None},
        # another model's path of the same name is judged on its own
        row("B", "savedmodel bf16 (xla=False)", 512, 0.9899),
    ]
    runtimes.judge(rows)
    assert [r["agrees"] for r in rows] == [True, True, False, False, True, None, False]
    # a record written under the earlier rule is read (and continued) under this one
    path = tmp_path / "record.json"
    old = {"threads": 2, "tolerance": {"bf16": ["dp_over_spread", 0.25]}, "models": []}
    path.write_text(json.dumps(dict(old, rows=[dict(r, agrees=True) for r in rows[2:4]])))
    loaded = runtimes.load(path)
    assert list(loaded) == ["threads", "min_agreement", "models", "rows"]
    assert loaded["min_agreement"] == 0.99
    assert [r["agrees"] for r in loaded["rows"]] == [False, False]


def test_a_close_call_in_the_runtimes_record_is_the_agreeing_paths_near_the_fastest():
    from re2_lab import runtimes

    def row(runtime, ms, agrees=True):
        return {"runtime": runtime, "median_ms": ms, "agrees": agrees}

    rows = [
        row("savedmodel (XLA)", 7.7, agrees=None),  # the reference: agrees by definition
        row("onnxruntime", 4.6),
        row("openvino bf16", 4.7),
        row("openvino f32", 5.52),  # 4.6 * 1.2: in
        row("tflite", 4.0, agrees=False),  # faster, but disagrees: not the yardstick
        {"runtime": "savedmodel (xla=False)", "conversion": "failed", "median_ms": None},
    ]
    assert runtimes.close_paths(rows, 0.2) == ["onnxruntime", "openvino bf16", "openvino f32"]
    assert runtimes.close_paths(rows, 0.05) == ["onnxruntime", "openvino bf16"]
    assert runtimes.close_paths(rows, 0.01) == []  # only the fastest: not a close call
    assert runtimes.close_paths(rows[:1] + rows[3:], 0.5) == ["savedmodel (XLA)", "openvino f32"]
    assert runtimes.close_paths(rows[5:], 0.2) == []
    # a path whose rounds disagree is in where its fastest round is (the choice's rule): a
    # median of 6.0 ms is 30 % above 4.6, its 5.0 ms round within 20 %
    split = dict(row("tflite", 6.0), round_medians_ms=[5.0, 7.0])
    assert runtimes.close_paths(rows[:2] + [split], 0.2) == ["onnxruntime", "tflite"]
    assert runtimes.close_paths(rows[:2] + [split], 0.05) == []
    record = {
        "cpu": "AMD EPYC", "cpu_features": [], "cpu_count": 2, "date": "2026-11-28",
        "threads": 2, "shapes": [[8, 20]], "batches": 100, "rounds": 2, "versions": {},
        "loadavg": [1.0, 1.5, 1.6], "peaks": {"float32": 1e11},
        "models": [{"model": "A"}, {"model": "B", "close": 0.2, "close_rounds": 2}],
    }  # fmt: skip
    assert (
        "(at the start and after each model); measured peaks float32 100 GFLOP/s; a close call "
        "timed again for B: at a shape, the agreeing paths within 20% of the fastest, 2 more "
        "rounds in turn; the SavedModel paths"
    ) in runtimes._header(record)
    del record["models"][1]["close_rounds"]
    assert "close call" not in runtimes._header(record)


def test_a_profiles_block_gives_the_products_speed_and_the_other_nodes(tmp_path):
    # by hand: 1e9 FLOPs in 4 ms of products = 250 GFLOP/s; 4 ms over the least floor 2.5 ms
    # = 1.60; the Loop (a container) and the products are not among the other nodes
    profile = {
        "wall_ms_median": 9.5, "node_ms": 9.0, "product_ms": 4.0, "other_ms": 5.0,
        "nodes_per_call": 2157, "effective_precision": "bf16",
        "kinds_ms": {"Loop": 7.0, "FullyConnected": 3.0, "Transpose": 2.0, "MatMul": 1.0,
                     "Concat": 1.5, "Multiply": 1.0, "Reorder": 0.5},
        "floors": {"flops": 1e9, "flop_floor_ms": {"float32": 5.0, "bfloat16": 2.5}},
    }  # fmt: skip
    record = {
        "command": "python docs/runs/roofline/runtime_profiles.py",
        "cpu": "AMD EPYC", "cpu_features": ["avx512_bf16"], "cpu_count": 2, "date": "2026-11-29",
        "variants": {"Net": {"backend": "openvino", "precision": "bf16", "8x20": profile}},
    }  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(record))
    text = doc_tables.generate("profiles p.json", root=tmp_path)
    row = "| Net | 8×20 | openvino bf16 | 9.50 | 9.00 | 4.00 (250) | 1.60 | "
    assert row + "5.00: Transpose 2.00, Concat 1.50, Multiply 1.00 | 2,157 |" in text
    assert "Command: `python docs/runs/roofline/runtime_profiles.py`." in text


def test_a_profiles_block_gives_a_savedmodels_loop_beside_the_floors_step(tmp_path):
    # by hand: XLA's "dot" is a product; the loop ran 39 times per call, 17 ops in it, 1.8 ms
    # in all: 1.8 / 39 = 46 µs per run; the floor's step 0.083 ms / 39 steps = 2.1 µs; a
    # runtime profile without a loop shows "—"; the runtime named by the entry's "runtime"
    loop = {
        "ops": 17,
        "runs_per_call": 664,
        "ms": 1.8,
        "loop_runs": 39,
        "ms_per_loop_run": 1.8 / 39,
    }
    xla = {
        "wall_ms_median": 3.8, "node_ms": 2.4, "product_ms": 1.2, "other_ms": 1.2,
        "nodes_per_call": 780, "effective_precision": "f32", "runtime": "savedmodel (XLA)",
        "kinds_ms": {"dot": 1.2, "fusion": 0.8, "while": 0.2, "copy": 0.1}, "looped": loop,
        "floors": {"flops": 6e7, "flop_floor_ms": {"float32": 0.2, "bfloat16": 0.05},
                   "sequential_steps": 39, "dependency_floor_ms": 0.083},
    }  # fmt: skip
    ov = {
        "wall_ms_median": 2.0, "node_ms": 1.5, "product_ms": 1.0, "other_ms": 0.5,
        "nodes_per_call": 100, "effective_precision": "bf16", "runtime": "openvino bf16",
        "kinds_ms": {"FullyConnected": 1.0, "Concat": 0.3},
        "floors": {"flops": 1e8, "flop_floor_ms": {"float32": 0.4, "bfloat16": 0.1},
                   "sequential_steps": 0, "dependency_floor_ms": 0.0},
    }  # fmt: skip
    record = {
        "command": "python docs/runs/roofline/runtime_profiles.py --record=r.json",
        "cpu": "Intel Xeon", "cpu_features": ["amx_bf16"], "cpu_count": 2, "date": "2026-12-01",
        "variants": {"Net": {"8x20": xla}, "Other": {"8x20": ov}},
    }  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(record))
    text = doc_tables.generate("profiles p.json", root=tmp_path)
    assert "| loop runs × ops: µs per run (floor's) |" in text
    row = "| Net | 8×20 | savedmodel (XLA) | 3.80 | 2.40 | 1.20 (50) | 24.00 | "
    assert row + "1.20: fusion 0.80, copy 0.10 | 780 | 39 × 17: 46 (2.1) |" in text
    assert "| Other | 8×20 | openvino bf16 | 2.00 | 1.50 | 1.00 (100) | 10.00 | " in text
    assert "0.50: Concat 0.30 | 100 | — |" in text


def test_a_probe_deaths_block_counts_the_processes_that_died(tmp_path):
    # by hand: Net at 512 in bf16: 2 of 3 died, one way; at 8: none; a run without "probe"
    # (an older record) counts as probed
    died = "failed: timing_worker failed on serving_ids.xml (killed by SIGSEGV):"
    runs = [
        {"variant": "Net", "batch": 512, "precision": "bf16", "probe": True, "ended": died},
        {"variant": "Net", "batch": 512, "precision": "bf16", "probe": True, "ended": "ran"},
        {"variant": "Net", "batch": 512, "precision": "bf16", "probe": True, "ended": died},
        {"variant": "Net", "batch": 8, "precision": "f32", "ended": "ran"},
        {"variant": "Net", "batch": 8, "precision": "f32", "probe": False, "ended": "ran"},
    ]
    record = {
        "command": "python docs/runs/runtimes/ov_probe_deaths.py",
        "cpu": "Intel Xeon", "cpu_features": ["amx_bf16"], "cpu_count": 2, "date": "2026-12-01",
        "runs": runs,
    }  # fmt: skip
    (tmp_path / "d.json").write_text(json.dumps(record))
    text = doc_tables.generate("probe-deaths d.json", root=tmp_path)
    assert "| Net | 512 | bf16 | yes | 2 of 3 | killed by SIGSEGV |" in text
    assert "| Net | 8 | f32 | yes | 0 of 1 | — |" in text
    assert "| Net | 8 | f32 | no | 0 of 1 | — |" in text


def test_a_phases_block_counts_slowed_processes_and_batches(tmp_path):
    # by hand: path A's process medians 100, 110, 160: least 100, median 110, most 160; at
    # 1.5x the least (150) or more: one process (160) and the batches 150, 170, 160 (3 of 9);
    # B's medians 200, 210: nothing at 300 or more; steal 50 + 25 ticks at 100/s = 0.75 s
    def run(path, median, batches, steal):
        return {"path": path, "median_ms": median, "batch_ms": batches, "steal_ticks": steal}

    record = {
        "command": "python docs/runs/runtimes/phases.py --cycles=3",
        "cpu": "AMD EPYC", "cpu_features": [], "cpu_count": 2, "date": "2026-11-29",
        "variant": "Net", "shape": [512, 20], "batches": 3, "cycles": 3,
        "clock_ticks_per_s": 100, "paths": ["A", "B"],
        "processes": [
            run("A", 100, [100, 99, 150], 50), run("B", 200, [200, 190, 210], 0),
            run("A", 110, [110, 100, 120], 25), run("B", 210, [210, 200, 299], 0),
            run("A", 160, [170, 160, 140], 0),
        ],
    }  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(record))
    text = doc_tables.generate("phases p.json", root=tmp_path)
    assert "| A | 3 | 100 / 110 / 160 | 1 | 3 of 9 | 0.75 |" in text
    assert "| B | 2 | 200 / 205 / 210 | 0 | 0 of 6 | 0.00 |" in text
    assert "Net, 512×20, 3 timed batches per process, 3 cycles" in text
    assert "Command: `python docs/runs/runtimes/phases.py --cycles=3`." in text


def test_a_paths_figure_is_the_median_or_the_least_of_its_rounds_as_the_record_says():
    from re2_lab import runtimes

    # by hand: the median of 10 and 25 is their mean; of three, the middle one
    assert runtimes.figure_of([10.0, 25.0], "median of rounds") == 17.5
    assert runtimes.figure_of([800.0, 810.0, 805.0], "median of rounds") == 805.0
    assert runtimes.figure_of([10.0, 25.0], "least of rounds") == 10.0
    with pytest.raises(ValueError, match="figure: one of"):
        runtimes.figure_of([1.0], "mean of rounds")
    with pytest.raises(ValueError, match="at least one round"):
        runtimes.figure_of([], "least of rounds")
    with pytest.raises(ValueError, match="at least one round"):
        runtimes.figure_of([], "median of rounds")
    # by hand: the default 1.0 ms under the fastest in each of 4 rounds (no spread): its
    # interval lies below 0, which a median figure allows and a least one did not
    default, fastest = (
        {"round_medians_ms": [1.0, 1.2, 0.8, 1.0]},
        {"round_medians_ms": [2.0, 2.2, 1.8, 2.0]},
    )
    assert runtimes._paired_text(default, fastest) == (
        "; round by round, default − fastest -1.00 ms, 95 % interval -1.00 to -1.00 ms at "
        "n = 4 rounds: the default is faster"
    )
    # a record made before the setting took the least; a new one says which
    assert runtimes.record_figure({}) == "least of rounds"
    assert runtimes.record_figure({"figure": "median of rounds"}) == "median of rounds"
    record = {**_runtimes_record(), "figure": "median of rounds"}
    assert "; per path the median of 2 round(s)' medians (each round" in runtimes._header(record)


def test_a_runtimes_record_resumes_only_on_the_cpu_it_was_made_on(tmp_path):
    """A killed runtimes run continues only where its rows can be compared: a record made on
    another CPU (or with bfloat16 units where this one has none) is refused before anything
    is measured, naming what differs."""
    pytest.importorskip("openvino")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tf2onnx")
    from re2_lab import runtimes
    from re2_tf.machine import machine
    from re2_tf.serving.runtimes import cpu_has_bf16

    here = {**machine(), "bf16_units": cpu_has_bf16()}
    settings = {"threads": 2, "shapes": [[8, 20]], "batches": 100, "rounds": 2, "inputs": "drawn"}
    elsewhere = [
        {"cpu": here["cpu"] + " (another)"},
        {"cpu_features": [f for f in here["cpu_features"] if f != "avx2"] + ["made_up"]},
        {"bf16_units": not here["bf16_units"]},
    ]
    for change in elsewhere:
        record = {**here, **settings, **change, "models": [], "rows": []}
        log = []
        with pytest.raises(ValueError, match="another CPU") as error:
            runtimes.report(
                ["match_srnn"], shapes=[(8, 20)], resume=record, log=log.append,
                save=log.append,
            )  # fmt: skip
        assert list(change)[0] in str(error.value) and log == []
    with pytest.raises(ValueError, match="other settings"):
        runtimes.report(["match_srnn"], shapes=[(8, 20)], batches=50,
                        resume={**here, **settings, "models": [], "rows": []})  # fmt: skip
    # a record made before its inputs were a setting cycled fixed batches: continued only so
    cycled = {k: v for k, v in settings.items() if k != "inputs"}
    with pytest.raises(ValueError, match="other settings") as error:
        runtimes.report(["match_srnn"], shapes=[(8, 20)],
                        resume={**here, **cycled, "models": [], "rows": []})  # fmt: skip
    assert "'inputs': ('fixed', 'drawn')" in str(error.value)
    # ... and took each path's least round: continued only so
    assert "'figure': ('least of rounds', 'median of rounds')" in str(error.value)
    with pytest.raises(ValueError, match="inputs: one of"):
        runtimes.report(["match_srnn"], shapes=[(8, 20)], inputs="random")
    with pytest.raises(ValueError, match="figure: one of"):
        runtimes.report(["match_srnn"], shapes=[(8, 20)], figure="mean of rounds")
    # a host of the same name and features at another speed: its peaks are measured first,
    # and a record made at 1 PFLOP/s on 2 cores is not this CPU's
    made = {**here, **cycled, "models": [], "rows": []}  # continued with --inputs=fixed
    made["peaks"] = {"float32": 1e15, "bfloat16": None, "int8": None}
    log, saved = [], []
    with pytest.raises(ValueError, match="measured peaks differ") as error:
        runtimes.report(["match_srnn"], shapes=[(8, 20)], resume=made, log=log.append,
                        save=saved.append, inputs="fixed",
                        figure="least of rounds")  # fmt: skip
    assert "float32" in str(error.value) and saved == []
    assert all("thread settings stay" in line for line in log)  # nothing timed
