"""The pre-training run: its input files, their checks, and its training and evaluation.

run_pretraining.py reads its flags and builds the model (model_fn_builder,
input_fn_builder); run() then trains and evaluates with them, the records
packed several instances to a row with --pack_sequences. These steps
settle what it reads before any work: which files --input_file names
(input_files), the lengths the records were made with when the flags are
left out (lengths_from_data: create_pretraining_data.py pads every record
to its max_seq_length and max_predictions_per_seq, so the records say them
and the user need not type them again), that the records have the
lengths given and are whole (check_record_shapes, check_framing), and an
input file the engine could not read while training (a damaged record, a
shard removed or changed meanwhile) named with the flag that gave it
(naming_damaged_records).
"""

import contextlib
import os

import tensorflow as tf
from absl import logging

from .. import engine
from ..engine import evaluation
from ..plumbing import errors, eval_results, startup_checks, tfrecord_format
from ..plumbing.errors import UsageError
from ..task_data import pretraining_records
from . import model_fns


def input_files(pattern_list):
    """The files of --input_file (comma-separated paths and globs)."""
    patterns = [p.strip() for p in pattern_list.split(",") if p.strip()]
    if not patterns:
        raise UsageError("--input_file is empty")
    return startup_checks.expand_input_files(",".join(patterns))


def _find_damaged_record(input_files):
    """The UsageError naming the first damaged record of the input files, or None.

    tf.data reports a damaged record as "corrupted record at <offset>"
    without the file; reading the files again here finds which one it is.
    """
    for path in input_files:
        try:
            for _ in tfrecord_format.read_records(path):
                pass
        except UsageError as e:
            return UsageError(f"--input_file: {e}")
    return None


@contextlib.contextmanager
def naming_damaged_records():
    """The engine's error naming an input file it could not read (a damaged record, a
    shard removed or changed while read) names the flag that gave it too."""
    try:
        yield
    except engine.InputReadError as e:
        raise UsageError(f"--input_file: {e}") from None


def lengths_from_data(input_files, lengths, given):
    """(max_seq_length, max_predictions_per_seq) to read the records with.

    `lengths` holds the flags' values by name and `given` the names the
    user gave. A given flag keeps its value (check_record_shapes then holds
    the records to it, naming the flag, the file and both lengths); one left
    out takes the records' own, which create_pretraining_data.py padded to
    its flags, so they need not be typed again.
    """
    resolved = dict(lengths)
    for path, feature in _first_records(input_files):
        for name, value in pretraining_records.lengths_of_record(feature).items():
            if name not in given and value != lengths[name]:
                logging.info("--%s=%d, the length of the records of %s", name, value, path)
                resolved[name] = value
        break
    return resolved["max_seq_length"], resolved["max_predictions_per_seq"]


def _first_records(input_files):
    """(path, the feature map of its first record) of each of the first few input files
    that holds a record; a file that cannot be read as tf.train.Examples is a UsageError
    naming it."""
    for path in input_files[:5]:
        try:
            record = next(iter(tf.compat.v1.io.tf_record_iterator(path)), None)
        except (tf.errors.OpError, OSError) as e:
            damaged = _find_damaged_record([path])
            if damaged is not None:
                raise damaged from None
            raise UsageError(f"--input_file: cannot read {path}: {errors.first_line(e)}") from None
        if record is None:
            continue
        try:
            feature = tf.train.Example.FromString(record).features.feature
        except Exception:  # protobuf's DecodeError; protobuf is not imported directly
            raise UsageError(f"--input_file: {path} does not hold tf.train.Examples") from None
        yield path, feature


def check_record_shapes(input_files, max_seq_length, max_predictions_per_seq):
    """Reads the first record of a few input files; their lengths must match the flags.

    A mismatch would otherwise surface as a parse error deep in training.
    """
    expected = pretraining_records.record_features(max_seq_length, max_predictions_per_seq)
    for path, feature in _first_records(input_files):
        for name, (length, _, flag) in expected.items():
            if name not in feature:
                raise UsageError(
                    f"--input_file: {path} has no feature {name!r}; is it "
                    "create_pretraining_data.py output?"
                )
            values = feature[name]
            found = len(values.int64_list.value) + len(values.float_list.value)
            if found != length:
                raise UsageError(
                    f"--input_file: {path} has {found} values of {name} per record, but "
                    f"{flag} asks for {length}; it must match data generation"
                )


def check_framing(input_files):
    """A file cut short is found now, not when training reaches its end (tfrecord_format)."""
    try:
        checked = tfrecord_format.check_framing(input_files)
    except UsageError as e:
        raise UsageError(f"--input_file: {e}") from None
    if checked < len(input_files):
        logging.info("Checked the framing of %d of %d input files", checked, len(input_files))


def run(settings, bert_config, input_files, model_fn_builder, input_fn_builder):
    """Trains (--do_train) and evaluates (--do_eval) with the script's builders, writing
    eval_results.txt; with --pack_sequences the batches are of packed rows."""
    logging.info("*** Input Files ***")
    for input_file in input_files:
        logging.info("  %s", input_file)

    estimator = model_fns.run_estimator(
        model_fn_builder,
        settings,
        bert_config,
        settings.num_train_steps,
        settings.num_warmup_steps,
        eval_batch_size=settings.eval_batch_size,
        optimizer=settings.optimizer,
    )
    max_instances_per_row = settings.max_instances_per_row if settings.pack_sequences else None
    batches_of = (
        f"rows of up to {max_instances_per_row} instances" if max_instances_per_row else ""
    )

    def input_fn(is_training):
        return input_fn_builder(
            input_files=input_files,
            max_seq_length=settings.model.max_seq_length,
            max_predictions_per_seq=settings.max_predictions_per_seq,
            is_training=is_training,
            max_instances_per_row=max_instances_per_row,
        )

    eval_input_fn = input_fn(is_training=False)

    def evaluate(checkpoint_path=None, write_summaries=True):
        with naming_damaged_records():
            return estimator.evaluate(
                input_fn=eval_input_fn,
                steps=settings.max_eval_steps,
                checkpoint_path=checkpoint_path,
                write_summaries=write_summaries,
            )

    final_result = None
    if settings.do_train:
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d %s", settings.train_batch_size, batches_of)
        logging.info("  Optimizer = %s", settings.optimizer)
        with naming_damaged_records():
            final_result = evaluation.train_and_evaluate(
                estimator,
                input_fn(is_training=True),
                settings.num_train_steps,
                evaluate,
                eval_results.write_eval_results,
                settings.eval_options,
            )

    if settings.do_eval:
        logging.info("***** Running evaluation *****")
        logging.info("  Batch size = %d %s", settings.eval_batch_size, batches_of)
        result = final_result or evaluate()
        eval_results.write_eval_results(
            os.path.join(settings.output_dir, "eval_results.txt"), result
        )
