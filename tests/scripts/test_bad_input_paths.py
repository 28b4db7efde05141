"""Bad input, round two: outputs over inputs, unwritable outputs, and runs that left files.

An output path equal to an input path used to replace the user's corpus or
sentences; a refused run left the --output_dir it had made (a TF_CONFIG
mistake) or a complete train.tf_record; a truncated TFRecord was found only
when training reached it; an unwritable or file-as-parent output was
reported without the flag. Each is refused before any work now, naming the
flag, with nothing left behind.
"""

import json
import os

import numpy as np
import pytest
from bad_input_fixtures import (
    CORPUS,
    SENTIMENT,
    assert_refused,
    assert_runs,
    classifier_args,
    pretraining_args,
    write_model_files,
)
from helpers import flag_args, write_checkpoint, write_lines, write_text

import modeling

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("model")
    vocab, config = write_model_files(str(directory))
    with open(config, encoding="utf-8") as f:
        bert_config = modeling.BertConfig.from_dict(json.load(f))
    checkpoint = write_checkpoint(
        str(directory / "ckpt" / "model.ckpt"),
        {
            name: np.zeros(shape, np.float32)
            for name, shape in modeling.bert_variable_shapes(bert_config).items()
        },
    )
    records = str(directory / "records.tfrecord")
    assert_runs(
        "create_pretraining_data.py",
        f"--input_file={CORPUS}",
        f"--output_file={records}",
        f"--vocab_file={vocab}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=1",
    )
    return {"vocab": vocab, "config": config, "checkpoint": checkpoint, "records": records}


def _unchanged(path):
    with open(path, "rb") as f:
        return f.read()


def _pretraining(model, out, **flags):
    return pretraining_args(model["config"], model["records"], out, **flags)


# ---------------------------------------------------------------- output = input


def test_create_vocab_refuses_to_write_over_its_corpus(tmp_path):
    corpus = write_text(tmp_path / "corpus.txt", "the sun is light .\n" * 50)
    before = _unchanged(corpus)
    assert_refused(
        tmp_path,
        "create_vocab.py",
        [f"--input_file={corpus}", f"--output_file={corpus}", "--vocab_size=100"],
        f"--output_file={corpus}",
        f"--input_file={corpus}",
    )
    assert _unchanged(corpus) == before


def test_create_vocab_compares_files_not_spellings(tmp_path):
    corpus = write_text(tmp_path / "corpus.txt", "the sun is light .\n" * 50)
    os.symlink(corpus, tmp_path / "link.txt")
    assert_refused(
        tmp_path,
        "create_vocab.py",
        [
            f"--input_file={tmp_path}/*.txt",
            f"--output_file={tmp_path}/./link.txt",
            "--vocab_size=100",
        ],
        "--output_file",
        "is also the input",
    )


@pytest.mark.parametrize("over", ["input_file", "vocab_file"])
def test_create_pretraining_data_refuses_to_write_over_its_inputs(model, tmp_path, over):
    corpus = write_lines(tmp_path / "corpus.txt", ["the sun is light .", "water is cold ."] * 20)
    vocab = str(tmp_path / "vocab.txt")
    with open(model["vocab"], encoding="utf-8") as f, open(vocab, "w", encoding="utf-8") as g:
        g.write(f.read())
    target = corpus if over == "input_file" else vocab
    before = _unchanged(target)
    assert_refused(
        tmp_path,
        "create_pretraining_data.py",
        [
            f"--input_file={corpus}",
            f"--output_file={tmp_path}/a.tfrecord,{target}",
            f"--vocab_file={vocab}",
            "--max_seq_length=32",
        ],
        f"--output_file={target}",
        f"--{over}",
    )
    assert _unchanged(target) == before


@pytest.mark.parametrize("pooled", [False, True])
def test_extract_features_refuses_to_write_over_its_input(model, tmp_path, pooled):
    sentences = write_lines(tmp_path / "sentences.txt", ["the sun is light ."])
    before = _unchanged(sentences)
    flags = {"output_file": sentences}
    if pooled:
        flags = {
            "output_file": str(tmp_path / "f.jsonl"),
            "pooling": "mean",
            "pooled_output_file": sentences,
        }
    args = flag_args(
        {
            "input_file": sentences,
            "vocab_file": model["vocab"],
            "bert_config_file": model["config"],
            "init_checkpoint": model["checkpoint"],
            "max_seq_length": "16",
            "layers": "-1",
            **flags,
        }
    )
    assert_refused(tmp_path, "extract_features.py", args, sentences, "--input_file")
    assert _unchanged(sentences) == before


def test_run_classifier_refuses_a_submission_file_over_its_data(model, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev", "test"):
        with open(os.path.join(SENTIMENT, f"{split}.tsv"), encoding="utf-8") as f:
            write_text(data / f"{split}.tsv", f.read())
    before = _unchanged(data / "test.tsv")
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(
            model["vocab"],
            model["config"],
            tmp_path / "out",
            data_dir=data,
            do_predict="true",
            glue_submission_file=data / "test.tsv",
        ),
        f"--glue_submission_file={data / 'test.tsv'}",
        "--data_dir",
    )
    assert _unchanged(data / "test.tsv") == before


def test_run_classifier_refuses_an_output_dir_file_over_its_input(model, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    texts = write_lines(out / "text_predictions.jsonl", ["the sun is light ."])
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(model["vocab"], model["config"], out, predict_text_file=texts),
        "text_predictions.jsonl",
        "--predict_text_file",
    )


# ---------------------------------------------------------------- where outputs go


@pytest.mark.parametrize("script", ["run_classifier", "run_pretraining", "run_squad", "run_ner"])
def test_output_dir_under_a_file_names_the_flag(model, tmp_path, script):
    a_file = write_text(tmp_path / "a_file", "keep me\n")
    out = os.path.join(a_file, "out")
    common = {
        "vocab_file": model["vocab"],
        "bert_config_file": model["config"],
        "max_seq_length": "32",
        "output_dir": out,
        "do_train": "true",
    }
    squad = write_text(tmp_path / "squad.json", json.dumps({"data": []}))
    args = {
        "run_classifier": classifier_args(model["vocab"], model["config"], out),
        "run_pretraining": _pretraining(model, out),
        "run_squad": flag_args(common, train_file=squad, max_query_length="8", doc_stride="8"),
        "run_ner": flag_args(common, data_dir=os.path.join(os.path.dirname(SENTIMENT), "ner")),
    }[script]
    assert_refused(tmp_path, f"{script}.py", args, "--output_dir", a_file, "is a file")


@pytest.mark.parametrize("script", ["run_classifier", "create_vocab", "extract_features"])
def test_output_nobody_can_write_names_the_flag(model, tmp_path, script):
    """/proc takes no new directory or file, not even from root."""
    sentences = write_lines(tmp_path / "s.txt", ["the sun is light ."])
    args, flag = {
        "run_classifier": (
            classifier_args(model["vocab"], model["config"], "/proc/bert_out"),
            "--output_dir",
        ),
        "create_vocab": (
            [f"--input_file={CORPUS}", "--output_file=/proc/vocab.txt"],
            "--output_file",
        ),
        "extract_features": (
            flag_args(
                {
                    "input_file": sentences,
                    "output_file": "/proc/x/f.jsonl",
                    "vocab_file": model["vocab"],
                    "bert_config_file": model["config"],
                    "init_checkpoint": model["checkpoint"],
                    "layers": "-1",
                    "max_seq_length": "16",
                }
            ),
            "--output_file",
        ),
    }[script]
    assert_refused(tmp_path, f"{script}.py", args, flag, "cannot write in /proc")


# ---------------------------------------------------------------- nothing left behind


BAD_TF_CONFIG = {"TF_CONFIG": json.dumps({"cluster": {"worker": ["localhost:1"]}})}


def _training(script, model, out):
    if script == "run_pretraining.py":
        return _pretraining(model, out)
    return classifier_args(model["vocab"], model["config"], out)


@pytest.mark.parametrize("script", ["run_pretraining.py", "run_classifier.py"])
def test_tf_config_mistake_leaves_no_output_dir_and_no_training_records(script, model, tmp_path):
    """Refused before the output directory is made, where run_classifier writes its
    training records."""
    out = tmp_path / "out"
    assert_refused(
        tmp_path,
        script,
        [*_training(script, model, out), "--distribution_strategy=multi_worker"],
        "TF_CONFIG",
        env=BAD_TF_CONFIG,
    )
    assert not out.exists()


def test_more_gpus_than_visible_is_refused_before_the_records(model, tmp_path):
    out = tmp_path / "out"
    assert_refused(
        tmp_path,
        "run_classifier.py",
        [
            *classifier_args(model["vocab"], model["config"], out),
            "--distribution_strategy=mirrored",
            "--num_gpus=2",
        ],
        "--num_gpus=2",
        "GPU(s) are visible",
    )
    assert not out.exists()


def test_batch_that_does_not_split_into_micro_batches_is_refused_before_the_records(
    model, tmp_path
):
    out = tmp_path / "out"
    assert_refused(
        tmp_path,
        "run_classifier.py",
        [*classifier_args(model["vocab"], model["config"], out), "--num_accumulation_steps=3"],
        "train_batch_size=16",
        "--num_accumulation_steps=3",
    )
    assert not out.exists()


def test_truncated_records_are_found_before_training(model, tmp_path):
    """Cut in its last record, the file would fail only when training reached it."""
    with open(model["records"], "rb") as f:
        data = f.read()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(data[: len(data) - 100])
    out = tmp_path / "out"
    assert_refused(
        tmp_path,
        "run_pretraining.py",
        _pretraining(model, out, input_file=str(cut), num_train_steps="1"),
        "--input_file",
        str(cut),
        "cut short",
    )
    assert not out.exists()
