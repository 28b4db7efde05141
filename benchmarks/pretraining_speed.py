"""Measures run_pretraining training speed (steps/sec) on this machine.

Trains run_pretraining's own model_fn and input_fn through the engine, as
`run_pretraining.py --do_train` does, and times the steps after a warm-up
(graph building, session start and the first steps are left out). The
model is a BERT of --num_hidden_layers layers, --hidden_size wide, with
--num_attention_heads heads and --intermediate_size, on records of
--bench_seq_length tokens (the golden default.tfrecord has 128). With
--bare_session it also times the same model_fn and input_fn in a plain
session.run loop, which shows what the engine itself costs.

    .venv/bin/python benchmarks/pretraining_speed.py \\
        --num_hidden_layers=6 --hidden_size=384 --num_attention_heads=6 \\
        --intermediate_size=1536 --bench_batch_size=8 --steps=40 --warmup_steps=10 \\
        --bare_session
"""

import json
import os
import sys
import tempfile
import time

from absl import app, flags, logging

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)

import tensorflow as tf  # noqa: E402

import modeling  # noqa: E402
import run_pretraining  # noqa: E402
from bert_lib import engine  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_hidden_layers", 6, "Transformer layers.")
flags.DEFINE_integer("hidden_size", 384, "Hidden width.")
flags.DEFINE_integer("num_attention_heads", 6, "Attention heads (head size = width / heads).")
flags.DEFINE_integer("intermediate_size", 1536, "Feed-forward width.")
flags.DEFINE_integer("vocab_size", 30522, "Vocabulary size (the records' ids must fit).")
flags.DEFINE_integer("bench_seq_length", 128, "Sequence length of the records.")
flags.DEFINE_integer("bench_predictions_per_seq", 20, "Masked positions per record.")
flags.DEFINE_integer("bench_batch_size", 8, "Global training batch size.")
flags.DEFINE_integer("steps", 40, "Timed training steps.")
flags.DEFINE_integer("warmup_steps", 10, "Untimed steps before timing starts.")
flags.DEFINE_bool(
    "bare_session",
    False,
    "Also time the same model_fn and input_fn in a bare session.run loop (no engine), "
    "to show what the engine itself costs.",
)
flags.DEFINE_string(
    "records",
    os.path.join(_REPO, "tests", "data", "golden", "pretraining", "default.tfrecord"),
    "Pre-training TFRecords (create_pretraining_data.py output).",
)


class _StepTimer:
    """Times training steps from `warmup` on (an engine hook)."""

    def __init__(self, warmup):
        self._warmup = warmup
        self._count = 0
        self.start = None
        self.timed_steps = 0
        self.seconds = 0.0

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        del session, coord

    def before_run(self, run_context):
        del run_context
        if self._count == self._warmup:
            self.start = time.perf_counter()
        return None

    def after_run(self, run_context, run_values):
        del run_context, run_values
        self._count += 1
        if self.start is not None:
            self.timed_steps += 1
            self.seconds = time.perf_counter() - self.start

    def end(self, session):
        del session


def _bare_session_seconds(model_fn, input_fn, warmup, steps, batch_size):
    """Seconds per step of the model_fn's train_op run directly, one step per run."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.train.get_or_create_global_step()
        dataset = input_fn({"batch_size": batch_size})
        features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        spec = model_fn(features, None, engine.ModeKeys.TRAIN, {"batch_size": batch_size})
        with tf.control_dependencies([spec.train_op]):
            loss = tf.identity(spec.loss)
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for _ in range(warmup):
            session.run(loss)
        start = time.perf_counter()
        for _ in range(steps):
            session.run(loss)
        return (time.perf_counter() - start) / steps


def main(_):
    logging.set_verbosity(logging.WARNING)
    config = modeling.BertConfig(
        vocab_size=FLAGS.vocab_size,
        hidden_size=FLAGS.hidden_size,
        num_hidden_layers=FLAGS.num_hidden_layers,
        num_attention_heads=FLAGS.num_attention_heads,
        intermediate_size=FLAGS.intermediate_size,
        max_position_embeddings=max(512, FLAGS.bench_seq_length),
        type_vocab_size=2,
    )
    total_steps = FLAGS.warmup_steps + FLAGS.steps
    model_fn = run_pretraining.model_fn_builder(
        bert_config=config,
        init_checkpoint=None,
        learning_rate=1e-4,
        num_train_steps=total_steps,
        num_warmup_steps=0,
        use_tpu=False,
        use_one_hot_embeddings=False,
    )
    input_fn = run_pretraining.input_fn_builder(
        [FLAGS.records],
        FLAGS.bench_seq_length,
        FLAGS.bench_predictions_per_seq,
        is_training=True,
    )
    timer = _StepTimer(FLAGS.warmup_steps)
    with tempfile.TemporaryDirectory() as model_dir:
        run_config = engine.RunConfig(
            model_dir=model_dir,
            save_checkpoints_steps=10 * total_steps,
            log_step_count_steps=10 * total_steps,
            save_summary_steps=0,
        )
        estimator = engine.Estimator(model_fn, run_config, train_batch_size=FLAGS.bench_batch_size)
        estimator.train(input_fn, max_steps=total_steps, hooks=[timer])
    steps_per_sec = timer.timed_steps / timer.seconds
    result = {
        "config": {
            "layers": FLAGS.num_hidden_layers,
            "hidden": FLAGS.hidden_size,
            "heads": FLAGS.num_attention_heads,
            "intermediate": FLAGS.intermediate_size,
            "seq": FLAGS.bench_seq_length,
            "batch": FLAGS.bench_batch_size,
        },
        "timed_steps": timer.timed_steps,
        "seconds": round(timer.seconds, 3),
        "steps_per_sec": round(steps_per_sec, 3),
        "examples_per_sec": round(steps_per_sec * FLAGS.bench_batch_size, 2),
    }
    if FLAGS.bare_session:
        seconds = _bare_session_seconds(
            model_fn, input_fn, FLAGS.warmup_steps, FLAGS.steps, FLAGS.bench_batch_size
        )
        result["bare_session_steps_per_sec"] = round(1.0 / seconds, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    app.run(main)
