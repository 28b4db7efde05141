"""The shared helpers in conftest.py do what the other tests rely on."""

import os
import sys
import textwrap

import conftest
import pytest


def test_load_script_swaps_flags_of_scripts_with_shared_names(tmp_path, monkeypatch):
    from absl import flags

    for name, default in (("run_squad", 384), ("run_classifier", 128)):
        (tmp_path / f"{name}.py").write_text(
            textwrap.dedent(
                f"""
                from absl import flags
                flags.DEFINE_integer("max_seq_length", {default}, "len")
                """
            )
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        conftest.load_script("run_squad")
        assert flags.FLAGS["max_seq_length"].default == 384
        conftest.load_script("run_classifier")
        assert flags.FLAGS["max_seq_length"].default == 128
        conftest.load_script("run_squad")
        assert flags.FLAGS["max_seq_length"].default == 384
    finally:
        delattr(flags.FLAGS, "max_seq_length")
        for name in ("run_squad", "run_classifier"):
            sys.modules.pop(name, None)


def test_fixtures_live_inside_the_repository():
    for path in (conftest.GOLDEN, conftest.VOCAB_UNCASED):
        assert os.path.exists(path)
        assert os.path.commonpath([path, conftest.REPO]) == conftest.REPO


def test_write_checkpoint_stores_exactly_the_given_names_and_values(tmp_path):
    import numpy as np
    import tensorflow as tf

    values = {
        "output_weights": np.arange(6, dtype=np.float32).reshape(2, 3),
        "output_weights/adam_m": np.full([2, 3], 0.5, np.float32),
        "global_step": np.int64(7),
    }
    path = conftest.write_checkpoint(tmp_path / "model.ckpt", values, global_step=7)
    assert path == str(tmp_path / "model.ckpt-7")
    assert dict(tf.train.list_variables(path)) == {
        "output_weights": [2, 3],
        "output_weights/adam_m": [2, 3],
        "global_step": [],
    }
    stored = conftest.checkpoint_values(path)
    for name, value in values.items():
        np.testing.assert_array_equal(stored[name], value)
    assert stored["global_step"].dtype == np.int64


def test_tiny_bert_config_overrides_and_file(tmp_path):
    import json

    config = conftest.tiny_bert_config(50, hidden_size=64, num_hidden_layers=1)
    assert (config["vocab_size"], config["hidden_size"], config["num_hidden_layers"]) == (
        50,
        64,
        1,
    )
    path = conftest.write_bert_config(tmp_path / "c.json", 50, hidden_size=64, num_hidden_layers=1)
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == config


@pytest.mark.slow
def test_run_code_sees_the_repository_and_reports_failure():
    done = conftest.run_code(
        """
        import tokenization
        print(tokenization.__file__)
        sys.exit(3)
        """
    )
    assert done.returncode == 3
    assert done.stdout.startswith(conftest.REPO)


def test_flag_args_apply_overrides_and_drop_none():
    defaults = {"vocab_file": "v.txt", "max_seq_length": 32, "do_train": "true"}
    assert conftest.flag_args(defaults, max_seq_length=16, do_train=None, layers="-1") == [
        "--vocab_file=v.txt",
        "--max_seq_length=16",
        "--layers=-1",
    ]
    assert defaults["max_seq_length"] == 32


def test_write_text_and_write_lines_write_utf8(tmp_path):
    path = conftest.write_text(tmp_path / "a.txt", "café\n\nx\n")
    assert path == str(tmp_path / "a.txt")
    assert (tmp_path / "a.txt").read_bytes() == b"caf\xc3\xa9\n\nx\n"
    conftest.write_lines(tmp_path / "b.txt", ["café", "", "x"])
    assert (tmp_path / "b.txt").read_bytes() == (tmp_path / "a.txt").read_bytes()


@pytest.mark.slow
def test_run_checks_fails_when_a_check_fails():
    conftest.run_checks("assert tf.compat.v1.global_variables() == []")
    with pytest.raises(AssertionError, match="ZeroDivisionError"):
        conftest.run_checks("1 / 0")
