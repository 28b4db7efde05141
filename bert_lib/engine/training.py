"""The training loop: runs a built TrainGraph in a session until max_steps.

TrainingLoop runs the steps and does what falls due after each: the
progress line, TensorBoard summaries, the checkpoint of every
save_checkpoints_steps, then the hooks. Hooks are the loop's one extension
point: objects with tf.compat.v1.train.SessionRunHook's methods (begin,
after_create_session, before_run, after_run, end; subclass SessionRunHook to
get the ones you leave out), so TF 1.x hooks work unchanged. Their
before_run and after_run get a StepContext: TF's run context (session,
request_stop) plus the step, the stop signal if one has come, and
save_checkpoint(). Work every N steps (evaluating, keeping the best
checkpoint, stopping early) is the hook EveryNSteps(N, action); a hook with
an `every_steps` attribute, as it has, ends a run of several steps
(--steps_per_run) at each multiple of it.
"""

import os
import signal
import time

import numpy as np
import tensorflow as tf
from absl import logging

from ..plumbing.errors import signal_name
from ..plumbing.progress import TrainingProgress as _Progress
from ..plumbing.progress import format_seconds
from . import input_data, input_position, signals
from .checkpoints import newest_checkpoint, save_checkpoint
from .config import CHECKPOINT_BASENAME, NanLossError, TrainingStopped


def _crosses(before, after, every):
    """Whether a multiple of `every` lies in (before, after]."""
    return bool(every) and after // every > before // every


def scalar_summary(values):
    return tf.compat.v1.Summary(
        value=[
            tf.compat.v1.Summary.Value(tag=tag, simple_value=float(value))
            for tag, value in values.items()
        ]
    )


class StepContext(tf.compat.v1.train.SessionRunContext):
    """What a hook's before_run and after_run get: TF's run context and where training stands.

    `step` is global_step (before the run in before_run, after it in
    after_run), `previous_step` global_step before the run. `stop_signal` is
    the signal (SIGTERM, SIGINT) training stops on after this step, or None.
    save_checkpoint() saves this step, unless saved already, and returns the
    newest checkpoint (only the chief saves). request_stop() ends training
    after this step, which is then saved.
    """

    def __init__(self, original_args, session, loop, previous_step):
        super().__init__(original_args, session)
        self._loop = loop
        self.previous_step = previous_step

    @property
    def step(self):
        return self._loop.step

    @property
    def stop_signal(self):
        return self._loop.stop_signal()

    def save_checkpoint(self):
        loop = self._loop
        if loop.dist.is_chief and loop.last_saved != loop.step:
            loop.save()
        return newest_checkpoint(loop.config.model_dir)


class EveryNSteps(tf.compat.v1.train.SessionRunHook):
    """The hook that runs action(step_context) each time global_step passes a multiple of
    `steps` (after that step's log line, summaries and periodic save).

    Once a stop signal has come the action is skipped (the step is saved and
    training ends); an action that gives way to one (an evaluation polling
    signals.check() raises signals.Interrupted) is logged and training goes
    on to stop. `every_steps`: a run of several steps (--steps_per_run) ends
    at its multiples, so that the action sees each.
    """

    def __init__(self, steps, action):
        self.every_steps = steps
        self.action = action

    def after_run(self, run_context, run_values):
        del run_values
        if not _crosses(run_context.previous_step, run_context.step, self.every_steps):
            return
        if run_context.stop_signal is not None:
            logging.info("Stopping: skipping an action due at step %d.", run_context.step)
            return
        try:
            self.action(run_context)
        except signals.Interrupted as e:
            logging.info("%s: an action at step %d was interrupted.", e, run_context.step)


class TrainingLoop:
    """Runs the steps of one training session and what falls due after each.

    The session has its variables already; run() returns after max_steps,
    at the end of the input or when a hook asks to stop, having saved the
    last step (chief only). `hooks` have had begin() and
    after_create_session(); run() calls their before_run and after_run.
    peer_watch, when given, is stopped once the last step that needs every
    worker has run.

    stop_signals (signals.StopSignals), when given, ends the run on
    SIGTERM or Ctrl-C: the step in flight finishes, is saved, and run()
    raises TrainingStopped. EveryNSteps actions are skipped once a signal
    has come, and an evaluation that polls signals.check() gives way. In a
    multi-worker job every step also sums the workers' signal flags, so all
    stop after the same step.
    """

    def __init__(
        self,
        session,
        dist,
        graph,
        config,
        global_batch_size,
        hooks=(),
        peer_watch=None,
        stop_signals=None,
    ):
        self.session = session
        self.dist = dist
        self.graph = graph
        self.config = config
        self.global_batch_size = global_batch_size
        self.hooks = list(hooks)
        self.peer_watch = peer_watch
        self.step = None
        self.start_step = None
        self.last_saved = None
        self.loss = None
        self.stop_requested = False
        self.writer = None
        self.progress = None
        self.stop_signals = stop_signals
        self.job_signal = None  # multi-worker: the signal the job stops on, once summed
        # The steps whose multiples end a run of several steps (--steps_per_run).
        self.boundaries = [config.log_step_count_steps]
        if dist.is_chief:
            self.boundaries.append(config.save_checkpoints_steps)
        self.boundaries += [getattr(hook, "every_steps", None) for hook in self.hooks]

    def save(self):
        position = self.graph.input_position

        def write_position(path):
            position.save(self.session, path)

        save_checkpoint(
            self.session,
            self.graph.saver,
            self.graph.weights_finite,
            self.config.model_dir,
            self.step,
            before_write=None if position is None else write_position,
        )
        if position is not None:
            input_position.remove_orphans(self.config.model_dir)
        self.last_saved = self.step

    def _local_signal(self):
        return None if self.stop_signals is None else self.stop_signals.received

    def stop_signal(self):
        """The signal this run stops on (after the current step), or None.

        Multi-worker: the signal the job's summed flags report, so that
        every worker decides at the same step.
        """
        if self.graph.job_stop_flags is not None:
            return self.job_signal
        return self._local_signal()

    def _stopped(self, signum):
        """The TrainingStopped to raise once the stop step is saved."""
        where = "the same command resumes from it"
        if self.dist.num_workers > 1:
            where = "starting every worker again with the same command resumes from it"
        if self.dist.is_chief:
            saved = f"saved {newest_checkpoint(self.config.model_dir)}"
        else:
            path = os.path.join(self.config.model_dir, f"{CHECKPOINT_BASENAME}-{self.step}")
            saved = f"worker 0 saves {path}"
        message = f"{signal_name(signum)} at step {self.step}: {saved}; {where}"
        return TrainingStopped(signum, message)

    def run(self, max_steps, resumed):
        """Trains until global_step reaches max_steps (None: until the input ends)."""
        self.step = self.start_step = int(self.session.run(self.graph.global_step))
        self.last_saved = self.step if resumed else None
        if self.dist.is_chief:
            self.writer = tf.compat.v1.summary.FileWriter(
                self.config.model_dir, self.session.graph
            )
        self.progress = _Progress(self.step, max_steps, self.global_batch_size)
        logging.info(
            "Training from step %d to %s, global batch %d over %d replica(s).",
            self.step,
            self.progress.total,
            self.global_batch_size,
            self.dist.num_replicas,
        )
        try:
            input_ended = False
            while (
                (max_steps is None or self.step < max_steps)
                and not self.stop_requested
                and self.stop_signal() is None
            ):
                if not self._run_once(max_steps):
                    input_ended = True
                    break
            self._collectives_done()
            if self.dist.is_chief and self.step != self.last_saved:
                self.save()
            # A signal that comes once the last step has run (during the final save,
            # say) stops nothing: training is complete, and says so.
            finished = (
                input_ended
                or self.stop_requested
                or (max_steps is not None and self.step >= max_steps)
            )
            signum = self.stop_signal() or self._local_signal()
            if signum is not None and not finished:
                raise self._stopped(signum)
            if signum is not None:
                logging.warning(
                    "%s came after the last step: training is complete at step %d.",
                    signal_name(signum),
                    self.step,
                )
            logging.info(
                "Training done at step %d (%d steps in %s); loss = %s",
                self.step,
                self.step - self.start_step,
                format_seconds(time.time() - self.progress.t_start),
                "n/a" if self.loss is None else f"{self.loss:.6g}",
            )
        finally:
            if self.writer is not None:
                self.writer.close()

    def _collectives_done(self):
        if self.peer_watch is not None:
            self.peer_watch.stop()

    def _run_once(self, max_steps):
        """One session.run of training and its follow-up; False when the input ended."""
        previous_step = self.step
        run_steps = self._steps_this_run(max_steps)
        log_due, summary_due = self._due(previous_step + run_steps, max_steps)
        # The same tensors on every step: each new set of fetches costs the
        # session a graph optimization and an executor of its own (about a
        # step's time), so the learning rate comes along even when unused.
        fetches = {"loss": self.graph.loss, "step": self.graph.step_after}
        if self.graph.examples_trained is not None:
            fetches["examples_trained"] = self.graph.examples_trained
        if self.graph.learning_rate is not None:
            fetches["learning_rate"] = self.graph.learning_rate
        if summary_due and self.graph.summary_op is not None:
            fetches["summary"] = self.graph.summary_op
        run_context = StepContext(
            tf.compat.v1.train.SessionRunArgs(dict(fetches)), self.session, self, previous_step
        )
        for i, hook in enumerate(self.hooks):
            args = hook.before_run(run_context)
            if args is not None and args.fetches is not None:
                fetches[("hook", i)] = args.fetches
        feed = {}
        if self.graph.job_stop_flags is not None:
            fetches["job_stop_flags"] = self.graph.job_stop_flags
            local = self._local_signal()
            feed[self.graph.stop_flags] = [local == signal.SIGTERM, local == signal.SIGINT]
        results = self._run(fetches, run_steps, feed)
        if results is None:
            return False
        if "job_stop_flags" in results:
            term, interrupt = results["job_stop_flags"]
            if term > 0 or interrupt > 0:
                self.job_signal = signal.SIGTERM if term > 0 else signal.SIGINT
        if max_steps is not None and self.step >= max_steps:
            self._collectives_done()
        self._report(results, log_due, summary_due)
        if self.dist.is_chief and _crosses(
            previous_step, self.step, self.config.save_checkpoints_steps
        ):
            self.save()
        for i, hook in enumerate(self.hooks):
            values = tf.compat.v1.train.SessionRunValues(results.get(("hook", i)), None, None)
            hook.after_run(run_context, values)
        if run_context.stop_requested:
            self.stop_requested = True
        return True

    def _steps_this_run(self, max_steps):
        """Steps the next run may take: up to --steps_per_run, stopping at the next
        log, summary, save, hook's every_steps or the end (1 without a graph loop)."""
        if self.graph.steps_this_run is None:
            return 1
        limit = self.config.steps_per_run
        boundaries = list(self.boundaries)
        if self.writer is not None:
            boundaries.append(self.config.save_summary_steps)
        for every in boundaries:
            if every:
                limit = min(limit, every - self.step % every)
        if max_steps is not None:
            limit = min(limit, max_steps - self.step)
        return max(1, limit)

    def _due(self, next_step, max_steps):
        """Whether the run up to next_step logs a line and writes summaries."""
        config = self.config
        first_or_last = self.step == self.start_step or (
            max_steps is not None and next_step >= max_steps
        )
        log_due = first_or_last or _crosses(self.step, next_step, config.log_step_count_steps)
        # Summaries every save_summary_steps, and at a run's first and last
        # step so that even short runs leave a curve.
        summary_due = bool(
            self.writer is not None
            and config.save_summary_steps
            and (first_or_last or _crosses(self.step, next_step, config.save_summary_steps))
        )
        return log_due, summary_due

    def _run(self, fetches, run_steps, feed):
        """Runs the step (and its accumulate-only micro-batches); None at the input's end.

        Sets self.loss (with accumulation, the mean over the step's
        micro-batches) and self.step.
        """
        graph = self.graph
        micro_losses = []
        position = graph.input_position
        at_start = None if position is None else position.data
        try:
            with input_data.naming_read_errors(graph.input_files, at_start):
                if graph.accumulate_loss is not None:
                    for _ in range(self.config.num_accumulation_steps - 1):
                        micro_losses.append(float(self.session.run(graph.accumulate_loss)))
                if graph.steps_this_run is not None:
                    feed[graph.steps_this_run] = run_steps
                results = self.session.run(fetches, feed_dict=feed or None)
        except tf.errors.OutOfRangeError:
            if graph.steps_this_run is not None:
                # Steps of the loop before the input ended did run.
                self.step = int(self.session.run(graph.global_step))
            logging.info("Input exhausted at step %d.", self.step)
            return None
        loss = float(results["loss"])
        if micro_losses:
            loss = float(np.mean(micro_losses + [loss]))
        new_step = int(results["step"])
        if not np.isfinite(loss):
            raise NanLossError(
                f"loss is {loss} at step {new_step}; training stopped. The newest good "
                f"checkpoint is {newest_checkpoint(self.config.model_dir) or '(none)'}"
            )
        if new_step == self.step:
            raise RuntimeError("the model_fn's train_op does not increment global_step")
        self.loss, self.step = loss, new_step
        return results

    def _report(self, results, log_due, summary_due):
        """The progress line and TensorBoard scalars of the step just run."""
        scalars = {"loss": self.loss}
        if "learning_rate" in results:
            scalars["learning_rate"] = float(results["learning_rate"])
        if log_due:
            rates = self.progress.log(self.step, scalars, results.get("examples_trained"))
            if self.writer is not None and rates:
                self.writer.add_summary(scalar_summary(rates), self.step)
        if summary_due:
            self.writer.add_summary(scalar_summary(scalars), self.step)
            if "summary" in results:
                self.writer.add_summary(results["summary"], self.step)
