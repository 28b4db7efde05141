"""The engine's settings and the types a model_fn deals in.

The bottom layer of the engine: RunConfig (where and how often a run saves,
logs and summarizes, on what devices, in how many micro-batches), EstimatorSpec
and ModeKeys (what a model_fn receives and returns) and the errors the engine
raises. Every setting is an explicit argument: the scripts read their flags
and pass the values (script_flags.run_config_from_flags); the engine's
__init__ re-exports the public names. What the model computes (its
precision, its optimizer) is the model_fn's own business: it comes in
through the model_fn's closure, never through RunConfig.
"""

import collections

import tensorflow as tf
from absl import logging
from tensorflow.core.protobuf import rewriter_config_pb2

from ..plumbing.errors import RunError, Stopped, UsageError

CHECKPOINT_BASENAME = "model.ckpt"

_ONE_ROUND = rewriter_config_pb2.RewriterConfig.ONE


class ModeKeys:
    """The three modes a model_fn is called in (the values tf.estimator used)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class NanLossError(RunError):
    """Training produced a NaN or Inf loss; nothing after the last good save is kept."""


class InputReadError(UsageError):
    """An input file that could not be read as the run went (damaged, removed or changed
    while read), named with what happened (input_data.py); a script may add the flag that
    gave the file."""


class TrainingStopped(Stopped):
    """Training stopped on SIGTERM or Ctrl-C after saving its step; the message names the
    checkpoint. Exit status 128 + the signal's number (errors.Stopped)."""


class WorkerLostError(ConnectionError):
    """A multi-worker job lost one of its workers; every worker must be started again."""


_EstimatorSpecBase = collections.namedtuple(
    "EstimatorSpec",
    [
        "mode",
        "loss",
        "train_op",
        "eval_metrics",
        "predictions",
        "scaffold_fn",
        "learning_rate",
        "accumulate_op",
        "optional_in_checkpoint",
        "examples",
    ],
)


class EstimatorSpec(_EstimatorSpecBase):
    """What a model_fn returns, shaped like TPUEstimatorSpec.

    mode: one of ModeKeys. loss: scalar float tensor (TRAIN, EVAL).
    train_op: op that runs one optimizer step and increments global_step
      (TRAIN).
    eval_metrics: (metric_fn, tensors) with tensors a list (metric_fn(*tensors))
      or a dict (metric_fn(**tensors)); metric_fn returns {name: (value_tensor,
      update_op)}, e.g. from tf.compat.v1.metrics (EVAL).
    predictions: {name: tensor with a leading batch dimension} (PREDICT; in
      EVAL too when the evaluation is asked for every example's output, see
      Estimator.evaluate's with_predictions).
    scaffold_fn: None or a callable returning a tf.compat.v1.train.Scaffold; it
      is called while the graph is built (the original called
      init_from_checkpoint in it on TPU) and the Scaffold's init_fn, if any,
      runs after variables are initialized.

    What training needs of the step besides its train_op (TRAIN; all optional):
    learning_rate: a scalar tensor, logged with the loss and written to
      TensorBoard as "learning_rate".
    accumulate_op: with RunConfig(num_accumulation_steps=N > 1), required: the
      op that only adds one micro-batch's gradients to the step's
      accumulators. Training runs it on N-1 micro-batches, then the train_op
      (which applies the average of all N) on the N-th.
    optional_in_checkpoint: variables a checkpoint may lack (a float16 loss
      scale, which checkpoints of other runs have none of): restoring one
      without them leaves them at their initial values.
    examples: a scalar tensor, how many examples this replica's batch holds,
      when that varies from batch to batch (several packed into a row):
      training then counts them, in the variable `examples_trained` of its
      checkpoints, and its progress lines give examples/s and the examples
      trained so far from it rather than from the batch size.
    """

    def __new__(
        cls,
        mode,
        loss=None,
        train_op=None,
        eval_metrics=None,
        predictions=None,
        scaffold_fn=None,
        learning_rate=None,
        accumulate_op=None,
        optional_in_checkpoint=(),
        examples=None,
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
        return super().__new__(
            cls,
            mode,
            loss,
            train_op,
            eval_metrics,
            predictions,
            scaffold_fn,
            learning_rate,
            accumulate_op,
            tuple(optional_in_checkpoint or ()),
            examples,
        )


_ITERATIONS_PER_LOOP_DEFAULT = 1000


def session_config(user_config=None, inference=False):
    """The ConfigProto of the engine's sessions, with `user_config` (a ConfigProto) merged over it.

    Soft placement, and one round of TensorFlow's graph optimizations
    instead of its default two: on a BERT training graph the second round
    takes 0.3-0.5 s of every start and changes no computation (it merges a
    few duplicate nodes; the losses of a seeded run are bit-identical).

    `inference` (the sessions of evaluate and predict) also turns off two
    passes that leave an inference graph as it was: the memory optimizer,
    which looks for activations to swap out or recompute between a forward
    and a backward pass (a graph without a backward pass has none; on a
    6-layer BERT's prediction graph it took 0.1-0.6 s), and the MLIR (TFG)
    passes, which sort the graph and move code into conditionals, of which
    BERT's graphs have none (0.1 s).
    """
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    rewrites = config.graph_options.rewrite_options
    rewrites.meta_optimizer_iterations = _ONE_ROUND
    if inference:
        rewrites.memory_optimization = rewriter_config_pb2.RewriterConfig.NO_MEM_OPT
        rewrites.disable_tfg_optimizer = True
    if user_config is not None:
        config.MergeFrom(user_config)
    return config


class RunConfig:
    """Where and how often a run saves, logs and summarizes, on what devices.

    Every path the engine builds a model on (train, evaluate, predict,
    export_saved_model) takes use_xla from here, so that they compile alike.
    num_accumulation_steps=N splits each training batch into N micro-batches
    (the model_fn's spec must then carry the accumulate_op of a step that
    averages N of them). iterations_per_loop (the original's TPU host loop)
    is accepted and ignored, with a warning when it differs from its
    default: steps_per_run is the graph loop here.
    """

    def __init__(
        self,
        model_dir,
        save_checkpoints_steps=1000,
        keep_checkpoint_max=5,
        iterations_per_loop=_ITERATIONS_PER_LOOP_DEFAULT,
        log_step_count_steps=100,
        save_summary_steps=100,
        session_config=None,
        tf_random_seed=None,
        distribution_strategy="one_device",
        num_gpus=None,
        use_tpu=False,
        tpu_name=None,
        tpu_zone=None,
        gcp_project=None,
        master=None,
        num_tpu_cores=8,
        use_xla=False,
        num_accumulation_steps=1,
        steps_per_run=1,
    ):
        if not model_dir:
            raise UsageError("model_dir (--output_dir) must be set")
        self.model_dir = model_dir
        self.save_checkpoints_steps = save_checkpoints_steps
        self.keep_checkpoint_max = keep_checkpoint_max
        self.iterations_per_loop = iterations_per_loop
        if iterations_per_loop != _ITERATIONS_PER_LOOP_DEFAULT:
            logging.warning(
                "--iterations_per_loop is ignored (it sized the original's TPU host loop); "
                "use --steps_per_run to run several training steps per session.run."
            )
        self.log_step_count_steps = max(1, int(log_step_count_steps or 1))
        self.save_summary_steps = save_summary_steps
        self.session_config = session_config
        self.tf_random_seed = tf_random_seed
        self.distribution_strategy = distribution_strategy
        self.num_gpus = num_gpus
        self.use_tpu = bool(use_tpu)
        self.tpu_name = tpu_name
        self.tpu_zone = tpu_zone
        self.gcp_project = gcp_project
        self.master = master
        self.num_tpu_cores = num_tpu_cores
        self.use_xla = bool(use_xla)
        self.num_accumulation_steps = num_accumulation_steps
        self.steps_per_run = steps_per_run
        self._check()

    def _check(self):
        """Rejects settings that contradict each other, naming the flag at fault."""
        if self.steps_per_run is None or self.steps_per_run < 1:
            raise UsageError(f"--steps_per_run must be >= 1, got {self.steps_per_run}")
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
