"""Evaluating while training: every N steps, keeping the best checkpoint, stopping early.

tf.estimator.train_and_evaluate and its best-checkpoint and stop-without-
improvement hooks went with tf.estimator; the scripts get the same here,
through the training loop's one extension point (a hook: EveryNSteps,
whose action saves the step, evaluates it and may request_stop), once for
all of them. A script supplies only evaluate(checkpoint_path,
write_summaries) -> its eval_results dict, and the function that writes its
eval_results.txt; the flags (--eval_every_n_steps,
--best_checkpoint_metric, --early_stopping_patience, --keep_checkpoint_max)
are read by the scripts (bert_lib/script_flags.py) and arrive here as values.

Every --eval_every_n_steps steps, and once more at the end of training:
  - the checkpoint of that step is saved (if no save fell due) and evaluated;
  - the result is logged, written to output_dir/eval for TensorBoard and
    appended to output_dir/eval_history.jsonl, one JSON object a line with
    the step as "global_step";
  - with a --best_checkpoint_metric, a new best value (keys with "loss" in
    their name are minimised, the others maximised) copies model.ckpt-STEP.*
    to output_dir/best/ with a `checkpoint` file of its own and the result
    in best/eval_results.txt. The training Saver deletes only what it saved
    in output_dir, so rotation never touches the copy, and the directory
    works wherever a checkpoint does (--init_checkpoint=output_dir/best);
  - with --early_stopping_patience=K, the K-th evaluation in a row without a
    new best ends training at that step (which is saved).
A restarted run replays the history file, so the best value and the count
of evaluations without improvement carry over. The history is the truth:
best/ is written before an evaluation is recorded there, the file is
rewritten whole through a temporary name, and on resume best/ is repaired
to hold the history's best and a checkpoint whose evaluation fell due but
was not recorded (the run was stopped or killed during it) is evaluated
first, so that a kill at any point ends as an uninterrupted run would.
The whole run holds output_dir's training lock (plumbing/directory_lock.py).
"""

import collections
import json
import math
import os

import numpy as np
import tensorflow as tf
from absl import logging

from ..plumbing import atomic_write, checkpoint_files
from . import input_position
from .checkpoints import (
    checkpoint_step,
    is_whole,
    newest_checkpoint,
    write_checkpoint_state,
)
from .config import CHECKPOINT_BASENAME, UsageError
from .estimator import training_lock
from .training import EveryNSteps

HISTORY_FILE = "eval_history.jsonl"
BEST_DIR = "best"
RESULTS_FILE = "eval_results.txt"

EvalOptions = collections.namedtuple("EvalOptions", ["every_n_steps", "best_metric", "patience"])


def is_minimised(metric):
    """Loss-like metrics (their name contains "loss") improve downwards, others upwards."""
    return "loss" in metric.lower()


def check_options(
    every_n_steps, best_metric, patience, can_evaluate, needs, distribution_strategy="one_device"
):
    """Returns EvalOptions, or None when evaluation while training is off.

    can_evaluate: whether this run both trains and evaluates; `needs` names
    the flags that make it so (for the message). Raises UsageError naming
    the flag at fault, before any work: multi-worker runs cannot evaluate
    while training.
    """
    if best_metric is not None and not best_metric.strip():
        raise UsageError("--best_checkpoint_metric is empty")
    if every_n_steps is None:
        for name, value in (
            ("best_checkpoint_metric", best_metric),
            ("early_stopping_patience", patience),
        ):
            if value is not None:
                raise UsageError(f"--{name} needs --eval_every_n_steps")
        return None
    if every_n_steps <= 0:
        raise UsageError(f"--eval_every_n_steps must be positive, got {every_n_steps}")
    if not can_evaluate:
        raise UsageError(f"--eval_every_n_steps needs {needs}")
    if patience is not None:
        if patience <= 0:
            raise UsageError(f"--early_stopping_patience must be positive, got {patience}")
        if best_metric is None:
            raise UsageError("--early_stopping_patience needs --best_checkpoint_metric")
    _check_strategy(distribution_strategy)
    return EvalOptions(every_n_steps, best_metric, patience)


def _check_strategy(distribution_strategy):
    if distribution_strategy == "multi_worker":
        raise UsageError(
            "--eval_every_n_steps does not run under --distribution_strategy="
            "multi_worker; evaluate the saved checkpoints in a separate job"
        )


def _plain(value):
    """A result value as JSON can hold it (numpy scalars and arrays to Python)."""
    value = np.asarray(value)
    if value.shape == ():
        value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return value
    return value.tolist()


def _number(value):
    """The value as a finite float, or None (NaN, text, arrays)."""
    try:
        number = float(np.asarray(value))
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _history_entry(line, path):
    """One evaluation of the history file; None (with a warning) for a broken line,
    such as the last one of a run killed while writing it."""
    try:
        entry = json.loads(line)
    except ValueError:
        entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("global_step"), int):
        logging.warning("%s: skipping a line that is not an evaluation: %r", path, line[:80])
        return None
    return entry


class BestCheckpoint:
    """output_dir/best/: a copy of one checkpoint and the results that made it best."""

    def __init__(self, model_dir, write_results):
        self.directory = os.path.join(model_dir, BEST_DIR)
        self.write_results = write_results

    def holds(self):
        """The name of the checkpoint best/'s state file names (model.ckpt-STEP), if that
        file reads and the checkpoint is whole; else None."""
        state = os.path.join(self.directory, checkpoint_files.STATE_FILE)
        if not tf.io.gfile.exists(state):
            return None
        try:
            with tf.io.gfile.GFile(state) as f:
                name = os.path.basename(checkpoint_files.parse_state(f.read(), state)[-1])
        except (checkpoint_files.DamagedState, UnicodeDecodeError):
            return None
        return name if is_whole(os.path.join(self.directory, name)) else None

    def copy_in(self, checkpoint_path):
        """Copies checkpoint_path's files here, each through a temporary name."""
        tf.io.gfile.makedirs(self.directory)
        for source in tf.io.gfile.glob(checkpoint_path + ".*"):
            if source.endswith(input_position.SUFFIX) or atomic_write.is_temporary(source):
                continue  # the input position (of no use to the best model); unfinished saves
            atomic_write.copy_file(source, os.path.join(self.directory, os.path.basename(source)))

    def commit(self, name, result):
        """Makes the checkpoint `name` (copied here already) best/'s: its results, then the
        state file that names it, then the other checkpoints' files go."""
        self.write_results(os.path.join(self.directory, RESULTS_FILE), result)
        # The state names the checkpoint relative to this directory, so best/
        # still works when output_dir is moved.
        write_checkpoint_state(self.directory, [name])
        for path in tf.io.gfile.glob(os.path.join(self.directory, f"{CHECKPOINT_BASENAME}-*")):
            if not os.path.basename(path).startswith(name + "."):
                tf.io.gfile.remove(path)

    def keep(self, checkpoint_path, result):
        """Copies checkpoint_path's files here, then makes it the best.

        Files go through temporary names, the state file is written after the
        results, and the previous best is deleted only once the new one is
        complete, so the directory always holds a whole checkpoint; a kill
        between two of these leaves a state the next run repairs (see
        EvalDuringTraining: the evaluation is recorded in the history only
        after this returns, so it is made again on resume).
        """
        name = os.path.basename(checkpoint_path)
        self.copy_in(checkpoint_path)
        self.commit(name, result)
        logging.info("Kept %s as the best checkpoint in %s", name, self.directory)


class EvalDuringTraining:
    """Runs one training with evaluations, the best checkpoint and early stopping.

    evaluate_fn(checkpoint_path, write_summaries) returns the script's result
    dict (what its eval_results.txt holds), writing its estimator's
    TensorBoard summaries only if asked (this class writes the whole result
    itself); write_results(path, result) writes that file.
    """

    def __init__(self, estimator, evaluate_fn, write_results, options):
        self.estimator = estimator
        self.evaluate_fn = evaluate_fn
        self.options = options
        self.model_dir = estimator.model_dir
        self.history_path = os.path.join(self.model_dir, HISTORY_FILE)
        self.best = BestCheckpoint(self.model_dir, write_results)
        self.best_value = None
        self.best_step = None
        self.since_best = 0
        self.last_step = None
        self.last_result = None
        self.recorded_steps = set()

    # ------------------------------------------------------------ the metric

    def _metric_value(self, result):
        metric = self.options.best_metric
        if metric not in result:
            raise UsageError(
                f"--best_checkpoint_metric={metric} is not an evaluation result; the "
                f"results are {', '.join(sorted(result))}"
            )
        return _number(result[metric])

    def _improves(self, value):
        if value is None:
            return False
        if self.best_value is None:
            return True
        if is_minimised(self.options.best_metric):
            return value < self.best_value
        return value > self.best_value

    def _count(self, step, value):
        """Updates best / since_best with one evaluation; returns whether it is a new best."""
        if self._improves(value):
            self.best_value, self.best_step, self.since_best = value, step, 0
            return True
        self.since_best += 1
        return False

    def _read_history(self):
        """The evaluations of the history file, in order."""
        if not tf.io.gfile.exists(self.history_path):
            return []
        with tf.io.gfile.GFile(self.history_path) as f:
            entries = [_history_entry(line, self.history_path) for line in f if line.strip()]
        return [entry for entry in entries if entry is not None]

    def _replay_history(self):
        """Takes over the evaluated steps, best value and patience count of earlier runs.

        The history is the truth: best/ is repaired to hold its best
        checkpoint (see _repair_best).
        """
        metric = self.options.best_metric
        by_step = {}
        for entry in self._read_history():
            self.recorded_steps.add(entry["global_step"])
            if metric is not None and metric in entry:
                by_step[entry["global_step"]] = entry
                self._count(entry["global_step"], _number(entry[metric]))
        if self.best_step is not None and not self._repair_best(by_step[self.best_step]):
            # An earlier run without this metric: no best/ to go on from.
            self.best_value, self.best_step, self.since_best = None, None, 0
        if self.best_step is not None:
            logging.info(
                "Best %s so far: %s at step %d; %d evaluation(s) since.",
                metric,
                self.best_value,
                self.best_step,
                self.since_best,
            )

    def _repair_best(self, entry):
        """Makes best/ hold the history's best checkpoint (a kill may have left it with
        another one, or half of one); False when there is no best/ and the checkpoint is
        gone from output_dir too."""
        name = f"{CHECKPOINT_BASENAME}-{self.best_step}"
        held = self.best.holds()
        if held == name:
            return True
        if not is_whole(os.path.join(self.best.directory, name)):
            source = os.path.join(self.model_dir, name)
            if not is_whole(source):
                if held is not None:
                    logging.warning(
                        "%s holds %s, but the best evaluation in %s is step %d, whose "
                        "checkpoint is gone; %s stays as it is.",
                        self.best.directory,
                        held,
                        self.history_path,
                        self.best_step,
                        self.best.directory,
                    )
                return held is not None
            self.best.copy_in(source)
        self.best.commit(name, dict(entry))
        logging.warning(
            "Repaired %s to hold %s, the best evaluation in %s (a run was stopped while "
            "it was being written).",
            self.best.directory,
            name,
            self.history_path,
        )
        return True

    @property
    def patience_exhausted(self):
        patience = self.options.patience
        return patience is not None and self.since_best >= patience

    # ------------------------------------------------------------ evaluating

    def evaluate(self, checkpoint_path, step):
        """Evaluates one checkpoint and records the result everywhere; returns it.

        best/ is updated before the history records the evaluation, each
        file through a temporary name: a run killed in between has not
        recorded it, and evaluates the checkpoint again when resumed.
        """
        result = dict(self.evaluate_fn(checkpoint_path, write_summaries=False))
        self.last_step, self.last_result = step, result
        scalars = {key: _number(value) for key, value in result.items()}
        self.estimator.write_eval_summary(
            {key: value for key, value in scalars.items() if value is not None}, step
        )
        entry = {"global_step": step}
        entry.update((key, _plain(value)) for key, value in sorted(result.items()))
        shown = ", ".join(f"{key} = {entry[key]}" for key in sorted(result))
        logging.info("Evaluation of step %d: %s", step, shown)
        metric = self.options.best_metric
        if metric is not None:
            value = self._metric_value(result)
            if self._count(step, value):
                logging.info("%s = %s is the best so far.", metric, value)
                self.best.keep(checkpoint_path, result)
            else:
                logging.info(
                    "%s = %s: no improvement on %s (step %d) for %d evaluation(s).",
                    metric,
                    value,
                    self.best_value,
                    self.best_step,
                    self.since_best,
                )
        self._record(entry)
        self.recorded_steps.add(step)
        return result

    def _record(self, entry):
        """Adds one evaluation to the history file, which is written whole through a
        temporary name (a kill leaves the old file or the new one)."""
        text = ""
        if tf.io.gfile.exists(self.history_path):
            with tf.io.gfile.GFile(self.history_path) as f:
                text = f.read()
            if text and not text.endswith("\n"):
                text += "\n"  # a broken last line of an older version's kill
        atomic_write.write_text(self.history_path, text + json.dumps(entry) + "\n")

    def _every_n_steps(self, step_context):
        """The EveryNSteps action: save this step, evaluate it, maybe stop."""
        checkpoint = step_context.save_checkpoint()
        self.evaluate(checkpoint, step_context.step)
        if self.patience_exhausted:
            logging.info(
                "Early stopping at step %d: %d evaluations without a better %s than %s (step %d).",
                step_context.step,
                self.since_best,
                self.options.best_metric,
                self.best_value,
                self.best_step,
            )
            step_context.request_stop()

    def train(self, input_fn, max_steps):
        """Trains to max_steps with the evaluations; returns the final checkpoint's result."""
        _check_strategy(self.estimator.config.distribution_strategy)
        with training_lock(self.estimator.config):
            return self._train(input_fn, max_steps)

    def _evaluate_interrupted(self):
        """Evaluates the newest checkpoint if its evaluation fell due but was not recorded
        (the run was stopped or killed while evaluating it)."""
        newest = newest_checkpoint(self.model_dir)
        if newest is None:
            return
        step = checkpoint_step(newest)
        if step > 0 and step % self.options.every_n_steps == 0 and step not in self.recorded_steps:
            logging.info(
                "Step %d's evaluation was not recorded (the run was stopped during it); "
                "evaluating it now.",
                step,
            )
            self.evaluate(newest, step)

    def _train(self, input_fn, max_steps):
        self._replay_history()
        self._evaluate_interrupted()
        if self.patience_exhausted:
            logging.info(
                "Training stopped early before: %d evaluations without a better %s than "
                "step %d's; not training further.",
                self.since_best,
                self.options.best_metric,
                self.best_step,
            )
        else:
            self.estimator.train(
                input_fn,
                max_steps=max_steps,
                hooks=[EveryNSteps(self.options.every_n_steps, self._every_n_steps)],
            )
        final = newest_checkpoint(self.model_dir)
        step = checkpoint_step(final)
        if step == self.last_step:
            return self.last_result
        if step in self.recorded_steps:
            # Counted by an earlier run: its result again, but not a second time.
            return dict(self.evaluate_fn(final, write_summaries=True))
        return self.evaluate(final, step)


def train_and_evaluate(estimator, input_fn, max_steps, evaluate_fn, write_results, options):
    """estimator.train(input_fn, max_steps=max_steps), evaluating as `options` ask.

    Returns the result of evaluating the final checkpoint (so the script need
    not evaluate it again), or None when options is None (plain training).
    """
    if options is None:
        estimator.train(input_fn=input_fn, max_steps=max_steps)
        return None
    return EvalDuringTraining(estimator, evaluate_fn, write_results, options).train(
        input_fn, max_steps
    )
