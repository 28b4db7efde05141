"""Bad input, round two: a model or an output directory that does not fit the run.

An --output_dir holding the run of another model or task, an --init_checkpoint
with more layers than the config, evaluating or predicting with no trained
head, a checkpoint named by one of its files. Each case used to end with exit 0
and a damaged run or results of a random head; each is refused now before any
work (or, where a flag allows it, the log says what is dropped or reused).
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
    classifier_args,
    copy_run,
    pretraining_args,
    write_custom_data,
    write_model_files,
)
from helpers import checkpoint_values, flag_args, write_checkpoint, write_lines, write_text

import modeling

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A 2-layer model's files, a 1-layer config of the same sizes, and a pre-trained-like
    checkpoint of the 2-layer model (no task head)."""
    directory = str(tmp_path_factory.mktemp("model"))
    vocab, config = write_model_files(directory)
    _, config_one_layer = write_model_files(
        os.path.join(directory, "one_layer"), num_hidden_layers=1
    )
    with open(config, encoding="utf-8") as f:
        bert_config = modeling.BertConfig.from_dict(json.load(f))
    rng = np.random.default_rng(0)
    shapes = modeling.bert_variable_shapes(bert_config)
    pretrained = write_checkpoint(
        os.path.join(directory, "pretrained", "model.ckpt"),
        {name: rng.normal(0, 0.02, shape).astype(np.float32) for name, shape in shapes.items()},
    )
    return {
        "dir": directory,
        "vocab": vocab,
        "config": config,
        "config_one_layer": config_one_layer,
        "pretrained": pretrained,
    }


@pytest.fixture(scope="module")
def sst2_run(model, tmp_path_factory):
    """An SST-2 run of the 2-layer model: a checkpoint, results, the run's record."""
    out = tmp_path_factory.mktemp("sst2") / "out"
    assert_runs(
        "run_classifier.py",
        *classifier_args(
            model["vocab"],
            model["config"],
            out,
            do_eval="true",
            init_checkpoint=model["pretrained"],
        ),
    )
    return str(out)


@pytest.fixture(scope="module")
def pretraining_run(model, tmp_path_factory):
    """Pre-training records of the demo corpus and a 2-step pre-training run on them."""
    directory = tmp_path_factory.mktemp("pretraining")
    records = str(directory / "records.tfrecord")
    assert_runs(
        "create_pretraining_data.py",
        f"--input_file={CORPUS}",
        f"--output_file={records}",
        f"--vocab_file={model['vocab']}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=1",
    )
    out = directory / "out"
    assert_runs("run_pretraining.py", *pretraining_args(model["config"], records, out))
    return {"records": records, "out": str(out)}


# ---------------------------------------------------------------- another model


def test_resuming_classifier_with_a_smaller_config_is_refused(model, sst2_run, tmp_path):
    out = copy_run(sst2_run, tmp_path / "out")
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(model["vocab"], model["config_one_layer"], out, num_train_epochs="1"),
        f"--output_dir={out}",
        "another model",
        "2 encoder layers",
        model["config_one_layer"],
    )


def test_resuming_pretraining_with_a_smaller_config_is_refused(model, pretraining_run, tmp_path):
    out = copy_run(pretraining_run["out"], tmp_path / "out")
    args = pretraining_args(
        model["config_one_layer"], pretraining_run["records"], out, num_train_steps="4"
    )
    assert_refused(tmp_path, "run_pretraining.py", args, f"--output_dir={out}", "2 encoder layers")


def test_resuming_with_another_architecture_recorded_is_refused(model, sst2_run, tmp_path):
    """Sizes the checkpoint's shapes cannot show (the activation) are in run.json."""
    out = copy_run(sst2_run, tmp_path / "out")
    _, relu = write_model_files(str(tmp_path / "relu"), hidden_act="relu")
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(model["vocab"], relu, out),
        f"--output_dir={out}",
        "hidden_act is gelu there",
        "but relu",
    )


# ---------------------------------------------------------------- another task


def test_resuming_with_another_task_is_refused(model, sst2_run, tmp_path):
    out = copy_run(sst2_run, tmp_path / "out")
    data = write_custom_data(tmp_path / "spam")
    last = assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(model["vocab"], model["config"], out, task_name="custom", data_dir=data),
        f"--output_dir={out}",
        "another task",
        "--task_name=sst-2",
        "--task_name=custom",
        "--allow_new_task_in_output_dir",
    )
    assert "eval_results.txt" in last  # the other run's results are named


def test_training_another_glue_task_in_a_run_is_refused(model, sst2_run, tmp_path):
    """CoLA and SST-2 both have two labels: only the run's record tells them apart."""
    out = copy_run(sst2_run, tmp_path / "out")
    cola = tmp_path / "cola"
    cola.mkdir()
    rows = "".join(f"src\t{i % 2}\t\tsentence number {i}\n" for i in range(40))
    write_text(cola / "train.tsv", rows)
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(
            model["vocab"],
            model["config"],
            out,
            task_name="cola",
            data_dir=cola,
            num_train_epochs="1",
        ),
        "another task",
        "--task_name=sst-2",
    )


def test_legacy_run_without_labels_file_is_not_continued_as_custom(model, sst2_run, tmp_path):
    """A directory an earlier version wrote has no run.json: labels.txt tells."""
    out = copy_run(sst2_run, tmp_path / "out")
    os.remove(os.path.join(out, "run.json"))
    data = write_custom_data(tmp_path / "spam")
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(model["vocab"], model["config"], out, task_name="custom", data_dir=data),
        "another task",
        "labels.txt",
    )


def test_tagging_over_a_classifier_run_is_refused(model, sst2_run, tmp_path):
    out = copy_run(sst2_run, tmp_path / "out")
    args = flag_args(
        {
            "data_dir": NER,
            "do_train": "true",
            "vocab_file": model["vocab"],
            "bert_config_file": model["config"],
            "max_seq_length": "32",
            "num_train_epochs": "0.1",
            "output_dir": out,
        }
    )
    assert_refused(tmp_path, "run_ner.py", args, "another task", "classification")


def test_allow_new_task_continues_the_run_and_says_what_it_reuses(model, sst2_run, tmp_path):
    out = copy_run(sst2_run, tmp_path / "out")
    data = write_custom_data(tmp_path / "spam")
    log = assert_runs(
        "run_classifier.py",
        *classifier_args(
            model["vocab"],
            model["config"],
            out,
            task_name="custom",
            data_dir=data,
            num_train_epochs="1",
        ),
        "--allow_new_task_in_output_dir",
    )
    warning = [line for line in log.splitlines() if "--allow_new_task_in_output_dir:" in line]
    assert warning and "continuing its checkpoint" in warning[0], log[-3000:]
    assert "--task_name=sst-2" in warning[0] and "eval_results.txt" in warning[0]
    with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert record["task"] == "classification --task_name=custom"
    assert record["labels"] == ["ham", "spam"]


# ---------------------------------------------------------------- --init_checkpoint


def test_init_checkpoint_with_more_layers_than_the_config_is_refused(model, tmp_path):
    last = assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(
            model["vocab"],
            model["config_one_layer"],
            tmp_path / "out",
            init_checkpoint=model["pretrained"],
        ),
        model["pretrained"],
        "2 in the checkpoint",
        "layer_1",
        "--allow_partial_init_checkpoint",
    )
    assert not os.path.exists(tmp_path / "out")
    assert last.startswith("ERROR: --init_checkpoint")


def test_allow_partial_init_checkpoint_loads_the_first_layers_and_says_so(model, tmp_path):
    out = tmp_path / "out"
    log = assert_runs(
        "run_classifier.py",
        *classifier_args(
            model["vocab"], model["config_one_layer"], out, init_checkpoint=model["pretrained"]
        ),
        "--allow_partial_init_checkpoint",
    )
    assert "its layer_1 are not loaded" in log
    # Layer 0 started from the checkpoint: one step of fine-tuning moves it only a little.
    trained = checkpoint_values(str(out))
    start = checkpoint_values(model["pretrained"])
    name = "bert/encoder/layer_0/attention/self/query/kernel"
    assert np.abs(trained[name] - start[name]).max() < 0.01
    assert not any(n.startswith("bert/encoder/layer_1/") for n in trained)


def test_checkpoint_named_by_its_index_file_is_read_as_the_checkpoint(model, tmp_path):
    sentences = write_text(tmp_path / "sentences.txt", "the sun is light .\nwater ||| air\n")
    outputs = {}
    for name, checkpoint in (
        ("prefix", model["pretrained"]),
        ("index", model["pretrained"] + ".index"),
        ("data", model["pretrained"] + ".data-00000-of-00001"),
    ):
        outputs[name] = str(tmp_path / f"{name}.jsonl")
        log = assert_runs(
            "extract_features.py",
            f"--input_file={sentences}",
            f"--output_file={outputs[name]}",
            f"--vocab_file={model['vocab']}",
            f"--bert_config_file={model['config']}",
            f"--init_checkpoint={checkpoint}",
            "--max_seq_length=16",
            "--layers=-1",
        )
        if name != "prefix":
            assert "reading that checkpoint" in log
    with open(outputs["prefix"]) as a, open(outputs["index"]) as b, open(outputs["data"]) as c:
        assert a.read() == b.read() == c.read()


def test_checkpoint_prefix_without_its_step_names_the_checkpoints_there(model, sst2_run, tmp_path):
    missing = os.path.join(sst2_run, "model.ckpt")
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(
            model["vocab"], model["config"], tmp_path / "out", init_checkpoint=missing
        ),
        f"no checkpoint at {missing}",
        "model.ckpt-",
    )


def test_checkpoint_of_no_bert_variable_is_refused_even_partially(model, tmp_path):
    other = write_checkpoint(str(tmp_path / "other" / "model.ckpt"), {"dense/kernel": np.ones(3)})
    assert_refused(
        tmp_path,
        "run_classifier.py",
        classifier_args(model["vocab"], model["config"], tmp_path / "out", init_checkpoint=other),
        other,
        "none of the embedding and encoder variables",
    )
    assert_refused(
        tmp_path,
        "run_classifier.py",
        [
            *classifier_args(
                model["vocab"], model["config"], tmp_path / "out", init_checkpoint=other
            ),
            "--allow_partial_init_checkpoint",
        ],
        other,
        "none of the embedding and encoder variables",
    )


# ---------------------------------------------------------------- no trained head


def _untrained_cases(model, tmp):
    squad = write_text(
        tmp / "squad.json",
        json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "the sun is light .",
                                "qas": [
                                    {"id": "q1", "question": "what is the sun ?", "answers": []}
                                ],
                            }
                        ]
                    }
                ]
            }
        ),
    )
    texts = write_lines(tmp / "texts.txt", ["the sun is light ."])
    common = {
        "vocab_file": model["vocab"],
        "bert_config_file": model["config"],
        "max_seq_length": "32",
        "output_dir": str(tmp / "typo"),
    }
    classifier = {**common, "task_name": "sst-2", "data_dir": SENTIMENT}
    return {
        "eval_from_pretrained": (
            "run_classifier.py",
            flag_args(classifier, do_eval="true", init_checkpoint=model["pretrained"]),
            ["--do_eval", model["pretrained"], "output_weights"],
        ),
        "predict_with_no_checkpoint": (
            "run_classifier.py",
            flag_args(classifier, do_predict="true"),
            ["--do_predict", "no checkpoint in --output_dir=", "typo"],
        ),
        "text_file_from_pretrained": (
            "run_classifier.py",
            flag_args(classifier, predict_text_file=texts, init_checkpoint=model["pretrained"]),
            ["--predict_text_file", "output_weights"],
        ),
        "squad_predict_from_pretrained": (
            "run_squad.py",
            flag_args(
                common,
                do_predict="true",
                predict_file=squad,
                max_query_length="8",
                doc_stride="8",
                init_checkpoint=model["pretrained"],
            ),
            ["--do_predict", "cls/squad/output_weights"],
        ),
        "ner_eval_with_no_checkpoint": (
            "run_ner.py",
            flag_args(
                common,
                data_dir=NER,
                do_eval="true",
                labels="O,B-PER,I-PER,B-LOC,I-LOC,B-ORG,I-ORG,B-MISC,I-MISC",
            ),
            ["--do_eval", "no checkpoint"],
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "eval_from_pretrained",
        "predict_with_no_checkpoint",
        "text_file_from_pretrained",
        "squad_predict_from_pretrained",
        "ner_eval_with_no_checkpoint",
    ],
)
def test_evaluating_or_predicting_without_a_trained_head_is_refused(model, tmp_path, case):
    script, args, names = _untrained_cases(model, tmp_path)[case]
    assert_refused(tmp_path, script, args, *names)
    assert not os.path.exists(tmp_path / "typo")


def test_evaluating_a_fine_tuned_init_checkpoint_still_works(model, sst2_run, tmp_path):
    """The check asks for a trained head, which a fine-tuned checkpoint elsewhere has."""
    assert_runs(
        "run_classifier.py",
        *classifier_args(
            model["vocab"],
            model["config"],
            tmp_path / "out",
            do_train=None,
            do_eval="true",
            init_checkpoint=sst2_run,
        ),
    )
    assert os.path.exists(tmp_path / "out" / "eval_results.txt")
