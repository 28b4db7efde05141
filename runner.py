"""The Estimator-shaped runner the scripts train, evaluate and predict with.

tf.estimator and TPUEstimator are gone from TensorFlow 2.16, so the scripts
keep their original shape on top of this module instead:

    model_fn(features, labels, mode, params) -> EstimatorSpec
    input_fn(params) -> tf.data.Dataset   (params["batch_size"] = per-replica batch)

    config = runner.RunConfig(model_dir=..., save_checkpoints_steps=1000)
    estimator = runner.Estimator(model_fn, config, train_batch_size=32, ...)
    estimator.train(train_input_fn, max_steps=num_train_steps)
    result = estimator.evaluate(eval_input_fn, steps=max_eval_steps)
    for prediction in estimator.predict(predict_input_fn): ...

Everything runs in tf.compat.v1 graphs and sessions, so model code written
with variable_scope / get_variable works unchanged, whether or not the
process called tf.compat.v1.disable_v2_behavior().

Checkpoints are plain name-based TF checkpoints (`checkpoint`,
`model.ckpt-STEP.*`) holding the variables under their own names (no
replica suffixes), so they load in the original code and the original's
checkpoints (with adam_m / adam_v slots and global_step) resume here.
Training resumes from the newest checkpoint in model_dir; with no
checkpoint the variables start from their initializers, which include
whatever the model_fn asked tf.compat.v1.train.init_from_checkpoint for.

Training saves every save_checkpoints_steps and at the end (keeping the
keep_checkpoint_max newest), logs step/total, loss, learning rate, steps/sec,
examples/sec and the time left, and writes the same to TensorBoard event
files in model_dir (the learning rate is whatever scalar the model_fn put in
the LEARNING_RATE_COLLECTION graph collection, as
optimization.create_optimizer does; other tf.compat.v1.summary ops the
model_fn makes are written too). A NaN or Inf loss stops training with
NanLossError and nothing is saved after the last good checkpoint.
evaluate and predict build their graph once and run on one device.

Distribution goes through tf.distribute, chosen by this module's flags:
one device (default), --distribution_strategy=mirrored (all local GPUs, or
--num_gpus of them; all logical CPUs when there is no GPU),
--distribution_strategy=multi_worker (MultiWorkerMirroredStrategy from
TF_CONFIG; model_dir must be shared by the workers) and --use_tpu
(TPUStrategy from --tpu_name / --tpu_zone / --gcp_project / --master). The
batch size given to the Estimator is the global batch; each replica gets
an equal share. Under a strategy with several replicas, variables the
model_fn creates default to ONLY_FIRST_REPLICA aggregation: the optimizer
must average gradients across replicas (optimization.create_optimizer
does, and so do tf.compat.v1.train optimizers, which average rather than
sum here, as under tf.estimator) so that every replica computes the same
update.

Errors: bad user input should surface as a UsageError (errors.py) with a
one-line message naming the flag or file at fault. Scripts start with
`runner.run_main(main)` (errors.run_main) instead of absl's app.run: it
turns user errors (UsageError, OSError, TensorFlow's errors about missing
or corrupt data, NanLossError) into "ERROR: <message>" on stderr and exit
status 1, without a traceback (--show_traceback prints it); a bug keeps
its traceback.

With --tf_random_seed set, runs are reproducible: the graph-level seed is
fixed, tf.data pipelines are made deterministic, and a resumed run skips
the batches the checkpointed steps already consumed, so a run that was
killed and restarted ends with the same weights as one that was not
(provided the model itself is deterministic, e.g. dropout off).
"""

import collections
import contextlib
import json
import os
import time

import numpy as np
import tensorflow as tf
from absl import flags, logging

import checkpoint_shapes
import modeling
import optimization
import startup_checks
from errors import RunError, UsageError, run_main  # noqa: F401  (scripts call runner.run_main)
from progress import TrainingProgress as _Progress
from progress import format_seconds as _format_seconds

FLAGS = flags.FLAGS

# The original's TPU flags, defined here once for every script.
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_string(
    "tpu_name",
    None,
    "The Cloud TPU to use for training. This should be either the name used when "
    "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.",
)
flags.DEFINE_string(
    "tpu_zone",
    None,
    "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we "
    "will attempt to automatically detect the GCE project from metadata.",
)
flags.DEFINE_string(
    "gcp_project",
    None,
    "[Optional] Project name for the Cloud TPU-enabled project. If not specified, "
    "we will attempt to automatically detect the GCE project from metadata.",
)
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
flags.DEFINE_integer(
    "num_tpu_cores", 8, "Only used if `use_tpu` is True. Total number of TPU cores to use."
)
# Beyond the original: data parallelism on GPUs / CPUs and across workers.
flags.DEFINE_enum(
    "distribution_strategy",
    "one_device",
    ["one_device", "mirrored", "multi_worker"],
    "How to spread training over devices: one_device (default); mirrored (all "
    "local GPUs, or --num_gpus of them); multi_worker (MultiWorkerMirroredStrategy "
    "over the cluster in the TF_CONFIG environment variable).",
)
flags.DEFINE_integer(
    "num_gpus",
    None,
    "With --distribution_strategy=mirrored: how many local GPUs to use (default: all).",
)
flags.DEFINE_bool(
    "show_traceback",
    False,
    "On a user error (bad flag, missing file, ...) print the full traceback, not just "
    "the one-line message.",
)
flags.DEFINE_integer(
    "tf_random_seed",
    None,
    "If set, make training reproducible: fixed graph-level seed, deterministic "
    "input order, and a resumed run skips the batches already trained on.",
)

# Speed flags (beyond the original; the defaults keep its arithmetic exactly).
flags.DEFINE_bool(
    "use_xla",
    False,
    "Compile the model's training step (forward, backward and optimizer update) and "
    "its eval/predict computation with XLA.",
)
flags.DEFINE_enum(
    "precision",
    "fp32",
    ["fp32", "bf16", "fp16"],
    "Compute dtype of the Transformer layers: fp32 (default), bf16 or fp16. Weights, "
    "checkpoints, softmax, LayerNorm statistics and losses stay float32; fp16 training "
    "uses dynamic loss scaling.",
)
flags.DEFINE_integer(
    "num_accumulation_steps",
    1,
    "Split each training batch into this many micro-batches run one after another, "
    "applying their averaged gradient once: the same optimizer step on "
    "train_batch_size examples, with the memory of train_batch_size / N.",
)

flags.DEFINE_integer(
    "steps_per_run",
    1,
    "Run up to this many training steps inside one session.run (a graph loop, like "
    "the original's iterations_per_loop on TPU), fewer when a log, summary or "
    "checkpoint falls due sooner. One device, without gradient accumulation; hooks "
    "then see one call per run.",
)

_CHECKPOINT_BASENAME = "model.ckpt"
_PRECISION_DTYPES = {"fp32": None, "bf16": tf.bfloat16, "fp16": tf.float16}

# A model_fn (optimization.create_learning_rate does) may add its scalar
# learning-rate tensor to this graph collection; training then logs it and
# writes it to TensorBoard as "learning_rate".
LEARNING_RATE_COLLECTION = "learning_rate"


class ModeKeys:
    """The three modes a model_fn is called in (the values tf.estimator used)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class NanLossError(RunError):
    """Training produced a NaN or Inf loss; nothing after the last good save is kept."""


_EstimatorSpecBase = collections.namedtuple(
    "EstimatorSpec",
    ["mode", "loss", "train_op", "eval_metrics", "predictions", "scaffold_fn"],
)


class EstimatorSpec(_EstimatorSpecBase):
    """What a model_fn returns, shaped like TPUEstimatorSpec.

    mode: one of ModeKeys. loss: scalar float tensor (TRAIN, EVAL).
    train_op: op that runs one optimizer step and increments global_step
      (TRAIN).
    eval_metrics: (metric_fn, tensors) with tensors a list (metric_fn(*tensors))
      or a dict (metric_fn(**tensors)); metric_fn returns {name: (value_tensor,
      update_op)}, e.g. from tf.compat.v1.metrics (EVAL).
    predictions: {name: tensor with a leading batch dimension} (PREDICT).
    scaffold_fn: None or a callable returning a tf.compat.v1.train.Scaffold; it
      is called while the graph is built (the original called
      init_from_checkpoint in it on TPU) and the Scaffold's init_fn, if any,
      runs after variables are initialized.
    """

    def __new__(
        cls,
        mode,
        loss=None,
        train_op=None,
        eval_metrics=None,
        predictions=None,
        scaffold_fn=None,
    ):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"EstimatorSpec mode must be one of train/eval/infer, got {mode!r}")
        if mode == ModeKeys.TRAIN and (loss is None or train_op is None):
            raise ValueError("EstimatorSpec for TRAIN needs both loss and train_op")
        if mode == ModeKeys.EVAL and loss is None:
            raise ValueError("EstimatorSpec for EVAL needs a loss")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("EstimatorSpec for PREDICT needs predictions")
        if eval_metrics is not None and (
            not isinstance(eval_metrics, (tuple, list)) or len(eval_metrics) != 2
        ):
            raise ValueError("eval_metrics must be a (metric_fn, tensors) pair")
        return super().__new__(cls, mode, loss, train_op, eval_metrics, predictions, scaffold_fn)


def _flag_value(name, default):
    """Returns a runner flag's value once flags are parsed, else `default`."""
    if FLAGS.is_parsed():
        return getattr(FLAGS, name)
    return default


class RunConfig:
    """Where and how often a run saves, logs and summarizes, and on what devices.

    Arguments left as None for distribution, TPU and seeding take the value
    of the runner's flag of the same name (once flags are parsed), so a
    script that builds RunConfig(model_dir=..., ...) honours
    --distribution_strategy, --use_tpu and friends without passing them.
    iterations_per_loop is kept for the scripts' flag; training currently
    runs one step per session.run.
    """

    def __init__(
        self,
        model_dir,
        save_checkpoints_steps=1000,
        keep_checkpoint_max=5,
        iterations_per_loop=1000,
        log_step_count_steps=100,
        save_summary_steps=100,
        session_config=None,
        tf_random_seed=None,
        distribution_strategy=None,
        num_gpus=None,
        use_tpu=None,
        tpu_name=None,
        tpu_zone=None,
        gcp_project=None,
        master=None,
        num_tpu_cores=None,
        use_xla=None,
        precision=None,
        num_accumulation_steps=None,
        steps_per_run=None,
    ):
        if not model_dir:
            raise UsageError("model_dir (--output_dir) must be set")
        self.model_dir = model_dir
        self.save_checkpoints_steps = save_checkpoints_steps
        self.keep_checkpoint_max = keep_checkpoint_max
        self.iterations_per_loop = iterations_per_loop
        self.log_step_count_steps = max(1, int(log_step_count_steps or 1))
        self.save_summary_steps = save_summary_steps
        self.session_config = session_config
        self.tf_random_seed = (
            tf_random_seed if tf_random_seed is not None else _flag_value("tf_random_seed", None)
        )
        self.distribution_strategy = distribution_strategy or _flag_value(
            "distribution_strategy", "one_device"
        )
        self.num_gpus = num_gpus if num_gpus is not None else _flag_value("num_gpus", None)
        self.use_tpu = bool(use_tpu if use_tpu is not None else _flag_value("use_tpu", False))
        self.tpu_name = tpu_name or _flag_value("tpu_name", None)
        self.tpu_zone = tpu_zone or _flag_value("tpu_zone", None)
        self.gcp_project = gcp_project or _flag_value("gcp_project", None)
        self.master = master or _flag_value("master", None)
        self.num_tpu_cores = num_tpu_cores or _flag_value("num_tpu_cores", 8)
        self.use_xla = bool(use_xla if use_xla is not None else _flag_value("use_xla", False))
        self.precision = precision or _flag_value("precision", "fp32")
        self.num_accumulation_steps = (
            num_accumulation_steps
            if num_accumulation_steps is not None
            else _flag_value("num_accumulation_steps", 1)
        )
        self.steps_per_run = (
            steps_per_run if steps_per_run is not None else _flag_value("steps_per_run", 1)
        )
        if self.steps_per_run is None or self.steps_per_run < 1:
            raise UsageError(f"--steps_per_run must be >= 1, got {self.steps_per_run}")
        if self.precision not in _PRECISION_DTYPES:
            raise UsageError(f"--precision must be fp32, bf16 or fp16, got {self.precision!r}")
        if self.num_accumulation_steps is None or self.num_accumulation_steps < 1:
            raise UsageError(
                f"--num_accumulation_steps must be >= 1, got {self.num_accumulation_steps}"
            )
        if self.save_checkpoints_steps is not None and self.save_checkpoints_steps <= 0:
            raise UsageError(
                f"save_checkpoints_steps must be positive, got {self.save_checkpoints_steps}"
            )
        if self.distribution_strategy not in ("one_device", "mirrored", "multi_worker"):
            raise UsageError(
                "--distribution_strategy must be one_device, mirrored or multi_worker, got "
                f"{self.distribution_strategy!r}"
            )
        if self.use_tpu and self.distribution_strategy != "one_device":
            raise UsageError(
                "--use_tpu cannot be combined with "
                f"--distribution_strategy={self.distribution_strategy}"
            )
        if self.use_tpu and not (self.tpu_name or self.master):
            raise UsageError("--use_tpu needs --tpu_name (or --master) to find the TPU")
        if self.num_gpus is not None and self.num_gpus < 0:
            raise UsageError(f"--num_gpus must be >= 0, got {self.num_gpus}")
        if (
            self.num_gpus is not None
            and self.num_gpus > 1
            and self.distribution_strategy == "one_device"
        ):
            raise UsageError(f"--num_gpus={self.num_gpus} needs --distribution_strategy=mirrored")

    @classmethod
    def from_flags(cls, model_dir, **kwargs):
        """Same as RunConfig(model_dir, **kwargs); says explicitly that flags fill the rest."""
        return cls(model_dir, **kwargs)


# --------------------------------------------------------------------------
# Distribution


_SERVERS = {}


def _multi_worker_cluster():
    """Returns (cluster_spec, task_type, task_index) from TF_CONFIG, or raises UsageError."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise UsageError(
            "--distribution_strategy=multi_worker needs the TF_CONFIG environment variable "
            '(e.g. {"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}})'
        )
    try:
        tf_config = json.loads(raw)
        cluster = tf_config["cluster"]
        task = tf_config["task"]
        task_type = task["type"]
        task_index = int(task["index"])
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"TF_CONFIG is not valid cluster JSON ({e}): {raw}") from None
    if task_type != "worker" or "worker" not in cluster:
        raise UsageError(
            f"TF_CONFIG: multi_worker training wants a 'worker' cluster and task, got {raw}"
        )
    if not 0 <= task_index < len(cluster["worker"]):
        raise UsageError(
            f"TF_CONFIG task index {task_index} is outside the {len(cluster['worker'])} workers"
        )
    return tf.train.ClusterSpec(cluster), task_type, task_index


class _Distribution:
    """The tf.distribute strategy (or none) a graph is built for, plus its session set-up.

    Built inside the graph it serves: the v1 strategies in graph mode keep
    per-graph state, and MultiWorkerMirroredStrategy would otherwise start
    an eager-mode server of its own.
    """

    def __init__(self, config):
        self.config = config
        self.strategy = None
        self.is_tpu = False
        self.is_chief = True
        self.target = ""
        self.num_workers = 1
        self.worker_index = 0
        session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
        if config.session_config is not None:
            session_config.MergeFrom(config.session_config)
        if config.use_tpu:
            self._init_tpu(config)
        elif config.distribution_strategy == "mirrored":
            self.strategy = tf.compat.v1.distribute.MirroredStrategy(self._mirrored_devices())
        elif config.distribution_strategy == "multi_worker":
            cluster_spec, task_type, task_index = _multi_worker_cluster()
            self.strategy = tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy()
            self.strategy.configure(session_config=session_config)
            self.num_workers = cluster_spec.num_tasks("worker")
            self.worker_index = task_index
            self.is_chief = task_index == 0
            key = (json.dumps(cluster_spec.as_dict(), sort_keys=True), task_index)
            if key not in _SERVERS:
                _SERVERS[key] = tf.distribute.Server(
                    cluster_spec,
                    job_name=task_type,
                    task_index=task_index,
                    protocol="grpc",
                    config=session_config,
                )
            self.target = _SERVERS[key].target
        self.session_config = session_config

    def _mirrored_devices(self):
        gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
        num_gpus = self.config.num_gpus
        if num_gpus == 0:
            gpus = []
        elif num_gpus is not None:
            if num_gpus > len(gpus):
                raise UsageError(f"--num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible")
            return gpus[:num_gpus]
        if gpus:
            return gpus
        return [d.name for d in tf.config.list_logical_devices("CPU")]

    def _init_tpu(self, config):
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=config.tpu_name or config.master,
            zone=config.tpu_zone,
            project=config.gcp_project,
        )
        self.target = resolver.master()
        self.strategy = tf.compat.v1.distribute.experimental.TPUStrategy(resolver, steps_per_run=1)
        self.is_tpu = True

    @property
    def num_replicas(self):
        return self.strategy.num_replicas_in_sync if self.strategy else 1

    @property
    def num_local_replicas(self):
        if self.strategy is None:
            return 1
        return len(self.strategy.extended.worker_devices)

    def scope(self):
        return self.strategy.scope() if self.strategy else contextlib.nullcontext()

    def replica_batch_size(self, global_batch_size, what):
        """Splits the global batch evenly over the replicas (the original's semantics)."""
        if global_batch_size is None:
            raise UsageError(f"{what} is not set")
        if global_batch_size <= 0 or global_batch_size % self.num_replicas:
            raise UsageError(
                f"{what}={global_batch_size} must be a positive multiple of the "
                f"{self.num_replicas} replicas"
            )
        return global_batch_size // self.num_replicas

    def make_iterator(self, dataset_fn):
        """Returns an initializable iterator; dataset_fn(input_context or None) -> Dataset."""
        if self.strategy is None:
            return _SingleIterator(dataset_fn(None))
        return self.strategy.make_input_fn_iterator(dataset_fn)

    def run(self, replica_fn, iterator):
        """Runs replica_fn(next element) on every replica; returns per-replica outputs."""
        if self.strategy is None:
            return replica_fn(iterator.get_next())
        return self.strategy.experimental_run(replica_fn, iterator)

    def reduce_mean(self, value):
        if self.strategy is None:
            return value
        return self.strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)

    @contextlib.contextmanager
    def model_fn_scope(self):
        """What a model_fn runs under on each replica.

        Variables default to ONLY_FIRST_REPLICA aggregation (see the module
        doc), and tf.compat.v1.train.Optimizer subclasses that use the base
        class's gradient code average over replicas (not sum), as they did
        under tf.estimator, which turned on the same strategy switch.
        """
        if self.strategy is None:
            yield
            return
        scale_loss = getattr(self.strategy, "_scale_loss_for_estimator_enabled", None)
        with contextlib.ExitStack() as stack:
            stack.enter_context(tf.variable_creator_scope(_first_replica_creator))
            if scale_loss is not None:
                stack.enter_context(scale_loss())
            yield

    def initialize_system(self, session):
        if self.is_tpu:
            session.run(tf.compat.v1.tpu.initialize_system())

    def shutdown_system(self, session):
        if self.is_tpu:
            session.run(tf.compat.v1.tpu.shutdown_system())


def _first_replica_creator(next_creator, **kwargs):
    aggregation = kwargs.get("aggregation")
    if aggregation is None or aggregation == tf.VariableAggregation.NONE:
        kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
    return next_creator(**kwargs)


class _SingleIterator:
    """The one-device counterpart of a strategy's input_fn iterator."""

    def __init__(self, dataset):
        self._iterator = tf.compat.v1.data.make_initializable_iterator(dataset)

    def get_next(self):
        return self._iterator.get_next()

    def initialize(self):
        return [self._iterator.initializer]


# --------------------------------------------------------------------------
# Checkpoints


def newest_checkpoint(model_dir):
    """Returns the path prefix of the newest complete checkpoint in model_dir, or None."""
    if not model_dir or not tf.io.gfile.isdir(model_dir):
        return None
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None:
        return None
    candidates = list(state.all_model_checkpoint_paths)
    if state.model_checkpoint_path and state.model_checkpoint_path not in candidates:
        candidates.append(state.model_checkpoint_path)
    for path in reversed(candidates):
        if tf.io.gfile.exists(path + ".index"):
            return path
    return None


def checkpoint_step(checkpoint_path):
    """Returns the global_step stored in a checkpoint (0 if it holds none)."""
    try:
        return int(tf.train.load_variable(checkpoint_path, "global_step"))
    except (tf.errors.NotFoundError, ValueError):
        suffix = checkpoint_path.rsplit("-", 1)[-1]
        return int(suffix) if suffix.isdigit() else 0


def warm_start_from_checkpoint(init_checkpoint, use_tpu=False):
    """Starts the graph's trainable variables from `init_checkpoint`, and logs them.

    Call inside a model_fn once the model is built. Every trainable variable
    whose name is in the checkpoint takes its value from there (a shape
    mismatch raises ValueError naming the variable); each is logged with its
    shape and ", *INIT_FROM_CKPT*" when it was found. With no init_checkpoint
    nothing is loaded and only the log is written.

    Returns the spec's scaffold_fn: None, or under use_tpu a callable that
    does the loading when the TPU graph's scaffold is built, which is when
    TPU programs may read checkpoints.
    """
    tvars = tf.compat.v1.trainable_variables()
    assignment_map, loaded_names, scaffold_fn = {}, {}, None
    if init_checkpoint:
        assignment_map, loaded_names = modeling.get_assignment_map_from_checkpoint(
            tvars, init_checkpoint
        )
        if use_tpu:

            def scaffold_fn():
                tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
                return tf.compat.v1.train.Scaffold()

        else:
            tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)

    logging.info("**** Trainable Variables ****")
    for var in tvars:
        note = ", *INIT_FROM_CKPT*" if var.name in loaded_names else ""
        logging.info("  name = %s, shape = %s%s", var.name, var.shape, note)
    return scaffold_fn


def _check_model_dir(model_dir, create):
    startup_checks.check_output_dir(model_dir, "model_dir")
    if create:
        tf.io.gfile.makedirs(model_dir)


def _make_saver(max_to_keep=5):
    """A name-based Saver over every global variable, remembering what it saves."""
    var_list = tf.compat.v1.global_variables()
    saver = tf.compat.v1.train.Saver(
        var_list=var_list, max_to_keep=max_to_keep, save_relative_paths=True
    )
    saver.runner_var_list = var_list
    return saver


def _restore(saver, session, checkpoint_path):
    """Restores all of the saver's variables, naming any the checkpoint lacks."""
    in_checkpoint = checkpoint_shapes.read_shapes(checkpoint_path)
    expected = {variable.op.name: variable.shape for variable in saver.runner_var_list}
    checkpoint_shapes.check_shapes(expected, checkpoint_path, in_checkpoint)
    missing = sorted(name for name in expected if name not in in_checkpoint)
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise UsageError(
            f"checkpoint {checkpoint_path} does not match the model: it lacks "
            + ", ".join(missing[:5])
            + more
        )
    saver.restore(session, checkpoint_path)


# --------------------------------------------------------------------------
# The Estimator


def _split_features(element):
    """An input_fn's dataset yields features or (features, labels)."""
    if isinstance(element, tuple) and len(element) == 2:
        return element[0], element[1]
    return element, None


def _crosses(before, after, every):
    """Whether a multiple of `every` lies in (before, after]."""
    return bool(every) and after // every > before // every


def _scalar_summary(values):
    return tf.compat.v1.Summary(
        value=[
            tf.compat.v1.Summary.Value(tag=tag, simple_value=float(value))
            for tag, value in values.items()
        ]
    )


class Estimator:
    """Trains, evaluates and predicts with a model_fn, like TPUEstimator did.

    Batch sizes are global (split over replicas); params passed to model_fn and
    input_fn are a copy of `params` with "batch_size" set for the call.
    """

    def __init__(
        self,
        model_fn,
        config,
        params=None,
        train_batch_size=None,
        eval_batch_size=None,
        predict_batch_size=None,
        use_tpu=None,
    ):
        if config is None:
            raise ValueError("Estimator needs a RunConfig")
        if use_tpu is not None and bool(use_tpu) != config.use_tpu:
            config.use_tpu = bool(use_tpu)
            if config.use_tpu and not (config.tpu_name or config.master):
                raise UsageError("--use_tpu needs --tpu_name (or --master) to find the TPU")
        self._model_fn = model_fn
        self._config = config
        self._params = dict(params or {})
        self._train_batch_size = train_batch_size
        self._eval_batch_size = eval_batch_size
        self._predict_batch_size = predict_batch_size

    @property
    def model_dir(self):
        return self._config.model_dir

    @property
    def config(self):
        return self._config

    def latest_checkpoint(self):
        """The newest checkpoint in model_dir, or None."""
        return newest_checkpoint(self._config.model_dir)

    def _call_model_fn(self, features, labels, mode, batch_size):
        params = dict(self._params)
        params["batch_size"] = batch_size
        with self._speed_scope(mode):
            spec = self._model_fn(features=features, labels=labels, mode=mode, params=params)
        if not isinstance(spec, EstimatorSpec):
            raise TypeError(f"model_fn must return a runner.EstimatorSpec, got {type(spec)}")
        return spec

    @contextlib.contextmanager
    def _speed_scope(self, mode):
        """The speed flags' contexts a model_fn is built in (none at their defaults).

        --precision sets modeling.compute_dtype; in training, --precision=fp16
        and --num_accumulation_steps set optimization.training_options; --use_xla
        marks every op the model_fn builds (forward, gradients, optimizer update)
        for XLA compilation, except random-number and initializer ops, so
        dropout masks and initial weights are those of a run without XLA.
        """
        config = self._config
        with contextlib.ExitStack() as stack:
            dtype = _PRECISION_DTYPES[config.precision]
            if dtype is not None:
                stack.enter_context(modeling.compute_dtype(dtype))
            if mode == ModeKeys.TRAIN and (
                config.num_accumulation_steps > 1 or config.precision == "fp16"
            ):
                stack.enter_context(
                    optimization.training_options(
                        num_accumulation_steps=config.num_accumulation_steps,
                        dynamic_loss_scaling=config.precision == "fp16",
                    )
                )
            if config.use_xla:
                stack.enter_context(
                    tf.xla.experimental.jit_scope(
                        compile_ops=_xla_compilable, separate_compiled_gradients=False
                    )
                )
            yield

    def _input_params(self, batch_size):
        params = dict(self._params)
        params["batch_size"] = batch_size
        return params

    def _deterministic(self):
        return self._config.tf_random_seed is not None

    def _prepare_dataset(self, dataset, skip=0):
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(f"input_fn must return a tf.data.Dataset, got {type(dataset)}")
        if self._deterministic():
            options = tf.data.Options()
            options.deterministic = True
            dataset = dataset.with_options(options)
        if skip:
            dataset = dataset.skip(skip)
        # The next batches are made while the current step runs (on a GPU the
        # host input then overlaps device compute).
        return dataset.prefetch(tf.data.AUTOTUNE)

    # ---------------------------------------------------------------- train

    def train(self, input_fn, max_steps=None, steps=None, hooks=None):
        """Trains until global_step reaches max_steps (or `steps` more, or the input ends).

        Resumes from the newest checkpoint in model_dir; saves every
        save_checkpoints_steps and at the end (chief only), keeping the
        keep_checkpoint_max newest. Raises NanLossError, without saving, if
        the loss becomes NaN or Inf. `hooks` are tf.compat.v1.train
        SessionRunHook-like objects (begin, after_create_session,
        before_run, after_run, end). Returns self.
        """
        config = self._config
        if steps is not None and max_steps is not None:
            raise ValueError("train() takes steps or max_steps, not both")
        for name, value in (("steps", steps), ("max_steps", max_steps)):
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, got {value}")
        _check_model_dir(config.model_dir, create=True)
        start_checkpoint = newest_checkpoint(config.model_dir)
        start_step = checkpoint_step(start_checkpoint) if start_checkpoint else 0
        if max_steps is None and steps is not None:
            max_steps = start_step + steps
        if max_steps is not None and start_step >= max_steps:
            logging.info(
                "Checkpoint %s is already at step %d >= max_steps %d; nothing to train.",
                start_checkpoint,
                start_step,
                max_steps,
            )
            return self
        hooks = list(hooks or [])
        graph = tf.Graph()
        with graph.as_default():
            if config.tf_random_seed is not None:
                tf.compat.v1.set_random_seed(config.tf_random_seed)
            dist = _Distribution(config)
            train_graph = self._build_train_graph(dist, input_fn, start_step)
            for hook in hooks:
                hook.begin()
        session = tf.compat.v1.Session(target=dist.target, graph=graph, config=dist.session_config)
        try:
            with graph.as_default():
                self._initialize(session, dist, train_graph, start_checkpoint)
                graph.finalize()
                for hook in hooks:
                    hook.after_create_session(session, None)
                self._train_loop(session, dist, train_graph, max_steps, start_checkpoint, hooks)
                for hook in hooks:
                    hook.end(session)
                dist.shutdown_system(session)
        finally:
            session.close()
        return self

    def _build_train_graph(self, dist, input_fn, start_step):
        """Builds everything one training session runs; the one place the step is made."""
        batch_size = dist.replica_batch_size(self._train_batch_size, "train_batch_size")
        num_accumulation_steps = self._config.num_accumulation_steps
        if batch_size % num_accumulation_steps:
            raise UsageError(
                f"train_batch_size={self._train_batch_size} per replica ({batch_size}) must be "
                f"a multiple of --num_accumulation_steps={num_accumulation_steps}"
            )
        # With accumulation the input_fn makes micro-batches; an optimizer step
        # (one global_step) takes num_accumulation_steps of them per replica.
        batch_size //= num_accumulation_steps
        skip = (
            start_step * dist.num_local_replicas * num_accumulation_steps
            if self._deterministic()
            else 0
        )

        def dataset_fn(input_context):
            dataset = input_fn(self._input_params(batch_size))
            if input_context is not None and input_context.num_input_pipelines > 1:
                dataset = self._prepare_dataset(dataset).shard(
                    input_context.num_input_pipelines, input_context.input_pipeline_id
                )
                return dataset.skip(skip) if skip else dataset
            return self._prepare_dataset(dataset, skip)

        with dist.scope():
            global_step = tf.compat.v1.train.get_or_create_global_step()
            iterator = dist.make_iterator(dataset_fn)
            summaries_before = set(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))
            rates_before = set(tf.compat.v1.get_collection(LEARNING_RATE_COLLECTION))
            scaffolds = []
            extras = {}
            loss = self._build_train_step(dist, iterator, batch_size, scaffolds, extras)
            with tf.control_dependencies([loss]):
                step_after = tf.identity(global_step.read_value())
            # Tensors made inside a graph loop (--steps_per_run) cannot be fetched.
            this_graph = tf.compat.v1.get_default_graph()
            summaries = [
                s
                for s in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
                if s.graph is this_graph
                and s not in summaries_before
                and not s.name.startswith("replica_")
            ]
            learning_rates = [
                t
                for t in tf.compat.v1.get_collection(LEARNING_RATE_COLLECTION)
                if t.graph is this_graph
                and t not in rates_before
                and not t.name.startswith("replica_")
            ]
            if extras.get("learning_rate") is not None:
                learning_rates = [extras["learning_rate"]]
            if dist.is_tpu:
                summaries, learning_rates = [], []
            trainable = [
                v for v in tf.compat.v1.trainable_variables() if v.dtype.base_dtype.is_floating
            ]
            weights_finite = tf.reduce_all(
                [tf.reduce_all(tf.math.is_finite(v.read_value())) for v in trainable] or [True]
            )
            saver = _make_saver(self._config.keep_checkpoint_max)
            init_ops = dict(
                global_init=tf.compat.v1.global_variables_initializer(),
                local_init=tf.group(
                    tf.compat.v1.local_variables_initializer(),
                    tf.compat.v1.tables_initializer(),
                ),
                iterator_init=iterator.initialize(),
            )
        return _TrainGraph(
            global_step=global_step,
            loss=loss,
            step_after=step_after,
            summary_op=tf.compat.v1.summary.merge(summaries) if summaries else None,
            learning_rate=learning_rates[0] if learning_rates else None,
            weights_finite=weights_finite,
            saver=saver,
            init_ops=init_ops,
            scaffolds=scaffolds,
            global_batch_size=self._train_batch_size,
            steps_per_run=self._config.steps_per_run if "steps_this_run" in extras else 1,
            steps_this_run=extras.get("steps_this_run"),
            accumulate_loss=extras.get("accumulate_loss"),
            num_accumulation_steps=self._config.num_accumulation_steps,
        )

    def _build_train_step(self, dist, iterator, batch_size, scaffolds, extras=None):
        """The one place a training step is built; returns its mean loss over replicas.

        Running the returned tensor takes the next element of `iterator` on
        every replica, calls the model_fn in TRAIN mode there and runs its
        train_op (which must add one to global_step). Scaffolds the
        model_fn's scaffold_fn returns are appended to `scaffolds`.

        With --num_accumulation_steps=N > 1, extras["accumulate_loss"] is set
        to a tensor that runs one micro-batch and only accumulates its
        gradients (the optimizer step is N-1 runs of it, then one run of the
        returned loss); it needs a train_op made by optimization.create_optimizer.

        With --steps_per_run=k > 1 (one device, no accumulation) the step is
        the body of a graph loop that runs extras["steps_this_run"] (a
        placeholder, default 1, at most k) steps per session.run; the
        returned loss and extras["learning_rate"] are those of its last step.
        """
        accumulate = self._config.num_accumulation_steps > 1

        def replica_step(element):
            features, labels = _split_features(element)
            with dist.model_fn_scope():
                spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, batch_size)
                if spec.scaffold_fn is not None:
                    scaffolds.append(spec.scaffold_fn())
            with tf.control_dependencies([spec.train_op]):
                loss = tf.identity(spec.loss)
            if not accumulate:
                return loss
            accumulate_op = optimization.accumulate_op_for(spec.train_op)
            if accumulate_op is None:
                raise UsageError(
                    "--num_accumulation_steps > 1 needs a model_fn whose train_op comes "
                    "from optimization.create_optimizer"
                )
            with tf.control_dependencies([accumulate_op]):
                return loss, tf.identity(spec.loss)

        if self._config.steps_per_run > 1 and dist.strategy is None and not accumulate:
            return self._build_step_loop(iterator, replica_step, extras)
        outputs = dist.run(replica_step, iterator)
        if not accumulate:
            return dist.reduce_mean(outputs)
        if extras is not None:
            extras["accumulate_loss"] = dist.reduce_mean(outputs[1])
        return dist.reduce_mean(outputs[0])

    def _build_step_loop(self, iterator, replica_step, extras):
        """Wraps one-device training steps in a tf.while_loop (see _build_train_step)."""
        steps_this_run = tf.compat.v1.placeholder_with_default(
            tf.constant(1, tf.int32), [], name="steps_this_run"
        )
        has_rate = []

        def body(i, unused_loss, unused_rate):
            del unused_loss, unused_rate
            rates_before = len(tf.compat.v1.get_collection(LEARNING_RATE_COLLECTION))
            loss = replica_step(iterator.get_next())
            rates = tf.compat.v1.get_collection(LEARNING_RATE_COLLECTION)[rates_before:]
            has_rate.append(bool(rates))
            rate = tf.cast(rates[-1], tf.float32) if rates else tf.constant(0.0)
            return i + 1, tf.cast(loss, tf.float32), rate

        _, loss, rate = tf.compat.v1.while_loop(
            lambda i, unused_loss, unused_rate: i < steps_this_run,
            body,
            [tf.constant(0), tf.constant(0.0), tf.constant(0.0)],
            parallel_iterations=1,
        )
        if extras is not None:
            extras["steps_this_run"] = steps_this_run
            extras["learning_rate"] = rate if any(has_rate) else None
        return loss

    def _steps_this_run(self, step, max_steps, limit, writes_summaries):
        """Steps the next run may take: up to `limit`, stopping at the next log/save/end."""
        config = self._config
        boundaries = [config.log_step_count_steps, config.save_checkpoints_steps]
        if writes_summaries:
            boundaries.append(config.save_summary_steps)
        for every in boundaries:
            if every:
                limit = min(limit, every - step % every)
        if max_steps is not None:
            limit = min(limit, max_steps - step)
        return max(1, limit)

    def _initialize(self, session, dist, train_graph, checkpoint_path):
        dist.initialize_system(session)
        if checkpoint_path:
            logging.info("Restoring parameters from %s", checkpoint_path)
            _restore(train_graph.saver, session, checkpoint_path)
            state = tf.train.get_checkpoint_state(self._config.model_dir)
            train_graph.saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
        else:
            session.run(train_graph.init_ops["global_init"])
            for scaffold in train_graph.scaffolds:
                if scaffold is not None and scaffold.init_fn is not None:
                    scaffold.init_fn(scaffold, session)
        session.run(train_graph.init_ops["local_init"])
        session.run(train_graph.init_ops["iterator_init"])

    def _save(self, session, train_graph, step):
        if not session.run(train_graph.weights_finite):
            raise NanLossError(
                f"weights hold NaN or Inf at step {step}; not saving. The newest good "
                f"checkpoint is {newest_checkpoint(self._config.model_dir) or '(none)'}"
            )
        path = train_graph.saver.save(
            session,
            os.path.join(self._config.model_dir, _CHECKPOINT_BASENAME),
            global_step=step,
        )
        logging.info("Saved checkpoint for step %d: %s", step, path)
        return path

    def _train_loop(self, session, dist, train_graph, max_steps, start_checkpoint, hooks):
        config = self._config
        step = int(session.run(train_graph.global_step))
        start_step = step
        last_saved = step if start_checkpoint else None
        writer = None
        if dist.is_chief:
            writer = tf.compat.v1.summary.FileWriter(config.model_dir, session.graph)
        progress = _Progress(step, max_steps, train_graph.global_batch_size)
        logging.info(
            "Training from step %d to %s, global batch %d over %d replica(s).",
            step,
            progress.total,
            train_graph.global_batch_size,
            dist.num_replicas,
        )
        loss = None
        try:
            while max_steps is None or step < max_steps:
                run_steps = 1
                if train_graph.steps_this_run is not None:
                    run_steps = self._steps_this_run(
                        step, max_steps, train_graph.steps_per_run, writer is not None
                    )
                next_step = step + run_steps
                first_or_last = step == start_step or (
                    max_steps is not None and next_step >= max_steps
                )
                log_due = first_or_last or _crosses(step, next_step, config.log_step_count_steps)
                # Summaries every save_summary_steps, and at a run's first and
                # last step so that even short runs leave a curve.
                summary_due = bool(
                    writer is not None
                    and config.save_summary_steps
                    and (first_or_last or _crosses(step, next_step, config.save_summary_steps))
                )
                fetches = {"loss": train_graph.loss, "step": train_graph.step_after}
                if (log_due or summary_due) and train_graph.learning_rate is not None:
                    fetches["learning_rate"] = train_graph.learning_rate
                if summary_due and train_graph.summary_op is not None:
                    fetches["summary"] = train_graph.summary_op
                run_context = tf.compat.v1.train.SessionRunContext(
                    tf.compat.v1.train.SessionRunArgs(dict(fetches)), session
                )
                for i, hook in enumerate(hooks):
                    args = hook.before_run(run_context)
                    if args is not None and args.fetches is not None:
                        fetches[("hook", i)] = args.fetches
                micro_losses = []
                try:
                    if train_graph.accumulate_loss is not None:
                        for _ in range(train_graph.num_accumulation_steps - 1):
                            micro_losses.append(float(session.run(train_graph.accumulate_loss)))
                    feed = None
                    if train_graph.steps_this_run is not None:
                        feed = {train_graph.steps_this_run: run_steps}
                    results = session.run(fetches, feed_dict=feed)
                except tf.errors.OutOfRangeError:
                    if train_graph.steps_this_run is not None:
                        # Steps of the loop before the input ended did run.
                        step = int(session.run(train_graph.global_step))
                    logging.info("Input exhausted at step %d.", step)
                    break
                # With accumulation, the loss of a step is the mean over its micro-batches.
                loss = float(results["loss"])
                if micro_losses:
                    loss = float(np.mean(micro_losses + [loss]))
                new_step = int(results["step"])
                previous_step = step
                if not np.isfinite(loss):
                    raise NanLossError(
                        f"loss is {loss} at step {new_step}; training stopped. The newest good "
                        f"checkpoint is {newest_checkpoint(config.model_dir) or '(none)'}"
                    )
                if new_step == step:
                    raise RuntimeError("the model_fn's train_op does not increment global_step")
                step = new_step
                for i, hook in enumerate(hooks):
                    values = tf.compat.v1.train.SessionRunValues(
                        results.get(("hook", i)), None, None
                    )
                    hook.after_run(run_context, values)
                scalars = {"loss": loss}
                if "learning_rate" in results:
                    scalars["learning_rate"] = float(results["learning_rate"])
                if log_due:
                    rates = progress.log(step, scalars)
                    if writer is not None and rates:
                        writer.add_summary(_scalar_summary(rates), step)
                if summary_due:
                    writer.add_summary(_scalar_summary(scalars), step)
                    if "summary" in results:
                        writer.add_summary(results["summary"], step)
                if (
                    dist.is_chief
                    and config.save_checkpoints_steps
                    and _crosses(previous_step, step, config.save_checkpoints_steps)
                ):
                    self._save(session, train_graph, step)
                    last_saved = step
                if run_context.stop_requested:
                    break
            if dist.is_chief and step != last_saved:
                self._save(session, train_graph, step)
            logging.info(
                "Training done at step %d (%d steps in %s); loss = %s",
                step,
                step - start_step,
                _format_seconds(time.time() - progress.t_start),
                "n/a" if loss is None else f"{loss:.6g}",
            )
        finally:
            if writer is not None:
                writer.close()

    # ---------------------------------------------------------------- eval

    def _checkpoint_to_load(self, checkpoint_path, what):
        if checkpoint_path:
            if not tf.io.gfile.exists(checkpoint_path + ".index"):
                if tf.io.gfile.isdir(checkpoint_path):
                    found = newest_checkpoint(checkpoint_path)
                    if found:
                        return found
                raise UsageError(f"checkpoint {checkpoint_path} not found")
            return checkpoint_path
        _check_model_dir(self._config.model_dir, create=False)
        found = newest_checkpoint(self._config.model_dir)
        if found is None:
            logging.warning(
                "No checkpoint in %s; %s uses the variables as the model_fn initializes "
                "them (its init_checkpoint, if it loads one).",
                self._config.model_dir,
                what,
            )
        return found

    def _open_session(self, graph, saver, checkpoint_path, init_ops, scaffolds):
        session = tf.compat.v1.Session(
            graph=graph, config=tf.compat.v1.ConfigProto(allow_soft_placement=True)
        )
        with graph.as_default():
            if checkpoint_path:
                logging.info("Restoring parameters from %s", checkpoint_path)
                _restore(saver, session, checkpoint_path)
            else:
                session.run(init_ops["global_init"])
                for scaffold in scaffolds:
                    if scaffold is not None and scaffold.init_fn is not None:
                        scaffold.init_fn(scaffold, session)
            session.run(init_ops["local_init"])
            session.run(init_ops["iterator_init"])
        graph.finalize()
        return session

    def _build_single_device_graph(self, input_fn, mode, batch_size):
        """Builds input, model and init ops for evaluate / predict (one device)."""
        if self._config.tf_random_seed is not None:
            tf.compat.v1.set_random_seed(self._config.tf_random_seed)
        global_step = tf.compat.v1.train.get_or_create_global_step()
        dataset = self._prepare_dataset(input_fn(self._input_params(batch_size)))
        iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
        features, labels = _split_features(iterator.get_next())
        spec = self._call_model_fn(features, labels, mode, batch_size)
        scaffolds = [spec.scaffold_fn()] if spec.scaffold_fn is not None else []
        return global_step, iterator, spec, scaffolds

    def _finish_graph(self, iterator):
        saver = _make_saver()
        init_ops = dict(
            global_init=tf.compat.v1.global_variables_initializer(),
            local_init=tf.group(
                tf.compat.v1.local_variables_initializer(), tf.compat.v1.tables_initializer()
            ),
            iterator_init=iterator.initializer,
        )
        return saver, init_ops

    def evaluate(self, input_fn, steps=None, checkpoint_path=None, name=None):
        """Evaluates the newest checkpoint (or `checkpoint_path`) over `steps` batches.

        steps=None runs until the input is exhausted. Returns a dict of
        Python numbers: every metric of eval_metrics, "loss" (mean of the
        per-batch loss) and "global_step" of the evaluated weights. Also
        writes the metrics as TensorBoard scalars to model_dir/eval[_name].
        """
        batch_size = self._eval_batch_size
        if batch_size is None or batch_size <= 0:
            raise UsageError(f"eval_batch_size must be positive, got {batch_size}")
        if steps is not None and steps <= 0:
            raise UsageError(f"evaluation steps must be positive, got {steps}")
        checkpoint_path = self._checkpoint_to_load(checkpoint_path, "evaluation")
        graph = tf.Graph()
        with graph.as_default():
            global_step, iterator, spec, scaffolds = self._build_single_device_graph(
                input_fn, ModeKeys.EVAL, batch_size
            )
            metric_ops = {}
            if spec.eval_metrics is not None:
                metric_fn, tensors = spec.eval_metrics
                if isinstance(tensors, dict):
                    metric_ops = metric_fn(**tensors)
                else:
                    metric_ops = metric_fn(*tensors)
                metric_ops = dict(metric_ops)
            if "loss" not in metric_ops:
                metric_ops["loss"] = tf.compat.v1.metrics.mean(spec.loss)
            values = {key: value for key, (value, _) in metric_ops.items()}
            update_op = tf.group(*[update for _, update in metric_ops.values()])
            saver, init_ops = self._finish_graph(iterator)
        session = self._open_session(graph, saver, checkpoint_path, init_ops, scaffolds)
        try:
            done = 0
            t_start = time.time()
            total = "?" if steps is None else str(steps)
            log_every = max(1, (steps or 1000) // 10)
            while steps is None or done < steps:
                try:
                    session.run(update_op)
                except tf.errors.OutOfRangeError:
                    break
                done += 1
                if done % log_every == 0:
                    logging.info(
                        "Evaluation [%d/%s], %.3g batches/sec",
                        done,
                        total,
                        done / max(time.time() - t_start, 1e-9),
                    )
            result = session.run(values)
            step = int(session.run(global_step))
        finally:
            session.close()
        result = {key: _to_python(value) for key, value in result.items()}
        result["global_step"] = step
        logging.info(
            "Evaluation of %d batches done in %s: %s",
            done,
            _format_seconds(time.time() - t_start),
            ", ".join(f"{k} = {result[k]}" for k in sorted(result)),
        )
        self._write_eval_summary(result, step, name)
        return result

    def _write_eval_summary(self, result, step, name):
        if not tf.io.gfile.isdir(self._config.model_dir):
            return
        eval_dir = os.path.join(self._config.model_dir, "eval" if not name else f"eval_{name}")
        scalars = {
            k: v
            for k, v in result.items()
            if k != "global_step" and isinstance(v, (int, float)) and np.isfinite(v)
        }
        with tf.Graph().as_default():
            writer = tf.compat.v1.summary.FileWriter(eval_dir)
            writer.add_summary(_scalar_summary(scalars), step)
            writer.close()

    # ---------------------------------------------------------------- predict

    def predict(self, input_fn, checkpoint_path=None, yield_single_examples=True):
        """Yields predictions of the newest checkpoint (or `checkpoint_path`).

        One dict of numpy values per example (batch dimension removed), or
        one dict per batch with yield_single_examples=False. The graph is
        built once; the session stays open while the generator is consumed.
        """
        batch_size = self._predict_batch_size
        if batch_size is None or batch_size <= 0:
            raise UsageError(f"predict_batch_size must be positive, got {batch_size}")
        checkpoint_path = self._checkpoint_to_load(checkpoint_path, "prediction")
        graph = tf.Graph()
        with graph.as_default():
            _, iterator, spec, scaffolds = self._build_single_device_graph(
                input_fn, ModeKeys.PREDICT, batch_size
            )
            predictions = spec.predictions
            if not isinstance(predictions, dict):
                predictions = {"predictions": predictions}
            saver, init_ops = self._finish_graph(iterator)
        session = self._open_session(graph, saver, checkpoint_path, init_ops, scaffolds)
        try:
            while True:
                try:
                    batch = session.run(predictions)
                except tf.errors.OutOfRangeError:
                    break
                if not yield_single_examples:
                    yield batch
                    continue
                sizes = {value.shape[0] for value in batch.values()}
                if len(sizes) != 1:
                    raise ValueError(
                        "all predictions must share the batch dimension, got sizes "
                        f"{sorted(sizes)}"
                    )
                for i in range(sizes.pop()):
                    yield {key: value[i] for key, value in batch.items()}
        finally:
            session.close()


_TrainGraph = collections.namedtuple(
    "_TrainGraph",
    [
        "global_step",
        "loss",
        "step_after",
        "summary_op",
        "learning_rate",
        "weights_finite",
        "saver",
        "init_ops",
        "scaffolds",
        "global_batch_size",
        "steps_per_run",
        "steps_this_run",
        "accumulate_loss",
        "num_accumulation_steps",
    ],
)

# Op types left out of XLA clusters under --use_xla: random numbers (so that
# dropout masks and initializers match a run without XLA) and ops XLA has no
# kernel for.
_NOT_XLA_OPS = frozenset(
    [
        "RandomUniform",
        "RandomUniformInt",
        "RandomStandardNormal",
        "TruncatedNormal",
        "Assert",
        "Print",
        "PrintV2",
        "ScalarSummary",
        "HistogramSummary",
        "MergeSummary",
        "IteratorGetNext",
    ]
)


def _xla_compilable(node_def):
    return node_def.op not in _NOT_XLA_OPS and "Initializer" not in node_def.name


def _to_python(value):
    value = np.asarray(value)
    if value.shape == ():
        return value.item()
    return value.tolist()
