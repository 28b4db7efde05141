"""A training process for test_faults.py to land faults on, triggered by the run's own files.

Usage: fault_worker.py MODEL_DIR MODE [TRIGGER]

MODE is "train" (the linear model of preemption_worker.py, 16 steps, a
checkpoint every 4) or "eval" (the same with an evaluation every 4 steps,
the best eval_loss kept in best/ and the history in eval_history.jsonl).
With TF_CONFIG set, training is multi-worker; START_SECONDS in the
environment replaces the engine's limit on how long a peer may take to
start (60 s), for a test that waits for it. The process runs through
errors.call, as the scripts do.

TRIGGER lands a fault at the moment the run writes one of its files, seen
by a Python audit hook on the open() or rename of a path (the engine's own
files are written through plumbing/atomic_write, in Python):
  "ACTION:open:REGEX:N"   at the N-th open for writing of a path matching REGEX;
  "ACTION:call:NAME:REGEX"  when a Python function called NAME is called
                          while a file matching REGEX exists in MODEL_DIR (a
                          step of a checkpoint save, say);
ACTION is "KILL" (SIGKILL to itself), "TERM" (SIGTERM to itself, then a
pause so that the signal is recorded before the run goes on), "RMDIR"
(MODEL_DIR removed) or "WAIT" (the run writes a file `waiting` beside
MODEL_DIR and waits there until a file `release` appears beside it, for a
test to start another job meanwhile).
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
import os
import re
import shutil
import signal
import sys
import time

import preemption_worker
from absl import logging
from linear_model import model_fn as linear_model_fn

from bert_lib import engine
from bert_lib.engine import distribution, evaluation
from bert_lib.plumbing import errors, eval_results

STEPS = 16
EVERY = 4


class Trigger:
    def __init__(self, model_dir, text):
        self.model_dir = model_dir
        self.action, self.kind, *rest = text.split(":")
        if self.kind == "call":
            self.function, pattern = rest
            self.count = 1
        else:
            pattern, count = rest
            self.count = int(count)
        self.pattern = re.compile(pattern)
        self.seen = 0
        self.fired = False

    def fire(self):
        self.fired = True
        if self.action == "KILL":
            os.kill(os.getpid(), signal.SIGKILL)
        elif self.action == "TERM":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
        elif self.action == "RMDIR":
            shutil.rmtree(self.model_dir)
        elif self.action == "WAIT":
            beside = os.path.dirname(os.path.abspath(self.model_dir))
            open(os.path.join(beside, "waiting"), "w").close()
            while not os.path.exists(os.path.join(beside, "release")):
                time.sleep(0.05)

    def audit(self, event, args):
        if self.fired or self.kind != "open" or event != "open":
            return
        path, mode = args[0], args[1]
        if isinstance(path, str) and mode and "w" in str(mode) and self.pattern.search(path):
            self.seen += 1
            if self.seen == self.count:
                self.fire()

    def profile(self, frame, event, arg):
        del arg
        if self.fired or event != "call" or frame.f_code.co_name != self.function:
            return
        names = os.listdir(self.model_dir) if os.path.isdir(self.model_dir) else []
        if any(self.pattern.search(name) for name in names):
            self.fire()


def evaluate_fn(estimator):
    def evaluate(checkpoint_path, write_summaries):
        return estimator.evaluate(
            preemption_worker.linear_input_fn,
            steps=2,
            checkpoint_path=checkpoint_path,
            write_summaries=write_summaries,
        )

    return evaluate


def make_estimator(model_dir):
    strategy = "multi_worker" if os.environ.get("TF_CONFIG") else "one_device"
    config = engine.RunConfig(
        model_dir=model_dir,
        save_checkpoints_steps=EVERY,
        log_step_count_steps=1,
        distribution_strategy=strategy,
    )
    return engine.Estimator(linear_model_fn, config, train_batch_size=8, eval_batch_size=8)


def run(model_dir, mode):
    estimator = make_estimator(model_dir)
    if mode == "train":
        estimator.train(preemption_worker.linear_input_fn, STEPS)
        return
    options = evaluation.EvalOptions(EVERY, "loss", None)
    evaluation.train_and_evaluate(
        estimator,
        preemption_worker.linear_input_fn,
        STEPS,
        evaluate_fn(estimator),
        eval_results.write_eval_results,
        options,
    )


def main(model_dir, mode, trigger_text=""):
    logging.set_verbosity(logging.INFO)
    if os.environ.get("START_SECONDS"):
        distribution._START_SECONDS = float(os.environ["START_SECONDS"])
    if trigger_text:
        trigger = Trigger(model_dir, trigger_text)
        if trigger.kind == "open":
            sys.addaudithook(trigger.audit)
        else:
            sys.setprofile(trigger.profile)
    run(model_dir, mode)
    print("NEWEST", engine.newest_checkpoint(model_dir), flush=True)


if __name__ == "__main__":
    errors.call(main, *sys.argv[1:])
