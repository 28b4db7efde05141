# coding=utf-8
"""Fine-tuning a small ELECTRA-style encoder for classification, in ELECTRA's manner.

`import tensorflow.compat.v1 as tf`; a config object overridden by
--hparams JSON; TFRecords through tf.io and tf.data.experimental.map_and_batch;
tf.estimator.tpu's TPUEstimator, TPUEstimatorSpec, RunConfig, TPUConfig and
InputPipelineConfig (use_tpu=False); an AdamW optimizer of its own
(a tf.train.Optimizer) with layer-wise learning-rate decay and warmup; an
ETA hook; the init checkpoint through scaffold_fn. After training, as
ALBERT's run_classifier does, every checkpoint is evaluated
(TPUEstimatorSpec eval_metrics) and only the best one is kept: the others'
files are deleted.
"""

import collections
import json
import os
import re
import time

import modeling
import numpy as np
import tensorflow.compat.v1 as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Where the task's TFRecords are written.")
flags.DEFINE_string("model_dir", None, "Checkpoints and results.")
flags.DEFINE_string("hparams", "{}", "JSON overriding FinetuningConfig's values.")
flags.DEFINE_bool("do_train", False, "Fine-tune.")
flags.DEFINE_bool("do_eval", False, "Evaluate every checkpoint, keep the best.")
flags.DEFINE_bool("do_predict", False, "Write the test set's probabilities.")

VOCAB, LENGTH, CLASSES = 24, 10, 3


class FinetuningConfig(object):
  """ELECTRA-style settings; --hparams overrides any of them."""

  def __init__(self, **kwargs):
    self.learning_rate = 5e-3
    self.layerwise_lr_decay = 0.8
    self.weight_decay_rate = 0.01
    self.warmup_proportion = 0.1
    self.num_train_steps = 40
    self.train_batch_size = 8
    self.eval_batch_size = 8
    self.predict_batch_size = 8
    self.iterations_per_loop = 10
    self.save_checkpoints_steps = 10
    self.keep_checkpoint_max = 10
    self.use_tpu = False
    self.num_tpu_cores = 1
    self.tpu_job_name = None
    self.init_checkpoint = None
    self.seed = 7
    self.model_hparams = {}
    self.update(kwargs)

  def update(self, kwargs):
    for key, value in kwargs.items():
      if key not in self.__dict__:
        raise ValueError("Unknown hparam " + key)
      self.__dict__[key] = value


# ---------------------------------------------------------------------------
# Data: sequences whose class is which of three marker ids occurs most


def make_examples(count, seed):
  rng = np.random.RandomState(seed)
  examples = []
  for i in range(count):
    length = rng.randint(4, LENGTH + 1)
    ids = rng.randint(5, VOCAB, size=length)
    label = rng.randint(CLASSES)
    ids[rng.choice(length, 2, replace=False)] = 1 + label
    examples.append((i, list(ids), label))
  return examples


def write_tfrecords(examples, path):
  with tf.io.TFRecordWriter(path) as writer:
    for index, ids, label in examples:
      padded = ids + [0] * (LENGTH - len(ids))
      features = collections.OrderedDict()
      features["input_ids"] = tf.train.Feature(int64_list=tf.train.Int64List(value=padded))
      features["input_mask"] = tf.train.Feature(int64_list=tf.train.Int64List(
          value=[1] * len(ids) + [0] * (LENGTH - len(ids))))
      features["label_ids"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))
      features["example_id"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[index]))
      example = tf.train.Example(features=tf.train.Features(feature=features))
      writer.write(example.SerializeToString())


def input_fn_builder(path, is_training):
  name_to_features = {
      "input_ids": tf.io.FixedLenFeature([LENGTH], tf.int64),
      "input_mask": tf.io.FixedLenFeature([LENGTH], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.int64),
      "example_id": tf.io.FixedLenFeature([], tf.int64),
  }

  def _decode_tfrecord(record):
    example = tf.io.parse_single_example(record, name_to_features)
    return {k: tf.cast(v, tf.int32) for k, v in example.items()}

  def input_fn(params):
    d = tf.data.TFRecordDataset(path)
    if is_training:
      d = d.repeat()
      d = d.shuffle(buffer_size=100, seed=3)
    return d.apply(tf.data.experimental.map_and_batch(
        _decode_tfrecord, batch_size=params["batch_size"], drop_remainder=is_training))

  return input_fn


# ---------------------------------------------------------------------------
# Optimization


class AdamWeightDecayOptimizer(tf.train.Optimizer):
  """Adam without bias correction, weight decay applied to the weights directly,
  a learning rate per variable (a dict of name patterns to rates)."""

  def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999,
               epsilon=1e-6, exclude_from_weight_decay=None, name="AdamWeightDecayOptimizer"):
    super(AdamWeightDecayOptimizer, self).__init__(False, name)
    self.learning_rate = learning_rate
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_from_weight_decay = exclude_from_weight_decay

  def _rate(self, name):
    if isinstance(self.learning_rate, dict):
      for pattern, rate in self.learning_rate.items():
        if pattern in name:
          return rate
      return self.learning_rate["_default"]
    return self.learning_rate

  def apply_gradients(self, grads_and_vars, global_step=None, name=None):
    assignments = []
    for grad, param in grads_and_vars:
      if grad is None or param is None:
        continue
      if isinstance(grad, tf.IndexedSlices):  # an embedding's gradient
        grad = tf.convert_to_tensor(grad)
      param_name = re.match("^(.*):\\d+$", param.name).group(1)
      m = tf.get_variable(name=param_name + "/adam_m", shape=param.shape.as_list(),
                          dtype=tf.float32, trainable=False,
                          initializer=tf.zeros_initializer())
      v = tf.get_variable(name=param_name + "/adam_v", shape=param.shape.as_list(),
                          dtype=tf.float32, trainable=False,
                          initializer=tf.zeros_initializer())
      next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
      next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
      update = next_m / (tf.sqrt(next_v) + self.epsilon)
      if self.weight_decay_rate and not any(
          re.search(r, param_name) for r in self.exclude_from_weight_decay or []):
        update += self.weight_decay_rate * param
      next_param = param - self._rate(param_name) * update
      assignments.extend([param.assign(next_param), m.assign(next_m), v.assign(next_v)])
    return tf.group(*assignments, name=name)


def layer_learning_rates(learning_rate, decay, n_layers):
  """ELECTRA's layer-wise decay: lower layers learn more slowly."""
  rates = collections.OrderedDict()
  rates["/embeddings"] = learning_rate * decay ** (n_layers + 1)
  rates["embeddings_project"] = learning_rate * decay ** (n_layers + 1)
  for layer in range(n_layers):
    rates["encoder/layer_%d/" % layer] = learning_rate * decay ** (n_layers - layer)
  rates["_default"] = learning_rate
  return rates


def create_optimizer(loss, config, n_layers):
  global_step = tf.train.get_or_create_global_step()
  learning_rate = tf.train.polynomial_decay(
      config.learning_rate, global_step, config.num_train_steps, end_learning_rate=0.0,
      power=1.0, cycle=False)
  warmup = max(1, int(config.num_train_steps * config.warmup_proportion))
  learning_rate *= tf.minimum(1.0, tf.cast(global_step, tf.float32) / float(warmup))
  rates = layer_learning_rates(learning_rate, config.layerwise_lr_decay, n_layers)
  optimizer = AdamWeightDecayOptimizer(
      learning_rate=rates, weight_decay_rate=config.weight_decay_rate,
      exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
  tvars = tf.trainable_variables()
  grads = tf.gradients(loss, tvars)
  grads, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
  train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
  return tf.group(train_op, [global_step.assign(global_step + 1)])


class ETAHook(tf.estimator.SessionRunHook):
  """Logs progress and the loss every `interval` steps."""

  def __init__(self, to_log, n_steps, interval):
    self._to_log = to_log
    self._n_steps = n_steps
    self._interval = interval
    self._global_step = None
    self._start = None

  def begin(self):
    self._global_step = tf.train.get_or_create_global_step()

  def before_run(self, run_context):
    if self._start is None:
      self._start = time.time()
    return tf.estimator.SessionRunArgs(dict(self._to_log, step=self._global_step))

  def after_run(self, run_context, run_values):
    step = run_values.results["step"]
    if step % self._interval == 0:
      tf.logging.info("step %d/%d, loss %.4f", step, self._n_steps,
                      run_values.results["loss"])


# ---------------------------------------------------------------------------
# The model


def model_fn_builder(config, model_config):

  def model_fn(features, labels, mode, params):
    is_training = mode == tf.estimator.ModeKeys.TRAIN
    model = modeling.ElectraModel(model_config, is_training, features["input_ids"],
                                  features["input_mask"],
                                  tf.zeros_like(features["input_ids"]))
    with tf.variable_scope("task_specific/classify"):
      pooled = tf.nn.dropout(model.pooled_output, rate=0.1 if is_training else 0.0)
      logits = tf.layers.dense(pooled, CLASSES,
                               kernel_initializer=tf.truncated_normal_initializer(stddev=0.02))
    log_probs = tf.nn.log_softmax(logits)
    labels = features["label_ids"]
    losses = -tf.reduce_sum(tf.one_hot(labels, CLASSES) * log_probs, axis=-1)
    loss = tf.reduce_mean(losses)

    init_checkpoint = config.init_checkpoint
    scaffold_fn = None
    if init_checkpoint:
      names = {v.op.name for v in tf.trainable_variables()}
      assignment_map = {n: n for n, _ in tf.train.list_variables(init_checkpoint)
                        if n in names and n.startswith("electra/")}

      def scaffold_fn():
        tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
        return tf.train.Scaffold()

    if mode == tf.estimator.ModeKeys.TRAIN:
      train_op = create_optimizer(loss, config, model_config.num_hidden_layers)
      return tf.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=loss, train_op=train_op, scaffold_fn=scaffold_fn,
          training_hooks=[ETAHook({"loss": loss}, config.num_train_steps, 10)])
    if mode == tf.estimator.ModeKeys.EVAL:

      def metric_fn(label_ids, logits, example_losses):
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "accuracy": tf.metrics.accuracy(label_ids, predictions),
            "mean_loss": tf.metrics.mean(example_losses),
        }

      return tf.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=loss, scaffold_fn=scaffold_fn,
          eval_metrics=(metric_fn, [labels, logits, losses]))
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, scaffold_fn=scaffold_fn,
        predictions={"example_id": features["example_id"], "probabilities": tf.exp(log_probs),
                     "logits": logits})

  return model_fn


class ModelRunner(object):

  def __init__(self, config, model_config):
    is_per_host = tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2
    tpu_config = tf.estimator.tpu.TPUConfig(
        iterations_per_loop=config.iterations_per_loop, num_shards=config.num_tpu_cores,
        per_host_input_for_training=is_per_host, tpu_job_name=config.tpu_job_name)
    run_config = tf.estimator.tpu.RunConfig(
        cluster=None, model_dir=FLAGS.model_dir, tf_random_seed=config.seed,
        save_checkpoints_steps=config.save_checkpoints_steps, save_checkpoints_secs=None,
        keep_checkpoint_max=config.keep_checkpoint_max, tpu_config=tpu_config)
    self._estimator = tf.estimator.tpu.TPUEstimator(
        use_tpu=config.use_tpu, model_fn=model_fn_builder(config, model_config),
        config=run_config, train_batch_size=config.train_batch_size,
        eval_batch_size=config.eval_batch_size, predict_batch_size=config.predict_batch_size)
    self._config = config

  def train(self, path):
    self._estimator.train(input_fn=input_fn_builder(path, True),
                          max_steps=self._config.num_train_steps)

  def evaluate(self, path, checkpoint_path):
    return self._estimator.evaluate(input_fn=input_fn_builder(path, False),
                                    checkpoint_path=checkpoint_path)

  def predict(self, path):
    return self._estimator.predict(input_fn=input_fn_builder(path, False),
                                   yield_single_examples=True)


def evaluate_all_keep_best(runner, path):
  """ALBERT's way: evaluate each checkpoint, keep the best, delete the others' files."""
  steps = sorted(int(name[len("model.ckpt-"):-len(".index")])
                 for name in tf.io.gfile.listdir(FLAGS.model_dir)
                 if name.startswith("model.ckpt-") and name.endswith(".index"))
  best_step, best = None, None
  with tf.io.gfile.GFile(os.path.join(FLAGS.model_dir, "eval_results.txt"), "w") as writer:
    for step in steps:
      result = runner.evaluate(path, os.path.join(FLAGS.model_dir, "model.ckpt-%d" % step))
      for key in sorted(result):
        writer.write("step %d %s = %s\n" % (step, key, str(result[key])))
      if best is None or result["accuracy"] > best:
        best_step, best = step, result["accuracy"]
  for step in steps:
    if step == best_step:
      continue
    for ext in ["meta", "data-00000-of-00001", "index"]:
      name = os.path.join(FLAGS.model_dir, "model.ckpt-%d.%s" % (step, ext))
      if tf.io.gfile.exists(name):
        tf.io.gfile.remove(name)
  with tf.io.gfile.GFile(os.path.join(FLAGS.model_dir, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "model.ckpt-%d"\n' % best_step)
  return best_step


def main(_):
  config = FinetuningConfig(**json.loads(FLAGS.hparams))
  model_config = modeling.ElectraConfig(vocab_size=VOCAB, **config.model_hparams)
  tf.io.gfile.makedirs(FLAGS.data_dir)
  tf.io.gfile.makedirs(FLAGS.model_dir)
  splits = {"train": (96, 1), "dev": (24, 2), "test": (16, 3)}
  paths = {}
  for split, (count, seed) in splits.items():
    paths[split] = os.path.join(FLAGS.data_dir, split + ".tfrecord")
    write_tfrecords(make_examples(count, seed), paths[split])
  runner = ModelRunner(config, model_config)
  if FLAGS.do_train:
    runner.train(paths["train"])
  if FLAGS.do_eval:
    best = evaluate_all_keep_best(runner, paths["dev"])
    tf.logging.info("best checkpoint: %d", best)
  if FLAGS.do_predict:
    with tf.io.gfile.GFile(os.path.join(FLAGS.model_dir, "predictions.tsv"), "w") as f:
      for prediction in runner.predict(paths["test"]):
        f.write("%d\t%s\n" % (prediction["example_id"], "\t".join(
            "%.7f" % p for p in prediction["probabilities"])))


if __name__ == "__main__":
  flags.mark_flag_as_required("data_dir")
  flags.mark_flag_as_required("model_dir")
  tf.app.run()
