"""A training process for test_faults.py to land faults on, triggered by the run's own files.

Usage: fault_worker.py MODEL_DIR MODE [TRIGGER]

MODE is "train" (the linear model of preemption_worker.py, 16 steps, a
checkpoint every 4) or "eval" (the same with an evaluation every 4 steps,
the best eval_loss kept in best/ and the history in eval_history.jsonl).
With TF_CONFIG set, training is multi-worker; START_SECONDS in the
environment replaces the engine's limit on how long a peer may take to
start (60 s), for a test that waits for it. The process runs through
errors.call, as the scripts do.

TRIGGER lands a fault at the moment the run writes one of its files
(fault_trigger.py says how: "KILL:open:REGEX:N", "RMDIR:call:NAME:REGEX",
...; the engine's own files are written through plumbing/atomic_write, in
Python, so an audit hook on open() sees them).
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
import os
import sys

import fault_trigger
import preemption_worker
from absl import logging
from linear_model import model_fn as linear_model_fn

from bert_lib import engine
from bert_lib.engine import distribution, evaluation
from bert_lib.plumbing import errors, eval_results

STEPS = 16
EVERY = 4


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
    fault_trigger.install(model_dir, trigger_text)
    run(model_dir, mode)
    print("NEWEST", engine.newest_checkpoint(model_dir), flush=True)


if __name__ == "__main__":
    errors.call(main, *sys.argv[1:])
