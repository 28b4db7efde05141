"""The flags the scripts share, defined once, and the one place that reads them for the libraries.

Each script defines the flags that are its own and takes the shared ones
by group, as the original scripts' flags were:

    script_flags.define_model_flags(__name__)        # bert_config_file, vocab_file, ...
    script_flags.define_fine_tuning_flags(__name__)  # output_dir, do_train, batch sizes, ...
    script_flags.define_engine_flags(__name__)       # devices, precision, XLA, padding, ...
    script_flags.define_flags("input_file", module=__name__)  # any other, by name

Each shared flag is one entry of SHARED_FLAGS: its definition, its group
(the define_*_flags that takes it) and, for a number, its rule.
A shared flag has one definition, one default and one help text in a
process, whichever scripts are imported into it, and is listed under each
script that takes it by `--helpshort`. The one default that differs
between the original scripts, run_squad.py's max_seq_length of 384, is
set by that script when it runs (`run_main(main, max_seq_length=384)`).

A script defines only the flags it reads (define_engine_flags leaves out
what prediction alone does not need, with training=False, and the padding
and evaluation-while-training groups on request). Every integer and float
flag says where it is defined which values it may take (its rule, a Valid:
positive, a fraction, ...), registered as its absl validator, so that a
command line giving another value is refused as it is parsed.

Libraries (modeling, optimization, tokenization, the engine, the data
modules) never read flags: each script reads them once, in `main` and its
`settings_from_flags()`, through the `*_from_flags` functions here, and
passes the values down (the model's checks, bert_runs/checks.py's
check_model, and the training steps, bert_runs/model_fns.py's train_steps,
take them).
Each setting takes one road: the engine's (devices, seeding, checkpoints,
XLA, micro-batches) into RunConfig (run_config_from_flags); the model's
(--precision, --num_accumulation_steps, the learning rate, ...) into the
script's settings and from there, as arguments of its model_fn_builder,
into the model_fn. `run_main` is the scripts' entry point:
plumbing/command_line.py's, which parses the flags and turns a user's
mistake into one "ERROR: ..." line (plumbing/errors.py).
"""

import collections
import math
import sys

from absl import flags

from .plumbing import command_line

FLAGS = flags.FLAGS

_DEFINE = {
    "string": flags.DEFINE_string,
    "bool": flags.DEFINE_bool,
    "integer": flags.DEFINE_integer,
    "float": flags.DEFINE_float,
    "enum": flags.DEFINE_enum,
}


# ---------------------------------------------------------------------------
# What a numeric flag may hold: its rule, given where it is defined
# (SHARED_FLAGS' `rule`, define_integer and define_float) and checked by
# absl whenever the flag is set, the command line included.


class Valid(collections.namedtuple("Valid", ["words", "test"])):
    """The values a numeric flag may take, as the original's code assumes them.

    `words` says which ("0 or positive"), `test(value)` whether a value is one.
    """

    def problem(self, name, value):
        """The message refusing `value` for --name, or None when it is valid."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"--{name}={value}: must be a finite number"
        if self.test(value):
            return None
        if self is POSITIVE:
            return f"--{name} must be positive, got {value}"
        return f"--{name}={value}: must be {self.words}"


def at_least(minimum, why):
    """Valid values from `minimum` up; `why` says what needs that many."""
    return Valid(f"at least {minimum} ({why})", lambda value: value >= minimum)


ANY_NUMBER = Valid("a finite number", lambda value: True)
POSITIVE = Valid("positive", lambda value: value > 0)
NON_NEGATIVE = Valid("0 or positive", lambda value: value >= 0)
FRACTION = Valid("between 0 and 1", lambda value: 0 <= value <= 1)
# [CLS], at least one word piece and [SEP]: a shorter sequence holds no text.
SEQUENCE_LENGTH = at_least(3, "[CLS], a word piece and [SEP]")

# {flag name: Valid} of every numeric flag defined in this process.
NUMERIC_FLAGS = {}


def _add_rule(name, rule):
    """Registers `rule` (a Valid) as flag `name`'s absl validator: a value it refuses is
    an IllegalFlagValueError whose message is the rule's, and a command line giving one
    is refused as any other (one ERROR line, plumbing/command_line.py). An unset flag
    (None) is left to the script."""
    NUMERIC_FLAGS[name] = rule

    def check(value):
        problem = None if value is None else rule.problem(name, value)
        if problem:
            raise flags.ValidationError(problem)
        return True

    flags.register_validator(name, check)


def define_integer(name, default, help_text, rule, module):
    """flags.DEFINE_integer for the script `module` (its __name__), with its rule (a Valid)."""
    flags.DEFINE_integer(name, default, help_text, module_name=_absl_module_name(module))
    _add_rule(name, rule)


def define_float(name, default, help_text, rule, module):
    """flags.DEFINE_float for the script `module` (its __name__), with its rule (a Valid)."""
    flags.DEFINE_float(name, default, help_text, module_name=_absl_module_name(module))
    _add_rule(name, rule)


def _absl_module_name(module):
    """The name absl gives a script's module: a script run as a program is named by its
    path, as it appears in sys.argv[0]."""
    return sys.argv[0] if module == "__main__" else module


# The groups of shared flags a script takes together (define_model_flags, ...).
MODEL = "model"
FINE_TUNING = "fine tuning"
ENGINE = "engine"
TRAINING_ENGINE = "training engine"
PADDING = "padding"
EVALUATION = "evaluation"

# One shared flag: how absl defines it, its group (None: taken by name) and,
# for a number, its rule.
SharedFlag = collections.namedtuple("SharedFlag", "kind default help_text enum_values rule group")


def _shared(kind, default, help_text, *enum_values, rule=None, group=None):
    return SharedFlag(kind, default, help_text, enum_values, rule, group)


# Every flag more than one script takes, each with its definition, its group
# and (numbers) its rule.
SHARED_FLAGS = {
    # The pre-trained model and its vocabulary.
    "bert_config_file": _shared(
        "string",
        None,
        "The config json file of the pre-trained BERT model; it sets the architecture.",
        group=MODEL,
    ),
    "vocab_file": _shared(
        "string", None, "The WordPiece vocabulary file the BERT model was trained on.", group=MODEL
    ),
    "init_checkpoint": _shared(
        "string", None, "Initial checkpoint (usually from a pre-trained BERT model).", group=MODEL
    ),
    "allow_partial_init_checkpoint": _shared(
        "bool",
        False,
        "Start the model's variables that --init_checkpoint lacks (layers beyond its "
        "depth, say, to grow a model) from their initializers, and leave out the encoder "
        "layers it holds beyond the config's (to start from the first layers of a bigger "
        "model), instead of refusing the run; the log says what started fresh or was left out.",
        group=MODEL,
    ),
    "allow_new_task_in_output_dir": _shared(
        "bool",
        False,
        "Let this run take over an --output_dir that holds the run of another task (another "
        "--task_name, other labels, another script's head): its checkpoint is continued with "
        "this task and its results are replaced as this run writes its own; the log says "
        "what is reused. Without it such a directory is refused.",
        group=FINE_TUNING,
    ),
    "do_lower_case": _shared(
        "bool",
        True,
        "Whether to lower case the input text. True for uncased models, False for cased ones.",
        group=MODEL,
    ),
    "max_seq_length": _shared(
        "integer",
        128,
        "The maximum total input sequence length after WordPiece tokenization (128; 384 "
        "for run_squad.py). Longer inputs are truncated, or cut into windows where the "
        "script says so (SQuAD contexts, NER sentences, --long_text_windows); shorter ones "
        "are padded. For pre-training it must match the data.",
        rule=SEQUENCE_LENGTH,
        group=MODEL,
    ),
    "max_predictions_per_seq": _shared(
        "integer",
        20,
        "Maximum number of masked LM predictions per sequence. Must match between "
        "create_pretraining_data.py and run_pretraining.py.",
        rule=POSITIVE,
    ),
    # Files.
    "input_file": _shared(
        "string",
        None,
        "The input: raw text files for create_pretraining_data.py and create_vocab.py "
        "(comma-separated, globs allowed); the TFRecords create_pretraining_data.py wrote "
        "for run_pretraining.py (likewise); a text file with one example a line for "
        "extract_features.py.",
    ),
    "output_file": _shared(
        "string",
        None,
        "The output file: TFRecords of examples (create_pretraining_data.py; "
        "comma-separated for several), the vocabulary (create_vocab.py) or JSON lines "
        "(extract_features.py).",
    ),
    "data_dir": _shared(
        "string",
        None,
        "The input data dir, holding the task's train, dev and test files (GLUE TSVs, "
        "custom CSV/TSV/JSONL, CoNLL train.txt/dev.txt/test.txt).",
    ),
    "output_dir": _shared(
        "string",
        None,
        "The output directory where checkpoints, records, results and converted models are "
        "written.",
        group=FINE_TUNING,
    ),
    "task_name": _shared(
        "string",
        None,
        "The name of the run_classifier.py task (cola, mnli, mrpc, xnli, the other GLUE "
        "tasks, or custom).",
    ),
    "labels": _shared(
        "string",
        None,
        "The label names in class-id order, comma-separated (run_classifier.py "
        "--task_name=custom: the classes; run_ner.py: the tags, e.g. O,B-PER,I-PER). "
        "Default: output_dir/labels.txt if an earlier run wrote it, else the labels of the "
        "training file (sorted; for tags, O first).",
    ),
    "window_stride": _shared(
        "integer",
        None,
        "How many word pieces apart consecutive windows of a text too long for one "
        "sequence start (run_classifier.py with --long_text_windows; run_ner.py, moved on "
        "to a word start). Default: half a window, (max_seq_length - 2) // 2.",
        rule=POSITIVE,
    ),
    # What a run does.
    "do_train": _shared("bool", False, "Whether to run training.", group=FINE_TUNING),
    "do_eval": _shared("bool", False, "Whether to run eval on the dev set.", group=FINE_TUNING),
    "do_predict": _shared(
        "bool",
        False,
        "Whether to run the model on the test set (run_squad.py: on --predict_file).",
        group=FINE_TUNING,
    ),
    "export_dir": _shared(
        "string",
        None,
        "If set, export the newest checkpoint in output_dir (else --init_checkpoint) as a "
        "SavedModel here, computing in --precision: its serving signature takes input_ids, "
        "input_mask and segment_ids and returns what prediction writes (class "
        "probabilities or score, start and end logits, tag probabilities). The directory "
        "must not exist yet.",
        group=FINE_TUNING,
    ),
    "export_format": _shared(
        "string",
        "saved_model",
        "With --export_dir, comma-separated: saved_model (always written), onnx (also "
        "model.onnx, float32, for ONNX Runtime and OpenVINO; a bf16 model is run in bf16 "
        "by OpenVINO from it), onnx_int8 (also model_int8.onnx, the dense layers' weights "
        "in int8). The ONNX formats need the optional extra: pip install .[onnx]",
    ),
    # Training.
    "train_batch_size": _shared(
        "integer", 32, "Total batch size for training.", rule=POSITIVE, group=FINE_TUNING
    ),
    "eval_batch_size": _shared(
        "integer", 8, "Total batch size for eval.", rule=POSITIVE, group=FINE_TUNING
    ),
    "predict_batch_size": _shared(
        "integer", 8, "Total batch size for predict.", rule=POSITIVE, group=FINE_TUNING
    ),
    "learning_rate": _shared(
        "float", 5e-5, "The initial learning rate for Adam.", rule=NON_NEGATIVE, group=FINE_TUNING
    ),
    "num_train_epochs": _shared(
        "float",
        3.0,
        "Total number of training epochs to perform.",
        rule=NON_NEGATIVE,
        group=FINE_TUNING,
    ),
    "warmup_proportion": _shared(
        "float",
        0.1,
        "Proportion of training to perform linear learning rate warmup for (0.1 = 10%).",
        rule=FRACTION,
        group=FINE_TUNING,
    ),
    "save_checkpoints_steps": _shared(
        "integer",
        1000,
        "How often to save the model checkpoint.",
        rule=POSITIVE,
        group=FINE_TUNING,
    ),
    "iterations_per_loop": _shared(
        "integer",
        1000,
        "How many steps to make in each estimator call (the original's TPU host loop). "
        "Ignored here, with a warning when given; see --steps_per_run.",
        rule=POSITIVE,
        group=FINE_TUNING,
    ),
    "keep_checkpoint_max": _shared(
        "integer",
        5,
        "How many of the newest checkpoints training keeps in output_dir (older ones are "
        "deleted; 0 keeps all); output_dir/best/ is never counted or deleted.",
        rule=NON_NEGATIVE,
        group=TRAINING_ENGINE,
    ),
    "tf_random_seed": _shared(
        "integer",
        None,
        "If set, make training reproducible: fixed graph-level seed, deterministic input "
        "order, and a resumed run skips the batches already trained on.",
        rule=ANY_NUMBER,
        group=TRAINING_ENGINE,
    ),
    # Devices: the original's TPU flags, then data parallelism on GPUs / CPUs / workers.
    "use_tpu": _shared("bool", False, "Whether to use TPU or GPU/CPU.", group=ENGINE),
    "tpu_name": _shared(
        "string",
        None,
        "The Cloud TPU to use for training. This should be either the name used when "
        "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.",
        group=ENGINE,
    ),
    "tpu_zone": _shared(
        "string",
        None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we will "
        "attempt to automatically detect the GCE project from metadata.",
        group=ENGINE,
    ),
    "gcp_project": _shared(
        "string",
        None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not specified, we "
        "will attempt to automatically detect the GCE project from metadata.",
        group=ENGINE,
    ),
    "master": _shared("string", None, "[Optional] TensorFlow master URL.", group=ENGINE),
    "num_tpu_cores": _shared(
        "integer",
        8,
        "Only used if `use_tpu` is True. Total number of TPU cores to use.",
        rule=POSITIVE,
        group=ENGINE,
    ),
    "distribution_strategy": _shared(
        "enum",
        "one_device",
        "How to spread training over devices: one_device (default); mirrored (all local "
        "GPUs, or --num_gpus of them); multi_worker (MultiWorkerMirroredStrategy over the "
        "cluster in the TF_CONFIG environment variable).",
        "one_device",
        "mirrored",
        "multi_worker",
        group=TRAINING_ENGINE,
    ),
    "num_gpus": _shared(
        "integer",
        None,
        "With --distribution_strategy=mirrored: how many local GPUs to use (default: all).",
        rule=NON_NEGATIVE,
        group=TRAINING_ENGINE,
    ),
    # Speed (the defaults keep the original's arithmetic exactly).
    "use_xla": _shared(
        "bool",
        False,
        "Compile the model's training step (forward, backward and optimizer update) and its "
        "eval/predict computation with XLA.",
        group=ENGINE,
    ),
    "precision": _shared(
        "enum",
        "fp32",
        "Compute dtype of the Transformer layers in training, evaluation, prediction and "
        "--export_dir: fp32 (default), bf16 or fp16. Weights, checkpoints, softmax, "
        "LayerNorm statistics, losses and outputs stay float32; fp16 training uses dynamic "
        "loss scaling.",
        "fp32",
        "bf16",
        "fp16",
        group=ENGINE,
    ),
    "num_accumulation_steps": _shared(
        "integer",
        1,
        "Split each training batch into this many micro-batches run one after another, "
        "applying their averaged gradient once: the same optimizer step on "
        "train_batch_size examples, with the memory of train_batch_size / N.",
        rule=POSITIVE,
        group=TRAINING_ENGINE,
    ),
    "steps_per_run": _shared(
        "integer",
        1,
        "Run up to this many training steps inside one session.run (a graph loop, like the "
        "original's iterations_per_loop on TPU), fewer when a log, summary, checkpoint or "
        "evaluation falls due sooner. One device, without gradient accumulation; hooks then "
        "see one call per run.",
        rule=POSITIVE,
        group=TRAINING_ENGINE,
    ),
    "length_bucket": _shared(
        "integer",
        None,
        "Evaluation and prediction cut each batch to its longest real sequence rounded up "
        "to a multiple of this many positions (and group examples by length); the outputs "
        "stay the same to float32 round-off. 0 computes every batch at max_seq_length. "
        "Default: 16 with --use_xla (XLA compiles a program for each length), else 1.",
        rule=NON_NEGATIVE,
        group=PADDING,
    ),
    "dynamic_padding": _shared(
        "bool",
        False,
        "Also cut training batches as --length_bucket says, and train run_classifier's last "
        "layer at [CLS] only, all its head reads (dropout masks then differ from a "
        "full-length run).",
        group=PADDING,
    ),
    "group_by_length": _shared(
        "bool",
        False,
        "With --dynamic_padding: sort the examples of each training step by length and run "
        "them as up to 4 micro-batches (a divisor of the batch), each cut to its own longest, "
        "their gradients accumulated into the step's one update. The step takes the same "
        "examples and makes the same update as without it (to float32 round-off; dropout "
        "masks differ), computing less padding. Multiplies --num_accumulation_steps' "
        "micro-batches, so --steps_per_run does not apply.",
        group=PADDING,
    ),
    # Evaluating while training.
    "eval_every_n_steps": _shared(
        "integer",
        None,
        "With training and evaluation asked for: save a checkpoint and evaluate it every N "
        "training steps (and at the end), writing the metrics to the log, to "
        "output_dir/eval for TensorBoard and as one JSON line each to "
        "output_dir/eval_history.jsonl.",
        rule=POSITIVE,
        group=EVALUATION,
    ),
    "best_checkpoint_metric": _shared(
        "string",
        None,
        "With --eval_every_n_steps: the evaluation result (a key of eval_results.txt, e.g. "
        "eval_accuracy) whose best value so far keeps its checkpoint in output_dir/best/, "
        "with the results that made it best in best/eval_results.txt. Keys containing "
        "'loss' are minimised, all others maximised.",
        group=EVALUATION,
    ),
    "early_stopping_patience": _shared(
        "integer",
        None,
        "With --best_checkpoint_metric: stop training after this many evaluations in a row "
        "without a new best value.",
        rule=POSITIVE,
        group=EVALUATION,
    ),
    # Errors.
    "show_traceback": _shared(
        "bool",
        False,
        "On a user error (bad flag, missing file, ...) print the full traceback, not just "
        "the one-line message.",
        group=ENGINE,
    ),
}


def _group(group):
    return tuple(name for name, flag in SHARED_FLAGS.items() if flag.group == group)


MODEL_FLAGS = _group(MODEL)
FINE_TUNING_FLAGS = _group(FINE_TUNING)
# Devices and speed: every script that runs the model takes these.
ENGINE_FLAGS = _group(ENGINE)
# What only training reads: data parallelism, seeding, steps, checkpoints kept.
TRAINING_ENGINE_FLAGS = _group(TRAINING_ENGINE)
# Cutting batches to their longest sequence (the scripts whose input_fns do).
PADDING_FLAGS = _group(PADDING)
# Evaluating while training (the scripts that run train_and_evaluate).
EVALUATION_FLAGS = _group(EVALUATION)


def define_flags(*names, module):
    """Defines the shared flags `names` (those not defined yet) for the script `module`
    (its __name__).

    Each is defined once per process, with its one default, help and rule,
    and made a key flag of the script, so that its --helpshort lists it.
    """
    for name in names:
        if name not in FLAGS:
            flag = SHARED_FLAGS[name]
            if flag.kind == "enum":
                flags.DEFINE_enum(name, flag.default, list(flag.enum_values), flag.help_text)
            else:
                _DEFINE[flag.kind](name, flag.default, flag.help_text)
            if flag.rule is not None:
                _add_rule(name, flag.rule)
        FLAGS.register_key_flag_for_module(_absl_module_name(module), FLAGS[name])


def define_model_flags(module):
    """The pre-trained model and its input (MODEL_FLAGS: bert_config_file, vocab_file,
    init_checkpoint, allow_partial_init_checkpoint, do_lower_case, max_seq_length)."""
    define_flags(*MODEL_FLAGS, module=module)


def define_fine_tuning_flags(module, with_eval=True):
    """FINE_TUNING_FLAGS: output_dir, do_train / do_eval / do_predict, the batch sizes,
    learning rate, epochs, warm-up, checkpoint frequency, export_dir and
    allow_new_task_in_output_dir (with_eval=False: no do_eval and eval_batch_size, as
    run_squad.py)."""
    eval_only = ("do_eval", "eval_batch_size")
    names = [name for name in FINE_TUNING_FLAGS if with_eval or name not in eval_only]
    define_flags(*names, module=module)


def define_engine_flags(module, training=True, padding=True, evaluation=True):
    """Devices (TPU), speed (precision, XLA) and --show_traceback; with `training`, data
    parallelism, accumulation, steps per run, checkpoints kept and seeding; with
    `padding`, the length-cutting flags (all three with `training`, else --length_bucket);
    with `evaluation`, evaluating while training."""
    names = ENGINE_FLAGS
    if training:
        names += TRAINING_ENGINE_FLAGS
    if padding:
        names += PADDING_FLAGS if training else PADDING_FLAGS[:1]
    if training and evaluation:
        names += EVALUATION_FLAGS
    define_flags(*names, module=module)


# ---------------------------------------------------------------------------
# Reading flags for the libraries


def flag_value(name, default=None):
    """A flag's value when the running script defines it, else `default`."""
    return FLAGS[name].value if name in FLAGS else default


def run_config_from_flags(model_dir=None, save_checkpoints_steps=None):
    """An engine.RunConfig with every setting of the engine flags that is the engine's,
    its devices checked.

    model_dir defaults to --output_dir, save_checkpoints_steps to
    --save_checkpoints_steps where the script has it; an engine flag the
    script does not define (extract_features.py trains nothing) takes
    RunConfig's default. Its num_accumulation_steps are the micro-batches of
    a step (micro_batches_per_step_from_flags), which the model_fn's step
    averages (model_fns.run_estimator).
    """
    import inspect

    from .engine import config, distribution  # TensorFlow: only scripts that run models

    if model_dir is None:
        model_dir = FLAGS.output_dir
    if save_checkpoints_steps is None:
        save_checkpoints_steps = flag_value("save_checkpoints_steps", 1000)
    defaults = inspect.signature(config.RunConfig).parameters

    def value(name):
        """The flag's value where the script defines it, else RunConfig's default."""
        return FLAGS[name].value if name in FLAGS else defaults[name].default

    run_config = config.RunConfig(
        model_dir=model_dir,
        save_checkpoints_steps=save_checkpoints_steps,
        keep_checkpoint_max=value("keep_checkpoint_max"),
        iterations_per_loop=value("iterations_per_loop"),
        tf_random_seed=value("tf_random_seed"),
        distribution_strategy=value("distribution_strategy"),
        num_gpus=value("num_gpus"),
        use_tpu=value("use_tpu"),
        tpu_name=value("tpu_name"),
        tpu_zone=value("tpu_zone"),
        gcp_project=value("gcp_project"),
        master=value("master"),
        num_tpu_cores=value("num_tpu_cores"),
        use_xla=value("use_xla"),
        num_accumulation_steps=micro_batches_per_step_from_flags(),
        steps_per_run=value("steps_per_run"),
    )
    # TF_CONFIG, GPUs and the batch's split over them: before any work.
    trains = flag_value("do_train", False)
    distribution.check_devices(run_config, flag_value("train_batch_size") if trains else None)
    return run_config


# The model flags' values (MODEL_FLAGS) as a script read them; None for a
# flag it does not define.
ModelSettings = collections.namedtuple("ModelSettings", MODEL_FLAGS)


def model_settings_from_flags():
    """The ModelSettings of the flags (see define_model_flags).

    An --init_checkpoint naming one file of a checkpoint (model.ckpt-300.index)
    is read as the checkpoint's prefix (model.ckpt-300).
    """
    from .plumbing import startup_checks

    settings = ModelSettings(*(flag_value(name) for name in MODEL_FLAGS))
    return settings._replace(
        init_checkpoint=startup_checks.checkpoint_prefix(settings.init_checkpoint)
    )


def length_bucket_from_flags():
    """--length_bucket, or when not given its default for the run: XLA_LENGTH_BUCKET with
    --use_xla, where each new length costs a compilation, else 1 (each batch at exactly its
    longest sequence: without XLA a new length costs next to nothing)."""
    from .task_data import dynamic_padding

    if FLAGS.length_bucket is not None:
        return FLAGS.length_bucket
    return dynamic_padding.XLA_LENGTH_BUCKET if flag_value("use_xla", False) else 1


def micro_batches_per_step_from_flags():
    """How many micro-batches a training step runs: --num_accumulation_steps, times the
    pieces --group_by_length cuts each of them into (dynamic_padding.step_pieces of the
    batch each replica takes per accumulation step)."""
    from .engine import distribution
    from .task_data import dynamic_padding

    steps = flag_value("num_accumulation_steps", 1)
    if not (flag_value("group_by_length", False) and flag_value("dynamic_padding", False)):
        return steps
    replicas = distribution.local_replicas(
        flag_value("distribution_strategy"), flag_value("num_gpus")
    )
    batch_size = flag_value("train_batch_size", 1)
    if steps < 1 or batch_size % (steps * (replicas or 1)):
        return steps  # refused where the engine checks the batch
    return steps * dynamic_padding.step_pieces(batch_size // steps // (replicas or 1))


def check_padding_flags():
    """Refuses padding flags that cannot work together (UsageError naming them)."""
    from .task_data import dynamic_padding

    dynamic_padding.check_settings(
        length_bucket_from_flags(),
        flag_value("dynamic_padding", False),
        flag_value("group_by_length", False),
        FLAGS.use_tpu,
    )


def padding_from_flags(is_training, window_batches=None):
    """The dynamic_padding.Settings the flags give an input_fn (see check_padding_flags).

    window_batches: the sorting window of evaluation and prediction
    (default dynamic_padding.PREDICT_WINDOW_BATCHES; smaller where each
    output is large).
    """
    from .task_data import dynamic_padding

    return dynamic_padding.settings(
        is_training,
        length_bucket=length_bucket_from_flags(),
        cut_in_training=flag_value("dynamic_padding", False),
        step_micro_batches=(
            micro_batches_per_step_from_flags() if flag_value("group_by_length", False) else 0
        ),
        use_tpu=FLAGS.use_tpu,
        window_batches=window_batches,
    )


def evaluation_options_from_flags(can_evaluate, needs):
    """evaluation.EvalOptions from --eval_every_n_steps and friends, or None.

    can_evaluate: whether this run trains and evaluates; `needs` names the
    flags that make it so, for the message.
    """
    from .engine import evaluation

    return evaluation.check_options(
        FLAGS.eval_every_n_steps,
        FLAGS.best_checkpoint_metric,
        FLAGS.early_stopping_patience,
        can_evaluate,
        needs,
        FLAGS.distribution_strategy,
    )


# ---------------------------------------------------------------------------
# Entry point


def run_main(main, argv=None, **script_defaults):
    """The scripts' entry point: plumbing/command_line.py's run_main.

    The flags' rules are absl validators, so a number its flag does not
    allow is refused as the command line is parsed: one "ERROR: ..." line,
    exit status 1. `script_defaults` set the defaults that are the script's
    own for shared flags (run_squad.py: max_seq_length=384).
    """
    command_line.run_main(main, argv, **script_defaults)
