"""Stopping training cleanly on SIGTERM and Ctrl-C (SIGINT).

Preemptible machines, Kubernetes and Slurm send SIGTERM some seconds before
they kill a job, and a person stops a run with Ctrl-C. While Estimator.train
runs, StopSignals catches both: the first only records the signal, so the
step in flight finishes and the training loop then saves that step and
raises TrainingStopped (errors.Stopped: one STOPPED line, exit status 128 +
the signal). A second signal ends the process at once, unsaved, with one
line naming the newest checkpoint and the same status.

Python runs signal handlers in the main thread between bytecodes, so a
handler alone would not see a second Ctrl-C until the step in flight (a
long session.run) returned. The C-level handler also writes each signal's
number to the "wakeup fd" at once, whatever the main thread is doing; a
small thread reads that pipe, so the first signal is recorded and the second
acted on as soon as they arrive.

Outside Estimator.train (evaluation, prediction, writing records) the
scripts' entry point turns SIGTERM into errors.Stopped where the main thread
is (errors.call), which removes temporary files as Ctrl-C's
KeyboardInterrupt does. An evaluation run by the training loop (evaluating
while training) polls `requested()` between batches and raises Interrupted,
so that a signal does not wait for a long evaluation to end.
"""

import os
import signal
import sys
import threading

from absl import logging

from ..plumbing.errors import signal_name
from .checkpoints import newest_checkpoint

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# The StopSignals of the training now running, if any (see requested()).
_ACTIVE = []


class Interrupted(Exception):
    """Work the training loop runs between steps (an evaluation) gave way to a stop signal."""


def requested():
    """The stop signal training has received (its number), or None."""
    return _ACTIVE[-1].received if _ACTIVE else None


def check():
    """Raises Interrupted if training has received a stop signal (call between batches)."""
    if requested() is not None:
        raise Interrupted(signal_name(requested()))


class StopSignals:
    """Catches SIGTERM and SIGINT while the block runs; `received` is the first one's number.

    Only the main thread can install signal handlers; elsewhere (a library
    user training in a thread) the block runs with the signals as they were
    and `received` stays None. model_dir is where the newest checkpoint
    named by the second signal's line is.
    """

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.received = None
        self._previous_handlers = {}
        self._previous_fd = None
        self._pipe = None
        self._thread = None

    def __enter__(self):
        _ACTIVE.append(self)
        if threading.current_thread() is not threading.main_thread():
            return self
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        self._pipe = (read_fd, write_fd)
        self._previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        for signum in STOP_SIGNALS:
            # The work is done by the reader thread; the handler only keeps
            # the default action (ending the process) from happening.
            self._previous_handlers[signum] = signal.signal(signum, _ignore)
        self._thread = threading.Thread(
            target=self._read_signals, name="stop_signals", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        _ACTIVE.remove(self)
        if self._pipe is None:
            return False
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        read_fd, write_fd = self._pipe
        os.close(write_fd)  # the reader sees the end of the pipe and returns
        self._thread.join(timeout=5)
        os.close(read_fd)
        return False

    def _read_signals(self):
        read_fd = self._pipe[0]
        while True:
            try:
                data = os.read(read_fd, 64)
            except OSError:
                return
            if not data:
                return
            for signum in data:
                if signum in STOP_SIGNALS:
                    self._on_signal(signum)

    def _on_signal(self, signum):
        if self.received is None:
            self.received = signum
            logging.warning(
                "%s: finishing the step in flight, then saving it and stopping "
                "(a second SIGTERM or Ctrl-C stops at once, without saving).",
                signal_name(signum),
            )
            return
        self._stop_now(signum)

    def _stop_now(self, signum):
        """The second signal: one line, then exit at once (the training thread may be
        inside a long session.run)."""
        checkpoint = newest_checkpoint(self.model_dir)
        where = (
            f"the newest checkpoint is {checkpoint}; the same command resumes from it"
            if checkpoint
            else "there is no checkpoint yet; the same command starts over"
        )
        sys.stdout.flush()
        sys.stderr.write(
            f"STOPPED: a second {signal_name(signum)}: stopped at once, without saving; {where}\n"
        )
        sys.stderr.flush()
        os._exit(128 + signum)


def _ignore(signum, frame):
    del signum, frame
