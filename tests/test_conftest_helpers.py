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
