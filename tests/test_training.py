"""The training recipe: schedule, clipping, the release's evaluation routine, resume after a
real kill, repeatability, and the evaluate CLI. Runs tiny real trainings on the bundled sample."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from re2_tf.config import TrainConfig
from re2_tf.models import build_re2
from re2_tf.training import MatchingTrainer, WarmupExponentialDecay

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"


# --------------------------------------------------------------------------- schedule
def test_schedule_matches_the_release_formula_hand_worked():
    # lr 2e-3, min_lr 1e-4, 4 warm-up updates, decay 0.5 every 3 updates.
    schedule = WarmupExponentialDecay(2e-3, 1e-4, warmup_steps=4, decay_rate=0.5, decay_steps=3)
    expected = {
        0: 1e-4,  # warm-up starts at min_lr
        2: 1e-4 + 1.9e-3 * 2 / 4,  # linear: 1.05e-3
        4: 2e-3,  # floor(0/3) = 0
        6: 2e-3,  # floor(2/3) = 0
        7: 1e-3,  # floor(3/3) = 1
        10: 5e-4,  # floor(6/3) = 2
        100: 1e-4,  # 2e-3 * 0.5**32 is below the floor
    }
    for step, value in expected.items():
        assert float(schedule(step)) == pytest.approx(value, rel=1e-5), step
    fixed = WarmupExponentialDecay(1e-3, 6e-5, warmup_steps=0, decay_rate=1.0, decay_steps=1000)
    assert [float(fixed(s)) for s in (0, 5000, 10**6)] == pytest.approx([1e-3] * 3)
    with pytest.raises(ValueError, match="min_lr"):
        WarmupExponentialDecay(1e-5, 1e-4, 0, 0.9, 10)


def test_schedule_serialises():
    schedule = WarmupExponentialDecay(2e-3, 1e-4, 4, 0.5, 3)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert clone.get_config() == schedule.get_config()


# --------------------------------------------------------------------------- update rule
def test_update_clips_gradients_to_global_norm_five():
    keras.utils.set_random_seed(0)
    network = build_re2(20, 3, embedding_dim=6, hidden_size=5, blocks=1, dropout_rate=0.0)
    for w in network.trainable_weights:  # large weights -> a gradient norm well above 5
        w.assign(w * 40.0)
    x = {
        "text1": np.array([[2, 3, 4], [5, 6, 0]], "int32"),
        "text2": np.array([[7, 8], [9, 0]], "int32"),
    }
    y = np.array([0, 2], "int32")
    with tf.GradientTape() as tape:
        logits = network(x, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
    grads = [
        g.numpy() if not isinstance(g, tf.IndexedSlices) else tf.convert_to_tensor(g).numpy()
        for g in tape.gradient(loss, network.trainable_variables)
    ]
    norm = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads))
    assert norm > 5
    before = [w.numpy() for w in network.trainable_variables]
    trainer = MatchingTrainer(network, grad_clipping=5.0)
    trainer.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0))
    logs = trainer.train_on_batch(x, y, return_dict=True)
    assert logs["grad_norm"] == pytest.approx(norm, rel=1e-4)
    assert logs["loss"] == pytest.approx(float(loss), rel=1e-5)
    for w0, w1, g in zip(before, network.trainable_variables, grads):
        np.testing.assert_allclose(w0 - w1.numpy(), g * 5.0 / norm, rtol=1e-3, atol=1e-5)


# --------------------------------------------------------------------------- real runs
def make_data(tmp_path, n_train, n_dev=40):
    data = tmp_path / "data"
    data.mkdir()
    lines = (SAMPLE / "train.txt").read_text().splitlines()
    (data / "train.txt").write_text("\n".join(lines[:n_train]) + "\n")
    dev = (SAMPLE / "dev.txt").read_text().splitlines()
    (data / "dev.txt").write_text("\n".join(dev[:n_dev]) + "\n")
    (data / "test.txt").write_text("\n".join(dev[n_dev : 2 * n_dev]) + "\n")
    return data


def train_command(data, run_dir, *extra):
    return [
        sys.executable,
        "-m",
        "re2_tf.cli.train",
        "--model=re2",
        "--dataset=sample",
        f"--data_dir={data}",
        f"--run_dir={run_dir}",
        "--embedding_dim=8",
        "--hidden_size=8",
        "--blocks=2",
        "--enc_layers=1",
        "--min_df=1",
        "--progress=false",
        *extra,
    ]


def run(cmd, **kwargs):
    return run_process(cmd, **kwargs).stdout


def run_process(cmd, **kwargs):
    """Run ``cmd`` from the repository, assert it succeeded; returns the completed process."""
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def kill_after_evaluations(command, run_dir, evaluations):
    """Start a training ``command`` and SIGKILL it once ``run_dir``'s state has recorded
    ``evaluations`` evaluations (each one a backup), before it finishes."""
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = run_dir / "state.json"
    deadline = time.time() + 240
    while time.time() < deadline:
        if (
            state.exists()
            and json.loads(state.read_text() or "{}").get("evaluations", 0) >= evaluations
        ):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not json.loads(state.read_text()).get("finished")


def assert_same_backup(reference, killed, at_least):
    """Both runs' last backups (weights, optimizer and loss-scale state) are bit for bit the
    same, with more than ``at_least`` arrays; returns the backup's variable paths."""
    with (
        np.load(reference / "backup" / "state.npz") as a,
        np.load(killed / "backup" / "state.npz") as b,
    ):
        assert sorted(a.files) == sorted(b.files) and len(a.files) > at_least
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        return json.loads(str(b["paths"]))


def evaluated_updates(log):
    return [int(m) for m in re.findall(r"update (\d+) \(epoch", log)]


@pytest.fixture(scope="module")
def schedule_run(tmp_path_factory):
    """One small real run shared by the tests that only read its outputs: ``(tmp_path, data
    dir, stdout, stderr)``."""
    tmp_path = tmp_path_factory.mktemp("schedule")
    data = make_data(tmp_path, 40)
    proc = run_process(
        train_command(
            data,
            tmp_path / "run",
            "--batch_size=4",
            "--epochs=2",
            "--eval_per_samples=16",
            "--eval_warmup_samples=24",
            "--eval_per_samples_warmup=32",
            "--tolerance_samples=100000",
            "--log_per_samples=8",
        )
    )
    return tmp_path, data, proc.stdout, proc.stderr


@pytest.mark.slow  # a real training run
def test_evaluation_schedule_follows_the_release(schedule_run):
    # 40 pairs, batch 4 -> 10 updates per pass, 2 passes -> 20 updates. Eval warm-up covers
    # updates <= 6 with interval 8; after it the interval is 4; plus every pass end (10, 20).
    # Updates 1-6: none (8 > 6). Then 8, 12, 16, 20 and the pass ends 10, 20.
    tmp_path, data, log, _ = schedule_run
    assert evaluated_updates(log) == [8, 10, 12, 16, 20]
    assert "Training complete after 20 updates" in log
    # the attempt names its CPU (the model name as /proc/cpuinfo gives it, read here)
    cpuinfo = Path("/proc/cpuinfo")
    names = []
    if cpuinfo.exists():
        names = [
            line.split(":", 1)[1].strip()
            for line in cpuinfo.read_text().splitlines()
            if line.startswith("model name")
        ]
    if names:  # x86 Linux; elsewhere the name comes from platform.processor()
        assert f"CPU: {os.cpu_count()} cores of {names[0]} (" in log
    assert f"CPU: {os.cpu_count()} cores of " in log and "; intra-op threads: " in log
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert set(results["splits"]) == {"dev", "test"}
    for name in ("flags.txt", "config.json", "vocab.txt", "best.keras", "train.log", "state.json"):
        assert (tmp_path / "run" / name).exists(), name
    tags = set()
    for event_file in (tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(event_file)):
            tags.update(value.tag for value in event.summary.value)
    assert {
        "train/loss",
        "train/learning_rate",
        "train/gradient_norm",
        "train/accuracy",
        "train/pairs_per_second",
        "dev/acc",
        "train/loss_task",
        "train/loss_regularization",
    } <= tags


@pytest.mark.slow  # a real training run
def test_training_output_has_no_tf_data_rewrite_error(schedule_run):
    """Issue 49 (5e): under op determinism (the default) tf.data rewrote the training stream's
    parallel map into a sequential one and TensorFlow logged ``E0000 ... NodeDef mentions
    attribute use_unbounded_threadpool which is not in the op definition`` amid the progress
    lines; the stream now asks for the sequential map (``re2_tf.data.pipeline._map_batches``).
    """
    _, _, log, stderr = schedule_run
    assert "Training complete after 20 updates" in log  # the run trained and was captured
    assert "use_unbounded_threadpool" not in stderr + log
    assert "NodeDef mentions attribute" not in stderr + log


@pytest.mark.slow  # a real training run
def test_a_run_shorter_than_its_first_evaluation_point_evaluates_at_its_end(tmp_path):
    """Issue 49 (5a): --max_samples below the first evaluation point used to end with no
    checkpoint (and exit 0). 8 samples of batch 4 = 2 updates; evaluations every 16 samples
    (4 updates, warm-up the same), none at pass ends -> none scheduled, so the run evaluates
    at update 2."""
    data = make_data(tmp_path, 40)
    log = run(
        train_command(
            data,
            tmp_path / "run",
            "--batch_size=4",
            "--max_samples=8",
            "--eval_epoch=false",  # with it, the last update ends the last pass: evaluated
            "--eval_per_samples=16",
            "--eval_per_samples_warmup=16",
            "--eval_warmup_samples=0",
        )
    )
    assert evaluated_updates(log) == [2]
    assert "training stops after 2 updates (0.20 of " in log
    assert " passes of 10 updates over 40 pairs; 8 pairs seen)" in log
    assert "before its first scheduled evaluation" in log
    assert "Training complete after 2 updates" in log
    assert (tmp_path / "run" / "best.keras").exists()
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert state["evaluations"] == 1 and state["best_step"] == 2
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["best_step"] == 2 and set(results["splits"]) == {"dev", "test"}


def test_samples_seen_counts_each_pass_short_last_batch():
    """Hand-worked: 8,995 triples in batches of 128 make 71 updates a pass (70 full, one of
    35); 796 updates are 11 passes (781 updates, 98,945 triples) and 15 batches of 128."""
    config = TrainConfig(model="re2", batch_size=128)
    assert config.samples_seen(796, 8995) == 11 * 8995 + 15 * 128 == 100_865
    assert config.samples_seen(185, 47_852) == 185 * 128
    assert config.samples_seen(800, 20_360) == 5 * 20_360  # 5 whole passes of 160 updates
    with pytest.raises(ValueError, match="units >= 1"):
        config.samples_seen(3, 0)


def test_max_samples_becomes_the_fewest_updates_that_see_that_many():
    """Hand-worked: 101,800 samples over 8,995 triples (batch 128, 71 updates a pass) are 11
    passes (98,945) and 2,855 more, 23 updates: 804 updates, which see 101,889 triples; within
    the first pass it is ceil(samples / batch)."""
    config = TrainConfig(model="re2", batch_size=128)
    assert config.updates_for_samples(101_800, 8995) == 11 * 71 + 23 == 804
    assert config.samples_seen(804, 8995) == 101_889 >= 101_800 > config.samples_seen(803, 8995)
    assert config.updates_for_samples(23_590, 47_852) == 185
    assert config.updates_for_samples(5 * 20_360, 20_360) == 800
    with pytest.raises(ValueError, match="samples >= 0"):
        config.updates_for_samples(-1, 10)


@pytest.mark.slow
def test_early_stopping_min_samples_and_max_loss(tmp_path):
    data = make_data(tmp_path, 40)
    # lr = 0: the dev score never strictly improves after the first evaluation (update 4).
    # Tolerance 8 samples = 2 updates: at update 8, 8 - 4 > 2 -> stop.
    frozen = [
        "--batch_size=4",
        "--epochs=5",
        "--eval_per_samples=16",
        "--lr=0",
        "--min_lr=0",
        "--eval_epoch=false",
        "--tolerance_samples=8",
    ]
    log = run(train_command(data, tmp_path / "a", *frozen))
    assert evaluated_updates(log) == [4, 8] and "Tolerance reached" in log
    # min_samples 48 = 12 updates: early stopping only once update > 12 -> at 16.
    log = run(train_command(data, tmp_path / "b", *frozen, "--min_samples=48"))
    assert evaluated_updates(log) == [4, 8, 12, 16]
    # a first batch loss of ~ln 3 exceeds max_loss 0.5 -> stop at update 1.
    log = run(train_command(data, tmp_path / "c", "--batch_size=4", "--max_loss=0.5"))
    assert "exceeds max_loss 0.5" in log and "stopped at update 1." in log
    # lr 1e30: the first update blows the weights up, the second loss is NaN -> stop before it
    log = run(train_command(data, tmp_path / "d", "--batch_size=4", "--lr=1e30", "--min_lr=1e30"))
    assert "Loss is not finite (nan) at update 2: that update was not applied" in log


@pytest.mark.slow
def test_long_training_pairs_are_dropped_and_counted(tmp_path):
    data = make_data(tmp_path, 40)
    lengths = [
        max(len(line.split("\t")[0].split()), len(line.split("\t")[1].split()))
        for line in (data / "train.txt").read_text().splitlines()
    ]
    expected = sum(length > 10 for length in lengths)
    assert 0 < expected < 40
    log = run(train_command(data, tmp_path / "run", "--batch_size=8", "--epochs=1", "--max_len=10"))
    assert (
        f"{expected} training pairs longer than max_len=10 dropped, 0 truncated; "
        f"training on {40 - expected}"
    ) in log
    log = run(
        train_command(
            data,
            tmp_path / "cut",
            "--batch_size=8",
            "--epochs=1",
            "--max_len=10",
            "--long_pairs=truncate",
        )
    )
    assert (
        f"0 training pairs longer than max_len=10 dropped, {expected} truncated; training on 40"
    ) in log


@pytest.mark.slow
def test_a_different_configuration_refuses_to_reuse_the_run_dir(tmp_path):
    data = make_data(tmp_path, 16)
    run(train_command(data, tmp_path / "run", "--batch_size=8", "--epochs=1"))

    def again(*flags):
        command = train_command(data, tmp_path / "run", *flags)
        return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)

    proc = again("--batch_size=8", "--epochs=1", "--hidden_size=12")
    assert proc.returncode != 0
    assert (
        "holds a run with different settings: model_kwargs.hidden_size: saved 8, now 12"
        in proc.stderr + proc.stdout
    )
    proc = again("--batch_size=8", "--epochs=1", "--long_pairs=truncate")
    assert proc.returncode != 0
    assert "settings.long_pairs: saved 'drop', now 'truncate'" in proc.stderr + proc.stdout
    # a setting added to re2_tf after the run was made counts as its default when resuming
    config_file = tmp_path / "run" / "config.json"
    saved = json.loads(config_file.read_text())
    assert saved["settings"].pop("group_by_length") == 0
    config_file.write_text(json.dumps(saved))
    proc = again("--batch_size=8", "--epochs=1")
    assert proc.returncode == 0, proc.stderr
    proc = again("--batch_size=8", "--epochs=1", "--group_by_length=2")
    assert proc.returncode != 0
    assert "settings.group_by_length: saved '(absent)', now 2" in proc.stderr + proc.stdout
    # so does a model hyper-parameter added after the run was made, but only at its default
    from re2_tf.models import MODEL_SPECS

    saved = json.loads(config_file.read_text())
    defaults = MODEL_SPECS[saved["model"]].defaults()
    at_default = next(k for k, v in saved["model_kwargs"].items() if defaults.get(k) == v)
    assert saved["model_kwargs"]["hidden_size"] == 8 != defaults["hidden_size"]
    del saved["model_kwargs"][at_default]
    config_file.write_text(json.dumps(saved))
    proc = again("--batch_size=8", "--epochs=1")
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(config_file.read_text())
    del saved["model_kwargs"]["hidden_size"]
    config_file.write_text(json.dumps(saved))
    proc = again("--batch_size=8", "--epochs=1")
    assert proc.returncode != 0
    assert "model_kwargs.hidden_size: saved '(absent)', now 8" in proc.stderr + proc.stdout


def test_jit_compile_with_op_determinism_is_refused_not_silently_ignored(tmp_path):
    # Keras drops jit_compile=True whenever op determinism is on (model_supports_jit), so a
    # run asking for both would train without XLA and say nothing.
    data = make_data(tmp_path, 16)
    proc = subprocess.run(
        train_command(data, tmp_path / "run", "--jit_compile"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "--jit_compile: needs deterministic=False" in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["none", "fp16"])
def test_killed_run_resumes_and_matches_an_uninterrupted_run(tmp_path, precision):
    # 300 pairs, batch 10 -> 30 updates per pass, 4 passes; evaluation (= backup) every 5.
    # Batches grouped by length (windows of 3 batches): the resumed stream must repeat the
    # grouped, twice-shuffled batches exactly too. In fp16 the loss scaler's state (scale,
    # finite-step counter) is part of the backup and must come back too.
    data = make_data(tmp_path, 300)
    args = (
        "--batch_size=10",
        "--epochs=4",
        "--eval_per_samples=50",
        "--seed=3",
        "--group_by_length=3",
        f"--mixed_precision={precision}",
    )
    reference = tmp_path / "reference"
    run(train_command(data, reference, *args))
    ref_results = json.loads((reference / "results.json").read_text())

    killed = tmp_path / "killed"
    kill_after_evaluations(train_command(data, killed, *args), killed, 6)
    flags_txt = (killed / "flags.txt").read_text()
    assert "overwrite" not in flags_txt and f"--run_dir={killed}" in flags_txt
    assert "--model=re2" in flags_txt and "--blocks=" in flags_txt  # common and model flags
    assert "verbosity" not in flags_txt and "test_srcdir" not in flags_txt  # not absl's own
    counted = {  # the killed attempt's time at each snapshot it left
        int(p.stem.split("-")[1]): json.loads(p.read_text())["routine"]["seconds"]
        for p in (killed / "backup").glob("snapshot-*.json")
    }
    # rerunning the run's own flags.txt resumes it (and never deletes it)
    started = time.perf_counter()
    log = run([sys.executable, "-m", "re2_tf.cli.train", f"--flagfile={killed / 'flags.txt'}"])
    resumed_seconds = time.perf_counter() - started
    restored = re.search(r"Restored training state at update (\d+)", log)
    assert restored, log
    step = int(restored.group(1))
    assert step >= 25 and step % 5 == 0  # the last evaluation point: at most one interval lost
    # the run's time: the killed attempt's count at the restored snapshot, plus this
    # attempt's, which ran within the resuming process
    total = json.loads((killed / "state.json").read_text())["seconds"]
    assert counted[step] > 0
    assert counted[step] < total <= counted[step] + resumed_seconds + 0.05
    assert "Resuming re2 run" in log
    # --seed makes a run repeat exactly across processes: the killed-and-resumed run (two
    # more processes) has the uninterrupted run's best step, metrics, weights and optimizer.
    assert json.loads((killed / "results.json").read_text()) == ref_results
    # the resumed run ends with exactly the weights and optimizer state of the uninterrupted one
    paths = assert_same_backup(reference, killed, at_least=10)
    assert any(p.endswith("dynamic_scale") for p in paths) == (precision == "fp16")
    best = [keras.saving.load_model(d / "best.keras").get_weights() for d in (reference, killed)]
    for w_ref, w_killed in zip(*best):
        np.testing.assert_array_equal(w_ref, w_killed)


@pytest.mark.slow
def test_an_xla_compiled_run_without_op_determinism_still_resumes_bit_for_bit(tmp_path):
    # --jit_compile needs --nodeterministic (Keras runs XLA only without TensorFlow op
    # determinism). XLA's CPU step repeats on its own: a killed-and-resumed XLA run equals
    # an uninterrupted one bit for bit (Match-SRNN: its spatial GRU is XLA's while loop).
    data = make_data(tmp_path, 200)

    def command(run_dir, *extra):
        return [
            sys.executable, "-m", "re2_tf.cli.train", "--model=match_srnn",
            "--dataset=sample", f"--data_dir={data}", f"--run_dir={run_dir}",
            "--embedding_dim=8", "--slices=2", "--hidden_size=4", "--max_len=12",
            "--min_df=1", "--progress=false", "--batch_size=10", "--epochs=3",
            "--eval_per_samples=50", "--seed=5", "--threads=2", "--jit_compile",
            "--nodeterministic", *extra,
        ]  # fmt: skip

    reference = tmp_path / "reference"
    run(command(reference))
    flags_txt = (reference / "flags.txt").read_text()
    assert "--jit_compile\n" in flags_txt and "--nodeterministic\n" in flags_txt, flags_txt
    killed = tmp_path / "killed"
    kill_after_evaluations(command(killed), killed, 4)
    log = run(command(killed))
    assert re.search(r"Restored training state at update (\d+)", log), log
    assert json.loads((killed / "results.json").read_text()) == json.loads(
        (reference / "results.json").read_text()
    )
    assert_same_backup(reference, killed, at_least=5)


def _help(*args):
    # absl prints --helpfull and exits with status 1
    proc = subprocess.run(
        [sys.executable, "-m", "re2_tf.cli.train", *args, "--helpfull"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.stdout


@pytest.mark.slow
def test_helpfull_lists_the_models_hyper_parameters_with_preset_defaults():
    out = _help("--model=re2")
    for name in (
        "--blocks",
        "--enc_layers",
        "--encoder_activation",
        "--alignment",
        "--[no]enc_in",
        "--[no]parallel_blocks",
    ):
        assert name in out, name
    assert re.search(
        r"--blocks: Number of stacked blocks\. Range: \[1, 5\]\.\s+\(default: '2'\)", out
    )
    # --dataset picks the model's preset: RE2's SNLI settings have 3 blocks
    out = _help("--model=re2", "--dataset=snli")
    assert re.search(
        r"--blocks: Number of stacked blocks\. Range: \[1, 5\]\.\s+\(default: '3'\)", out
    )
    out = _help("--model=re2", "--dataset=snli", "--preset=none")
    assert re.search(
        r"--blocks: Number of stacked blocks\. Range: \[1, 5\]\.\s+\(default: '2'\)", out
    )


@pytest.mark.slow
def test_frozen_embeddings_stay_out_of_the_backup_and_empty_texts_train_without_nan(tmp_path):
    data = make_data(tmp_path, 40)
    lines = (data / "train.txt").read_text().splitlines()
    for i in (0, 5, 9):  # empty text1, empty text2, both empty
        t1, t2, y = lines[i].split("\t")
        lines[i] = "\t".join(["" if i in (0, 9) else t1, "" if i in (5, 9) else t2, y])
    (data / "train.txt").write_text("\n".join(lines) + "\n")
    (data / "dev.txt").write_text("\t\t0\n" + (data / "dev.txt").read_text())
    glove = tmp_path / "glove.txt"
    glove.write_text(
        "".join(
            f"{w} " + " ".join(f"{(i * 7 + k) % 5 - 2:.1f}" for k in range(8)) + "\n"
            for i, w in enumerate(["a", "the", "man", "dog", "is"])
        )
    )
    command = train_command(
        data, tmp_path / "run", "--batch_size=8", "--epochs=2", f"--embeddings={glove}"
    )
    command.remove("--embedding_dim=8")
    log = run(command)
    assert "not finite" not in log and "Training complete after 10 updates" in log
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert np.isfinite(results["splits"]["dev"]["acc"])
    with np.load(tmp_path / "run" / "backup" / "state.npz") as state:
        paths = json.loads(str(state["paths"]))
    assert not [p for p in paths if p.startswith("re2/embedding") or p == "embedding/embeddings"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model_kwargs"]["embedding_dim"] == 8
    assert config["embeddings"]["path"] == str(glove.resolve())
    # a changed vectors file refuses to reuse the run (and its cache), naming the field
    glove.write_text("")
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert re.search(r"other settings: embeddings\.(mtime|size): saved", proc.stdout + proc.stderr)


@pytest.mark.slow  # a real training run
def test_evaluate_cli_scores_the_best_checkpoint(schedule_run, tmp_path):
    _, data, _, _ = schedule_run
    run_dir = schedule_run[0] / "run"
    out = run(
        [
            sys.executable,
            "-m",
            "re2_tf.cli.evaluate",
            f"--run_dir={run_dir}",
            "--splits=test",
            f"--output={tmp_path / 'm.json'}",
        ]
    )
    # independent accuracy: the saved model's argmax over the test file, counted here
    from re2_tf import runs

    vocab = runs.load_vocab(run_dir)
    model = runs.load_best_model(run_dir)
    rows = [line.split("\t") for line in (data / "test.txt").read_text().splitlines()]
    correct = 0
    for t1, t2, label in rows:
        x = {
            "text1": np.array([vocab.encode(t1.split())], "int32"),
            "text2": np.array([vocab.encode(t2.split())], "int32"),
        }
        correct += int(np.argmax(model(x).numpy()[0]) == int(label))
    acc = correct / len(rows)
    assert f"test ({len(rows)} pairs): acc {acc:.4f}" in out
    assert json.loads((tmp_path / "m.json").read_text())["test"]["acc"] == pytest.approx(acc)
