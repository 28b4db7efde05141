"""The parts of benchmarks/original_speed.py that run without the original's TensorFlow 1.15.

The benchmark itself needs the 2018 code and Python 3.7 (COMPATIBILITY.md);
this checks its data, its commands (parsed by our scripts' own flags), its
timing of a child process, and its tables against hand-made cases.
"""

import os
import subprocess
import sys

import pytest
from absl import flags
from helpers import REPO, load_script

BENCHMARKS = os.path.join(REPO, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import original_speed  # noqa: E402

# ----------------------------------------------------------------------------
# Data


def _corpus(tmp_path):
    (tmp_path / "a.txt").write_text("a0\ta\n a1 \n\n\na2\na3\n\nb0\nb1\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("c0\nc1\nc2\n", encoding="utf-8")
    return str(tmp_path)


def test_documents_split_at_blank_lines_and_files_with_tabs_gone(tmp_path):
    docs = original_speed.read_documents(_corpus(tmp_path))
    assert docs == [["a0 a", "a1"], ["a2", "a3"], ["b0", "b1"], ["c0", "c1", "c2"]]


def test_pairs_label_1_exactly_when_the_second_is_the_next_line(tmp_path):
    import random

    docs = original_speed.read_documents(_corpus(tmp_path))
    following = {"a0 a": "a1", "a2": "a3", "b0": "b1", "c0": "c1", "c1": "c2"}
    rows = original_speed.sentence_pairs(docs, 400, random.Random(3))
    assert len(rows) == 400
    for label, first, second in rows:
        assert first in following, first  # never the last line of a document
        assert (label == "1") == (second == following[first]), (label, first, second)
    labels = [r[0] for r in rows]
    assert 150 < labels.count("1") < 250
    # A random second sentence comes from anywhere in the corpus, not only its document.
    assert any(r[0] == "0" and r[1][0] != r[2][0] for r in rows)
    assert rows == original_speed.sentence_pairs(docs, 400, random.Random(3))


def test_written_task_is_read_by_our_mrpc_processor(tmp_path):
    sizes = dict(original_speed.QUICK, train_examples=30, eval_examples=12, predict_examples=9)
    sizes["feature_sentences"] = 7
    glue, sentences = original_speed.write_data(str(tmp_path), sizes)
    rc = load_script("run_classifier")
    processor = rc.MrpcProcessor()
    train = processor.get_train_examples(glue)
    dev = processor.get_dev_examples(glue)
    test = processor.get_test_examples(glue)
    assert (len(train), len(dev), len(test)) == (30, 12, 9)
    assert {e.label for e in train + dev} <= {"0", "1"}
    assert all(e.text_a and e.text_b for e in train + dev + test)
    with open(sentences, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) == 7 and all(lines)
    # Natural lengths: real sentence pairs, far shorter than 128 word pieces on average.
    import tokenization

    tok = tokenization.FullTokenizer(original_speed.VOCAB, do_lower_case=True)
    lengths = [len(tok.tokenize(e.text_a)) + len(tok.tokenize(e.text_b)) + 3 for e in train]
    assert 15 < sum(lengths) / len(lengths) < 100


# ----------------------------------------------------------------------------
# Commands


def _paths(tmp_path):
    return {
        "work": str(tmp_path),
        "config": str(tmp_path / "bert_config.json"),
        "checkpoint": str(tmp_path / "init" / "bert_model.ckpt"),
        "classifier_checkpoint": str(tmp_path / "classifier" / "model.ckpt"),
        "records": str(tmp_path / "pretraining.tfrecord"),
        "glue": str(tmp_path / "pairs"),
        "sentences": str(tmp_path / "sentences.txt"),
    }


@pytest.mark.parametrize("job", original_speed.JOBS)
def test_our_commands_parse_with_our_scripts_flags(tmp_path, job):
    args = original_speed.parse_args(
        [
            "--original_dir=x",
            "--original_python=y",
            "--work_dir=z",
            "--ours_flags=--use_xla",
            f"--ours_{job}_flags=--precision=fp32",
        ]
    )
    sides = original_speed.sides_for(args, job, bf16=True)
    assert sides["original"] == []
    assert sides["ours"] == ["--use_xla", "--precision=fp32"]
    assert sides["ours bf16"] == ["--use_xla", "--precision=fp32", "--precision=bf16"]
    script, argv, out = original_speed.side_command(
        job, "ours", args.sizes, _paths(tmp_path), sides["ours bf16"]
    )
    module = load_script(script)
    try:
        flags.FLAGS(["prog", *argv])
        assert flags.FLAGS.use_xla and flags.FLAGS.precision == "bf16"
        assert flags.FLAGS.max_seq_length == 128
        start = "classifier_checkpoint" if job == "predict" else "checkpoint"
        assert flags.FLAGS.init_checkpoint == _paths(tmp_path)[start]
        if job in ("finetune", "predict"):
            assert flags.FLAGS.task_name == "mrpc" and flags.FLAGS.num_train_epochs == 1.0
            assert flags.FLAGS.do_train == (job == "finetune")
            assert flags.FLAGS.do_predict == (job == "predict")
            assert flags.FLAGS.do_eval and flags.FLAGS.eval_batch_size == 32
        elif job == "features":
            assert flags.FLAGS.layers == "-1,-2,-3,-4" and flags.FLAGS.batch_size == 32
            assert flags.FLAGS.output_file == out + ".jsonl"
        else:
            assert flags.FLAGS.num_train_steps == 40 and flags.FLAGS.max_eval_steps == 10
            assert flags.FLAGS.train_batch_size == 32 and flags.FLAGS.do_eval
    finally:
        flags.FLAGS.unparse_flags()
    assert module is not None


@pytest.mark.parametrize("job", ["finetune", "pretrain"])
def test_train_only_drops_the_evaluation_and_expects_a_checkpoint(tmp_path, job):
    sizes = original_speed.FULL
    _, with_eval, out = original_speed.side_command(job, "ours", sizes, _paths(tmp_path), [])
    _, train_only, _ = original_speed.side_command(
        job, "ours", sizes, _paths(tmp_path), [], evaluate=False
    )
    assert "--do_eval=True" in with_eval and "--do_train=True" in with_eval
    assert [f for f in with_eval if f != "--do_eval=True"] == train_only
    assert original_speed.expected_outputs(job, out, evaluate=False) == [
        os.path.join(out, "checkpoint")
    ]
    assert original_speed.expected_outputs(job, out) == [os.path.join(out, "eval_results.txt")]


def test_predict_only_drops_the_evaluation_and_expects_the_predictions(tmp_path):
    sizes = original_speed.FULL
    _, both, out = original_speed.side_command("predict", "ours", sizes, _paths(tmp_path), [])
    _, alone, _ = original_speed.side_command(
        "predict", "ours", sizes, _paths(tmp_path), [], evaluate=False
    )
    assert "--do_eval=True" in both and "--do_predict=True" in alone
    assert [f for f in both if f != "--do_eval=True"] == alone
    predictions = os.path.join(out, "test_results.tsv")
    assert original_speed.expected_outputs("predict", out, evaluate=False) == [predictions]
    assert original_speed.expected_outputs("predict", out) == [
        os.path.join(out, "eval_results.txt"),
        predictions,
    ]


def test_a_flag_our_script_lacks_is_caught(tmp_path):
    """The parse above can fail: an unknown flag is an error."""
    _, argv, _ = original_speed.side_command(
        "features", "ours", original_speed.FULL, _paths(tmp_path), ["--no_such_flag=1"]
    )
    load_script("extract_features")
    try:
        with pytest.raises(flags.UnrecognizedFlagError):
            flags.FLAGS(["prog", *argv])
    finally:
        flags.FLAGS.unparse_flags()


def test_quick_sizes_and_overrides():
    base = ["--original_dir=x", "--original_python=y", "--work_dir=z"]
    assert original_speed.parse_args(base).sizes["num_hidden_layers"] == 6
    quick = original_speed.parse_args([*base, "--quick", "--batch_size=4"]).sizes
    assert quick["num_hidden_layers"] == 2 and quick["batch_size"] == 4
    assert quick["pretrain_steps"] == 2
    with pytest.raises(SystemExit):
        original_speed.parse_args([*base, "--hidden_size=100"])  # 12 heads
    with pytest.raises(SystemExit):
        original_speed.parse_args([*base, "--jobs=finetune,squad"])


# ----------------------------------------------------------------------------
# Timing and reports


def test_timed_runner_stamps_lines_and_counts_child_cpu(tmp_path):
    (tmp_path / "orig").mkdir()
    (tmp_path / "orig" / "run_classifier.py").write_text("", encoding="utf-8")
    run = original_speed.TimedRunner(str(tmp_path / "orig"), "python3.7", str(tmp_path))
    code = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    code += "print('first')\nprint('second')\n"
    assert run._run([sys.executable, "-c", code], dict(os.environ), str(tmp_path), "x.log") == 0
    assert run.last["cpu"] >= 0.35
    assert run.last["wall"] >= run.last["cpu"] * 0.5
    lines = (tmp_path / "x.log").read_text(encoding="utf-8").splitlines()
    assert [line.split()[2] for line in lines] == ["first", "second"]
    for line in lines:
        wall, cpu = float(line.split()[0]), float(line.split()[1])
        assert 0.3 < wall <= run.last["wall"] + 0.0005  # stamps are rounded to 1 ms
        assert 0.3 < cpu <= run.last["cpu"] + 0.05  # the busy loop ran before the print
    assert "-c" in (tmp_path / "commands.log").read_text(encoding="utf-8")


def test_commands_log_lines_run_again_as_they_ran(tmp_path):
    """A line of commands.log, given to a shell, runs the command in its directory with the
    variables it was given (the original's PYTHONPATH), quoted as needed."""
    (tmp_path / "orig").mkdir()
    (tmp_path / "orig" / "run_classifier.py").write_text("", encoding="utf-8")
    (tmp_path / "a dir").mkdir()
    run = original_speed.TimedRunner(str(tmp_path / "orig"), "python3.7", str(tmp_path))
    code = "import os; print('|'.join([os.getcwd(), os.environ['PYTHONPATH'], os.environ['X']]))"
    env = dict(os.environ, PYTHONPATH="/some where", X="it's")
    assert run._run([sys.executable, "-c", code], env, str(tmp_path / "a dir"), "x.log") == 0
    line = (tmp_path / "commands.log").read_text(encoding="utf-8").splitlines()[-1]
    command = line.rsplit("  > ", 1)[0]
    assert line.endswith("  > x.log")
    again = subprocess.run(
        ["bash", "-c", command], env=dict(os.environ), capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    want = [os.path.realpath(tmp_path / "a dir"), "/some where", "it's"]
    assert again.stdout.strip().split("|") == want


def test_log_phases_first_match_of_each_milestone(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(
        "    0.500     0.40 I0000 cudart_stub.cc:31] no GPU\n"
        "    3.000     2.90 I1122 run_classifier.py:807] Writing example 0 of 8\n"
        "    3.500     3.10 I1122 run_classifier.py:1026] *** Features ***\n"
        "    4.250     3.75 I1122 runner_checkpoints.py:72] **** Trainable Variables ****\n"
        "    6.000     5.00 I1122 runner_training.py:142] Training from step 0 to 3\n"
        "    9.000     8.00 I1122 runner_training.py:156] Training done at step 3\n"
        "   10.000     9.00 I1122 run_classifier.py:1026] *** Features ***\n"
        "   12.000    10.50 I1122 run_classifier.py:1254] ***** Eval results *****\n"
        "not a stamped line\n"
        "   12.500    -1.00 done\n",
        encoding="utf-8",
    )
    assert original_speed.log_phases(str(log)) == {
        "script logs": (3.0, 2.9),
        "graph building": (3.5, 3.1),
        "variables listed": (4.25, 3.75),
        "session ready": (6.0, 5.0),
        "training done": (9.0, 8.0),
        "eval results": (12.0, 10.5),
        "last line": (12.5, -1.0),
    }


def _timing(wall, cpu, returncode=0, side="x"):
    return {"wall": wall, "cpu": cpu, "returncode": returncode, "log": side, "load": (1.0, 2.5)}


def test_results_table_ratios_and_targets():
    table = original_speed.results_table(
        {
            "finetune": {"original": _timing(30.0, 50.0), "ours": _timing(10.0, 40.0)},
            "predict": {"original": _timing(20.0, 20.0), "ours": _timing(10.0, 8.0)},
            "features": {"original": _timing(5.0, 5.0), "ours": _timing(1.0, 1.0, 1, "f.log")},
        }
    ).splitlines()
    assert table[2] == "| finetune | original | 30.0 | 50.0 | 1.00 - 2.50 |  |  |  |"
    assert table[3] == (
        "| finetune | ours | 10.0 | 40.0 | 1.00 - 2.50 | 3.00x | 1.25x | >= 2.0x: met |"
    )
    assert table[5].endswith("| 2.00x | 2.50x | >= 2.5x: not met |")
    assert table[7].startswith("| features | ours | failed (1; f.log) |")
    assert "x" not in table[7].split("|")[6]
    quick = original_speed.results_table(
        {"predict": {"original": _timing(20.0, 20.0), "ours": _timing(1.0, 1.0)}},
        judge_targets=False,
    )
    assert quick.splitlines()[3].endswith("| 20.00x | 20.00x | >= 2.5x: not judged |")


def test_lscpu_facts_and_bf16_detection():
    text = (
        "Architecture:   x86_64\n"
        "Model name:     Intel(R) Xeon(R) Platinum 8480+\n"
        "Flags:          fpu avx avx2 fma avx512f avx512_bf16 amx_tile\n"
    )
    model, cpu_flags = original_speed.parse_lscpu(text)
    assert model == "Intel(R) Xeon(R) Platinum 8480+"
    assert original_speed.has_bf16_hardware(cpu_flags)
    assert not original_speed.has_bf16_hardware({"avx2", "fma", "avx512f", "amx_tile"})
    facts = original_speed.machine_facts(text)
    assert "avx512f yes" in facts and "amx_bf16 no" in facts and "avx512_vnni no" in facts
