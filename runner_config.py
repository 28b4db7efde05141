"""The runner's flags, settings and the types a model_fn deals in.

The bottom layer of the runner: RunConfig (where and how often a run saves,
logs and summarizes, and on what devices), EstimatorSpec and ModeKeys (what
a model_fn receives and returns) and the errors the runner raises. The
flags are defined here once for every script; runner.py re-exports all of
it.
"""

import collections

import tensorflow as tf
from absl import flags, logging

if __package__:
    from .errors import RunError, UsageError
else:
    from errors import RunError, UsageError

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

flags.DEFINE_integer(
    "keep_checkpoint_max",
    5,
    "How many of the newest checkpoints training keeps in output_dir (older ones are "
    "deleted; 0 keeps all); output_dir/best/ is never counted or deleted.",
)

# Evaluating while training (runner_evaluation.py): every script that trains and
# evaluates honours these.
flags.DEFINE_integer(
    "eval_every_n_steps",
    None,
    "With training and evaluation asked for: save a checkpoint and evaluate it every N "
    "training steps (and at the end), writing the metrics to the log, to "
    "output_dir/eval for TensorBoard and as one JSON line each to "
    "output_dir/eval_history.jsonl.",
)
flags.DEFINE_string(
    "best_checkpoint_metric",
    None,
    "With --eval_every_n_steps: the evaluation result (a key of eval_results.txt, e.g. "
    "eval_accuracy) whose best value so far keeps its checkpoint in output_dir/best/, "
    "with the results that made it best in best/eval_results.txt. Keys containing "
    "'loss' are minimised, all others maximised.",
)
flags.DEFINE_integer(
    "early_stopping_patience",
    None,
    "With --best_checkpoint_metric: stop training after this many evaluations in a "
    "row without a new best value.",
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


class WorkerLostError(ConnectionError):
    """A multi-worker job lost one of its workers; every worker must be started again."""


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


_ITERATIONS_PER_LOOP_DEFAULT = 1000


def _warn_if_iterations_per_loop_set(value):
    """--iterations_per_loop has no effect here; say so when someone asked for it."""
    given = value not in (None, _ITERATIONS_PER_LOOP_DEFAULT)
    if FLAGS.is_parsed() and "iterations_per_loop" in FLAGS:
        given = given or FLAGS["iterations_per_loop"].present
    if given:
        logging.warning(
            "--iterations_per_loop is ignored (it sized the original's TPU host loop); "
            "use --steps_per_run to run several training steps per session.run."
        )


class RunConfig:
    """Where and how often a run saves, logs and summarizes, and on what devices.

    Arguments left as None for distribution, TPU and seeding take the value
    of the runner's flag of the same name (once flags are parsed), so a
    script that builds RunConfig(model_dir=..., ...) honours
    --distribution_strategy, --use_tpu and friends without passing them.

    iterations_per_loop is accepted for the scripts' --iterations_per_loop
    (the original's TPU host loop) and ignored, with a warning when it is
    given: --steps_per_run is the graph loop here, kept separate so that the
    scripts' default of 1000 does not change how often hooks run.
    """

    def __init__(
        self,
        model_dir,
        save_checkpoints_steps=1000,
        keep_checkpoint_max=None,
        iterations_per_loop=_ITERATIONS_PER_LOOP_DEFAULT,
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
        self.keep_checkpoint_max = (
            keep_checkpoint_max
            if keep_checkpoint_max is not None
            else _flag_value("keep_checkpoint_max", 5)
        )
        self.iterations_per_loop = iterations_per_loop
        _warn_if_iterations_per_loop_set(iterations_per_loop)
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
        self._check()

    def _check(self):
        """Rejects settings that contradict each other, naming the flag at fault."""
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
        if self.keep_checkpoint_max is None or self.keep_checkpoint_max < 0:
            raise UsageError(f"--keep_checkpoint_max must be >= 0, got {self.keep_checkpoint_max}")
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
