"""re2_tf.benchmarking and re2-bench: smoke test of the fresh-process timing and the Table 5 table
(no timing
assertions)."""

import json
import os
import subprocess
import sys

import pytest

from re2_tf import benchmarking as benchmark
from re2_tf.machine import cpu_units, machine


@pytest.mark.slow
def test_table5_driver_smoke(tmp_path):
    rows, table = benchmark.run_benchmark(
        "re2",
        ["RE2 1 block"],
        batch=2,
        length=5,
        batches=2,
        warmup=1,
        vocab_size=50,
        throughput_batch=4,
        workdir=tmp_path,
        intra_op_threads=1,
        inter_op_threads=1,
        plain=True,
    )
    row, plain = rows
    assert plain["model"] == "RE2 1 block (plain Keras model.export)"
    assert plain["params"] == row["params"] and len(plain["times_s"]) == 2
    assert len(row["times_s"]) == 2 and row["first_call_s"] > 0
    assert row["mean_s"] > 0 and row["p99_ms"] >= row["median_ms"] > 0
    assert row["throughput_pairs_per_s"] > 0 and row["paper"] == 0.03
    # the worker's own peak memory (VmHWM): loaded TensorFlow alone is well over 100 MiB; calls
    # only add, and the current resident set is at most the peak
    assert 100 < row["loaded_hwm_mib"] <= row["batches_hwm_mib"] <= row["peak_hwm_mib"]
    assert 0 < row["rss_mib"] <= row["peak_hwm_mib"] and "peak_rss_mib" not in row
    lines = table.splitlines()
    assert lines[0].startswith("| model | params") and "paper" in lines[0]
    assert lines[1].startswith("|---") and lines[2].startswith("| RE2 1 block")
    assert lines[3].startswith("| RE2 1 block (plain Keras model.export)")
    assert lines[2].count("|") == lines[0].count("|")
    # one definition: the worker timed table5_inputs' draws (both exports, same inputs)
    from re2_tf.models import get_spec

    spec = get_spec("re2")
    hparams = dict(spec.defaults(), **spec.benchmark["RE2 1 block"]["hparams"])
    expected = benchmark.table5_inputs(benchmark.synthetic_featurizers(spec, hparams, 50), 2, 5)
    assert row["inputs_sha256"] == plain["inputs_sha256"] == expected.digest()
    assert "own peak MiB after the batches (+ over loaded)" in lines[0]
    grown = row["batches_hwm_mib"] - row["loaded_hwm_mib"]
    assert f"| {row['batches_hwm_mib']:,.0f} (+{grown:,.0f}) |" in lines[2]


def test_table5_parameter_count():
    # Paper Table 5 setting, 3 blocks, 3 encoder layers (the 2,977,959), as the RE2
    # spec's benchmark variant builds it.
    from re2_tf.models import build_re2, count_parameters, get_spec

    hparams = get_spec("re2").benchmark["RE2 3 blocks"]["hparams"]
    assert hparams == dict(blocks=3, enc_layers=3, hidden_size=150, embedding_dim=300)
    assert count_parameters(build_re2(100, 3, **hparams)) == 2_977_959


def test_unknown_variant_is_named():
    with pytest.raises(KeyError, match="RE2 7 blocks"):
        benchmark.run_benchmark("re2", ["RE2 7 blocks"])


@pytest.mark.slow
def test_cli_times_an_existing_export_and_tflite(tmp_path):
    from re2_tf.models import get_spec

    one_block = get_spec("re2").benchmark["RE2 1 block"]["hparams"]
    path, _, _ = benchmark.export_benchmark_model(
        get_spec("re2"), one_block, tmp_path / "m", vocab_size=40
    )
    spec = (
        '{"text1": {"dtype": "string", "shape": [2, 4], "words": ["w2", "w3", "zz"]},'
        ' "text2": {"dtype": "string", "shape": [2, 4], "words": ["w5", "w9"]}}'
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "re2_tf.cli.benchmark",
            f"--saved_model={path}",
            "--signature=serving_default",
            f"--input_spec={spec}",
            "--batches=2",
            "--warmup=0",
            "--throughput_batch=0",
            f"--json_out={tmp_path / 'record' / 'bench.json'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| model | params" in proc.stdout
    # --json_out: the record the docs' latency tables are generated from (re2_lab.doc_tables)
    record = json.loads((tmp_path / "record" / "bench.json").read_text())
    assert record["command"].startswith(f"re2-bench --saved_model={path} ")
    assert (
        record["settings"]["batches"] == 2 and record["settings"]["signature"] == "serving_default"
    )
    assert record["cpu"] and record["date"] and record["cpu_count"] == os.cpu_count()
    ((row,),) = [record["rows"]]
    assert row["model"] == str(path) and "times_s" not in row and row["median_ms"] > 0
    tflite, _, _ = benchmark.export_benchmark_model(
        get_spec("re2"), one_block, tmp_path / "t", vocab_size=40, fmt="tflite", precision="int8"
    )
    result = benchmark.time_export(
        tflite, "serving_ids", benchmark.ids_spec(2, 5, 40), batches=2, warmup=0
    )
    assert result["interpreter"] == "ai_edge_litert" and len(result["times_s"]) == 2


def test_packed_pairs_are_timed_on_raw_text_and_other_models_on_ids():
    # Random ids cannot form [CLS] a [SEP] b [SEP]: a model with a packed-pair feature is timed
    # through serving_default on texts of `length` real words; the others on random ids.
    from re2_tf.data.features import PackedPair, WholeWordTokenizer, WordIds
    from re2_tf.data.vocab import Vocab

    words = ["a", "man", "plays"]
    ids = WordIds.from_vocab(Vocab(words))
    packed = PackedPair(WholeWordTokenizer())
    packed.fit(words)
    signature, spec = benchmark.benchmark_inputs([ids], batch=8, length=20)
    assert signature == "serving_ids" and set(spec) == {"text1", "text2"}
    assert spec["text1"]["shape"] == [8, 20] and spec["text1"]["high"] == len(ids.vocab)
    signature, spec = benchmark.benchmark_inputs([packed], batch=8, length=20)
    assert signature == "serving_default" and set(spec) == {"text1", "text2"}
    assert spec["text1"]["dtype"] == "string" and spec["text1"]["shape"] == [8, 20]
    assert {"man", "woman", "guitar"} <= set(spec["text1"]["words"])  # SNLI sample words
    assert all(w.isalpha() for w in spec["text1"]["words"])


def test_timing_worker_draws_fresh_lengths_per_row_shared_by_side():
    # The worker is a script run in a fresh process; its draw function is loaded from its file.
    import importlib.util

    import numpy as np

    loader = importlib.util.spec_from_file_location("timing_worker", benchmark.WORKER)
    worker = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(worker)
    spec = {
        "text1": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 50, "side": "text1"},
        "text1_chars": {"dtype": "int32", "shape": [8, 20, 3], "low": 2, "high": 9},
        "text2": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 50, "side": "text2"},
        "words": {"dtype": "string", "shape": [8, 20], "words": ["a", "b"], "side": "text1"},
    }
    spec["text1_chars"]["side"] = "text1"
    rng = np.random.default_rng(0)
    widths = set()
    for _ in range(20):
        batch = worker.make_inputs(spec, 8, rng, spread=5)
        rows = (batch["text1"] > 0).sum(1)  # ids are >= 2, padding 0: the row lengths
        assert ((rows >= 15) & (rows <= 25)).all() and batch["text1"].shape[1] == rows.max()
        assert (batch["text1"][np.arange(rows.max()) >= rows[:, None]] == 0).all()
        # same side, same lengths: the characters and the texts; text2 has its own
        np.testing.assert_array_equal((batch["text1_chars"] > 0).all(-1).sum(1), rows)
        np.testing.assert_array_equal([len(t.split()) for t in batch["words"]], rows)
        widths.add((batch["text1"].shape[1], batch["text2"].shape[1]))
    assert len(widths) > 5  # fresh lengths per batch
    exact = worker.make_inputs(spec, 8, rng)  # length_spread 0: every text 20 long
    assert exact["text1"].shape == (8, 20) and (exact["text1"] > 0).all()


def test_shape_changes_grow_each_side_alone_past_every_drawn_length():
    import numpy as np

    worker = _worker()
    spec = {
        "text1": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 50, "side": "text1"},
        "text1_chars": {"dtype": "int32", "shape": [8, 20, 3], "low": 2, "high": 9},
        "text2": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 50, "side": "text2"},
    }
    spec["text1_chars"]["side"] = "text1"
    batches = worker.shape_change_inputs(spec, 8, np.random.default_rng(0), spread=5)
    # L = 20 + 5 + 1 = 26, longer than any text drawn at 20 +- 5; text1 grows alone to 27
    # (twice), back, then text2 alone.
    want = [(26, 26), (27, 26), (27, 26), (26, 26), (26, 27), (26, 27), (26, 26)]
    assert [(b["text1"].shape[1], b["text2"].shape[1]) for b in batches] == want
    for b, (len1, _) in zip(batches, want):
        assert b["text1"].shape[0] == 8 and b["text1_chars"].shape == (8, len1, 3)
        assert all((x > 0).all() for x in b.values())  # no padding: every row that long


def _worker():
    import importlib.util

    loader = importlib.util.spec_from_file_location("timing_worker", benchmark.WORKER)
    worker = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(worker)
    return worker


def test_table5_inputs_are_the_documented_draw_regenerated_by_hand(tmp_path):
    # table5_inputs' docstring, by hand with NumPy's Generator: batch 2, length 3 ± 1, seed 7,
    # one word-id feature per side over a 6-entry vocabulary (ids 2..5): per side the row
    # lengths, then ids over the longest row, each row's tail 0; text1's then text2's.
    import numpy as np

    from re2_tf.data.features import WordIds
    from re2_tf.data.vocab import Vocab

    ids = WordIds.from_vocab(Vocab(["a", "man", "plays", "guitar"]))  # + padding, OOV: 6
    inputs = benchmark.table5_inputs([ids], 2, 3, length_spread=1, seed=7)
    assert inputs.signature == "serving_ids" and inputs.batch == 2
    rng = np.random.default_rng(7)
    expected = []
    for _ in range(3):
        batch = {}
        for side in ("text1", "text2"):
            rows = rng.integers(2, 5, 2)  # 3 - 1 .. 3 + 1
            x = rng.integers(2, 6, size=(2, rows.max())).astype("int32")
            for r, n in enumerate(rows):
                x[r, n:] = 0
            batch[side] = x
        expected.append(batch)
    got = inputs.batches(3)
    for mine, theirs in zip(expected, got):
        assert set(mine) == set(theirs)
        for k in mine:
            np.testing.assert_array_equal(theirs[k], mine[k])
            assert theirs[k].dtype == np.int32
    # an id model's serving_ids inputs are those arrays; the worker's own draw from the
    # request (fresh draws) gives the same 4 first batches, hence the same digest
    worker = _worker()
    request = inputs.request()
    assert request["options"] == {} and request["seed"] == 7 and request["length_spread"] == 1
    rng = np.random.default_rng(request["seed"])
    drawn = [worker.make_inputs(request["input_spec"], 2, rng, 1) for _ in range(4)]
    assert worker.inputs_digest(drawn) == inputs.digest() == inputs.digest(ids=True)
    assert worker.inputs_digest(expected) != inputs.digest()  # 3 batches are not 4


def test_a_packed_pair_models_ids_are_its_drawn_texts_encoded(tmp_path):
    # BERT-like packed pair: the worker draws texts (serving_default); a converted model's
    # serving_ids cycles through those same texts, encoded: [CLS] a [SEP] b [SEP], one
    # position per word (single-position words), written for the worker to load.
    import numpy as np

    from re2_tf.data.features import PackedPair, WholeWordTokenizer

    packed = PackedPair(WholeWordTokenizer())
    packed.fit(["a", "man", "plays"])
    inputs = benchmark.table5_inputs([packed], 3, 4, length_spread=2, seed=1)
    assert inputs.signature == "serving_default"
    texts, encoded = inputs.batches(), inputs.id_batches()
    for text, ids in zip(texts, encoded):
        words = [len(a.split()) + len(b.split()) for a, b in zip(text["text1"], text["text2"])]
        assert all(2 <= len(t.split()) <= 6 for t in [*text["text1"], *text["text2"]])
        # 3 special tokens + the words; padding to the longest pair
        np.testing.assert_array_equal(ids["padding_mask"].sum(1), np.add(words, 3))
        assert ids["token_ids"].shape[1] == max(words) + 3
    request = inputs.request(ids=True, inputs_file=tmp_path / "in.npz")
    assert request["signature"] == "serving_ids"
    assert request["options"] == {"inputs_file": str(tmp_path / "in.npz")}
    data = np.load(tmp_path / "in.npz")  # as the worker loads it
    loaded = [
        {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith(f"{i}/")} for i in range(4)
    ]
    assert _worker().inputs_digest(loaded) == inputs.digest(ids=True) != inputs.digest()
    with pytest.raises(ValueError, match="inputs_file"):
        inputs.request(ids=True)


def test_timed_batches_is_the_full_count_up_to_64_pairs_and_a_twentieth_above():
    # worked by hand from the rule: 100 and 30 below 65 pairs; 100 // 20 = 5, 30 // 20 = 1 -> 5
    # (the floor), 200 // 20 = 10 above
    assert benchmark.timed_batches(8) == 100
    assert benchmark.timed_batches(64, 30) == 30
    assert benchmark.timed_batches(65, 200) == 10
    assert benchmark.timed_batches(512) == 5
    assert benchmark.timed_batches(512, 30) == 5


def test_time_in_turn_alternates_paths_within_each_round_and_shape_and_drops_a_failed_pair():
    # worked by hand: 2 rounds x 2 shapes x 3 paths, "b" failing at shape 8 in round 0 (not
    # called there again; still timed at 512), "c" failing at 512 in round 1 (its round-0
    # timing kept)
    calls = []

    def time_one(path, shape, round_):
        calls.append((round_, shape, path))
        if (path, shape, round_) in {("b", 8, 0), ("c", 512, 1)}:
            raise RuntimeError(f"{path} crashed")
        return f"{path}{shape}r{round_}"

    timings, failures = benchmark.time_in_turn("abc", [8, 512], 2, time_one)
    assert calls == [
        (0, 8, "a"), (0, 8, "b"), (0, 8, "c"), (0, 512, "a"), (0, 512, "b"), (0, 512, "c"),
        (1, 8, "a"), (1, 8, "c"), (1, 512, "a"), (1, 512, "b"), (1, 512, "c"),
    ]  # fmt: skip
    assert timings == {
        ("a", 8): ["a8r0", "a8r1"], ("b", 8): [], ("c", 8): ["c8r0", "c8r1"],
        ("a", 512): ["a512r0", "a512r1"], ("b", 512): ["b512r0", "b512r1"],
        ("c", 512): ["c512r0"],
    }  # fmt: skip
    assert {key: str(error) for key, error in failures.items()} == {
        ("b", 8): "b crashed",
        ("c", 512): "c crashed",
    }
    with pytest.raises(RuntimeError, match="b crashed"):  # a required path's failure is raised
        benchmark.time_in_turn("abc", [8, 512], 2, time_one, required=("b",))
    with pytest.raises(ValueError, match="at least 1"):
        benchmark.time_in_turn("ab", [8], 0, time_one)
    with pytest.raises(ValueError, match="listed twice"):
        benchmark.time_in_turn("aa", [8], 1, time_one)


def test_one_process_times_several_shapes_on_the_inputs_their_own_processes_would(tmp_path):
    # The serving choice times a candidate at every shape of a round in one process (the
    # worker's `then`). Each shape must be timed on the draws a process of its own would time:
    # the reference is each shape's table5_inputs digest, computed here without a worker.
    import numpy as np
    from test_runtimes import _tiny_export

    export, featurizers = _tiny_export("re2", tmp_path / "export")
    small, large = (benchmark.table5_inputs(featurizers, b, n) for b, n in ((2, 5), (6, 9)))
    first, later = small.request(ids=True), large.request(ids=True)
    item = {k: later[k] for k in ("input_spec", "seed", "length_spread")}
    timed = benchmark.time_table5(
        export, threads=1, batches=3, then=[dict(item, batches=4)], **first
    )
    (second,) = timed["then"]
    assert timed["inputs_sha256"] == small.digest() != large.digest() == second["inputs_sha256"]
    assert len(timed["times_s"]) == 3 and len(second["times_s"]) == 4
    assert second["median_ms"] == np.median(second["times_s"]) * 1e3 > 0
    assert second["interpreter"] == timed["interpreter"] == "tf.saved_model.load"
    assert second["first_call_s"] > 0 and "then" not in second
    # a later shape's memory is the process's so far (VmHWM never falls)
    assert timed["peak_hwm_mib"] <= second["loaded_hwm_mib"] <= second["peak_hwm_mib"]
    # checked before a process starts, or by the worker before it loads the model
    with pytest.raises(ValueError, match="a then item is"):
        benchmark.time_table5(export, threads=1, batches=1, then=[{"batches": 1}], **first)
    with pytest.raises(RuntimeError, match=r"first request's keys: \['precision'\]"):
        bf16 = dict(item, batches=1, options={"precision": "bf16"})
        benchmark.time_table5(export, threads=1, batches=1, then=[bf16], **first)


def _bench_routed_export(tmp_path, choice, keep=None):
    """Export RE2 1 block (random weights, ``--xla=false``), record ``choice`` as its
    ``serving_choice``, call ``keep(path)`` (to keep converted models beside it), run
    ``re2-bench --saved_model`` on it at batch 8 and return ``(stdout, its one row)``."""
    from re2_tf.models import get_spec
    from re2_tf.serving.files import EXPORT_CONFIG_FILE

    one_block = get_spec("re2").benchmark["RE2 1 block"]["hparams"]
    path, _, _ = benchmark.export_benchmark_model(
        get_spec("re2"), one_block, tmp_path / "m", vocab_size=40, xla=False
    )
    config_file = path / "assets" / EXPORT_CONFIG_FILE
    config = json.loads(config_file.read_text())
    config["serving_choice"] = choice
    config_file.write_text(json.dumps(config))
    if keep:
        keep(path)
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.benchmark", f"--saved_model={path}", "--batch=8",
         "--length=6", "--batches=2", "--warmup=0", "--throughput_batch=0",
         f"--json_out={tmp_path / 'bench.json'}"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    ((row,),) = [json.loads((tmp_path / "bench.json").read_text())["rows"]]
    return proc.stdout, row


def test_cli_times_an_export_through_what_it_serves_by_default(tmp_path):
    # An export whose recorded serving choice routes 8-pair calls to ONNX Runtime: re2-bench
    # with no --backend times that route (as re2-predict serves it), on the export's own ids;
    # without ONNX Runtime installed, the SavedModel, saying why.
    from re2_tf.serving.predictor import installed
    from re2_tf.serving.runtimes import convert

    onnx = installed("onnxruntime")
    choice = {
        "backend": "onnxruntime",
        "precision": "f32",
        "measured": True,
        "routes": [
            {"batch": 8, "backend": "onnxruntime", "precision": "f32"},
            {"batch": 512, "backend": "savedmodel", "precision": "f32"},
        ],
    }
    stdout, row = _bench_routed_export(
        tmp_path, choice, keep=(lambda path: convert(path, "onnxruntime")) if onnx else None
    )
    if onnx:
        assert "through onnxruntime f32, what it serves a batch of 8 pairs" in stdout
        assert row["interpreter"].startswith("onnxruntime") and row["runtime"] == "onnxruntime"
    else:
        # default_routes' reason: the converted model missing or its runtime not installed
        assert "through savedmodel f32" in stdout
        assert "(the export chose onnxruntime" in stdout
        assert "serving the SavedModel there)" in stdout
        assert row["interpreter"] == "tf.saved_model.load"
    assert len(row["times_s"] if "times_s" in row else [0, 0]) == 2 and row["median_ms"] > 0


def test_cli_times_a_kept_bfloat16_savedmodel_in_its_own_precision(tmp_path):
    # An export whose recorded choice routes 8-pair calls to the bfloat16 SavedModel kept
    # beside it: re2-bench times that SavedModel as it is, bf16, never under the rewrite, on a
    # CPU with bfloat16 units; on one without, the SavedModel in float32, saying why.
    from re2_tf.models import get_spec
    from re2_tf.serving.runtimes import convert

    one_block = get_spec("re2").benchmark["RE2 1 block"]["hparams"]
    twin, _, _ = benchmark.export_benchmark_model(
        get_spec("re2"), one_block, tmp_path / "bf16", vocab_size=40, xla=False, precision="bf16"
    )
    route = {"batch": 8, "backend": "savedmodel_bf16", "precision": "bf16"}
    stdout, row = _bench_routed_export(
        tmp_path,
        # measured on this CPU on 1 intra-op + 2 inter-op threads: timed on those
        dict(route, measured=True, routes=[route], tf_threads=[1, 2], **machine()),
        # kept, as the serving choice keeps it
        keep=lambda path: convert(twin, "savedmodel_bf16", path / "runtimes"),
    )
    if not cpu_units()["bfloat16"]:  # default_routes follows a bfloat16 route only with units
        assert "through savedmodel f32" in stdout
        assert "this CPU has no bfloat16 units: serving the SavedModel there" in stdout
        assert (row["runtime"], row["precision"]) == ("savedmodel", "f32")
        return
    assert (
        "through savedmodel_bf16 bf16 on TensorFlow threads 1 + 2, what it serves a batch of 8"
        in stdout
    )
    assert row["tf_threads"] == [1, 2]  # as the timing process's TensorFlow reports them
    assert (row["runtime"], row["precision"]) == ("savedmodel_bf16", "bf16")
    assert row["interpreter"] == "tf.saved_model.load"  # no "(oneDNN bfloat16 rewrite)"


def test_a_worker_that_crashes_is_named_with_its_signal(tmp_path):
    # a runtime that crashes its process writes no traceback: the error names the signal
    crash = tmp_path / "crash.py"
    crash.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with pytest.raises(RuntimeError, match=r"crash failed on m \(killed by SIGSEGV\)"):
        benchmark.run_worker(crash, {"path": "m"})
    status = tmp_path / "status.py"
    status.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match=r"status failed on m \(exit status 3\)"):
        benchmark.run_worker(status, {"path": "m"})
