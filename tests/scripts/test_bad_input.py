"""Bad input to every script: one line naming the culprit, exit status 1, nothing left.

Each case runs the real script in a subprocess, as a user would, and checks that
it exits with status 1, that the last line of stderr is the error and names the file,
flag or variable at fault, that no traceback is printed, and that the directory
the run writes to holds exactly what it held before.
"""

import json
import os

import numpy as np
import pytest
from bad_input_fixtures import pretraining_args
from helpers import (
    REPO,
    error_line,
    flag_args,
    run_script,
    tiny_bert_config,
    write_checkpoint,
    write_text,
)

SENTIMENT = os.path.join(REPO, "demo_data", "sentiment")
CORPUS = os.path.join(REPO, "demo_data", "corpus", "science.txt")

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a an and of to in is was it this that film food very good bad not great "
    "awful . , ! ? ' s light water air heat cold sun".split()
)
HIDDEN = 32

# Nearly every case starts a script (the module fixture does too).
pytestmark = pytest.mark.slow


def _config(**overrides):
    return {**tiny_bert_config(len(SPECIAL) + len(WORDS), num_hidden_layers=1), **overrides}


def _save_checkpoint(prefix, shapes):
    """Writes a name-based checkpoint holding zeros of the given shapes."""
    return write_checkpoint(
        prefix,
        {
            name: np.zeros(shape, np.int64 if name == "global_step" else np.float32)
            for name, shape in shapes.items()
        },
    )


def _model_shapes(config):
    """{name: shape} of every variable a BertModel of `config` makes (and its pooler)."""
    h, i = config["hidden_size"], config["intermediate_size"]
    shapes = {
        "bert/embeddings/word_embeddings": [config["vocab_size"], h],
        "bert/embeddings/token_type_embeddings": [config["type_vocab_size"], h],
        "bert/embeddings/position_embeddings": [config["max_position_embeddings"], h],
        "bert/embeddings/LayerNorm/beta": [h],
        "bert/embeddings/LayerNorm/gamma": [h],
        "bert/pooler/dense/kernel": [h, h],
        "bert/pooler/dense/bias": [h],
    }
    for layer in range(config["num_hidden_layers"]):
        prefix = f"bert/encoder/layer_{layer}/"
        for name, n_in, n_out in [
            ("attention/self/query", h, h),
            ("attention/self/key", h, h),
            ("attention/self/value", h, h),
            ("attention/output/dense", h, h),
            ("intermediate/dense", h, i),
            ("output/dense", i, h),
        ]:
            shapes[prefix + name + "/kernel"] = [n_in, n_out]
            shapes[prefix + name + "/bias"] = [n_out]
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[prefix + norm + "/beta"] = [h]
            shapes[prefix + norm + "/gamma"] = [h]
    return shapes


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Valid inputs for every script, plus the broken variants the cases use."""
    d = tmp_path_factory.mktemp("inputs")
    paths = {"dir": str(d)}
    paths["vocab"] = write_text(d / "vocab.txt", "\n".join(SPECIAL + WORDS) + "\n")
    paths["vocab_no_mask"] = write_text(
        d / "vocab_no_mask.txt", "\n".join([t for t in SPECIAL if t != "[MASK]"] + WORDS) + "\n"
    )
    paths["config"] = write_text(d / "bert_config.json", json.dumps(_config()))
    paths["config_not_json"] = write_text(d / "not_json.json", '{"vocab_size": 34,\n "hidden')
    no_vocab = _config()
    del no_vocab["vocab_size"]
    paths["config_no_vocab_size"] = write_text(d / "no_vocab_size.json", json.dumps(no_vocab))
    paths["config_bad_type"] = write_text(
        d / "bad_type.json", json.dumps(_config(num_hidden_layers="two"))
    )
    paths["config_bad_heads"] = write_text(
        d / "bad_heads.json", json.dumps(_config(num_attention_heads=3))
    )
    paths["sentences"] = write_text(
        d / "sentences.txt", "the film was good .\nthe food ||| awful\n"
    )
    paths["squad"] = write_text(
        d / "squad.json",
        json.dumps(
            {
                "version": "1.1",
                "data": [
                    {
                        "title": "t",
                        "paragraphs": [
                            {
                                "context": "the sun is very good light .",
                                "qas": [
                                    {
                                        "id": "q1",
                                        "question": "what is the sun ?",
                                        "answers": [
                                            {"text": "very good light", "answer_start": 11}
                                        ],
                                    }
                                ],
                            }
                        ],
                    }
                ],
            }
        ),
    )
    paths["a_file"] = write_text(d / "a_file", "not a directory\n")
    # A checkpoint whose word embeddings are one row too wide for the config.
    paths["wide_ckpt"] = _save_checkpoint(
        str(d / "wide" / "model.ckpt"),
        {"bert/embeddings/word_embeddings": [len(SPECIAL) + len(WORDS), HIDDEN + 1]},
    )
    # A checkpoint that fits the config (extract_features needs one): every
    # variable of the model, the shapes written out from the config by hand.
    paths["ckpt"] = _save_checkpoint(str(d / "good" / "model.ckpt"), _model_shapes(_config()))
    # Pretraining records made by the real script from the shipped corpus.
    paths["records"] = str(d / "records.tfrecord")
    result = _run(
        "create_pretraining_data.py",
        f"--input_file={CORPUS}",
        f"--output_file={paths['records']}",
        f"--vocab_file={paths['vocab']}",
        "--max_seq_length=32",
        "--max_predictions_per_seq=5",
        "--dupe_factor=1",
    )
    assert result.returncode == 0, result.stderr
    return paths


def _run(script, *args):
    return run_script(script, *args)


def _listing(directory):
    found = set()
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), directory))
    return found


def _assert_fails(workdir, script, args, *names):
    """Runs `script`; asserts a one-line error naming every one of `names`."""
    before = _listing(workdir)
    result = _run(script, *args)
    last = error_line(result)
    for name in names:
        assert name in last, f"{name!r} not in {last!r}"
    assert _listing(workdir) == before, "output left behind"
    return last


def _classifier(inputs, out, **flags):
    args = {
        "task_name": "sst-2",
        "do_train": "true",
        "do_eval": "true",
        "data_dir": SENTIMENT,
        "vocab_file": inputs["vocab"],
        "bert_config_file": inputs["config"],
        "max_seq_length": "32",
        "train_batch_size": "8",
        "num_train_epochs": "0.1",
        "output_dir": str(out),
    }
    return flag_args(args, **flags)


def _squad(inputs, out, **flags):
    args = {
        "vocab_file": inputs["vocab"],
        "bert_config_file": inputs["config"],
        "do_predict": "true",
        "predict_file": inputs["squad"],
        "max_seq_length": "48",
        "doc_stride": "16",
        "max_query_length": "16",
        "output_dir": str(out),
    }
    return flag_args(args, **flags)


def _features(inputs, out, **flags):
    args = {
        "input_file": inputs["sentences"],
        "output_file": str(out / "features.jsonl"),
        "vocab_file": inputs["vocab"],
        "bert_config_file": inputs["config"],
        "init_checkpoint": inputs["ckpt"],
        "max_seq_length": "32",
        "layers": "-1",
    }
    return flag_args(args, **flags)


def _pretraining(inputs, out, **flags):
    return pretraining_args(inputs["config"], inputs["records"], out, **flags)


# ---------------------------------------------------------------- missing files


def test_missing_bert_config(inputs, tmp_path):
    missing = str(tmp_path / "nope" / "bert_config.json")
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", bert_config_file=missing),
        missing,
    )


def test_missing_vocab(inputs, tmp_path):
    missing = str(tmp_path / "vocab.txt")
    _assert_fails(
        tmp_path, "run_squad.py", _squad(inputs, tmp_path / "out", vocab_file=missing), missing
    )


def test_missing_input_file(inputs, tmp_path):
    missing = str(tmp_path / "sentences.txt")
    _assert_fails(
        tmp_path, "extract_features.py", _features(inputs, tmp_path, input_file=missing), missing
    )


def test_missing_pretraining_records(inputs, tmp_path):
    missing = str(tmp_path / "records.tfrecord")
    _assert_fails(
        tmp_path,
        "run_pretraining.py",
        _pretraining(inputs, tmp_path / "out", input_file=missing),
        missing,
    )


def test_missing_corpus(inputs, tmp_path):
    missing = str(tmp_path / "corpus.txt")
    _assert_fails(
        tmp_path,
        "create_vocab.py",
        [f"--input_file={missing}", f"--output_file={tmp_path / 'vocab.txt'}"],
        missing,
    )


def test_unreadable_vocab_is_a_directory(inputs, tmp_path):
    """A directory where a file belongs (file modes do not stop root from reading)."""
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", vocab_file=inputs["dir"]),
        inputs["dir"],
    )


def test_vocab_not_utf8(inputs, tmp_path):
    path = write_text(tmp_path / "vocab.txt", "")
    with open(path, "wb") as f:
        f.write("\n".join(SPECIAL).encode() + b"\nd\xe9j\xe0\n")
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", vocab_file=path),
        path,
        "UTF-8",
    )


def test_missing_init_checkpoint(inputs, tmp_path):
    missing = str(tmp_path / "missing.ckpt")
    _assert_fails(
        tmp_path,
        "extract_features.py",
        _features(inputs, tmp_path, init_checkpoint=missing),
        missing,
    )


# ---------------------------------------------------------------- bert_config.json


def test_config_not_json(inputs, tmp_path):
    path = inputs["config_not_json"]
    _assert_fails(
        tmp_path,
        "run_pretraining.py",
        _pretraining(inputs, tmp_path / "out", bert_config_file=path),
        path,
    )


def test_config_without_vocab_size(inputs, tmp_path):
    path = inputs["config_no_vocab_size"]
    _assert_fails(
        tmp_path,
        "extract_features.py",
        _features(inputs, tmp_path, bert_config_file=path),
        path,
        "vocab_size",
    )


def test_config_with_wrong_type(inputs, tmp_path):
    path = inputs["config_bad_type"]
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", bert_config_file=path),
        path,
        "num_hidden_layers",
    )


def test_config_heads_do_not_divide_hidden_size(inputs, tmp_path):
    path = inputs["config_bad_heads"]
    _assert_fails(
        tmp_path,
        "run_squad.py",
        _squad(inputs, tmp_path / "out", bert_config_file=path),
        path,
        "hidden_size",
        "num_attention_heads",
    )


def test_config_unknown_keys_are_kept_and_logged(tmp_path, caplog):
    """Google's multilingual and Chinese configs carry extra keys; they load."""
    import modeling

    path = write_text(
        tmp_path / "config.json",
        json.dumps(_config(directionality="bidi", pooler_fc_size=768, pooler_type="first")),
    )
    with caplog.at_level("INFO", logger="absl"):
        config = modeling.BertConfig.from_json_file(path)
    assert config.directionality == "bidi"
    assert config.to_dict()["pooler_fc_size"] == 768
    assert "directionality" in caplog.text and "pooler_fc_size" in caplog.text


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"vocab_size": 0}, "vocab_size"),
        ({"hidden_size": 32.5}, "hidden_size"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
        ({"hidden_act": "swishy"}, "hidden_act"),
        ({"hidden_act": 5}, "hidden_act"),
        ({"initializer_range": "0.02"}, "initializer_range"),
        ({"type_vocab_size": True}, "type_vocab_size"),
    ],
)
def test_config_values_are_checked(tmp_path, overrides, key):
    import modeling

    path = write_text(tmp_path / "config.json", json.dumps(_config(**overrides)))
    with pytest.raises(ValueError, match=key) as info:
        modeling.BertConfig.from_json_file(path)
    assert path in str(info.value)


def test_config_from_dict_keeps_the_original_api():
    """from_dict and the constructor do not validate, as in the original."""
    import modeling

    config = modeling.BertConfig.from_dict({"hidden_size": 8})
    assert config.vocab_size is None and config.hidden_size == 8
    assert modeling.BertConfig(vocab_size=10).num_attention_heads == 12


# ---------------------------------------------------------------- checkpoints


def test_init_checkpoint_shape_mismatch(inputs, tmp_path):
    last = _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", init_checkpoint=inputs["wide_ckpt"]),
        "bert/embeddings/word_embeddings",
    )
    assert f"[{HIDDEN + 1}]" not in last  # both shapes in full, not a fragment
    assert f"{len(SPECIAL) + len(WORDS)}, {HIDDEN}]" in last
    assert f"{len(SPECIAL) + len(WORDS)}, {HIDDEN + 1}]" in last


def test_expected_shapes_are_those_of_the_pretraining_graph():
    """bert_variable_shapes, which the early check uses, lists what the model builds."""
    import tensorflow as tf
    from helpers import load_script

    import modeling

    run_pretraining = load_script("run_pretraining")
    config = modeling.BertConfig.from_dict(_config(num_hidden_layers=2, intermediate_size=48))
    with tf.Graph().as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [2, 8])
        model = modeling.BertModel(config, is_training=True, input_ids=ids)
        positions = tf.zeros([2, 3], tf.int32)
        run_pretraining.get_masked_lm_output(
            config,
            model.get_sequence_output(),
            model.get_embedding_table(),
            positions,
            positions,
            tf.ones([2, 3]),
        )
        run_pretraining.get_next_sentence_output(
            config, model.get_pooled_output(), tf.zeros([2, 1], tf.int32)
        )
        built = {v.op.name: v.shape.as_list() for v in tf.compat.v1.global_variables()}
    assert built == modeling.bert_variable_shapes(config)


def test_init_checkpoint_with_a_head_of_another_shape(inputs, tmp_path):
    """A checkpoint fine-tuned on a task with another number of labels: refused before
    any record is written (warm starting would refuse it only after)."""
    shapes = {**_model_shapes(_config()), "output_weights": [3, HIDDEN], "output_bias": [3]}
    checkpoint = _save_checkpoint(str(tmp_path / "mnli" / "model.ckpt"), shapes)
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", init_checkpoint=checkpoint),
        checkpoint,
        "output_weights",
        f"[2, {HIDDEN}] in the model but [3, {HIDDEN}] in the checkpoint",
    )


def test_resume_checkpoint_shape_mismatch(inputs, tmp_path):
    out = tmp_path / "out"
    _save_checkpoint(
        str(out / "model.ckpt-1"),
        {"global_step": [], "bert/embeddings/word_embeddings": [7, HIDDEN]},
    )
    write_text(out / "checkpoint", 'model_checkpoint_path: "model.ckpt-1"\n')
    last = _assert_fails(
        tmp_path,
        "run_pretraining.py",
        _pretraining(inputs, out),
        "bert/embeddings/word_embeddings",
    )
    assert f"[{len(SPECIAL) + len(WORDS)}, {HIDDEN}]" in last and f"[7, {HIDDEN}]" in last


# ---------------------------------------------------------------- vocabularies


@pytest.mark.parametrize(
    "script, build",
    [
        (
            "run_classifier.py",
            lambda i, t: _classifier(i, t / "out", vocab_file=i["vocab_no_mask"]),
        ),
        ("run_squad.py", lambda i, t: _squad(i, t / "out", vocab_file=i["vocab_no_mask"])),
        ("extract_features.py", lambda i, t: _features(i, t, vocab_file=i["vocab_no_mask"])),
        (
            "create_pretraining_data.py",
            lambda i, t: [
                f"--input_file={CORPUS}",
                f"--output_file={t / 'records.tfrecord'}",
                f"--vocab_file={i['vocab_no_mask']}",
            ],
        ),
    ],
)
def test_vocab_without_special_token(inputs, tmp_path, script, build):
    _assert_fails(tmp_path, script, build(inputs, tmp_path), inputs["vocab_no_mask"], "[MASK]")


@pytest.mark.parametrize(
    "script, build",
    [
        ("run_classifier.py", lambda i, t, **f: _classifier(i, t / "out", **f)),
        ("run_squad.py", lambda i, t, **f: _squad(i, t / "out", **f)),
    ],
)
def test_do_lower_case_that_contradicts_a_released_checkpoint(inputs, tmp_path, script, build):
    """tokenization.py raises its own error class (the file is copied alone into other
    projects); the scripts still report it in one line."""
    checkpoint = str(tmp_path / "uncased_L-12_H-768_A-12" / "bert_model.ckpt")
    args = build(inputs, tmp_path, init_checkpoint=checkpoint, do_lower_case="false")
    _assert_fails(tmp_path, script, args, "--do_lower_case=False", "uncased_L-12_H-768_A-12")


# ---------------------------------------------------------------- sequence length


@pytest.mark.parametrize(
    "script, build",
    [
        ("run_classifier.py", lambda i, t: _classifier(i, t / "out", max_seq_length="65")),
        ("run_squad.py", lambda i, t: _squad(i, t / "out", max_seq_length="65")),
        ("extract_features.py", lambda i, t: _features(i, t, max_seq_length="65")),
        ("run_pretraining.py", lambda i, t: _pretraining(i, t / "out", max_seq_length="65")),
    ],
)
def test_max_seq_length_above_max_position_embeddings(inputs, tmp_path, script, build):
    _assert_fails(tmp_path, script, build(inputs, tmp_path), "65", "64")


# ---------------------------------------------------------------- output is a file


@pytest.mark.parametrize(
    "script, build",
    [
        ("run_classifier.py", lambda i, t, f: _classifier(i, f)),
        ("run_squad.py", lambda i, t, f: _squad(i, f)),
        ("run_pretraining.py", lambda i, t, f: _pretraining(i, f)),
        (
            "extract_features.py",
            lambda i, t, f: _features(i, t, output_file=f"{f}/features.jsonl"),
        ),
        (
            "create_vocab.py",
            lambda i, t, f: [f"--input_file={CORPUS}", f"--output_file={f}/vocab.txt"],
        ),
    ],
)
def test_output_dir_is_a_file(inputs, tmp_path, script, build):
    a_file = write_text(tmp_path / "a_file", "keep me\n")
    _assert_fails(tmp_path, script, build(inputs, tmp_path, a_file), a_file)
    with open(a_file, encoding="utf-8") as f:
        assert f.read() == "keep me\n"


# ---------------------------------------------------------------- NaN loss


def test_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(inputs, tmp_path):
    """A learning rate of 1e30 blows the weights up within a few steps."""
    out = tmp_path / "out"
    result = _run(
        "run_classifier.py",
        *_classifier(
            inputs,
            out,
            do_eval=None,
            learning_rate="1e30",
            num_train_epochs="1",
            warmup_proportion="0",
            save_checkpoints_steps="1",
        ),
    )
    last = error_line(result)
    assert "nan" in last.lower(), last
    bad_step = int(last.split("step ")[1].split()[0].rstrip(",;:."))
    steps = sorted(
        int(name[len("model.ckpt-") : -len(".index")])
        for name in os.listdir(out)
        if name.startswith("model.ckpt-") and name.endswith(".index")
    )
    # Checkpoints exist for the good steps only; the newest is the one before the NaN.
    assert steps and steps[-1] == bad_step - 1, (steps, last)
    with open(out / "checkpoint", encoding="utf-8") as f:
        assert f"model.ckpt-{bad_step - 1}" in f.readline()
    # ... and it holds finite weights.
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(out / f"model.ckpt-{steps[-1]}"))
    assert np.all(np.isfinite(reader.get_tensor("output_weights")))


# ---------------------------------------------------------------- runs that used to succeed
# on wrong input: a config bigger than its checkpoint, a vocabulary of another
# model, an empty input, a stride no window can follow.


def test_config_with_more_layers_than_the_init_checkpoint(inputs, tmp_path):
    bigger = write_text(tmp_path / "two_layers.json", json.dumps(_config(num_hidden_layers=2)))
    last = _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(
            inputs, tmp_path / "out", bert_config_file=bigger, init_checkpoint=inputs["ckpt"]
        ),
        bigger,
        inputs["ckpt"],
        "2 layers",
        "1 in the checkpoint",
        "--allow_partial_init_checkpoint",
    )
    assert "bert/encoder/layer_1/" in last


def test_allow_partial_init_checkpoint_grows_the_model(inputs, tmp_path):
    bigger = write_text(tmp_path / "two_layers.json", json.dumps(_config(num_hidden_layers=2)))
    result = _run(
        "extract_features.py",
        *_features(inputs, tmp_path, bert_config_file=bigger),
        "--allow_partial_init_checkpoint",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.path.getsize(tmp_path / "features.jsonl") > 0


def test_config_missing_an_architecture_key(inputs, tmp_path):
    config = _config()
    del config["num_hidden_layers"]
    path = write_text(tmp_path / "no_layers.json", json.dumps(config))
    _assert_fails(
        tmp_path,
        "run_squad.py",
        _squad(inputs, tmp_path / "out", bert_config_file=path),
        path,
        "num_hidden_layers",
    )


@pytest.mark.parametrize("vocab_size, words", [(400, "400"), (len(SPECIAL) + 10, "ids from")])
def test_vocab_that_does_not_fit_vocab_size(inputs, tmp_path, vocab_size, words):
    """A vocabulary far smaller than vocab_size (another model's), or larger (ids with no
    embedding row)."""
    config = write_text(tmp_path / "c.json", json.dumps(_config(vocab_size=vocab_size)))
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", bert_config_file=config),
        inputs["vocab"],
        config,
        str(len(SPECIAL) + len(WORDS)),
        words,
    )


def test_extract_features_refuses_an_input_without_text(inputs, tmp_path):
    empty = write_text(tmp_path / "empty.txt", "\n  \n")
    _assert_fails(
        tmp_path, "extract_features.py", _features(inputs, tmp_path, input_file=empty), empty
    )


def test_squad_doc_stride_larger_than_a_window(inputs, tmp_path):
    _assert_fails(
        tmp_path,
        "run_squad.py",
        _squad(inputs, tmp_path / "out", doc_stride="40"),
        "--doc_stride=40",
        "29",
    )


# ---------------------------------------------------------------- text that is not UTF-8,
# in every reader: a Windows-1252 e-acute in line 3.

LATIN1 = "caf\xe9".encode("cp1252")


def _with_latin1_line(path, lines, bad_line=3):
    data = [line.encode() for line in lines]
    data[bad_line - 1] = data[bad_line - 1] + b" " + LATIN1
    with open(path, "wb") as f:
        f.write(b"\n".join(data) + b"\n")
    return str(path)


def _glue_tsv(inputs, tmp):
    data = tmp / "glue"
    data.mkdir()
    rows = ["sentence\tlabel", "the film was good .\t1", "the food was bad .\t0", "awful .\t0"]
    for split in ("train", "dev", "test"):
        _with_latin1_line(data / f"{split}.tsv", rows)
    return str(data / "train.tsv"), _classifier(inputs, tmp / "out", data_dir=data)


def _custom_csv(inputs, tmp):
    data = tmp / "custom"
    data.mkdir()
    path = _with_latin1_line(data / "train.csv", ["text,label", "good,pos", "bad,neg", "ok,pos"])
    write_text(data / "dev.csv", "text,label\ngood,pos\n")
    return path, _classifier(inputs, tmp / "out", task_name="custom", data_dir=data)


def _text_file(inputs, tmp):
    path = _with_latin1_line(tmp / "texts.txt", ["good", "bad", "fine"])
    return path, _classifier(
        inputs,
        tmp / "out",
        do_train=None,
        do_eval=None,
        predict_text_file=path,
        init_checkpoint=inputs["ckpt"],
    )


def _conll(inputs, tmp):
    data = tmp / "ner"
    data.mkdir()
    lines = ["the O", "sun B-X", "is O", "", "good O"]
    path = _with_latin1_line(data / "train.txt", lines)
    args = flag_args(
        {
            "data_dir": str(data),
            "do_train": "true",
            "vocab_file": inputs["vocab"],
            "bert_config_file": inputs["config"],
            "max_seq_length": "32",
            "output_dir": str(tmp / "out"),
        }
    )
    return path, args


def _squad_json(inputs, tmp):
    path = tmp / "squad.json"
    with open(inputs["squad"], encoding="utf-8") as f:
        text = json.dumps(json.load(f), indent=1)
    _with_latin1_line(path, text.splitlines(), bad_line=3)
    return str(path), _squad(inputs, tmp / "out", predict_file=path)


@pytest.mark.parametrize(
    "script, build",
    [
        ("run_classifier.py", _glue_tsv),
        ("run_classifier.py", _custom_csv),
        ("run_classifier.py", _text_file),
        ("run_ner.py", _conll),
        ("run_squad.py", _squad_json),
    ],
    ids=["glue_tsv", "custom_csv", "predict_text_file", "conll", "squad_json"],
)
def test_text_that_is_not_utf8_is_named_by_file_and_line(inputs, tmp_path, script, build):
    path, args = build(inputs, tmp_path)
    _assert_fails(tmp_path, script, args, path, "line 3 is not UTF-8 text")


# ---------------------------------------------------------------- numbers that give no steps


@pytest.mark.parametrize("batch", ["0", "-4"])
def test_non_positive_batch_size(inputs, tmp_path, batch):
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", train_batch_size=batch),
        f"--train_batch_size must be positive, got {batch}",
    )


def test_too_few_examples_for_one_step_names_the_numbers(inputs, tmp_path):
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", train_batch_size="4096", num_train_epochs="1"),
        SENTIMENT,
        "training examples make 0 steps",
        "--train_batch_size=4096",
        "--num_train_epochs=1.0",
    )


@pytest.mark.parametrize("text", ["", "text,label\n"], ids=["empty", "header_only"])
def test_custom_train_file_without_rows_is_named(inputs, tmp_path, text):
    data = tmp_path / "custom"
    data.mkdir()
    train = write_text(data / "train.csv", text)
    write_text(data / "dev.csv", "text,label\ngood,pos\n")
    _assert_fails(
        tmp_path,
        "run_classifier.py",
        _classifier(inputs, tmp_path / "out", task_name="custom", data_dir=data),
        train,
        "0 rows",
        "at least two labels",
    )


def test_unknown_flag_names_the_one_meant(inputs, tmp_path):
    result = _run(
        "run_classifier.py", *_classifier(inputs, tmp_path / "out"), "--num_train_steps=10"
    )
    last = [line for line in result.stderr.splitlines() if line.strip()][-1]
    assert result.returncode == 1
    assert last == (
        "ERROR: --num_train_steps: unknown flag; did you mean --num_train_epochs? "
        "(--helpfull lists them all)"
    )
    assert not (tmp_path / "out").exists()


def test_missing_required_flag_of_a_data_script(tmp_path):
    _assert_fails(
        tmp_path,
        "create_vocab.py",
        [f"--output_file={tmp_path / 'v.txt'}"],
        "--input_file is required",
    )
