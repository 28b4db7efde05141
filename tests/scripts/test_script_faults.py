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

import os
import re
import signal

import pytest
from bad_input_fixtures import (
    CORPUS,
    assert_runs,
    cased_tokens,
    classifier_args,
    copy_run,
    listing,
    write_model_files,
)
from helpers import REPO, SUPPORT, flag_args, run_python

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


def _pretraining_args(config, input_file, out, **flags):
    defaults = {
        "input_file": input_file,
        "output_dir": str(out),
        "bert_config_file": config,
        "do_train": "true",
        "max_seq_length": "32",
        "max_predictions_per_seq": "5",
        "train_batch_size": "4",
        "num_train_steps": "2",
        "num_warmup_steps": "0",
    }
    return flag_args(defaults, **flags)


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
        *_pretraining_args(model["config"], f"{data}/*", tmp_path / "out", num_train_steps="1"),
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
