"""The one numeric-flag validator: every integer and float flag says what it may hold.

Negative learning rates, --warmup_proportion outside [0, 1], --max_seq_length
too short for [CLS] x [SEP], nan and inf used to reach training (a traceback
leaving train.tf_record, TensorFlow's parse error at training time, or a run
on [CLS] [SEP]). Each script's numeric flags are checked when it starts,
against what the original's code assumes of them, and a refused value is one
ERROR line naming the flag.
"""

import json
import math
import os

import numpy as np
import pytest
from bad_input_fixtures import assert_refused, classifier_args, write_model_files
from helpers import SCRIPTS, flag_args, run_code, write_checkpoint, write_lines

import modeling
from bert_lib import script_flags


def test_valid_values_and_the_messages_of_the_others():
    assert script_flags.POSITIVE.problem("train_batch_size", 4) is None
    assert (
        script_flags.POSITIVE.problem("train_batch_size", 0)
        == "--train_batch_size must be positive, got 0"
    )
    assert (
        script_flags.NON_NEGATIVE.problem("learning_rate", -2e-05)
        == "--learning_rate=-2e-05: must be 0 or positive"
    )
    assert script_flags.FRACTION.problem("warmup_proportion", 1.0) is None
    assert (
        script_flags.FRACTION.problem("warmup_proportion", 1.5)
        == "--warmup_proportion=1.5: must be between 0 and 1"
    )
    assert script_flags.SEQUENCE_LENGTH.problem("max_seq_length", 2) == (
        "--max_seq_length=2: must be at least 3 ([CLS], a word piece and [SEP])"
    )
    for value in (math.nan, math.inf, -math.inf):
        assert (
            script_flags.ANY_NUMBER.problem("x", value) == f"--x={value}: must be a finite number"
        )


def test_every_numeric_flag_of_every_script_says_what_it_may_hold():
    """Imported together, the scripts define every flag they have: each integer and float
    flag among them has its Valid, and every default is valid."""
    result = run_code(
        f"""
        import importlib
        from absl import flags
        from bert_lib import script_flags
        for script in {list(SCRIPTS)!r}:
            importlib.import_module(script)
        numeric = set()
        ours = set({list(SCRIPTS)!r})
        for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
            if module not in ours and not module.startswith("bert_lib"):
                continue  # absl's and TensorFlow's own flags
            for flag in module_flags:
                if flag.flag_type() in ("int", "float"):
                    numeric.add(flag.name)
        missing = sorted(numeric - set(script_flags.NUMERIC_FLAGS))
        assert not missing, missing
        flags.FLAGS(["x"])
        flags.FLAGS.validate_all_flags()
        print("OK", len(numeric))
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[0] == "OK" and int(result.stdout.split()[1]) >= 40


def test_a_flags_rule_refuses_its_value_on_the_command_line_naming_the_flag(capsys):
    """The rule is an absl validator: the command line is refused as it is parsed, in the
    rule's own words, and a value set later is refused too."""
    from absl import flags

    from bert_lib.plumbing import command_line

    name = "test_numeric_flags_rate"
    script_flags.define_float(name, 0.5, "A rate for this test.", script_flags.FRACTION, __name__)
    try:
        with pytest.raises(SystemExit) as exit_info:
            command_line.parse_flags([name, f"--{name}=nan"])
        assert exit_info.value.code == 1
        assert capsys.readouterr().err == f"ERROR: --{name}=nan: must be a finite number\n"
        flags.FLAGS.unparse_flags()
        flags.FLAGS([name, f"--{name}=0.25"])
        assert flags.FLAGS[name].value == 0.25
        with pytest.raises(flags.IllegalFlagValueError, match=f"--{name}=1.5: must be between"):
            setattr(flags.FLAGS, name, 1.5)
    finally:
        flags.FLAGS.unparse_flags()
        delattr(flags.FLAGS, name)
        del script_flags.NUMERIC_FLAGS[name]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_model_files(str(tmp_path_factory.mktemp("model")))


# (script, flags, what its ERROR line says); the first flag is the one at fault.
CASES = [
    (
        "run_classifier",
        {"learning_rate": "-2e-05"},
        "--learning_rate=-2e-05: must be 0 or positive",
    ),
    ("run_classifier", {"learning_rate": "nan"}, "--learning_rate=nan: must be a finite number"),
    (
        "run_classifier",
        {"warmup_proportion": "-0.1"},
        "--warmup_proportion=-0.1: must be between 0 and 1",
    ),
    (
        "run_classifier",
        {"warmup_proportion": "1.5"},
        "--warmup_proportion=1.5: must be between 0 and 1",
    ),
    ("run_classifier", {"max_seq_length": "1"}, "--max_seq_length=1: must be at least 3"),
    ("run_classifier", {"max_seq_length": "2"}, "--max_seq_length=2: must be at least 3"),
    (
        "run_classifier",
        {"num_train_epochs": "-1"},
        "--num_train_epochs=-1.0: must be 0 or positive",
    ),
    (
        "run_classifier",
        {"save_checkpoints_steps": "0"},
        "--save_checkpoints_steps must be positive, got 0",
    ),
    ("run_squad", {"n_best_size": "0"}, "--n_best_size must be positive, got 0"),
    ("run_squad", {"max_answer_length": "-3"}, "--max_answer_length must be positive"),
    ("run_pretraining", {"learning_rate": "inf"}, "--learning_rate=inf: must be a finite"),
    (
        "run_pretraining",
        {"num_warmup_steps": "-5", "do_train": None, "do_eval": "true"},
        "--num_warmup_steps=-5: must be 0 or positive",
    ),
    ("run_ner", {"warmup_proportion": "2"}, "--warmup_proportion=2.0: must be between 0"),
    ("extract_features", {"max_seq_length": "2"}, "--max_seq_length=2: must be at least 3"),
    (
        "create_pretraining_data",
        {"masked_lm_prob": "nan"},
        "--masked_lm_prob=nan: must be a finite number",
    ),
    ("create_vocab", {"min_frequency": "0"}, "--min_frequency must be positive, got 0"),
]


def _script_args(script, vocab, config, tmp, flags):
    """Flags each script needs to get past parsing (what they name need not exist; the
    classifier's are a short training run), with `flags` applied."""
    if script == "run_classifier":
        return classifier_args(vocab, config, tmp / "out", **flags)
    model = {"vocab_file": vocab, "bert_config_file": config}
    files = {"input_file": str(tmp / "in.txt"), "output_file": str(tmp / "out.txt")}
    training = {"output_dir": str(tmp / "out"), "do_train": "true"}
    needed = {
        "run_squad": {**model, **training},
        "run_pretraining": {
            "bert_config_file": config,
            "input_file": files["input_file"],
            **training,
        },
        "run_ner": {**model, **training, "data_dir": str(tmp)},
        "extract_features": {**model, **files, "init_checkpoint": str(tmp / "model.ckpt")},
        "create_pretraining_data": {**files, "vocab_file": vocab},
        "create_vocab": files,
    }[script]
    return flag_args(needed, **flags)


def _case_id(script, flags):
    name, value = next(iter(flags.items()))
    return f"{script}-{name}={value}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "script, flags, message", CASES, ids=[_case_id(s, f) for s, f, _ in CASES]
)
def test_every_script_refuses_a_number_its_flag_does_not_allow(
    model, tmp_path, script, flags, message
):
    vocab, config = model
    args = _script_args(script, vocab, config, tmp_path, flags)
    assert_refused(tmp_path, f"{script}.py", args, message)
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.slow
def test_max_seq_length_too_short_for_sentence_pairs_is_refused(model, tmp_path):
    """A pair needs [CLS] a [SEP] b [SEP]: at 3 or 4 positions both texts are cut away."""
    vocab, config = model
    data = tmp_path / "pairs"
    data.mkdir()
    rows = ["premise,hypothesis,label"] + [f"a {i},b {i},{'xy'[i % 2]}" for i in range(8)]
    write_lines(data / "train.csv", rows)
    args = classifier_args(
        vocab,
        config,
        tmp_path / "out",
        task_name="custom",
        data_dir=data,
        text_a_column="premise",
        text_b_column="hypothesis",
        max_seq_length="4",
    )
    assert_refused(
        tmp_path,
        "run_classifier.py",
        args,
        "--max_seq_length=4",
        "at least 5 for the sentence pairs",
    )
    sentences = write_lines(tmp_path / "s.txt", ["the sun ||| is light"])
    with open(config, encoding="utf-8") as f:
        shapes = modeling.bert_variable_shapes(modeling.BertConfig.from_dict(json.load(f)))
    checkpoint = write_checkpoint(
        str(tmp_path / "ckpt" / "model.ckpt"),
        {name: np.zeros(shape, np.float32) for name, shape in shapes.items()},
    )
    args = flag_args(
        {
            "input_file": sentences,
            "output_file": str(tmp_path / "f.jsonl"),
            "vocab_file": vocab,
            "bert_config_file": config,
            "init_checkpoint": checkpoint,
            "max_seq_length": "4",
            "layers": "-1",
        }
    )
    assert_refused(tmp_path, "extract_features.py", args, "--max_seq_length=4", sentences)
