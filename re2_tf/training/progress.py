"""Training progress as log lines, for a run whose stdout is not a terminal (a file, a pipe,
CI), where a Keras progress bar shows nothing useful.

:class:`ProgressLog` is driven from a Keras callback's hooks (``on_train_begin`` and
``on_train_batch_end`` of :class:`re2_tf.training.routine.ReleaseRoutine`); it uses no thread,
so a line can only come at the end of a batch (a first step that traces and compiles for a
minute, or a long dev evaluation, delays the next line by that long). Lines look like::

    update 1/1000 | first update took 0:01:02 (tracing, compiling) | loss 1.0986 | next ...
    update 640/1000 | 305 pairs/s | loss 0.8123 | next evaluation at update 704 in 13.4 s
"""

from __future__ import annotations

import math
import time

__all__ = ["ProgressLog", "format_duration"]


def format_duration(seconds: float) -> str:
    """``seconds`` for a log line: ``"12.3 s"`` under a minute, else ``"H:MM:SS"``
    (``3723.4`` -> ``"1:02:03"``); ``"?"`` when not finite."""
    if not math.isfinite(seconds):
        return "?"
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class ProgressLog:
    """Log one progress line at most every ``interval`` seconds of wall time.

    Each line gives the update count after the last step and the run's total, the
    throughput since the previous line (pairs/s: updates since the previous line times
    ``batch_size``, over the wall time since then minus the time :meth:`exclude` was told
    about, i.e. dev evaluations), the mean training loss of the updates since the previous
    line (with ``interval=0``: the loss Keras reported for that step), and the time to the
    next dev evaluation (or to the end of training when none is left) at that throughput.

    The first update after :meth:`start` (where Keras traces and compiles the step) is timed
    on its own: it is reported as ``first update took <duration> (tracing, compiling)``
    when it took ``interval`` or more, and the throughput of the next line starts after it.

    Args:
        logger: ``logging.Logger`` the lines go to (``info``).
        total_steps: int, updates in the whole run.
        batch_size: int, pairs per update.
        interval: float seconds >= 0 between lines (0: a line at every :meth:`update`).

    Raises:
        ValueError: ``interval`` < 0.
    """

    def __init__(self, logger, total_steps, batch_size, interval=30.0):
        if not interval >= 0:
            raise ValueError(f"progress interval must be >= 0 seconds, got {interval!r}")
        self.logger = logger
        self.total_steps = int(total_steps)
        self.batch_size = int(batch_size)
        self.interval = float(interval)
        self.start(0)

    def start(self, step):
        """Start timing at update ``step`` (training begins or resumes there)."""
        self._last_time = time.perf_counter()
        self._last_step = int(step)
        self._excluded = 0.0
        self._losses = []
        self._first = True

    def exclude(self, seconds):
        """Leave ``seconds`` (float, e.g. a dev evaluation) out of the next throughput."""
        self._excluded += float(seconds)

    def update(self, step, loss, next_evaluation=None):
        """Record the loss of the update that brought the count to ``step``; log a line if
        ``interval`` seconds have passed since the previous one (or since :meth:`start`).

        Args:
            step: int, updates done so far (the optimizer's iteration count).
            loss: float, that update's training loss.
            next_evaluation: int update of the next dev evaluation, or ``None`` when no
                evaluation is left (the ETA is then to ``total_steps``).

        Returns:
            The logged line (``str``), or ``None`` when it was not yet time for one.
        """
        self._losses.append(float(loss))
        now = time.perf_counter()
        due = now - self._last_time >= self.interval
        seconds = max(now - self._last_time - self._excluded, 1e-9)
        target, what = (
            (self.total_steps, "training ends")
            if next_evaluation is None
            else (next_evaluation, "next evaluation")
        )
        line = None
        if self._first:
            self._first = False
            if due:
                line = (
                    f"update {step}/{self.total_steps} | first update took "
                    f"{format_duration(seconds)} (tracing, compiling) | loss {float(loss):.4f} | "
                    f"{what} at update {target}"
                )
        elif due:
            speed = (step - self._last_step) * self.batch_size / seconds
            eta = (target - step) * self.batch_size / speed if speed > 0 else math.inf
            line = (
                f"update {step}/{self.total_steps} | {speed:.0f} pairs/s | "
                f"loss {sum(self._losses) / len(self._losses):.4f} | "
                f"{what} at update {target} in {format_duration(eta)}"
            )
        else:
            return None
        if line is not None:
            self.logger.info(line)
        self._last_time, self._last_step, self._excluded, self._losses = now, step, 0.0, []
        return line
