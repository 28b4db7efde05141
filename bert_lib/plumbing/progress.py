"""Progress lines for long jobs, in one format: done/total, rate, time elapsed and left.

    progress = Progress("Writing", len(records), "instances")
    for i, record in enumerate(records):
        ...
        progress.update(i + 1)
    progress.update(len(records), force=True)

logs, at most every 10 seconds (and whenever forced),

    Writing: 81,920/250,000 instances (8,190/s), 10s elapsed, 21s left

Imports no TensorFlow, so the data-preparation scripts can use it.
"""

import math
import time

from absl import logging

LOG_EVERY_SECONDS = 10.0


def format_seconds(seconds):
    """A duration as 1h02m03s, 2m03s or 3s ("?" when unknown)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _count(n):
    return f"{n:,}" if isinstance(n, int) else f"{n:,.1f}"


def progress_line(what, done, total, unit, elapsed, extra="", rate=None):
    """The one progress format: "<what>: done/total unit (rate/s)<extra>, T elapsed, T left".

    `rate` defaults to done / elapsed; pass it when the count started
    elsewhere than 0 or the start-up time should not count.
    """
    elapsed = max(elapsed, 1e-9)
    if rate is None:
        rate = done / elapsed
    if total is None:
        left = None
        counts = _count(done)
    else:
        left = (total - done) / rate if rate > 0 else None
        counts = f"{_count(done)}/{_count(total)}"
    unit = f" {unit}" if unit else ""
    return (
        f"{what}: {counts}{unit} ({rate:,.4g}/s){extra}, "
        f"{format_seconds(elapsed)} elapsed, {format_seconds(left)} left"
    )


class Progress:
    """Logs progress_line at most every `every_seconds`, and whenever forced."""

    def __init__(self, what, total, unit="", every_seconds=LOG_EVERY_SECONDS):
        self.what, self.total, self.unit = what, total, unit
        self.every_seconds = every_seconds
        self.start = self.last = time.monotonic()

    def update(self, done, extra="", force=False):
        now = time.monotonic()
        if not force and now - self.last < self.every_seconds:
            return
        self.last = now
        line = progress_line(self.what, done, self.total, self.unit, now - self.start, extra)
        logging.info(line)


class TrainingProgress:
    """Console progress of a training run, in progress_line's format with the loss added.

    Training: 120/1,000 steps (3.2/s), loss = 2.5, 102.4 examples/s, 38s elapsed, 4m35s left

    When the examples of a step vary (packed rows), log() is given the
    examples trained so far: the rate is theirs, and the line gives them too
    ("..., 171.3 examples/s, 6,540 examples, ...").
    """

    def __init__(self, start_step, max_steps, global_batch_size):
        self.total = "?" if max_steps is None else str(max_steps)
        self.max_steps = max_steps
        self.global_batch_size = global_batch_size
        self.t_start = time.time()
        self._t_last = None
        self._step_last = start_step
        self._examples_last = None

    def log(self, step, scalars, examples=None):
        """Logs one line; returns {"global_step/sec", "examples/sec"} (empty at first).

        `examples`: the examples trained so far, when steps hold varying numbers.
        """
        now = time.time()
        values = "".join(f", {key} = {value:.6g}" for key, value in scalars.items())
        rates = {}
        if self._t_last is not None and step > self._step_last:
            steps_per_sec = (step - self._step_last) / max(now - self._t_last, 1e-9)
            examples_per_sec = steps_per_sec * self.global_batch_size
            if examples is not None and self._examples_last is not None:
                examples_per_sec = (examples - self._examples_last) / max(now - self._t_last, 1e-9)
            rates = {"global_step/sec": steps_per_sec, "examples/sec": examples_per_sec}
            extra = f"{values}, {rates['examples/sec']:,.4g} examples/s"
            if examples is not None:
                extra += f", {_count(int(examples))} examples"
            line = progress_line(
                "Training", step, self.max_steps, "steps", now - self.t_start, extra, steps_per_sec
            )
        else:
            total = "" if self.max_steps is None else f"/{_count(self.max_steps)}"
            line = f"Training: {_count(step)}{total} steps{values}"
            if examples is not None:
                line += f", {_count(int(examples))} examples"
        logging.info(line)
        # Rates are measured from the first logged step on, leaving out graph
        # building and the first step's one-off costs.
        self._t_last, self._step_last, self._examples_last = now, step, examples
        return rates
