"""The flags the scripts share, defined once, and the one place that reads them for the libraries.

Each script defines the flags that are its own and takes the shared ones
by group, as the original scripts' flags were:

    script_flags.define_model_flags()          # bert_config_file, vocab_file, ...
    script_flags.define_fine_tuning_flags()    # output_dir, do_train, batch sizes, ...
    script_flags.define_runner_flags()         # devices, precision, XLA, padding, ...
    script_flags.define_flags("input_file")    # any other shared flag, by name

A shared flag has one definition, one default and one help text in a
process, whichever scripts are imported into it, and is listed under each
script that takes it by `--helpshort`. The one default that differs
between the original scripts, run_squad.py's max_seq_length of 384, is
set by that script when it runs (`run_main(main, max_seq_length=384)`).

A script defines only the flags it reads (define_runner_flags leaves out
what prediction alone does not need, with training=False, and the padding
and evaluation-while-training groups on request). Every integer and float
flag says where it is defined which values it may take (a Valid: positive,
a fraction, ...); run_main checks them all before `main` runs.

Libraries (modeling, optimization, tokenization, the engine, the data
modules) never read flags: each script reads them once, in `main` and its
`settings_from_flags()`, through the `*_from_flags` functions here, and
passes the values down; check_model and train_steps take those values.
Each setting takes one road: the engine's (devices, seeding, checkpoints,
XLA, micro-batches) into RunConfig (run_config_from_flags); the model's
(--precision, --num_accumulation_steps, the learning rate, ...) into the
script's settings and from there, as arguments of its model_fn_builder,
into the model_fn. `run_main` is the scripts' entry point: it checks every
numeric flag, then runs plumbing/command_line.py's, which parses the flags
and turns a user's mistake into one "ERROR: ..." line (plumbing/errors.py).
"""

import collections
import math
import sys

from absl import flags

from .plumbing import command_line, errors

FLAGS = flags.FLAGS

_DEFINE = {
    "string": flags.DEFINE_string,
    "bool": flags.DEFINE_bool,
    "integer": flags.DEFINE_integer,
    "float": flags.DEFINE_float,
    "enum": flags.DEFINE_enum,
}


# ---------------------------------------------------------------------------
# What a numeric flag may hold. Every integer and float flag a script
# defines says so where it is defined (SHARED_FLAGS' `valid`, define_integer
# and define_float); check_numeric_flags checks them all at start-up.


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


def define_integer(name, default, help_text, valid):
    """flags.DEFINE_integer for the calling script, with the values it may take (a Valid)."""
    flags.DEFINE_integer(name, default, help_text, module_name=_script_module_name())
    NUMERIC_FLAGS[name] = valid


def define_float(name, default, help_text, valid):
    """flags.DEFINE_float for the calling script, with the values it may take (a Valid)."""
    flags.DEFINE_float(name, default, help_text, module_name=_script_module_name())
    NUMERIC_FLAGS[name] = valid


def check_numeric_flags():
    """Refuses, naming the flag, any numeric flag whose value its definition does not allow.

    A float must also be finite (no nan, no inf). An unset flag (None) is
    left to the script.
    """
    for name, valid in NUMERIC_FLAGS.items():
        value = FLAGS[name].value if name in FLAGS else None
        if value is None:
            continue
        problem = valid.problem(name, value)
        if problem:
            raise errors.UsageError(problem)


def _shared(kind, default, help_text, *enum_values, valid=None):
    return (kind, default, help_text, enum_values, valid)


# Every flag more than one script takes: (kind, default, help, enum values, and for
# numbers the values allowed).
SHARED_FLAGS = {
    # The pre-trained model and its vocabulary.
    "bert_config_file": _shared(
        "string",
        None,
        "The config json file of the pre-trained BERT model; it sets the architecture.",
    ),
    "vocab_file": _shared(
        "string", None, "The WordPiece vocabulary file the BERT model was trained on."
    ),
    "init_checkpoint": _shared(
        "string", None, "Initial checkpoint (usually from a pre-trained BERT model)."
    ),
    "allow_partial_init_checkpoint": _shared(
        "bool",
        False,
        "Start the model's variables that --init_checkpoint lacks (layers beyond its "
        "depth, say, to grow a model) from their initializers, and leave out the encoder "
        "layers it holds beyond the config's (to start from the first layers of a bigger "
        "model), instead of refusing the run; the log says what started fresh or was left out.",
    ),
    "allow_new_task_in_output_dir": _shared(
        "bool",
        False,
        "Let this run take over an --output_dir that holds the run of another task (another "
        "--task_name, other labels, another script's head): its checkpoint is continued with "
        "this task and its results are replaced as this run writes its own; the log says "
        "what is reused. Without it such a directory is refused.",
    ),
    "do_lower_case": _shared(
        "bool",
        True,
        "Whether to lower case the input text. True for uncased models, False for cased ones.",
    ),
    "max_seq_length": _shared(
        "integer",
        128,
        "The maximum total input sequence length after WordPiece tokenization (128; 384 "
        "for run_squad.py). Longer inputs are truncated, or cut into windows where the "
        "script says so (SQuAD contexts, NER sentences, --long_text_windows); shorter ones "
        "are padded. For pre-training it must match the data.",
        valid=SEQUENCE_LENGTH,
    ),
    "max_predictions_per_seq": _shared(
        "integer",
        20,
        "Maximum number of masked LM predictions per sequence. Must match between "
        "create_pretraining_data.py and run_pretraining.py.",
        valid=POSITIVE,
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
        valid=POSITIVE,
    ),
    # What a run does.
    "do_train": _shared("bool", False, "Whether to run training."),
    "do_eval": _shared("bool", False, "Whether to run eval on the dev set."),
    "do_predict": _shared(
        "bool",
        False,
        "Whether to run the model on the test set (run_squad.py: on --predict_file).",
    ),
    "export_dir": _shared(
        "string",
        None,
        "If set, export the newest checkpoint in output_dir (else --init_checkpoint) as a "
        "SavedModel here, computing in --precision: its serving signature takes input_ids, "
        "input_mask and segment_ids and returns what prediction writes (class "
        "probabilities or score, start and end logits, tag probabilities). The directory "
        "must not exist yet.",
    ),
    # Training.
    "train_batch_size": _shared("integer", 32, "Total batch size for training.", valid=POSITIVE),
    "eval_batch_size": _shared("integer", 8, "Total batch size for eval.", valid=POSITIVE),
    "predict_batch_size": _shared("integer", 8, "Total batch size for predict.", valid=POSITIVE),
    "learning_rate": _shared(
        "float", 5e-5, "The initial learning rate for Adam.", valid=NON_NEGATIVE
    ),
    "num_train_epochs": _shared(
        "float", 3.0, "Total number of training epochs to perform.", valid=NON_NEGATIVE
    ),
    "warmup_proportion": _shared(
        "float",
        0.1,
        "Proportion of training to perform linear learning rate warmup for (0.1 = 10%).",
        valid=FRACTION,
    ),
    "save_checkpoints_steps": _shared(
        "integer", 1000, "How often to save the model checkpoint.", valid=POSITIVE
    ),
    "iterations_per_loop": _shared(
        "integer",
        1000,
        "How many steps to make in each estimator call (the original's TPU host loop). "
        "Ignored here, with a warning when given; see --steps_per_run.",
        valid=POSITIVE,
    ),
    "keep_checkpoint_max": _shared(
        "integer",
        5,
        "How many of the newest checkpoints training keeps in output_dir (older ones are "
        "deleted; 0 keeps all); output_dir/best/ is never counted or deleted.",
        valid=NON_NEGATIVE,
    ),
    "tf_random_seed": _shared(
        "integer",
        None,
        "If set, make training reproducible: fixed graph-level seed, deterministic input "
        "order, and a resumed run skips the batches already trained on.",
        valid=ANY_NUMBER,
    ),
    # Devices: the original's TPU flags, then data parallelism on GPUs / CPUs / workers.
    "use_tpu": _shared("bool", False, "Whether to use TPU or GPU/CPU."),
    "tpu_name": _shared(
        "string",
        None,
        "The Cloud TPU to use for training. This should be either the name used when "
        "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.",
    ),
    "tpu_zone": _shared(
        "string",
        None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we will "
        "attempt to automatically detect the GCE project from metadata.",
    ),
    "gcp_project": _shared(
        "string",
        None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not specified, we "
        "will attempt to automatically detect the GCE project from metadata.",
    ),
    "master": _shared("string", None, "[Optional] TensorFlow master URL."),
    "num_tpu_cores": _shared(
        "integer",
        8,
        "Only used if `use_tpu` is True. Total number of TPU cores to use.",
        valid=POSITIVE,
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
    ),
    "num_gpus": _shared(
        "integer",
        None,
        "With --distribution_strategy=mirrored: how many local GPUs to use (default: all).",
        valid=NON_NEGATIVE,
    ),
    # Speed (the defaults keep the original's arithmetic exactly).
    "use_xla": _shared(
        "bool",
        False,
        "Compile the model's training step (forward, backward and optimizer update) and its "
        "eval/predict computation with XLA.",
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
    ),
    "num_accumulation_steps": _shared(
        "integer",
        1,
        "Split each training batch into this many micro-batches run one after another, "
        "applying their averaged gradient once: the same optimizer step on "
        "train_batch_size examples, with the memory of train_batch_size / N.",
        valid=POSITIVE,
    ),
    "steps_per_run": _shared(
        "integer",
        1,
        "Run up to this many training steps inside one session.run (a graph loop, like the "
        "original's iterations_per_loop on TPU), fewer when a log, summary, checkpoint or "
        "evaluation falls due sooner. One device, without gradient accumulation; hooks then "
        "see one call per run.",
        valid=POSITIVE,
    ),
    "length_bucket": _shared(
        "integer",
        16,
        "Evaluation and prediction cut each batch to its longest real sequence rounded up "
        "to a multiple of this many positions (and group examples by length); the outputs "
        "stay the same to float32 round-off. 0 computes every batch at max_seq_length.",
        valid=NON_NEGATIVE,
    ),
    "dynamic_padding": _shared(
        "bool",
        False,
        "Also cut training batches as --length_bucket says (dropout masks then differ from "
        "a full-length run).",
    ),
    "group_by_length": _shared(
        "bool",
        False,
        "With --dynamic_padding: batch training examples of similar lengths together, "
        "shuffling windows of 16 batches, sorting each by length (each class on its own, "
        "so that every batch keeps the window's mix of labels), then shuffling the batches.",
    ),
    # Evaluating while training.
    "eval_every_n_steps": _shared(
        "integer",
        None,
        "With training and evaluation asked for: save a checkpoint and evaluate it every N "
        "training steps (and at the end), writing the metrics to the log, to "
        "output_dir/eval for TensorBoard and as one JSON line each to "
        "output_dir/eval_history.jsonl.",
        valid=POSITIVE,
    ),
    "best_checkpoint_metric": _shared(
        "string",
        None,
        "With --eval_every_n_steps: the evaluation result (a key of eval_results.txt, e.g. "
        "eval_accuracy) whose best value so far keeps its checkpoint in output_dir/best/, "
        "with the results that made it best in best/eval_results.txt. Keys containing "
        "'loss' are minimised, all others maximised.",
    ),
    "early_stopping_patience": _shared(
        "integer",
        None,
        "With --best_checkpoint_metric: stop training after this many evaluations in a row "
        "without a new best value.",
        valid=POSITIVE,
    ),
    # Errors.
    "show_traceback": _shared(
        "bool",
        False,
        "On a user error (bad flag, missing file, ...) print the full traceback, not just "
        "the one-line message.",
    ),
}

MODEL_FLAGS = (
    "bert_config_file",
    "vocab_file",
    "init_checkpoint",
    "allow_partial_init_checkpoint",
    "do_lower_case",
    "max_seq_length",
)
FINE_TUNING_FLAGS = (
    "output_dir",
    "do_train",
    "do_eval",
    "do_predict",
    "train_batch_size",
    "eval_batch_size",
    "predict_batch_size",
    "learning_rate",
    "num_train_epochs",
    "warmup_proportion",
    "save_checkpoints_steps",
    "iterations_per_loop",
    "export_dir",
    "allow_new_task_in_output_dir",
)
# Devices and speed: every script that runs the model takes these.
RUNNER_FLAGS = (
    "use_tpu",
    "tpu_name",
    "tpu_zone",
    "gcp_project",
    "master",
    "num_tpu_cores",
    "use_xla",
    "precision",
    "show_traceback",
)
# What only training reads: data parallelism, seeding, steps, checkpoints kept.
TRAINING_RUNNER_FLAGS = (
    "distribution_strategy",
    "num_gpus",
    "tf_random_seed",
    "num_accumulation_steps",
    "steps_per_run",
    "keep_checkpoint_max",
)
# Cutting batches to their longest sequence (the scripts whose input_fns do).
PADDING_FLAGS = ("length_bucket", "dynamic_padding", "group_by_length")
# Evaluating while training (the scripts that run train_and_evaluate).
EVALUATION_FLAGS = ("eval_every_n_steps", "best_checkpoint_metric", "early_stopping_patience")


def _script_module_name():
    """The name absl gives the module that called into this one (a script)."""
    frame = sys._getframe(1)
    while frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    name = frame.f_globals.get("__name__")
    # absl names a script run as a program by its path, as it appears in sys.argv[0].
    return sys.argv[0] if name == "__main__" else name


def define_flags(*names):
    """Defines the shared flags `names` (those not defined yet) for the calling script.

    Each is defined once per process, with its one default and help, and
    made a key flag of the calling script, so that its --helpshort lists it.
    """
    script = _script_module_name()
    for name in names:
        if name not in FLAGS:
            kind, default, help_text, enum_values, valid = SHARED_FLAGS[name]
            if kind == "enum":
                flags.DEFINE_enum(name, default, list(enum_values), help_text)
            else:
                _DEFINE[kind](name, default, help_text)
            if valid is not None:
                NUMERIC_FLAGS[name] = valid
        FLAGS.register_key_flag_for_module(script, FLAGS[name])


def define_model_flags():
    """The pre-trained model and its input: bert_config_file, vocab_file, init_checkpoint,
    allow_partial_init_checkpoint, do_lower_case, max_seq_length."""
    define_flags(*MODEL_FLAGS)


def define_fine_tuning_flags(with_eval=True):
    """output_dir, do_train / do_eval / do_predict, the batch sizes, learning rate, epochs,
    warm-up, checkpoint frequency, export_dir and allow_new_task_in_output_dir
    (with_eval=False: no do_eval and eval_batch_size, as run_squad.py)."""
    eval_only = ("do_eval", "eval_batch_size")
    define_flags(*(name for name in FINE_TUNING_FLAGS if with_eval or name not in eval_only))


def define_runner_flags(training=True, padding=True, evaluation=True):
    """Devices (TPU), speed (precision, XLA) and --show_traceback; with `training`, data
    parallelism, accumulation, steps per run, checkpoints kept and seeding; with
    `padding`, the length-cutting flags (all three with `training`, else --length_bucket);
    with `evaluation`, evaluating while training."""
    names = RUNNER_FLAGS
    if training:
        names += TRAINING_RUNNER_FLAGS
    if padding:
        names += PADDING_FLAGS if training else PADDING_FLAGS[:1]
    if training and evaluation:
        names += EVALUATION_FLAGS
    define_flags(*names)


# ---------------------------------------------------------------------------
# Reading flags for the libraries


def flag_value(name, default=None):
    """A flag's value when the running script defines it, else `default`."""
    return FLAGS[name].value if name in FLAGS else default


def run_config_from_flags(model_dir=None, save_checkpoints_steps=None):
    """An engine.RunConfig with every setting of the runner flags that is the engine's,
    its devices checked.

    model_dir defaults to --output_dir, save_checkpoints_steps to
    --save_checkpoints_steps where the script has it; a runner flag the
    script does not define (extract_features.py trains nothing) takes
    RunConfig's default. --num_accumulation_steps goes to both RunConfig
    (the micro-batches) and, through the script's settings, to its
    model_fn_builder (the step that averages them).
    """
    from .engine import config, distribution  # TensorFlow: only scripts that run models

    if model_dir is None:
        model_dir = FLAGS.output_dir
    if save_checkpoints_steps is None:
        save_checkpoints_steps = flag_value("save_checkpoints_steps", 1000)
    defined = {name: FLAGS[name].value for name in _RUN_CONFIG_FLAGS if name in FLAGS}
    run_config = config.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=save_checkpoints_steps, **defined
    )
    # TF_CONFIG, GPUs and the batch's split over them: before any work.
    trains = flag_value("do_train", False)
    distribution.check_devices(run_config, flag_value("train_batch_size") if trains else None)
    return run_config


# The flags RunConfig takes under their own names: the runner's, but for
# show_traceback (main's) and precision (the model's, the model_fn_builder's
# argument), and iterations_per_loop (the original's, ignored).
_RUN_CONFIG_FLAGS = (
    tuple(name for name in RUNNER_FLAGS if name not in ("show_traceback", "precision"))
    + TRAINING_RUNNER_FLAGS
    + ("iterations_per_loop",)
)


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


def check_model(model, output_dir=None, with_vocab=True):
    """Checks the model a script starts from; returns (bert_config, tokenizer).

    `model` is a ModelSettings. --do_lower_case against a released
    checkpoint's name (when the script has the flag); the config file
    (readable, valid, every architecture key); --max_seq_length against its
    positions; --init_checkpoint (shapes, and every encoder variable unless
    --allow_partial_init_checkpoint); `output_dir` not a file; the
    vocabulary (special tokens, and its size against vocab_size). The
    tokenizer is None without `with_vocab`.
    """
    import tokenization

    from .model import checks
    from .plumbing import startup_checks

    if model.do_lower_case is not None:
        tokenization.validate_case_matches_checkpoint(model.do_lower_case, model.init_checkpoint)
    bert_config = checks.load_bert_config(model.bert_config_file)
    checks.check_seq_length(model.max_seq_length, bert_config)
    if model.init_checkpoint:
        checks.check_init_checkpoint(
            model.init_checkpoint,
            bert_config,
            model.bert_config_file,
            allow_partial=bool(model.allow_partial_init_checkpoint),
        )
    startup_checks.check_output_dir(output_dir)
    tokenizer = None
    if with_vocab:
        tokenizer = checks.load_tokenizer(
            model.vocab_file,
            model.do_lower_case,
            bert_config=bert_config,
            config_file=model.bert_config_file,
        )
    return bert_config, tokenizer


def check_batch_flags():
    """Every batch-size flag the script has must be positive (a 0 would divide by zero).

    For a `main` called from code: run_main checks every numeric flag already.
    """
    for name in ("train_batch_size", "eval_batch_size", "predict_batch_size", "batch_size"):
        if name in FLAGS and FLAGS[name].value is not None:
            problem = POSITIVE.problem(name, FLAGS[name].value)
            if problem:
                raise errors.UsageError(problem)


def train_steps(
    num_examples,
    train_batch_size,
    num_train_epochs,
    warmup_proportion,
    source,
    noun="training examples",
):
    """(num_train_steps, num_warmup_steps) of `num_examples` training examples, as the
    original computes them from --train_batch_size, --num_train_epochs and
    --warmup_proportion; refuses, naming the numbers, a run of no step at all.

    `source` names where the examples come from, `noun` what they are.
    """
    num_train_steps = int(num_examples / train_batch_size * num_train_epochs)
    if num_train_steps < 1:
        raise errors.UsageError(
            f"{source}: {num_examples} {noun} make {num_train_steps} steps at "
            f"--train_batch_size={train_batch_size} and --num_train_epochs="
            f"{num_train_epochs}; at least one step is needed (more examples or "
            "epochs, or a smaller batch)"
        )
    return num_train_steps, int(num_train_steps * warmup_proportion)


def check_padding_flags():
    """Refuses padding flags that cannot work together (UsageError naming them)."""
    from .task_data import dynamic_padding

    dynamic_padding.check_settings(
        FLAGS.length_bucket,
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
        length_bucket=FLAGS.length_bucket,
        cut_in_training=flag_value("dynamic_padding", False),
        group_by_length=flag_value("group_by_length", False),
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
    """The scripts' entry point: command_line.run_main, with every numeric flag checked
    (check_numeric_flags) before `main` runs.

    A number its flag does not allow is then one "ERROR: ..." line, exit
    status 1, as a refused command line is. `script_defaults` set the
    defaults that are the script's own for shared flags (run_squad.py:
    max_seq_length=384).
    """

    def checked_main(args):
        check_numeric_flags()
        return main(args)

    command_line.run_main(checked_main, argv, **script_defaults)
