"""Bad input, round two: convert_checkpoint.py writes a model every script accepts, or nothing.

In every direction (tf_to_hf, hf_to_tf, tf_to_hub, hub_to_tf) a config with
fewer layers than the weights, a vocabulary that does not match the embedding
rows, a vocabulary listing a token twice and an uncased vocabulary under
do_lower_case=False used to be written with exit 0 (the scripts then refused
the result, or used it wrongly). Each is now refused before anything is
written: exit 1, one ERROR line naming the file at fault, no output directory.
"""

import json
import os
import shutil

import numpy as np
import pytest
from bad_input_fixtures import (
    assert_refused,
    assert_runs,
    cased_tokens,
    uncased_tokens,
    write_model_files,
)
from helpers import flag_args, write_checkpoint, write_lines

import modeling

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A 2-layer pre-training checkpoint (every variable, random), its config and vocabulary,
    and the same model converted to Hugging Face's format and to a TF Hub encoder."""
    directory = tmp_path_factory.mktemp("model")
    vocab, config = write_model_files(str(directory))
    _, config_one_layer = write_model_files(str(directory / "one"), num_hidden_layers=1)
    with open(config, encoding="utf-8") as f:
        bert_config = modeling.BertConfig.from_dict(json.load(f))
    rng = np.random.default_rng(0)
    checkpoint = write_checkpoint(
        str(directory / "ckpt" / "model.ckpt"),
        {
            name: rng.normal(0, 0.02, shape).astype(np.float32)
            for name, shape in modeling.bert_variable_shapes(bert_config).items()
        },
    )
    short_vocab = write_lines(directory / "short_vocab.txt", uncased_tokens()[:500])
    twice = uncased_tokens()
    twice[700] = twice[600]
    vocab_twice = write_lines(directory / "vocab_twice.txt", twice)
    paths = {
        "vocab": vocab,
        "config": config,
        "config_one_layer": config_one_layer,
        "checkpoint": checkpoint,
        "short_vocab": short_vocab,
        "vocab_twice": vocab_twice,
        "hf": str(directory / "hf"),
        "hub": str(directory / "hub"),
    }
    for direction in ("tf_to_hf", "tf_to_hub"):
        out = paths["hf" if direction == "tf_to_hf" else "hub"]
        assert_runs("convert_checkpoint.py", *_tf_args(paths, direction, out))
    return paths


def _tf_args(paths, direction, output_dir, **flags):
    defaults = {
        "direction": direction,
        "input": paths["checkpoint"],
        "bert_config_file": paths["config"],
        "vocab_file": paths["vocab"],
        "output_dir": str(output_dir),
    }
    return flag_args(defaults, **flags)


@pytest.mark.parametrize("direction", ["tf_to_hf", "tf_to_hub"])
@pytest.mark.parametrize(
    "case, flags, names",
    [
        ("fewer_layers", {"bert_config_file": "config_one_layer"}, ["2 encoder layers", "is 1"]),
        ("short_vocab", {"vocab_file": "short_vocab"}, ["500 tokens", "vocab_size"]),
        ("token_twice", {"vocab_file": "vocab_twice"}, ["line 701", "line 601"]),
        ("uncased_vocab_cased_text", {"do_lower_case": "false"}, ["--do_lower_case=False"]),
    ],
)
def test_checkpoint_converters_refuse_an_inconsistent_model(
    model, tmp_path, direction, case, flags, names
):
    flags = {name: model.get(value, value) for name, value in flags.items()}
    out = tmp_path / "out"
    assert_refused(
        tmp_path, "convert_checkpoint.py", _tf_args(model, direction, out, **flags), *names
    )
    assert not out.exists()


def _hf_copy(model, tmp_path, edit):
    hf = str(tmp_path / "hf")
    shutil.copytree(model["hf"], hf)
    edit(hf)
    return hf


def _fewer_layers(hf):
    with open(os.path.join(hf, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config["num_hidden_layers"] = 1
    with open(os.path.join(hf, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)


def _short_vocab(hf):
    write_lines(os.path.join(hf, "vocab.txt"), uncased_tokens()[:500])


def _cased_setting(hf):
    with open(os.path.join(hf, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": False}, f)


@pytest.mark.parametrize(
    "edit, names",
    [
        (_fewer_layers, ["2 encoder layers", "num_hidden_layers is 1", "config.json"]),
        (_short_vocab, ["vocab.txt has 500 tokens", "vocab_size", "is 1005"]),
        (_cased_setting, ["tokenizer_config.json's do_lower_case=False", "uncased"]),
    ],
    ids=["fewer_layers", "short_vocab", "cased_setting"],
)
def test_hf_to_tf_refuses_an_inconsistent_model(model, tmp_path, edit, names):
    hf = _hf_copy(model, tmp_path, edit)
    out = tmp_path / "out"
    args = ["--direction=hf_to_tf", f"--input={hf}", f"--output_dir={out}"]
    assert_refused(tmp_path, "convert_checkpoint.py", args, *names)
    assert not out.exists()


def test_hub_to_tf_refuses_a_vocabulary_that_does_not_fit_the_embedding(model, tmp_path):
    hub = str(tmp_path / "hub")
    shutil.copytree(model["hub"], hub)
    write_lines(os.path.join(hub, "assets", "vocab.txt"), uncased_tokens()[:500])
    out = tmp_path / "out"
    args = ["--direction=hub_to_tf", f"--input={hub}", f"--output_dir={out}"]
    assert_refused(tmp_path, "convert_checkpoint.py", args, "500 tokens", "1005")
    assert not out.exists()


def test_converted_models_are_accepted_by_the_scripts(model, tmp_path):
    """What the converters write in each direction runs in a script that reads it."""
    back = tmp_path / "back"
    assert_runs(
        "convert_checkpoint.py",
        "--direction=hf_to_tf",
        f"--input={model['hf']}",
        f"--output_dir={back}",
    )
    sentences = write_lines(tmp_path / "s.txt", ["the sun is light .", "water ||| air"])
    assert_runs(
        "extract_features.py",
        f"--input_file={sentences}",
        f"--output_file={tmp_path}/f.jsonl",
        f"--vocab_file={back}/vocab.txt",
        f"--bert_config_file={back}/bert_config.json",
        f"--init_checkpoint={back}/bert_model.ckpt",
        "--max_seq_length=16",
        "--layers=-1",
    )


def test_a_cased_vocabulary_converts_with_do_lower_case_false(model, tmp_path):
    vocab, config = write_model_files(str(tmp_path / "cased"), tokens=cased_tokens())
    with open(config, encoding="utf-8") as f:
        bert_config = modeling.BertConfig.from_dict(json.load(f))
    checkpoint = write_checkpoint(
        str(tmp_path / "ckpt" / "model.ckpt"),
        {
            name: np.zeros(shape, np.float32)
            for name, shape in modeling.bert_variable_shapes(bert_config).items()
        },
    )
    paths = {"checkpoint": checkpoint, "config": config, "vocab": vocab}
    assert_runs(
        "convert_checkpoint.py",
        *_tf_args(paths, "tf_to_hf", tmp_path / "hf", do_lower_case="false"),
    )
