"""Progress lines of a training run whose stdout is not a terminal
(re2_tf.training.progress through ReleaseRoutine), driven by real Keras ``fit`` on a tiny RE2."""

import json
import logging
import re
import time
from pathlib import Path

import keras
import pytest

from re2_tf.data import datasets
from re2_tf.data.features import WordIds
from re2_tf.data.pipeline import encode_examples, make_dataset
from re2_tf.data.vocab import Vocab
from re2_tf.models import build_re2
from re2_tf.training import MatchingTrainer
from re2_tf.training.progress import ProgressLog, format_duration
from re2_tf.training.routine import ReleaseRoutine

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
BATCH = 4
LINE = re.compile(
    r"^update (\d+)/(\d+) \| (\d+) pairs/s \| loss (\d+\.\d{4}) \| "
    r"(next evaluation|training ends) at update (\d+) in (.+)$"
)
FIRST = re.compile(
    r"^update 1/(\d+) \| first update took (.+) \(tracing, compiling\) \| loss (\d+\.\d{4}) \| "
    r"next evaluation at update (\d+)$"
)


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def train(tmp_path, **routine_kwargs):
    """14 updates of batch 4 over 24 sample pairs (6 per pass), evaluated on 8 dev pairs at
    updates 3 (warm-up interval 3 up to update 3), 4, 8, 12 (interval 4) and 6, 12 (pass
    ends). Returns the logged lines, the per-batch losses Keras reported and fit's seconds."""
    keras.utils.set_random_seed(0)
    spec = datasets.get_dataset("sample")
    train_pairs = datasets.load_split(spec, SAMPLE, "train")[:24]
    dev = datasets.load_split(spec, SAMPLE, "dev")[:8]
    vocab = Vocab(sorted({w for e in train_pairs + dev for w in (e.text1 + " " + e.text2).split()}))
    featurizers = [WordIds(vocab)]
    encoded = encode_examples(train_pairs, featurizers, training=True)
    network = build_re2(
        len(vocab), spec.num_classes, embedding_dim=4, hidden_size=4, blocks=1, enc_layers=1
    )
    trainer = MatchingTrainer(network)
    trainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    handler = Lines()
    logger = logging.getLogger(f"test_training_progress.{tmp_path}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    routine = ReleaseRoutine(
        network,
        tmp_path,
        spec,
        dev,
        encode_examples(dev, featurizers),
        spec.metric,
        total_steps=14,
        steps_per_data_epoch=6,
        eval_steps=4,
        eval_steps_warmup=3,
        eval_warmup_steps=3,
        min_steps=0,
        early_stopping_steps=1000,
        log_steps=1,
        eval_epoch=True,
        max_loss=1e9,
        batch_size=BATCH,
        logger=logger,
        progress=False,
        **routine_kwargs,
    )
    losses = []
    recorder = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(float(logs["loss"]))
    )
    data = make_dataset(encoded, batch_size=BATCH, training=True, seed=0).repeat()
    started = time.perf_counter()
    trainer.fit(
        data, epochs=4, steps_per_epoch=4, callbacks=[routine, recorder], verbose=0, shuffle=False
    )
    return handler.lines, losses, time.perf_counter() - started


def seconds(duration):
    """Parse format_duration's output; returns (seconds, rounding half-width)."""
    if duration.endswith(" s"):
        return float(duration[:-2]), 0.05
    h, m, s = (int(part) for part in duration.split(":"))
    return h * 3600 + m * 60 + s, 0.5


def test_format_duration():
    assert format_duration(0.04) == "0.0 s"
    assert format_duration(12.34) == "12.3 s"
    assert format_duration(59.96) == "0:01:00"
    assert format_duration(3723.4) == "1:02:03"
    assert format_duration(90061) == "25:01:01"
    assert format_duration(float("inf")) == "?"
    with pytest.raises(ValueError, match="progress interval must be >= 0 seconds, got -1"):
        ProgressLog(logging.getLogger("x"), 10, 4, interval=-1)


@pytest.mark.slow  # a real training run
def test_interval_zero_logs_every_update_with_consistent_numbers(tmp_path):
    lines, losses, fit_seconds = train(tmp_path, progress_interval=0)
    evaluated = [int(m) for m in re.findall(r"^update (\d+) \(epoch", "\n".join(lines), re.M)]
    # 14, the last update, ends the last (short) pass: with eval_epoch its model is evaluated
    assert evaluated == [3, 4, 6, 8, 12, 14]
    assert lines[-1] == "Training complete after 14 updates."
    # the first update (tracing) is timed on its own
    first = FIRST.match(lines[0])
    assert first, lines[0]
    assert len(losses) == 14
    assert (first[1], first[3], first[4]) == ("14", f"{losses[0]:.4f}", "3")
    progress = [LINE.match(line) for line in lines if LINE.match(line)]
    # one line per update but the first and the last, which ends training instead
    assert [int(m[1]) for m in progress] == list(range(2, 14))
    assert {int(m[2]) for m in progress} == {14}
    assert [m[4] for m in progress] == [f"{loss:.4f}" for loss in losses[1:13]]
    assert [(m[5], int(m[6])) for m in progress] == [
        ("next evaluation", min(e for e in evaluated if e > int(m[1]))) for m in progress
    ]
    took, rounding = seconds(first[2])
    trained = took - rounding
    for m in progress:
        speed = int(m[3])
        # the printed speed is rounded to a whole pair/s; the ETA to 0.1 s (or 1 s)
        remaining_pairs = (int(m[6]) - int(m[1])) * BATCH
        eta, rounding = seconds(m[7])
        assert remaining_pairs / (speed + 0.5) - rounding <= eta
        assert eta <= remaining_pairs / max(speed - 0.5, 1e-9) + rounding
        trained += BATCH / (speed + 0.5)  # at most the seconds this update took
    # the updates' time (evaluations excluded) fits in fit's wall time
    assert trained <= fit_seconds


@pytest.mark.slow
def test_default_interval_logs_at_most_one_line_per_30_seconds(tmp_path):
    lines, losses, fit_seconds = train(tmp_path)
    progress = [line for line in lines if LINE.match(line)]
    assert len(progress) <= fit_seconds // 30  # none for a run shorter than 30 s
    assert len(losses) == 14 and lines[-1] == "Training complete after 14 updates."


@pytest.mark.slow  # a real training run
def test_the_run_counts_its_time_over_attempts_from_the_restored_state(tmp_path):
    # A previous attempt saved 500 s wall / 40 s CPU in state.json; this attempt started 100 s
    # (wall) and 7 s (CPU) before the routine existed. At its last save (update 14, the last
    # evaluation) the state holds 500 + 100 + this attempt's time, CPU likewise: bounded by
    # the clocks read around the whole call.
    (tmp_path / "state.json").write_text(
        json.dumps({"best_score": None, "best_step": 0, "evaluations": 0, "seconds": 500.0,
                    "cpu_seconds": 40.0})
    )  # fmt: skip
    wall0, cpu0 = time.perf_counter(), time.process_time()
    train(tmp_path, progress_interval=0, clock=(wall0 - 100.0, cpu0 - 7.0))
    wall1, cpu1 = time.perf_counter(), time.process_time()
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["evaluations"] == 6  # updates 3, 4, 6, 8, 12, 14: the restored count went on
    assert 600.0 - 0.05 <= state["seconds"] <= 600.0 + (wall1 - wall0) + 0.05
    assert 47.0 - 0.05 <= state["cpu_seconds"] <= 47.0 + (cpu1 - cpu0) + 0.05
    # the snapshot a resumed attempt restores carries the count taken at its save
    snapshots = sorted((tmp_path / "backup").glob("snapshot-*.json"))
    assert snapshots
    last = json.loads(snapshots[-1].read_text())["routine"]
    assert 600.0 - 0.05 <= last["seconds"] <= state["seconds"]


@pytest.mark.slow  # a real training run
def test_a_state_saved_before_runs_counted_time_leaves_the_time_unknown(tmp_path):
    # Counting only this attempt would pass a fraction of the run off as its time.
    (tmp_path / "state.json").write_text(
        json.dumps({"best_score": 0.5, "best_step": 2, "evaluations": 1})
    )
    train(tmp_path, progress_interval=0)
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["evaluations"] == 7  # the saved 1, then updates 3, 4, 6, 8, 12, 14
    assert state["seconds"] is None and state["cpu_seconds"] is None
