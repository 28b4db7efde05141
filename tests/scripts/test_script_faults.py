"""Faults landing on the scripts at work: leftovers of killed writes, a resume onto another
vocabulary or other data, files that vanish or go bad while a run reads them.

Each fault lands at the moment the run writes or reads one of its own files
(tests/support/fault_trigger.py, through script_fault_worker.py, which runs
the script as a user does): a kill while a file is written, a stop a
scheduler restarts with changed flags, data replaced between a stop and the
resume, a checkpoint or a record file removed or damaged by another process
while the run reads it. Afterwards the run's result is that of one clean
run, or one ERROR line says why not, naming the file, flag and values.
"""

import json
import os
import re
import shutil
import signal

import pytest
from bad_input_fixtures import (
    CORPUS,
    assert_runs,
    cased_tokens,
    classifier_args,
    copy_run,
    listing,
    pretraining_args,
    write_model_files,
)
from helpers import REPO, SUPPORT, error_line, run_python, run_script, write_lines

from bert_lib import engine

pytestmark = pytest.mark.slow

WORKER = os.path.join(SUPPORT, "script_fault_worker.py")
KILLED = -signal.SIGKILL
STOPPED = 128 + signal.SIGTERM


def _with_fault(watch_dir, trigger, script, *args):
    """Runs `script` with the fault `trigger` lands on it (see fault_trigger.py)."""
    return run_python(WORKER, str(watch_dir), trigger, os.path.join(REPO, script), *args)


def _temporary(directory):
    """What in `directory` (at any depth) is not an output: temporary names of writes."""
    return sorted(name for name in listing(directory) if "tmp" in name)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A small BERT's files with a cased vocabulary (its casing tells, either way)."""
    directory = str(tmp_path_factory.mktemp("model"))
    vocab, config = write_model_files(directory, cased_tokens())
    return {"dir": directory, "vocab": vocab, "config": config}


# ---------------------------------------------------------------- 1. leftovers


def _data_args(vocab, data_dir, seed=12345):
    return [
        f"--input_file={CORPUS}",
        f"--output_file={data_dir}/a.tfrecord,{data_dir}/b.tfrecord",
        f"--vocab_file={vocab}",
        "--do_lower_case=False",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=2",
        f"--random_seed={seed}",
    ]


def _input_files_logged(log, directory):
    """The input files run_pretraining.py lists under "*** Input Files ***"."""
    return sorted(re.findall(rf"\]\s+({re.escape(str(directory))}/\S+)$", log, re.MULTILINE))


def test_a_killed_create_pretraining_data_leaves_nothing_a_glob_or_the_next_run_reads(
    model, tmp_path
):
    """Killed as it writes b.tfrecord, a.tfrecord's records already on disk under a
    temporary name: the same command writes both shards whole and removes what the
    killed one left; run_pretraining globbing every file there, beside another such
    leftover, reads the two shards and nothing else."""
    data = tmp_path / "data"
    data.mkdir()
    args = _data_args(model["vocab"], data)
    kill_at_b = r"KILL:call:tfrecord_bytes:a\.tfrecord"
    result = _with_fault(data, kill_at_b, "create_pretraining_data.py", *args)
    assert result.returncode == KILLED, result.stderr[-3000:]
    assert not {"a.tfrecord", "b.tfrecord"} & set(os.listdir(data))
    assert _temporary(data), "the kill came before anything was written"

    assert_runs("create_pretraining_data.py", *args)
    assert sorted(listing(data)) == ["a.tfrecord", "b.tfrecord"]

    result = _with_fault(data, kill_at_b, "create_pretraining_data.py", *args)
    assert result.returncode == KILLED, result.stderr[-3000:]
    leftovers = _temporary(data)
    assert leftovers
    log = assert_runs(
        "run_pretraining.py",
        *pretraining_args(model["config"], f"{data}/*", tmp_path / "out", num_train_steps="1"),
    )
    assert _input_files_logged(log, data) == [f"{data}/a.tfrecord", f"{data}/b.tfrecord"]
    assert "not input" in log  # the leftover is named as skipped


def _classifier_run(model, out, **flags):
    return classifier_args(model["vocab"], model["config"], out, do_lower_case="False", **flags)


@pytest.fixture(scope="module")
def trained(model, tmp_path_factory):
    """A finished SST-2 run of the small model (training only)."""
    out = tmp_path_factory.mktemp("trained") / "out"
    assert_runs("run_classifier.py", *_classifier_run(model, out))
    return str(out)


@pytest.mark.parametrize("script", ["create_vocab.py", "run_classifier.py"])
def test_the_leftover_of_a_killed_write_is_removed_by_the_next_run(
    model, trained, tmp_path, script
):
    """create_vocab.py killed as vocab.txt, complete, is put in place; a prediction killed
    as test_results.tsv is: the same command leaves the outputs and nothing else."""
    if script == "create_vocab.py":
        out = tmp_path / "vocab"
        out.mkdir()
        args = [f"--input_file={CORPUS}", f"--output_file={out}/vocab.txt", "--vocab_size=300"]
        trigger = r"KILL:call:replace:vocab\.txt"
        expected = ["vocab.txt"]
    else:
        out = copy_run(trained, tmp_path / "out")
        args = _classifier_run(model, out, do_train="false", do_predict="true")
        trigger = r"KILL:call:replace:test_results\.tsv"
        expected = sorted([*listing(out), "predict.tf_record", "test_results.tsv"])
    result = _with_fault(out, trigger, script, *args)
    assert result.returncode == KILLED, result.stderr[-3000:]
    assert _temporary(out)
    assert_runs(script, *args)
    assert sorted(listing(out)) == expected


# ---------------------------------------------------------------- 2. what the model is


@pytest.fixture(scope="module")
def stopped(model, tmp_path_factory):
    """An SST-2 training stopped by SIGTERM as it saved step 4 (of 19)."""
    out = tmp_path_factory.mktemp("stopped") / "out"
    result = _with_fault(
        out,
        r"TERM:open:model\.ckpt-4\.input:1",
        "run_classifier.py",
        *_classifier_run(model, out, num_train_epochs="0.5", save_checkpoints_steps="4"),
    )
    assert result.returncode == STOPPED, result.stderr[-3000:]
    assert engine.checkpoint_step(engine.newest_checkpoint(str(out))) == 4
    return str(out)


def _swapped_vocab(model, directory):
    """The model's vocabulary with two words trading places: the same size, another
    vocabulary."""
    tokens = cased_tokens()
    tokens[100], tokens[101] = tokens[101], tokens[100]
    return write_lines(os.path.join(directory, "vocab.txt"), tokens)


@pytest.mark.parametrize("change", ["vocab_file", "do_lower_case", "max_seq_length"])
def test_a_resume_with_another_vocabulary_casing_or_length_is_one_error_line(
    model, stopped, tmp_path, change
):
    out = copy_run(stopped, tmp_path / "out")
    flags = {"num_train_epochs": "0.5", "save_checkpoints_steps": "4"}
    if change == "vocab_file":
        flags["vocab_file"] = _swapped_vocab(model, str(tmp_path))
        named = [f"--vocab_file={flags['vocab_file']}", model["vocab"], "1505 tokens"]
    elif change == "do_lower_case":
        flags["do_lower_case"] = "True"
        named = ["--do_lower_case=True", "False there"]
    else:
        flags["max_seq_length"] = "48"
        named = ["--max_seq_length=48", "32 there"]
    args = classifier_args(model["vocab"], model["config"], out, do_lower_case="False")
    args = [a for a in args if not a.startswith(tuple(f"--{k}=" for k in flags))]
    args += [f"--{k}={v}" for k, v in flags.items()]
    before = listing(out)
    line = error_line(run_script("run_classifier.py", *args))
    assert f"--output_dir={out}" in line
    for name in named:
        assert name in line, (name, line)
    assert listing(out) == before


def test_a_resume_with_the_same_vocabulary_elsewhere_goes_on(model, stopped, tmp_path):
    """The vocabulary is known by its tokens, not its path: a copy resumes. (The input
    position is not restored in a copied directory: the pipeline reads its records under
    another path.)"""
    out = copy_run(stopped, tmp_path / "out")
    vocab = shutil.copy(model["vocab"], tmp_path / "copy.txt")
    log = assert_runs(
        "run_classifier.py",
        *_classifier_run(
            model, out, vocab_file=str(vocab), num_train_epochs="0.5", save_checkpoints_steps="4"
        ),
    )
    assert "Training from step 4 to 19" in log


def test_predicting_at_another_length_than_training_is_allowed(model, trained, tmp_path):
    out = copy_run(trained, tmp_path / "out")
    log = assert_runs(
        "run_classifier.py",
        *_classifier_run(model, out, do_train="false", do_predict="true", max_seq_length="48"),
    )
    assert "--max_seq_length=48: the model in" in log
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        assert json.load(f)["input"]["max_seq_length"] == 32  # training's, still


def test_pretraining_goes_on_at_a_new_length_with_new_records_and_a_warning(model, tmp_path):
    """BERT's recipe: most steps at length 128, then more at 512 with new records."""
    short, long = tmp_path / "short", tmp_path / "long"
    for directory, length in ((short, "32"), (long, "48")):
        directory.mkdir()
        args = _data_args(model["vocab"], directory)
        args = [a for a in args if not a.startswith("--max_seq_length=")]
        assert_runs("create_pretraining_data.py", *args, f"--max_seq_length={length}")
    out = tmp_path / "out"
    assert_runs("run_pretraining.py", *pretraining_args(model["config"], f"{short}/*", out))
    log = assert_runs(
        "run_pretraining.py",
        *pretraining_args(
            model["config"], f"{long}/*", out, max_seq_length="48", num_train_steps="4"
        ),
    )
    assert "--max_seq_length=48: the run in" in log and "trained at max_seq_length 32" in log
    assert "Training from step 2 to 4" in log


# ---------------------------------------------------------------- 3. the input's data


def test_a_shard_replaced_between_a_stop_and_the_resume_starts_the_input_afresh(model, tmp_path):
    """Stopped at step 4, then b.tfrecord replaced by other records under its name: the
    resume names the file in a WARNING and reads its input from the start, instead of
    putting the saved position into the other file."""
    data = tmp_path / "data"
    data.mkdir()
    assert_runs("create_pretraining_data.py", *_data_args(model["vocab"], data))
    out = tmp_path / "out"
    args = pretraining_args(
        model["config"],
        f"{data}/*.tfrecord",
        out,
        num_train_steps="40",
        save_checkpoints_steps="4",
    )
    result = _with_fault(out, r"TERM:open:model\.ckpt-4\.input:1", "run_pretraining.py", *args)
    assert result.returncode == STOPPED, result.stderr[-3000:]
    other = tmp_path / "other"
    other.mkdir()
    assert_runs("create_pretraining_data.py", *_data_args(model["vocab"], other, seed=7))
    shutil.copy(other / "b.tfrecord", data / "b.tfrecord")

    log = assert_runs("run_pretraining.py", *args)
    assert f"{data}/b.tfrecord" in log
    assert "Input position restored" not in log
    assert "Training from step 4 to 40" in log
    assert engine.checkpoint_step(engine.newest_checkpoint(str(out))) == 40


# ---------------------------------------------------------------- 4. files that go


@pytest.mark.parametrize(
    "fault, what",
    [
        # Every checkpoint deleted (a clean-up job) as the prediction restores one.
        (r"REMOVE:call:Saver.restore:model\.ckpt-", "was removed while this run read it"),
        # A byte of its first tensor changed on disk as it is restored.
        (r"DAMAGE_FIRST:call:Saver.restore:model\.ckpt-\d+\.data-", "is damaged"),
    ],
)
def test_a_checkpoint_removed_or_damaged_while_predict_restores_is_one_line_naming_it(
    model, trained, tmp_path, fault, what
):
    out = copy_run(trained, tmp_path / "out")
    checkpoint = engine.newest_checkpoint(out)
    result = _with_fault(
        out,
        fault,
        "run_classifier.py",
        *_classifier_run(model, out, do_train="false", do_predict="true"),
    )
    line = error_line(result)
    assert line.startswith(f"ERROR: checkpoint {checkpoint} {what}"), line
    assert "graph key" not in line
    assert not os.path.exists(os.path.join(out, "test_results.tsv"))


def test_a_record_damaged_after_it_was_written_is_named_with_its_file(model, tmp_path):
    """train.tf_record damaged between its writing and training reading it."""
    out = tmp_path / "out"
    result = _with_fault(
        out,
        r"DAMAGE:call:build_train_graph:train\.tf_record$",
        "run_classifier.py",
        *_classifier_run(model, out, num_train_epochs="1"),
    )
    line = error_line(result)
    assert line.startswith(f"ERROR: {out}/train.tf_record: record "), line


def test_a_shard_removed_between_listing_and_reading_is_one_line_naming_it(model, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    assert_runs("create_pretraining_data.py", *_data_args(model["vocab"], data))
    result = _with_fault(
        data,
        r"REMOVE:call:build_train_graph:b\.tfrecord$",
        "run_pretraining.py",
        *pretraining_args(model["config"], f"{data}/*.tfrecord", tmp_path / "out"),
    )
    line = error_line(result)
    assert line.startswith(f"ERROR: --input_file: {data}/b.tfrecord was removed while this run")
