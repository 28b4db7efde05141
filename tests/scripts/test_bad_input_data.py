"""Bad input, round two: a vocabulary or data file that was accepted and then misread.

A vocabulary listing a token twice (the ids of one of the lines are never
used), an uncased vocabulary with --do_lower_case=False (every capitalised
word is lost), SQuAD training answers mostly not at their answer_start,
repeated question ids in data to predict, SQuAD 2.0 data without
--version_2_with_negative, a CSV header or JSON line naming a column twice.
Every script that reads such a file refuses it, naming the file and what is
wrong, before writing anything.
"""

import json
import os

import numpy as np
import pytest
from bad_input_fixtures import (
    CORPUS,
    NER,
    SENTIMENT,
    assert_refused,
    assert_runs,
    cased_tokens,
    classifier_args,
    uncased_tokens,
    write_model_files,
)
from helpers import flag_args, write_checkpoint, write_lines, write_text

import modeling

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """Model files with an uncased vocabulary, with a vocabulary listing a token twice,
    with a cased one, and a checkpoint of every variable of the uncased model."""
    directory = tmp_path_factory.mktemp("model")
    vocab, config = write_model_files(str(directory))
    twice = uncased_tokens()
    twice[900] = twice[400]
    vocab_twice = write_lines(directory / "vocab_twice.txt", twice)
    cased_vocab, cased_config = write_model_files(str(directory / "cased"), cased_tokens())
    paths = {"vocab": vocab, "config": config, "vocab_twice": vocab_twice}
    paths.update(cased_vocab=cased_vocab, cased_config=cased_config)
    for name, config_file in (("checkpoint", config), ("cased_checkpoint", cased_config)):
        with open(config_file, encoding="utf-8") as f:
            bert_config = modeling.BertConfig.from_dict(json.load(f))
        paths[name] = write_checkpoint(
            str(directory / name / "model.ckpt"),
            {
                n: np.zeros(shape, np.float32)
                for n, shape in modeling.bert_variable_shapes(bert_config).items()
            },
        )
    paths["sentences"] = write_lines(directory / "sentences.txt", ["The Sun is light ."])
    return paths


def _features(model, tmp, **flags):
    defaults = {
        "input_file": model["sentences"],
        "output_file": str(tmp / "out" / "features.jsonl"),
        "vocab_file": model["vocab"],
        "bert_config_file": model["config"],
        "init_checkpoint": model["checkpoint"],
        "max_seq_length": "16",
        "layers": "-1",
    }
    return flag_args(defaults, **flags)


def _pretraining_data(model, tmp, **flags):
    defaults = {
        "input_file": CORPUS,
        "output_file": str(tmp / "out.tfrecord"),
        "vocab_file": model["vocab"],
        "max_seq_length": "32",
        "dupe_factor": "1",
    }
    return flag_args(defaults, **flags)


def _ner(model, tmp, **flags):
    defaults = {
        "data_dir": NER,
        "do_train": "true",
        "vocab_file": model["vocab"],
        "bert_config_file": model["config"],
        "max_seq_length": "32",
        "output_dir": str(tmp / "out"),
    }
    return flag_args(defaults, **flags)


def _squad(model, tmp, **flags):
    defaults = {
        "vocab_file": model["vocab"],
        "bert_config_file": model["config"],
        "max_seq_length": "48",
        "max_query_length": "16",
        "doc_stride": "16",
        "output_dir": str(tmp / "out"),
    }
    return flag_args(defaults, **flags)


def _cases(model, tmp, flags):
    return {
        "run_classifier": (
            "run_classifier.py",
            classifier_args(model["vocab"], model["config"], tmp / "out", **flags),
        ),
        "extract_features": ("extract_features.py", _features(model, tmp, **flags)),
        "create_pretraining_data": (
            "create_pretraining_data.py",
            _pretraining_data(model, tmp, **flags),
        ),
        "run_ner": ("run_ner.py", _ner(model, tmp, **flags)),
        "run_squad": (
            "run_squad.py",
            _squad(model, tmp, do_predict="true", predict_file=_squad_file(tmp, 4), **flags),
        ),
    }


SCRIPTS = ["run_classifier", "extract_features", "create_pretraining_data", "run_ner", "run_squad"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_vocabulary_listing_a_token_twice_is_refused(model, tmp_path, script):
    name, args = _cases(model, tmp_path, {"vocab_file": model["vocab_twice"]})[script]
    token = uncased_tokens()[400]
    assert_refused(tmp_path, name, args, model["vocab_twice"], "line 901", repr(token), "line 401")


@pytest.mark.parametrize("script", SCRIPTS)
def test_uncased_vocabulary_with_do_lower_case_false_is_refused(model, tmp_path, script):
    name, args = _cases(model, tmp_path, {"do_lower_case": "false"})[script]
    assert_refused(tmp_path, name, args, "--do_lower_case=False", model["vocab"], "uncased")


def test_cased_vocabulary_with_do_lower_case_false_is_accepted(model, tmp_path):
    assert_runs(
        "extract_features.py",
        *_features(
            model,
            tmp_path,
            do_lower_case="false",
            vocab_file=model["cased_vocab"],
            bert_config_file=model["cased_config"],
            init_checkpoint=model["cased_checkpoint"],
        ),
    )
    with open(tmp_path / "out" / "features.jsonl", encoding="utf-8") as f:
        tokens = [feature["token"] for feature in json.loads(f.readline())["features"]]
    assert tokens[:2] == ["[CLS]", "The"]  # the cased piece, found in the cased text


# ---------------------------------------------------------------- SQuAD


def _squad_file(tmp, count, misplaced=0, repeat_id=False, impossible=False, name="squad.json"):
    """`count` questions on one context, each answered by one of its words; the
    answer_start of the first `misplaced` points at the next word instead. With
    repeat_id the last question repeats the first's id; with impossible one more is
    SQuAD 2.0's unanswerable kind."""
    words = (
        "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
        "november oscar papa quebec romeo sierra tango"
    ).split()
    context = " ".join(words) + " ."
    starts = [context.index(word) for word in words]
    qas = []
    for i in range(count):
        j = i % len(words)
        start = starts[(j + 1) % len(words)] if i < misplaced else starts[j]
        qas.append(
            {
                "id": f"q{i}",
                "question": f"where is {words[j]} ?",
                "answers": [{"text": words[j], "answer_start": start}],
            }
        )
    if repeat_id:
        qas[-1]["id"] = qas[0]["id"]
    if impossible:
        qas.append({"id": "none", "question": "why ?", "answers": [], "is_impossible": True})
    data = {
        "version": "1.1",
        "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}],
    }
    return write_text(os.path.join(tmp, name), json.dumps(data))


def test_squad_answers_mostly_off_their_answer_start_are_refused(model, tmp_path):
    train = _squad_file(tmp_path, 40, misplaced=26)
    assert_refused(
        tmp_path,
        "run_squad.py",
        _squad(model, tmp_path, do_train="true", train_file=train, init_checkpoint=None),
        train,
        "26 of 40",
        "answer_start",
        "question id q0",
    )


def test_a_few_squad_answers_off_their_answer_start_are_skipped(tmp_path):
    """The original skips the odd answer it cannot find; that stays (with a count)."""
    from bert_lib.task_data import squad_data

    train = _squad_file(tmp_path, 40, misplaced=2)
    examples = squad_data.read_squad_examples(train, True, False)
    assert len(examples) == 38


def test_repeated_question_ids_to_predict_are_refused(model, tmp_path):
    predict = _squad_file(tmp_path, 5, repeat_id=True)
    assert_refused(
        tmp_path,
        "run_squad.py",
        _squad(
            model,
            tmp_path,
            do_predict="true",
            predict_file=predict,
            init_checkpoint=model["checkpoint"],
        ),
        predict,
        "question id 'q0' is used twice",
        "qas[0]",
        "qas[4]",
    )


def test_squad_2_training_data_names_the_flag(model, tmp_path):
    train = _squad_file(tmp_path, 20, impossible=True)
    assert_refused(
        tmp_path,
        "run_squad.py",
        _squad(model, tmp_path, do_train="true", train_file=train),
        train,
        "question id none",
        "--version_2_with_negative",
    )


# ---------------------------------------------------------------- columns named twice


def _custom_split(tmp, train_text, name):
    data = tmp / "custom"
    data.mkdir()
    train = write_text(data / name, train_text)
    rows = ["text,label"] + [f"sentence {i},{'ab'[i % 2]}" for i in range(8)]
    write_lines(data / "dev.csv", rows)
    return str(data), train


@pytest.mark.parametrize(
    "name, text, names",
    [
        (
            "train.csv",
            "label,text,text\na,one,two\nb,three,four\n",
            ["line 1", "'text' twice", "columns 2 and 3"],
        ),
        ("train.tsv", "text\tlabel\tlabel\none\ta\tb\n", ["line 1", "'label' twice"]),
        (
            "train.jsonl",
            '{"text": "one", "label": "a"}\n{"text": "x", "text": "y", "label": "b"}\n',
            ["line 2", "'text' is given twice"],
        ),
    ],
    ids=["csv", "tsv", "jsonl"],
)
def test_a_column_named_twice_is_refused(model, tmp_path, name, text, names):
    data, train = _custom_split(tmp_path, text, name)
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(
            model["vocab"],
            model["config"],
            tmp_path / "out",
            task_name="custom",
            data_dir=data,
            do_eval="true",
        ),
        train,
        *names,
    )


def test_unnamed_trailing_columns_stay_accepted(tmp_path):
    """Spreadsheets write empty header cells for empty trailing columns: not names."""
    from bert_lib.task_data import custom_data

    path = write_text(tmp_path / "train.csv", "text,label,,\none,a,,\ntwo,b,,\n")
    rows = custom_data.read_rows(path)
    assert [row["text"] for row in rows] == ["one", "two"]


def test_glue_data_is_still_read_as_before(model, tmp_path):
    """SST-2's files name their columns once; training on them runs."""
    assert_runs(
        "run_classifier.py",
        *classifier_args(model["vocab"], model["config"], tmp_path / "out", data_dir=SENTIMENT),
    )
