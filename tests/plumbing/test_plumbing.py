"""The shared plumbing of the scripts: errors, atomic writes, progress, checks, formats.

The unit tests pin each module's contract against hand-written expectations;
the subprocess tests at the end run the real scripts on the four kinds of
bad input whose one-line message used to miss what was wrong or where.
"""

import errno
import json
import os
import re
import struct

import numpy as np
import pytest
import tensorflow as tf
from helpers import (
    REPO,
    SUPPORT,
    error_line,
    flag_args,
    run_python,
    run_script,
    tiny_bert_config,
    write_bert_config,
    write_checkpoint,
    write_lines,
    write_text,
)

import modeling
from bert_lib.bert_runs import checks
from bert_lib.plumbing import (
    atomic_write,
    checkpoint_shapes,
    errors,
    eval_results,
    progress,
    startup_checks,
    tfrecord_format,
)

CORPUS = os.path.join(REPO, "demo_data", "corpus", "science.txt")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = "the a film food was good awful . sun is very light water air heat cold".split()
HIDDEN = 32


# ---------------------------------------------------------------- errors


# The shape of a TensorFlow 2.16 graph-mode error: its message comes after a
# "defined at" stack (this one as a DataLossError from tf.data printed it).
TF_MESSAGE = (
    "Graph execution error:\n\n"
    "Detected at node 'IteratorGetNext' defined at (most recent call last):\n"
    '    File "/x/run_pretraining.py", line 541, in <module>\n'
    "      engine.run_main(main)\n"
    '    File "/x/engine.py", line 900, in train\n'
    "Node: 'IteratorGetNext'\n"
    "corrupted record at 4737\n"
    "\t [[{{node IteratorGetNext}}]]\n\n"
    "Original stack trace for 'IteratorGetNext':\n"
    '  File "/x/run_pretraining.py", line 541, in <module>\n'
)


def test_first_line_skips_the_defined_at_stack():
    error = tf.errors.DataLossError(None, None, TF_MESSAGE)
    assert errors.first_line(error) == "corrupted record at 4737"
    assert errors.message(error) == "DataLossError: corrupted record at 4737"


def test_first_line_of_a_real_tensorflow_runtime_error(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(3):
            writer.write(b"record %d" % i)
    data = bytearray(open(path, "rb").read())
    data[16 + 8 + 4 + 3] ^= 1  # a byte of the second record's data
    open(path, "wb").write(bytes(data))
    with tf.Graph().as_default():
        iterator = tf.compat.v1.data.make_one_shot_iterator(tf.data.TFRecordDataset(path))
        element = iterator.get_next()
        with tf.compat.v1.Session() as session:
            session.run(element)
            with pytest.raises(tf.errors.DataLossError) as info:
                session.run(element)
    assert errors.is_user_error(info.value)
    # The data of record 1 starts at byte 16 + 8 + 12 = 36 (record 0 holds 8 bytes).
    assert errors.first_line(info.value) == "corrupted record at 24"


def _graph_bug():
    with tf.Graph().as_default():
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))


def test_only_user_errors_are_one_line():
    assert errors.is_user_error(errors.UsageError("--flag: bad"))
    assert errors.is_user_error(FileNotFoundError(2, "No such file", "x.txt"))
    assert errors.is_user_error(tf.errors.NotFoundError(None, None, "missing"))
    assert not errors.is_user_error(tf.errors.UnimplementedError(None, None, "no kernel"))
    assert not errors.is_user_error(KeyError("input_ids"))
    assert not errors.is_user_error(TypeError("bad operand"))
    # A UsageError raised where a bad value enters is the user's; a plain
    # ValueError is a bug wherever it comes from: our own code (an unknown
    # activation name reaching modeling) or TensorFlow building a graph.
    with pytest.raises(errors.UsageError) as info:
        checks.check_seq_length(600, type("Config", (), {"max_position_embeddings": 512}))
    assert errors.is_user_error(info.value)
    with pytest.raises(ValueError) as info:
        modeling.get_activation("swishy")
    assert type(info.value) is ValueError
    assert not errors.is_user_error(info.value)
    with pytest.raises(ValueError) as info:
        _graph_bug()
    assert not errors.is_user_error(info.value)


def test_the_input_errors_of_modeling_and_tokenization_are_user_errors(tmp_path):
    """The two modules copied alone import nothing of ours, so they raise their own
    class; it is a ValueError, and the scripts' entry point takes it as a UsageError."""
    import tokenization

    with pytest.raises(ValueError) as info:
        modeling.BertConfig.from_dict({"hidden_size": 8}).validate("c.json")
    assert type(info.value) is modeling.InputError
    assert errors.is_user_error(info.value)
    with pytest.raises(ValueError) as info:
        tokenization.check_special_tokens({"[CLS]": 0}, "v.txt")
    assert type(info.value) is tokenization.InputError
    assert errors.is_user_error(info.value)
    not_utf8 = tmp_path / "vocab.txt"
    not_utf8.write_bytes(b"[CLS]\ncaf\xe9\n")
    with pytest.raises(UnicodeDecodeError) as info:
        tokenization.load_vocab(str(not_utf8))
    assert errors.is_user_error(info.value)
    assert errors.message(info.value) == f"--vocab_file: {not_utf8} is not UTF-8 text " + (
        "(invalid continuation byte at byte 9)"
    )


def _run_main(code):
    return run_python("-c", code)


@pytest.mark.slow
def test_run_main_reports_a_user_error_in_one_line_with_status_1():
    result = _run_main(
        "from bert_lib import script_flags\nfrom bert_lib.plumbing import errors\n"
        "def main(_):\n"
        "    raise errors.UsageError('--input_file: no such file: x.txt')\n"
        "script_flags.run_main(main)\n"
    )
    assert result.returncode == 1
    assert result.stderr == "ERROR: --input_file: no such file: x.txt\n"


@pytest.mark.slow
def test_run_main_keeps_the_traceback_of_a_bug_in_graph_code():
    result = _run_main(
        "import tensorflow as tf\nfrom bert_lib import script_flags\n"
        "def main(_):\n"
        "    with tf.Graph().as_default():\n"
        "        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))\n"
        "script_flags.run_main(main)\n"
    )
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "ERROR:" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("script", ["create_vocab", "create_pretraining_data"])
def test_data_scripts_and_their_plumbing_import_no_tensorflow(script):
    code = (
        "import sys\nfrom bert_lib.plumbing import errors, atomic_write, progress, "
        "startup_checks, fileio, eval_results, tfrecord_format\n"
        f"from bert_lib.bert_runs import checks\nimport {script}\n"
        "print('tensorflow' in sys.modules)\n"
    )
    result = _run_main(code)
    assert result.stdout.strip() == "False", result.stderr


# ---------------------------------------------------------------- atomic writes


class _FullDisk:
    """A file that takes `room` bytes and then fails as a full disk does."""

    def __init__(self, handle, room):
        self.handle, self.room = handle, room

    def write(self, data):
        if len(data) > self.room:
            self.handle.write(data[: self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)

    def close(self):
        self.handle.close()


def test_atomic_files_appear_only_when_complete(tmp_path):
    paths = [str(tmp_path / "a.txt"), str(tmp_path / "b.bin")]
    with atomic_write.atomic_files(paths[:1], "w") as (f,):
        f.write("héllo\n")
        # Written in a hidden staging directory beside the output, named for this process.
        (stage,) = os.listdir(tmp_path)
        assert re.fullmatch(rf"\.tmp-.+-{os.getpid()}-\d+", stage)
        assert os.listdir(tmp_path / stage) == ["a.txt"]
        assert atomic_write.is_temporary(str(tmp_path / stage / "a.txt"))
    with atomic_write.atomic_files(paths[1:], "wb") as (f,):
        f.write(b"\x00\x01")
    assert open(paths[0], "rb").read() == "héllo\n".encode()
    assert open(paths[1], "rb").read() == b"\x00\x01"
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.bin"]


def test_full_disk_is_one_usage_error_naming_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    real_open = atomic_write._open
    monkeypatch.setattr(atomic_write, "_open", lambda p, m: _FullDisk(real_open(p, m), 10))
    paths = [str(tmp_path / "one.txt"), str(tmp_path / "two.txt")]
    with pytest.raises(errors.UsageError) as info:
        with atomic_write.atomic_files(paths, "w", flag="--output_file") as (one, two):
            one.write("short\n")
            two.write("longer than ten bytes\n")
    assert str(info.value) == f"--output_file: cannot write {paths[1]}: No space left on device"
    assert errors.is_user_error(info.value)
    assert os.listdir(tmp_path) == []


def test_any_error_removes_the_temporary_files(tmp_path):
    with pytest.raises(KeyError):
        with atomic_write.atomic_files([str(tmp_path / "x")], "w") as (f,):
            f.write("partial")
            raise KeyError("bug")
    assert os.listdir(tmp_path) == []
    with pytest.raises(KeyboardInterrupt):
        with atomic_write.atomic_paths([str(tmp_path / "y")]) as (temp,):
            open(temp, "w").write("partial")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_write_text_replaces_an_existing_file(tmp_path):
    path = str(tmp_path / "eval_results.txt")
    atomic_write.write_text(path, "old\n")
    atomic_write.write_text(path, "new\n")
    assert open(path).read() == "new\n"
    assert os.listdir(tmp_path) == ["eval_results.txt"]


# ---------------------------------------------------------------- progress, results


def test_progress_line_format():
    line = progress.progress_line("Writing", 2500, 10000, "instances", 50.0, ", 3 files")
    # 2500 in 50 s is 50/s; 7500 left at 50/s is 150 s.
    assert line == "Writing: 2,500/10,000 instances (50/s), 3 files, 50s elapsed, 2m30s left"
    line = progress.progress_line("Reading input", 1.5, 6.0, "MB", 3.0)
    assert line == "Reading input: 1.5/6.0 MB (0.5/s), 3s elapsed, 9s left"
    assert progress.format_seconds(3723) == "1h02m03s"
    assert progress.progress_line("Converting", 0, 10, "", 1.0).endswith("1s elapsed, ? left")


def test_progress_logs_at_most_every_interval(monkeypatch):
    lines = []
    monkeypatch.setattr(progress.logging, "info", lines.append)
    clock = iter([100.0, 101.0, 105.0, 112.0, 113.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    p = progress.Progress("Writing", 40, "examples", every_seconds=10)  # starts at 100
    p.update(1)  # 101: too soon
    p.update(5)  # 105: too soon
    p.update(12)  # 112: logged
    p.update(40, force=True)  # 113: forced
    assert lines == [
        "Writing: 12/40 examples (1/s), 12s elapsed, 28s left",
        "Writing: 40/40 examples (3.077/s), 13s elapsed, 0s left",
    ]


def test_training_progress_rates_leave_out_start_up(monkeypatch):
    lines = []
    monkeypatch.setattr(progress.logging, "info", lines.append)
    clock = iter([0.0, 30.0, 40.0])
    monkeypatch.setattr(progress.time, "time", lambda: next(clock))
    p = progress.TrainingProgress(start_step=500, max_steps=1000, global_batch_size=32)
    assert p.log(500, {"loss": 2.5}) == {}  # at 30 s, after graph building
    rates = p.log(520, {"loss": 2.25})  # 20 steps in 10 s
    assert rates == {"global_step/sec": 2.0, "examples/sec": 64.0}
    assert lines == [
        "Training: 500/1,000 steps, loss = 2.5",
        # 480 steps left at 2/s: 4 minutes.
        "Training: 520/1,000 steps (2/s), loss = 2.25, 64 examples/s, 40s elapsed, 4m00s left",
    ]


def test_eval_results_print_ints_and_float32():
    text = eval_results.format_eval_results(
        {"loss": 0.4000000059604645, "global_step": np.int64(12), "f1": 60.5, "mcc": 11 / 35}
    )
    assert text == "f1 = 60.5\nglobal_step = 12\nloss = 0.4\nmcc = 0.31428573\n"


# ---------------------------------------------------------------- start-up checks


def test_start_up_checks_name_the_flag_and_file(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x\n")
    config = type("Config", (), {"max_position_embeddings": 64})
    checks.check_seq_length(64, config)
    with pytest.raises(errors.UsageError, match="sequence length 65 .* up to sequence length 64"):
        checks.check_seq_length(65, config)
    startup_checks.check_output_dir(str(tmp_path / "new"))
    with pytest.raises(errors.UsageError, match=f"^--output_dir: {a_file} is a file"):
        startup_checks.check_output_dir(str(a_file))
    with pytest.raises(errors.UsageError, match=f"^--output_file: {a_file} is a file"):
        startup_checks.check_output_file(str(a_file / "out.jsonl"))
    with pytest.raises(errors.UsageError, match=f"^--input_file: no such file: {tmp_path}/no"):
        startup_checks.check_input_file(str(tmp_path / "no"), "--input_file")
    with pytest.raises(errors.UsageError, match=f"^--input_file: no file matches {tmp_path}/z"):
        startup_checks.expand_input_files(f"{a_file},{tmp_path}/z*")
    assert startup_checks.expand_input_files(str(a_file)) == [str(a_file)]


def test_load_tokenizer_checks_file_encoding_and_special_tokens(tmp_path):
    good = tmp_path / "vocab.txt"
    good.write_text("\n".join(SPECIAL + WORDS) + "\n")
    tokenizer = checks.load_tokenizer(str(good), True)
    assert tokenizer.tokenize("The sun") == ["the", "sun"]
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("\n".join(SPECIAL[:4] + WORDS) + "\n")
    with pytest.raises(errors.UsageError, match=f"^--vocab_file: {no_mask} lacks \\[MASK\\]$"):
        checks.load_tokenizer(str(no_mask), True)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"[PAD]\ncaf\xe9\n")
    with pytest.raises(errors.UsageError, match=f"^--vocab_file: {latin1} is not UTF-8"):
        checks.load_tokenizer(str(latin1), True)
    with pytest.raises(errors.UsageError, match="^--vocab_file: no such file"):
        checks.load_tokenizer(str(tmp_path / "none.txt"), True)


# ---------------------------------------------------------------- checkpoints


def _save_checkpoint(prefix, shapes):
    """A checkpoint of float32 zeros of the given shapes."""
    return write_checkpoint(
        prefix, {name: np.zeros(shape, np.float32) for name, shape in shapes.items()}
    )


def test_checkpoint_shapes_one_message(tmp_path):
    path = _save_checkpoint(str(tmp_path / "model.ckpt"), {"w": [3, 4], "b": [4]})
    expected = {"w": [3, 4], "b": [5], "not_saved": [1]}
    assert modeling.find_shape_mismatches(expected, {"w": [3, 4], "b": [4]}) == [("b", [5], [4])]
    with pytest.raises(errors.UsageError) as info:
        checkpoint_shapes.check_shapes(expected, path, hint=" (hint)")
    assert str(info.value) == (
        f"checkpoint {path} does not match the model: variable b has shape [5] in the model "
        "but [4] in the checkpoint (hint)"
    )
    # modeling.py, copied alone into other projects, keeps its own check: the same message.
    with pytest.raises(modeling.InputError) as model_info:
        modeling.check_variable_shapes(expected, path, {"w": [3, 4], "b": [4]}, " (hint)")
    assert str(model_info.value) == str(info.value)
    # A partly unknown graph shape fits any shape it is compatible with.
    checkpoint_shapes.check_shapes({"w": tf.TensorShape([None, 4])}, path)
    with pytest.raises(errors.UsageError, match="^--init_checkpoint: no checkpoint at "):
        checkpoint_shapes.read_shapes(str(tmp_path / "none"), "--init_checkpoint")


# ---------------------------------------------------------------- TFRecords


def test_read_records_checks_each_record(tmp_path):
    path = str(tmp_path / "r.tfrecord")
    records = [b"", b"a", b"hello world" * 30, bytes(range(256))]
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    assert list(tfrecord_format.read_records(path)) == records
    data = open(path, "rb").read()
    # Offsets by hand: each record takes 16 bytes of framing plus its data.
    offsets = [0, 16, 33, 379]
    assert len(data) == 379 + 16 + 256

    def damaged(mutate):
        bad = bytearray(data)
        mutate(bad)
        bad_path = str(tmp_path / "bad.tfrecord")
        open(bad_path, "wb").write(bytes(bad))
        with pytest.raises(errors.UsageError) as info:
            list(tfrecord_format.read_records(bad_path))
        return str(info.value).replace(bad_path, "FILE")

    def flip(position):
        return lambda b: b.__setitem__(position, b[position] ^ 0x20)

    assert damaged(flip(offsets[2] + 12 + 5)) == (
        "FILE: record 2 (at byte 33) is corrupt: its data fails its checksum; "
        "the file is damaged or not a TFRecord file"
    )
    assert "record 3 (at byte 379) is corrupt: its length fails" in damaged(flip(offsets[3] + 1))
    assert "record 3 (at byte 379) is corrupt: cut short" in damaged(lambda b: b.__delitem__(-1))
    assert struct.unpack("<Q", data[offsets[3] : offsets[3] + 8]) == (256,)


# ---------------------------------------------------------------- the scripts


def _run(script, *args, wrapper=None, env=None):
    """Runs a script, or a wrapper from tests/support/ that runs it, as a user would."""
    if wrapper:
        return run_python(os.path.join(SUPPORT, wrapper), script, *args, env=env)
    return run_script(script, *args, env=env)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("plumbing")
    vocab = write_lines(d / "vocab.txt", SPECIAL + WORDS)
    config = write_bert_config(
        d / "bert_config.json", len(SPECIAL) + len(WORDS), hidden_size=HIDDEN, num_hidden_layers=1
    )
    (d / "sentences.txt").write_text("the film was good .\nthe food ||| awful\n")
    (d / "ckpt").mkdir()
    # Every variable of the model (the checks refuse a checkpoint that lacks some).
    shapes = modeling.bert_variable_shapes(modeling.BertConfig.from_json_file(config))
    checkpoint = _save_checkpoint(str(d / "ckpt" / "model.ckpt"), shapes)
    return {
        "dir": d,
        "vocab": vocab,
        "config": config,
        "sentences": str(d / "sentences.txt"),
        "ckpt": checkpoint,
    }


def _features_args(inputs, out, **flags):
    args = {
        "input_file": inputs["sentences"],
        "output_file": str(out / "features.jsonl"),
        "vocab_file": inputs["vocab"],
        "bert_config_file": inputs["config"],
        "init_checkpoint": inputs["ckpt"],
        "max_seq_length": "16",
        "layers": "-1",
    }
    return flag_args(args, **flags)


def _records_args(out, *names):
    return [
        f"--input_file={CORPUS}",
        "--output_file=" + ",".join(str(out / name) for name in names),
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=1",
    ]


def _record_starts(data):
    """Byte offsets of the records of a TFRecord file, from the length fields alone."""
    starts, offset = [], 0
    while offset < len(data):
        starts.append(offset)
        offset += 16 + struct.unpack("<Q", data[offset : offset + 8])[0]
    return starts


@pytest.mark.slow
@pytest.mark.parametrize("which", ["first", "middle"])
def test_flipped_byte_in_pretraining_records_names_file_and_record(inputs, tmp_path, which):
    records = tmp_path / "records.tfrecord"
    result = _run(
        "create_pretraining_data.py",
        *_records_args(tmp_path, records.name),
        f"--vocab_file={inputs['vocab']}",
    )
    assert result.returncode == 0, result.stderr
    data = bytearray(records.read_bytes())
    starts = _record_starts(data)
    # The first record is read by the start-up check; a later one only in training.
    index = 0 if which == "first" else len(starts) // 2
    data[starts[index] + 12 + 40] ^= 0x04  # a byte of its data
    records.write_bytes(bytes(data))
    out = tmp_path / "out"
    result = _run(
        "run_pretraining.py",
        f"--input_file={records}",
        f"--output_dir={out}",
        f"--bert_config_file={inputs['config']}",
        "--do_train",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--train_batch_size=4",
        f"--num_train_steps={len(starts)}",
        "--save_checkpoints_steps=100000",
    )
    assert error_line(result) == (
        f"ERROR: --input_file: {records}: record {index} (at byte {starts[index]}) is corrupt: "
        "its data fails its checksum; the file is damaged or not a TFRecord file"
    )


@pytest.mark.slow
def test_checkpoint_cut_short_names_the_checkpoint(inputs, tmp_path):
    cut = tmp_path / "cut"
    cut.mkdir()
    source = inputs["ckpt"]
    (cut / "model.ckpt.index").write_bytes(open(source + ".index", "rb").read())
    data = open(source + ".data-00000-of-00001", "rb").read()
    (cut / "model.ckpt.data-00000-of-00001").write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    out.mkdir()
    result = _run(
        "extract_features.py", *_features_args(inputs, out, init_checkpoint=cut / "model.ckpt")
    )
    last = error_line(result)
    assert last.startswith(f"ERROR: --init_checkpoint: cannot read {cut / 'model.ckpt'} "), last
    assert "File " not in last and "line " not in last
    assert os.listdir(out) == []


@pytest.mark.slow
def test_non_utf8_input_names_file_and_line(inputs, tmp_path):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"the film was good .\n\ncaf\xe9 au lait\n")
    out = tmp_path / "out"
    out.mkdir()
    result = _run("extract_features.py", *_features_args(inputs, out, input_file=latin1))
    assert error_line(result) == f"ERROR: --input_file: {latin1}: line 3 is not UTF-8 text"
    assert os.listdir(out) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "script, args, failing",
    [
        (
            "create_pretraining_data.py",
            lambda i, out: (
                _records_args(out, "a.tfrecord", "b.tfrecord") + [f"--vocab_file={i['vocab']}"]
            ),
            "a.tfrecord",
        ),
        ("extract_features.py", lambda i, out: _features_args(i, out), "features.jsonl"),
    ],
)
def test_full_disk_names_the_output_file_and_leaves_nothing(
    inputs, tmp_path, script, args, failing
):
    out = tmp_path / "out"
    out.mkdir()
    result = _run(
        script, *args(inputs, out), wrapper="full_disk.py", env={"FULL_DISK_BYTES": "50"}
    )
    assert error_line(result) == (
        f"ERROR: --output_file: cannot write {out / failing}: No space left on device"
    )
    assert os.listdir(out) == []
    # The same run with room to spare writes every file.
    result = _run(script, *args(inputs, out))
    assert result.returncode == 0, result.stderr
    assert failing in os.listdir(out)


# ---------------------------------------------------------------- start-up checks


def _tiny_config(vocab_size=40, **overrides):
    return modeling.BertConfig.from_dict(tiny_bert_config(vocab_size, **overrides))


@pytest.mark.parametrize(
    "lines, vocab_size, fits",
    [(40, 40, True), (40, 48, True), (40, 40 + 128, True), (40, 40 + 129, False), (41, 40, False)],
)
def test_vocabulary_must_fit_vocab_size_up_to_the_padding_some_models_add(lines, vocab_size, fits):
    config = _tiny_config(vocab_size=vocab_size)
    if fits:
        checks.check_vocab_size(lines, config, "vocab.txt", "bert_config.json")
    else:
        with pytest.raises(errors.UsageError, match=f"vocab.txt has {lines} tokens"):
            checks.check_vocab_size(lines, config, "vocab.txt", "bert_config.json")


def test_init_checkpoint_may_lack_the_pooler_and_heads_but_not_encoder_variables(tmp_path):
    config = _tiny_config(num_hidden_layers=2)
    shapes = modeling.bert_variable_shapes(config)
    encoder = {
        name: np.zeros(shape, np.float32)
        for name, shape in shapes.items()
        if name.startswith(("bert/embeddings/", "bert/encoder/"))
    }
    complete = write_checkpoint(tmp_path / "encoder" / "model.ckpt", encoder)
    checks.check_init_checkpoint(complete, config, "c.json")
    one_layer = {k: v for k, v in encoder.items() if "layer_1/" not in k}
    partial = write_checkpoint(tmp_path / "partial" / "model.ckpt", one_layer)
    with pytest.raises(errors.UsageError, match="2 layers in c.json but 1 in the checkpoint"):
        checks.check_init_checkpoint(partial, config, "c.json")
    checks.check_init_checkpoint(partial, config, "c.json", allow_partial=True)


def test_config_must_give_every_architecture_key(tmp_path):
    config = tiny_bert_config(40)
    del config["intermediate_size"]
    path = write_text(tmp_path / "c.json", json.dumps(config))
    with pytest.raises(errors.UsageError, match="c.json has no intermediate_size"):
        checks.load_bert_config(path)
