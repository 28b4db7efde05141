"""Whether an --output_dir's run is this run: the one check every training script makes.

Training resumes from the newest checkpoint in --output_dir, and evaluation,
prediction and export read it. A directory that holds another run would be
taken over silently: a config of other sizes restores what matches and
saves a checkpoint without the rest (the run is damaged), another task with
as many labels continues the other task's weights beside that task's
results. So each run records what it is in output_dir/run.json (the task,
its label names, the model's architecture) before it writes anything else,
and every later run in the directory is checked against that record and
against the newest checkpoint's variables. For a directory written before
run.json existed, the checkpoint's variables and labels.txt say what they
can.

A different model is always refused (start from its checkpoint with
--init_checkpoint in a new directory instead). Training another task is
refused unless --allow_new_task_in_output_dir, which continues the
checkpoint and logs what is reused and what the other run left there; a
run that only evaluates or predicts may read another task's checkpoint
whose head has the same shape (a model of one task scored on another's
data), which the log says, and leaves the record as it is.

The record also says what the model's input was made of: the vocabulary
(its path, its size and a SHA-256 of its tokens, so that a copy elsewhere
is the same vocabulary and one of the same size with other tokens is
not), --do_lower_case and --max_seq_length. A run that would go on from a
checkpoint in the directory with another vocabulary or casing is refused
(a resume would train one model on two vocabularies; an evaluation would
read ids the model was not trained on), and so is a resumed fine-tuning
at another --max_seq_length (the same examples would become other
features). A new length is allowed, with a WARNING, where it is
documented: pre-training, which reads records made at their length
elsewhere, goes on at a new length with new records (the second phase of
BERT's recipe); and evaluating or predicting at a length other than
training's is only logged.

Evaluating, predicting or exporting without training needs a trained
model: a checkpoint in output_dir, or --init_checkpoint, holding the task's
head (else the results would come from a random head). The same check
refuses an output the run would write over one of its inputs.
"""

import collections
import hashlib
import json
import os
import re

import tensorflow as tf
from absl import logging

import modeling

from .. import engine
from ..plumbing import atomic_write, checkpoint_shapes, startup_checks
from ..plumbing import vocab_file as vocab_file_reader
from ..plumbing.errors import UsageError
from ..task_data import label_set
from . import checks

RUN_FILE = "run.json"
# What other runs leave in an output directory, listed when a new task takes it over.
RESULT_NAMES = (
    "eval_results.txt",
    "eval_history.jsonl",
    "test_results.tsv",
    "text_predictions.jsonl",
    "predictions.json",
    "nbest_predictions.json",
    "null_odds.json",
    "test_predictions.txt",
    "best",
)
# The files the scripts write in an output directory under fixed names.
WRITTEN_NAMES = (
    RUN_FILE,
    "checkpoint",
    "train.tf_record",
    "eval.tf_record",
    "predict.tf_record",
    *(name for name in RESULT_NAMES if name != "best"),
)
# The optimizer's slots beside a variable in a training checkpoint.
_SLOT = re.compile(r"/(adam_m|adam_v)$")


class Run(collections.namedtuple("Run", "task labels bert_config head uses_labels_file")):
    """What a training script's run is, as output_dir records it.

    task: what the run does ("classification --task_name=sst-2"); labels:
    its label names in class-id order (None when it has none); bert_config:
    the model's modeling.BertConfig; head: {variable name: shape} of the
    task's head; uses_labels_file: whether the run keeps its labels in
    output_dir/labels.txt (custom classification, tagging; None where no
    run of the script's kind could).
    """

    def record(self):
        config = self.bert_config.to_dict()
        return {
            "task": self.task,
            "labels": self.labels,
            "bert_config": {key: config.get(key) for key in checks.ARCHITECTURE_KEYS},
        }


class OutputDir(
    collections.namedtuple("OutputDir", "path run input init_checkpoint trains keep_record")
):
    """A checked output directory: start() makes it and records the run, before any write.

    input: what the run's input is made of (input_record); init_checkpoint:
    the run's --init_checkpoint; trains: whether the run trains.
    keep_record: the directory's record stays as it is (a run that only
    evaluates or predicts with another task's checkpoint).
    """

    def start(self):
        tf.io.gfile.makedirs(self.path)
        atomic_write.remove_stale(self.path)
        held = _read_record(self.path)
        record = {**self.run.record(), "input": self.input}
        if held is not None and not self.trains:
            # What the model was trained on stays recorded (an evaluation at another
            # --max_seq_length, say), or unknown (a record of older code).
            record.pop("input")
            if "input" in held:
                record["input"] = held["input"]
        if not self.keep_record and held != record:
            atomic_write.write_text(
                os.path.join(self.path, RUN_FILE), json.dumps(record, indent=1) + "\n"
            )

    def check_trained_model(self, reads, untrained_ok=False):
        """A run that does not train reads a model, which must be trained for this task.

        reads: {flag: whether given} of the flags that read it (--do_eval,
        --do_predict, --export_dir, ...). The model is the newest
        checkpoint in output_dir, else --init_checkpoint, and must hold the
        task's head: else the results would come from a random head.
        untrained_ok: no checkpoint at all is allowed (the untrained model
        is then evaluated, as a baseline).
        """
        needs_model = [flag for flag, given in reads.items() if given]
        if needs_model and not self.trains:
            _check_trained_model(
                self.path, self.init_checkpoint, self.run.head, needs_model[0], untrained_ok
            )


def _read_record(output_dir):
    path = os.path.join(output_dir, RUN_FILE)
    if not tf.io.gfile.exists(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            record = json.loads(f.read())
    except ValueError as e:
        raise UsageError(f"--output_dir: {path} is not the JSON a run writes ({e})") from None
    if not isinstance(record, dict) or not isinstance(record.get("bert_config"), dict):
        raise UsageError(f"--output_dir: {path} is not the record a run writes")
    return record


def input_record(model):
    """What the input of a run with the model settings `model` is made of: its
    vocabulary (path, number of tokens, SHA-256 of the tokens one a line), do_lower_case
    and max_seq_length, each where the script has the flag."""
    record = {}
    if model.vocab_file:
        lines = vocab_file_reader.read_lines(model.vocab_file, "--vocab_file")
        tokens = vocab_file_reader.tokens(lines)
        record["vocab_file"] = model.vocab_file
        record["vocab_tokens"] = len(tokens)
        record["vocab_sha256"] = hashlib.sha256(
            "".join(f"{t}\n" for t in tokens).encode()
        ).hexdigest()
    if model.do_lower_case is not None:
        record["do_lower_case"] = bool(model.do_lower_case)
    if model.max_seq_length is not None:
        record["max_seq_length"] = model.max_seq_length
    return record


def check(output_dir, run, model, allow_new_task=False, trains=True, inputs=(), outputs=()):
    """Checks that `output_dir` holds nothing of another run; returns its OutputDir.

    run: the Run of this script. model: its script_flags.ModelSettings
    (--bert_config_file, and --init_checkpoint, whose head must fit too).
    inputs, outputs: (flag, path) pairs of the run's other input files and
    of its output files outside output_dir: no output, nor a file the run
    writes in output_dir, may be an input.
    allow_new_task: --allow_new_task_in_output_dir. trains: whether this
    run trains; one that does not may evaluate or predict with the
    checkpoint of another task whose head has the same shape (a model of
    one task scored on another's data), which the log says; call the
    OutputDir's check_trained_model for what it reads.
    """
    _check_outputs_are_not_inputs(output_dir, model, inputs, outputs)
    record = checkpoint = shapes = None
    if output_dir and tf.io.gfile.isdir(output_dir):
        record = _read_record(output_dir)
        # The newest whole checkpoint; one that is damaged is named (a WARNING), and a
        # directory of damaged ones only is refused here, before anything is written.
        checkpoint = engine.checkpoint_to_resume(output_dir, repair_state=False)
    if checkpoint:
        shapes = checkpoint_shapes.read_shapes(checkpoint, "--output_dir")
    config_file = model.bert_config_file
    if shapes is not None:
        _check_checkpoint_model(shapes, checkpoint, run, output_dir, config_file)
    if record is not None:
        _check_recorded_model(record, run, output_dir, config_file)
    this_input = input_record(model)
    if record is not None and checkpoint and isinstance(record.get("input"), dict):
        _check_recorded_input(record["input"], this_input, output_dir, checkpoint, trains)
    other = _other_task(record, shapes, run, output_dir)
    if other is not None:
        _take_over(output_dir, other, run, checkpoint, allow_new_task or not trains, trains)
    _check_head_shapes(checkpoint, shapes, model.init_checkpoint, run.head)
    keep_record = other is not None and not trains
    return OutputDir(output_dir, run, this_input, model.init_checkpoint, trains, keep_record)


def _check_outputs_are_not_inputs(output_dir, model, inputs, outputs):
    model_files = [
        ("--bert_config_file", model.bert_config_file),
        ("--vocab_file", model.vocab_file),
        *(
            ("--init_checkpoint", path)
            for path in startup_checks.checkpoint_files(model.init_checkpoint)
        ),
    ]
    written = [
        (f"--output_dir's {name}", os.path.join(output_dir, name)) for name in WRITTEN_NAMES
    ]
    startup_checks.check_outputs_are_not_inputs([*written, *outputs], [*model_files, *inputs])


def directory_files(flag, directory):
    """(flag, path) of every file in `directory` (the inputs a --data_dir offers)."""
    if not directory or not tf.io.gfile.isdir(directory):
        return []
    return [
        (flag, os.path.join(directory, name))
        for name in sorted(tf.io.gfile.listdir(directory))
        if not tf.io.gfile.isdir(os.path.join(directory, name))
    ]


def _check_recorded_model(record, run, output_dir, config_file):
    config = run.bert_config.to_dict()
    for key, value in record["bert_config"].items():
        if key in config and config[key] != value:
            raise UsageError(
                f"--output_dir={output_dir} holds the run of another model: {key} is {value} "
                f"there ({RUN_FILE}) but {config[key]} in --bert_config_file={config_file}; "
                "use another --output_dir"
            )


def _check_recorded_input(held, this, output_dir, checkpoint, trains):
    """The input of a run going on from output_dir's `checkpoint` must be made as the
    recorded run's was (`held`, input_record's of each): the same vocabulary and casing,
    and in fine-tuning the same --max_seq_length (see the module doc)."""
    what = (
        "resuming would train one model on two inputs"
        if trains
        else "the model would read input made otherwise than what it was trained on"
    )
    way_out = (
        f"use another --output_dir (with --init_checkpoint={checkpoint} to start from its "
        "checkpoint)"
    )
    where = f"--output_dir={output_dir} holds a run trained on"
    if held.get("vocab_sha256") and this.get("vocab_sha256") not in (None, held["vocab_sha256"]):
        raise UsageError(
            f"{where} another vocabulary: {held.get('vocab_file')} there ({RUN_FILE}: "
            f"{_vocab_summary(held)}) but --vocab_file={this['vocab_file']} "
            f"({_vocab_summary(this)}); {what}. Give that vocabulary, or {way_out}"
        )
    for key in ("do_lower_case", "max_seq_length"):
        if key not in held or key not in this or held[key] == this[key]:
            continue
        flag = f"--{key}={this[key]}"
        if key == "max_seq_length" and (not trains or "vocab_sha256" not in held):
            _log_new_length(output_dir, held[key], flag, trains)
            continue
        raise UsageError(
            f"{where} other input: {key} is {held[key]} there ({RUN_FILE}) but {flag}; "
            f"{what}. Give --{key}={held[key]}, or {way_out}"
        )


def _vocab_summary(record):
    return f"{record.get('vocab_tokens')} tokens, sha256 {record['vocab_sha256'][:12]}"


def _log_new_length(output_dir, held, flag, trains):
    """A new --max_seq_length where it is documented (see the module doc)."""
    if trains:
        logging.warning(
            "%s: the run in %s trained at max_seq_length %s so far (%s); training goes on "
            "at the new length with this input (as the second phase of BERT's pre-training "
            "does)",
            flag,
            output_dir,
            held,
            RUN_FILE,
        )
    else:
        logging.info(
            "%s: the model in %s was trained at max_seq_length %s", flag, output_dir, held
        )


def _check_checkpoint_model(shapes, checkpoint, run, output_dir, config_file):
    """The checkpoint's BERT variables must be the model's, no more and no fewer."""
    expected = {
        name: shape
        for name, shape in modeling.bert_variable_shapes(run.bert_config).items()
        if name.startswith("bert/")
    }
    hint = f" (--output_dir={output_dir} holds the run of another model: use another --output_dir)"
    checkpoint_shapes.check_shapes(expected, checkpoint, shapes, hint=hint)
    held = {_SLOT.sub("", name) for name in shapes if name.startswith("bert/")}
    extra = sorted(held - set(expected))
    missing = sorted(set(expected) - held)
    if not extra and not missing:
        return
    layers = checks.encoder_layers(held)
    if len(layers) != run.bert_config.num_hidden_layers:
        what = (
            f"its checkpoint {checkpoint} has {len(layers)} encoder layers but "
            f"--bert_config_file={config_file} describes {run.bert_config.num_hidden_layers}"
        )
    elif extra:
        what = f"its checkpoint {checkpoint} holds {extra[0]}, which the model has not"
    else:
        what = f"its checkpoint {checkpoint} lacks {missing[0]}"
    raise UsageError(
        f"--output_dir={output_dir} holds the run of another model: {what}; resuming would "
        "save a model without the difference. Use another --output_dir (with "
        f"--init_checkpoint={checkpoint} and --allow_partial_init_checkpoint to start from it)"
    )


def _check_head_shapes(checkpoint, shapes, init_checkpoint, head):
    """The head in output_dir's checkpoint, and in --init_checkpoint, must fit this task's.

    A head with another number of labels (an MNLI model under
    --task_name=mrpc) would otherwise be restored as it is, giving outputs
    of the wrong width, and one in --init_checkpoint would only be refused
    while warm starting, after the records were written. Either may hold
    no head at all (a pre-trained checkpoint has none).
    """
    if checkpoint:
        checkpoint_shapes.check_shapes(
            head,
            checkpoint,
            shapes,
            hint=" (it belongs to another task: use another --output_dir)",
        )
    if init_checkpoint:
        checkpoint_shapes.check_shapes(
            head,
            init_checkpoint,
            hint=" (--init_checkpoint was fine-tuned on another task: start from a "
            "pre-trained checkpoint)",
            flag="--init_checkpoint",
        )


def _describe(task, labels):
    return f"{task} (labels {','.join(labels)})" if labels else task


def _other_task(record, shapes, run, output_dir):
    """What the other task in output_dir is, or None when it is this run's (or unknown)."""
    if record is not None:
        if record.get("task") != run.task or record.get("labels") != run.labels:
            return _describe(record.get("task"), record.get("labels"))
        return None
    if shapes is None:
        return None
    heads = {
        "pre-training": "cls/predictions/output_bias",
        "SQuAD question answering": "cls/squad/output_weights",
        "classification or tagging": "output_weights",
    }
    held = [task for task, name in heads.items() if name in shapes]
    if any(name not in shapes for name in run.head):
        return " and ".join(held) or "a model with no task head"
    if run.uses_labels_file is not None:
        has_labels = tf.io.gfile.exists(label_set.labels_path(output_dir))
        if run.uses_labels_file and not has_labels:
            return "a run without labels.txt (not --task_name=custom, nor run_ner.py)"
        if has_labels and not run.uses_labels_file:
            return "a run with labels.txt (--task_name=custom or run_ner.py)"
    return None


def _take_over(output_dir, other, run, checkpoint, allowed, trains):
    """Refuses training over another task's run unless `allowed`; logs what is reused."""
    left = [name for name in RESULT_NAMES if tf.io.gfile.exists(os.path.join(output_dir, name))]
    results = f"; its {', '.join(left)} are that run's" if left else ""
    this = _describe(run.task, run.labels)
    if not allowed:
        raise UsageError(
            f"--output_dir={output_dir} holds the run of another task: {other}, not "
            f"{this}{results}. Use another --output_dir (with --init_checkpoint to start "
            "from its checkpoint), or pass --allow_new_task_in_output_dir to continue it with "
            "this task"
        )
    if not trains:
        logging.warning(
            "%s holds the run of another task, %s: this run of %s reads its checkpoint %s%s",
            output_dir,
            other,
            this,
            checkpoint,
            results,
        )
        return
    reused = f"continuing its checkpoint {checkpoint}" if checkpoint else "no checkpoint"
    logging.warning(
        "--allow_new_task_in_output_dir: %s held %s; this run of %s takes it over: %s "
        "(training goes on from its step)%s, replaced as this run writes its own",
        output_dir,
        other,
        this,
        reused,
        results,
    )


def _check_trained_model(output_dir, init_checkpoint, head, what, untrained_ok):
    """See OutputDir.check_trained_model; `what` is the first flag that needs the model."""
    checkpoint = engine.newest_checkpoint(output_dir) if output_dir else None
    source = f"the checkpoint {checkpoint} in --output_dir"
    if checkpoint is None:
        checkpoint, source = init_checkpoint, f"--init_checkpoint={init_checkpoint}"
    if not checkpoint and untrained_ok:
        return
    if not checkpoint:
        raise UsageError(
            f"{what}: no checkpoint in --output_dir={output_dir} and no --init_checkpoint: "
            "there is no trained model to run (is --output_dir right? train with --do_train)"
        )
    shapes = checkpoint_shapes.read_shapes(checkpoint, "--init_checkpoint")
    lacking = [name for name in head if name not in shapes]
    if lacking:
        raise UsageError(
            f"{what}: {source} has no {lacking[0]}: this task's head was never trained "
            "there, so the results would come from a random head. Train first (--do_train), "
            "or give a checkpoint fine-tuned for this task"
        )
