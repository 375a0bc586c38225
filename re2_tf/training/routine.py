"""The release's training routine as a Keras callback: periodic evaluation, best checkpoint,
early stopping, loss guard, logging and TensorBoard summaries."""

import json
import math
import os
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from re2_tf import runs
from re2_tf.evaluation import format_metrics, inference_dataset, predict_outputs, score
from re2_tf.training.distribution import broadcast_from_chief
from re2_tf.training.progress import ProgressLog

STATE_FILE = runs.STATE_FILE
SNAPSHOT_PATTERN = "snapshot-{step}.json"
SNAPSHOTS_KEPT = 3


def samples_to_steps(samples, batch_size):
    """The release's conversion of a sample count to updates: ``ceil(samples / batch_size)``."""
    return int(math.ceil(samples / batch_size))


class ReleaseRoutine(keras.callbacks.Callback):
    """Evaluate, keep the best checkpoint and stop early, as the RE2 release's trainer does.

    At update ``s`` (1-based, the optimizer's iteration count after the step):

    - evaluate on dev when ``s % interval == 0`` where ``interval`` is ``eval_steps`` once
      ``s > eval_warmup_steps`` and ``eval_steps_warmup`` before (the release's eval
      warm-up), or when ``s`` ends a pass over the training data and ``eval_epoch`` is set
      (the last update, ``total_steps``, ends the last pass, whole or cut short by
      ``max_samples``, so its model is always evaluated then);
    - a strictly better dev score (``metric``) saves ``network`` to ``best.keras``;
    - stop when ``s - best_step > early_stopping_steps`` and ``s > min_steps``, when the batch
      loss exceeds ``max_loss``, or after ``total_steps``;
    - a run that reaches ``total_steps`` without any evaluation (``max_samples`` below the
      first evaluation point) evaluates at its last update, so it ends with ``best.keras``.

    Its own state (best score and step, evaluations so far, and the run's time) is written
    to ``state.json`` at every evaluation. At every Keras epoch end -- where
    ``BackupAndRestore`` saves weights and optimizer -- it also writes
    ``backup/snapshot-<update>.json`` with that state and the dropout seed-generator states
    (which Keras' weight files leave out), so a resumed run replays exactly what the
    uninterrupted run would have done.

    Args:
        network: the functional model that is evaluated and saved.
        run_dir: run directory (the layout of :mod:`re2_tf.runs`).
        spec: :class:`re2_tf.data.datasets.DatasetSpec` (metric, ranking).
        dev_examples, dev_encoded: dev pairs and their features
            (:func:`re2_tf.data.pipeline.encode_examples`).
        metric: model-selection metric name (``acc``, ``mrr``, ...).
        total_steps, steps_per_data_epoch, eval_steps, eval_steps_warmup, eval_warmup_steps,
        min_steps, early_stopping_steps, log_steps: counts in updates.
        eval_epoch: bool, also evaluate at the end of every pass over the data.
        max_loss: float, stop if a batch loss exceeds it.
        batch_size: pairs per update (for throughput).
        logger: ``logging.Logger`` for the run log.
        progress: bool, show a Keras progress bar over all updates; when false (stdout is
            not a terminal), log a :class:`re2_tf.training.progress.ProgressLog` line
            (update count, pairs/s, loss, time to the next evaluation) at the end of the
            first update at least ``progress_interval`` seconds after the previous line.
        progress_interval: float seconds >= 0 between those lines (default 30).
        strategy: the run's ``tf.distribute`` strategy (default: none). With several
            workers, only the chief (``is_chief``) scores dev and saves ``best.keras``; its
            score reaches every worker (:func:`re2_tf.training.distribution.broadcast_from_chief`)
            and each takes the same decisions (best update, early stopping, learning-rate
            controller) from it.
        is_chief: bool, this process is the chief (default True).
        lr_controller: optional learning-rate controller told after every evaluation whether
            the dev score improved (``on_evaluation(improved)``, ``get_state``/``set_state``;
            DRCN's "multiply by 0.85 when dev accuracy does not improve").
        clock: ``(time.perf_counter(), time.process_time())`` values taken when this
            attempt started (``re2_tf.fit`` takes them on entry, so reading data and
            building the model count); default: at construction.

    The run's time is in the state as ``seconds`` (wall) and ``cpu_seconds`` (user + system
    time of this process, all its threads), summed over the run's attempts: each attempt
    counts from ``clock`` up to its last saved state, and a
    resumed attempt starts from the count in the state it restored (none in a state saved
    before runs counted their time: the time is then ``None``). An attempt killed
    between two saves loses only the time since the last save, whose updates the next
    attempt trains again, so a killed-and-resumed run counts about what it would have taken
    uninterrupted (plus one re-start). With several workers, each process counts its own.

    A step whose loss is not finite was not applied by the trainer (it reports
    ``nonfinite``); the routine then stops the run with a message naming the update.
    Every per-step log of the trainer is averaged over ``log_steps`` updates and written to
    TensorBoard as ``train/<name>`` (the task loss and each of the model's own loss terms
    included).
    """

    def __init__(
        self,
        network,
        run_dir,
        spec,
        dev_examples,
        dev_encoded,
        metric,
        total_steps,
        steps_per_data_epoch,
        eval_steps,
        eval_steps_warmup,
        eval_warmup_steps,
        min_steps,
        early_stopping_steps,
        log_steps,
        eval_epoch,
        max_loss,
        batch_size,
        logger,
        progress=True,
        eval_batch_size=256,
        lr_controller=None,
        progress_interval=30.0,
        strategy=None,
        is_chief=True,
        clock=None,
    ):
        super().__init__()
        # (wall, CPU) seconds when this attempt started: time.perf_counter() and
        # time.process_time() values (default: now).
        self._attempt_start = clock or (time.perf_counter(), time.process_time())
        self._time_base = (0.0, 0.0)  # the previous attempts' count, from a restored state
        self.strategy = strategy
        self.is_chief = is_chief
        self.network = network
        self.run_dir = Path(run_dir)
        self.spec = spec
        self.dev_examples = dev_examples
        self.dev_dataset = inference_dataset(dev_encoded, batch_size=eval_batch_size)
        self.lr_controller = lr_controller
        self.metric = metric
        self.total_steps = total_steps
        self.steps_per_data_epoch = steps_per_data_epoch
        self.eval_steps = eval_steps
        self.eval_steps_warmup = eval_steps_warmup
        self.eval_warmup_steps = eval_warmup_steps
        self.min_steps = min_steps
        self.early_stopping_steps = early_stopping_steps
        self.log_steps = max(1, log_steps)
        self.eval_epoch = eval_epoch
        self.max_loss = max_loss
        self.batch_size = batch_size
        self.logger = logger
        self.progress = progress
        self.progress_log = (
            None if progress else ProgressLog(logger, total_steps, batch_size, progress_interval)
        )
        self.state = {
            "best_score": -np.inf,
            "best_step": 0,
            "best_metrics": None,
            "evaluations": 0,
            "finished": False,
            "stop_reason": None,
            "seconds": 0.0,
            "cpu_seconds": 0.0,
        }
        self.writer = tf.summary.create_file_writer(str(self.run_dir / runs.TENSORBOARD_DIR))
        self._window = []

    # ------------------------------------------------------------------ state
    @property
    def state_path(self):
        return self.run_dir / STATE_FILE

    def load_state(self):
        if self.state_path.exists():
            self._set_state(json.loads(self.state_path.read_text()))

    def _json_state(self):
        """The routine state with an unset best score as ``None`` (JSON has no infinity)."""
        state = dict(self.state)
        if not np.isfinite(state["best_score"]):
            state["best_score"] = None
        return state

    def _set_state(self, state):
        self.state.update(state)
        if self.state["best_score"] is None:
            self.state["best_score"] = -np.inf
        # A state saved before runs counted their time has none: the run's time stays
        # unknown (None) rather than a count of this attempt alone.
        seconds, cpu_seconds = state.get("seconds"), state.get("cpu_seconds")
        known = seconds is not None and cpu_seconds is not None
        self._time_base = (float(seconds), float(cpu_seconds)) if known else None
        self.state.update(seconds=seconds, cpu_seconds=cpu_seconds)

    def count_time(self):
        """Set the state's ``seconds`` and ``cpu_seconds`` to the previous attempts' count
        plus this attempt's time so far (both ``None`` when the run was resumed from a state
        that did not count them); returns ``(seconds, cpu_seconds)``."""
        if self._time_base is None:
            return None, None
        wall0, cpu0 = self._attempt_start
        seconds = round(self._time_base[0] + time.perf_counter() - wall0, 1)
        cpu_seconds = round(self._time_base[1] + time.process_time() - cpu0, 1)
        self.state.update(seconds=seconds, cpu_seconds=cpu_seconds)
        return seconds, cpu_seconds

    def save_state(self):
        self.count_time()
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._json_state(), indent=2) + "\n")
        os.replace(tmp, self.state_path)

    def _seed_states(self):
        return [v for v in self.network.non_trainable_variables if "seed_generator" in v.path]

    def save_snapshot(self, step):
        backup = self.run_dir / runs.BACKUP_DIR
        backup.mkdir(parents=True, exist_ok=True)
        self.count_time()
        snapshot = {
            "step": step,
            "routine": self._json_state(),
            "seed_states": [v.numpy().tolist() for v in self._seed_states()],
            "lr_controller": (
                self.lr_controller.get_state() if self.lr_controller is not None else None
            ),
        }
        path = backup / SNAPSHOT_PATTERN.format(step=step)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(snapshot))
        os.replace(tmp, path)
        old = sorted(
            backup.glob(SNAPSHOT_PATTERN.format(step="*")), key=lambda p: int(p.stem.split("-")[1])
        )
        for stale in old[:-SNAPSHOTS_KEPT]:
            stale.unlink()

    def restore_snapshot(self, step, directory=None):
        """Restore the routine state and seed states saved at ``step`` in ``directory``
        (default: the run's ``backup/``); False if none."""
        directory = Path(directory) if directory is not None else self.run_dir / runs.BACKUP_DIR
        path = directory / SNAPSHOT_PATTERN.format(step=step)
        if not path.exists():
            return False
        snapshot = json.loads(path.read_text())
        self._set_state(snapshot["routine"])
        for variable, value in zip(self._seed_states(), snapshot["seed_states"]):
            variable.assign(np.asarray(value, dtype=variable.dtype))
        if self.lr_controller is not None and snapshot.get("lr_controller") is not None:
            self.lr_controller.set_state(snapshot["lr_controller"])
        self._restored = True
        return True

    # ------------------------------------------------------------------ callbacks
    def on_train_begin(self, logs=None):
        if not getattr(self, "_restored", False):
            self.load_state()
        self._step0 = int(self.model.optimizer.iterations.numpy())
        self._clock = time.perf_counter()
        self._trained_seconds = 0.0
        self._bar = (
            keras.utils.Progbar(
                self.total_steps, stateful_metrics=["lr", "dev"], unit_name="update"
            )
            if self.progress
            else None
        )
        if self._bar is not None and self._step0:
            self._bar.update(self._step0)
        if self.progress_log is not None:
            self.progress_log.start(self._step0)

    def _stop(self, reason):
        self.state["stop_reason"] = reason
        self.model.stop_training = True
        self.logger.info(reason)

    def on_train_batch_end(self, batch, logs=None):
        # Scalars (a multi-worker step's logs arrive as vectors of one value).
        logs = {k: float(np.reshape(v, -1)[0]) for k, v in (logs or {}).items()}
        step = int(self.model.optimizer.iterations.numpy())
        if float(logs.get("nonfinite", 0.0)):
            self._stop(
                f"[Loss is not finite ({float(logs.get('loss', np.nan)):.4g}) at update "
                f"{step + 1}: that update was not applied and training is stopped. "
                "Check the data (empty texts are handled) and lower --lr.]"
            )
            return
        loss = float(logs.get("loss", np.nan))
        self._window.append({k: float(v) for k, v in logs.items() if k != "nonfinite"})
        if step % self.log_steps == 0:
            self._write_train_summaries(step)
        if self._bar is not None:
            self._bar.update(
                step,
                [("loss", loss), ("lr", float(logs.get("lr", 0.0)))]
                + [(k, logs[k]) for k in ("acc",) if k in logs],
            )
        if loss > self.max_loss:
            self._stop(
                f"[Loss {loss:.4g} exceeds max_loss {self.max_loss}: unstable training "
                f"stopped at update {step}.]"
            )
            return
        interval = self.eval_steps if step > self.eval_warmup_steps else self.eval_steps_warmup
        epoch_end = self.eval_epoch and (
            step % self.steps_per_data_epoch == 0 or step == self.total_steps
        )
        if step % interval == 0 or epoch_end:
            self._evaluate(step)
        elif step >= self.total_steps and not self.state["evaluations"]:
            self.logger.info(
                f"Training ends at update {step}, before its first scheduled evaluation: "
                "evaluating now so that the run has a checkpoint."
            )
            self._evaluate(step)
        if self.model.stop_training:
            return
        if step >= self.total_steps:
            self._stop(f"Training complete after {step} updates.")
        elif self.progress_log is not None:
            self.progress_log.update(step, loss, self.next_evaluation(step))

    def on_epoch_end(self, epoch, logs=None):
        self.save_snapshot(int(self.model.optimizer.iterations.numpy()))

    def on_train_end(self, logs=None):
        self.writer.flush()
        if self._bar is not None:
            print()

    # ------------------------------------------------------------------ helpers
    def next_evaluation(self, step):
        """The first update after ``step`` at which the schedule evaluates on dev (see the
        class docstring; ``total_steps`` for a run that would otherwise end without any), or
        ``None`` when there is none up to ``total_steps``."""

        def next_multiple(n, after):
            return (after // n + 1) * n

        candidates = [next_multiple(self.eval_steps, max(step, self.eval_warmup_steps))]
        if step < self.eval_warmup_steps:
            warmup = next_multiple(self.eval_steps_warmup, step)
            if warmup <= self.eval_warmup_steps:
                candidates.append(warmup)
        if self.eval_epoch:
            candidates.append(min(next_multiple(self.steps_per_data_epoch, step), self.total_steps))
        first = min(candidates)
        if first > self.total_steps and not self.state["evaluations"]:
            return self.total_steps  # the evaluation a run without any gets at its end
        return first if first <= self.total_steps else None

    #: TensorBoard names of the trainer's step logs (others are written as ``train/<name>``).
    SUMMARY_NAMES = {"acc": "accuracy", "grad_norm": "gradient_norm", "lr": "learning_rate"}

    def _write_train_summaries(self, step):
        if not self._window:
            return
        names = self._window[-1].keys()
        means = {k: float(np.mean([w[k] for w in self._window if k in w])) for k in names}
        self._window = []
        with self.writer.as_default(step=step):
            for key, value in means.items():
                tf.summary.scalar(f"train/{self.SUMMARY_NAMES.get(key, key)}", value)

    def _evaluate(self, step):
        now = time.perf_counter()
        self._trained_seconds += now - self._clock
        if self.is_chief:
            result = score(
                self.spec, self.dev_examples, predict_outputs(self.network, self.dev_dataset)
            )
            value = result[self.metric]
        else:
            value = 0.0
        if self.strategy is not None:
            value = broadcast_from_chief(self.strategy, value)
        if not self.is_chief:
            result = {self.metric: value}  # the chief's score: the same decisions follow
        improved = value > self.state["best_score"]
        if improved:
            self.state.update(best_score=value, best_step=step, best_metrics=result)
            if self.is_chief:
                tmp = self.run_dir / ("tmp-" + runs.BEST_MODEL_FILE)
                self.network.save(tmp)
                os.replace(tmp, self.run_dir / runs.BEST_MODEL_FILE)
        self.state["evaluations"] += 1
        if self.lr_controller is not None:
            self.lr_controller.on_evaluation(improved)
        trained = step - self._step0
        speed = trained * self.batch_size / max(self._trained_seconds, 1e-9)
        epoch = step / self.steps_per_data_epoch
        self.logger.info(
            f"update {step} (epoch {epoch:.2f}) | dev {format_metrics(result)}"
            f"{' *' if improved else ''} | best {self.metric} {self.state['best_score']:.4f} at "
            f"{self.state['best_step']} | {speed:.0f} pairs/s"
        )
        with self.writer.as_default(step=step):
            for key, val in result.items():
                tf.summary.scalar(f"dev/{key}", float(val))
            tf.summary.scalar("train/pairs_per_second", speed)
        if step - self.state["best_step"] > self.early_stopping_steps and step > self.min_steps:
            self._stop("[Tolerance reached. Training is stopped early.]")
        self.save_state()
        self._clock = time.perf_counter()
        if self.progress_log is not None:
            self.progress_log.exclude(self._clock - now)
