"""The shared helpers in helpers.py do what the other tests rely on."""

import os
import textwrap

import helpers
import pytest


@pytest.mark.slow
def test_scripts_import_side_by_side_and_shared_defaults_do_not_depend_on_the_order():
    """run_squad's max_seq_length default of 384 is its own when it runs, not a
    side effect of which script was imported last."""
    code = """
        import sys
        from absl import flags
        for name in sys.argv[1:]:
            __import__(name)
        print(flags.FLAGS["max_seq_length"].default, "task_name" in flags.FLAGS,
              "doc_stride" in flags.FLAGS)
    """
    for order in (["run_classifier", "run_squad"], ["run_squad", "run_classifier"]):
        result = helpers.run_python("-c", textwrap.dedent(code), *order)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.split() == ["128", "True", "True"]
    for script, default in (("run_squad.py", "384"), ("run_classifier.py", "128")):
        result = helpers.run_script(script, "--helpshort")
        text = result.stdout + result.stderr
        block = text.split("--max_seq_length:", 1)[1].split("\n  --", 1)[0]
        assert f"(default: '{default}')" in block, block


def test_fixtures_live_inside_the_repository():
    for path in (helpers.GOLDEN, helpers.VOCAB_UNCASED):
        assert os.path.exists(path)
        assert os.path.commonpath([path, helpers.REPO]) == helpers.REPO


def test_write_checkpoint_stores_exactly_the_given_names_and_values(tmp_path):
    import numpy as np
    import tensorflow as tf

    values = {
        "output_weights": np.arange(6, dtype=np.float32).reshape(2, 3),
        "output_weights/adam_m": np.full([2, 3], 0.5, np.float32),
        "global_step": np.int64(7),
    }
    path = helpers.write_checkpoint(tmp_path / "model.ckpt", values, global_step=7)
    assert path == str(tmp_path / "model.ckpt-7")
    assert dict(tf.train.list_variables(path)) == {
        "output_weights": [2, 3],
        "output_weights/adam_m": [2, 3],
        "global_step": [],
    }
    stored = helpers.checkpoint_values(path)
    for name, value in values.items():
        np.testing.assert_array_equal(stored[name], value)
    assert stored["global_step"].dtype == np.int64


def test_tiny_bert_config_overrides_and_file(tmp_path):
    import json

    config = helpers.tiny_bert_config(50, hidden_size=64, num_hidden_layers=1)
    assert (config["vocab_size"], config["hidden_size"], config["num_hidden_layers"]) == (
        50,
        64,
        1,
    )
    path = helpers.write_bert_config(tmp_path / "c.json", 50, hidden_size=64, num_hidden_layers=1)
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == config


@pytest.mark.slow
def test_run_code_sees_the_repository_and_reports_failure():
    done = helpers.run_code(
        """
        import tokenization
        print(tokenization.__file__)
        sys.exit(3)
        """
    )
    assert done.returncode == 3
    assert done.stdout.startswith(helpers.REPO)


def test_flag_args_apply_overrides_and_drop_none():
    defaults = {"vocab_file": "v.txt", "max_seq_length": 32, "do_train": "true"}
    assert helpers.flag_args(defaults, max_seq_length=16, do_train=None, layers="-1") == [
        "--vocab_file=v.txt",
        "--max_seq_length=16",
        "--layers=-1",
    ]
    assert defaults["max_seq_length"] == 32


def test_write_text_and_write_lines_write_utf8(tmp_path):
    path = helpers.write_text(tmp_path / "a.txt", "café\n\nx\n")
    assert path == str(tmp_path / "a.txt")
    assert (tmp_path / "a.txt").read_bytes() == b"caf\xc3\xa9\n\nx\n"
    helpers.write_lines(tmp_path / "b.txt", ["café", "", "x"])
    assert (tmp_path / "b.txt").read_bytes() == (tmp_path / "a.txt").read_bytes()


@pytest.mark.slow
def test_run_checks_fails_when_a_check_fails():
    helpers.run_checks("assert tf.compat.v1.global_variables() == []")
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        helpers.run_checks("1 / 0")
