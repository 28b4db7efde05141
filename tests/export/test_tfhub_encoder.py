"""tfhub_export and tfhub_import: TF Hub-format BERT encoders out of checkpoints and back in.

What is checked against what:
  * an exported encoder's outputs against the float64 numpy BERT of
    numpy_reference.py (and the masked LM head written out in numpy below),
    and against BertModel restored from the same checkpoint;
  * an encoder Model Garden's own exporter wrote (tests/data/tfhub) against
    itself: its outputs, run through TensorFlow, against the numpy BERT and
    BertModel over the checkpoint import_encoder made of it;
  * export then import against the source checkpoint, value for value.
"""

import os
import re
import sys
import tarfile

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from helpers import (
    DATA,
    checkpoint_values,
    tiny_bert_config,
    write_bert_config,
    write_checkpoint,
    write_lines,
)

import modeling
from bert_lib.export import (
    tf_checkpoint,
    tfhub_encoder,
    tfhub_export,
    tfhub_import,
    tfhub_mapping,
)
from bert_lib.plumbing.errors import UsageError

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"word{i}" for i in range(35)]
TFHUB_DATA = os.path.join(DATA, "tfhub")


def random_weights(config, seed=0, with_mlm=True):
    """Every BertModel variable (and the MLM head) random: gammas near 1, the rest N(0, 0.3)."""
    rng = np.random.default_rng(seed)
    values = {}
    for name, shape in modeling.bert_variable_shapes(config).items():
        if name.startswith("cls/seq_relationship") or (not with_mlm and name.startswith("cls/")):
            continue
        value = rng.standard_normal(shape) * 0.3
        if name.endswith("gamma"):
            value += 1.0
        values[name] = value.astype(np.float32)
    return values


def numpy_mlm_logits(weights, config, sequence_output, positions):
    """The masked LM head in float64 numpy: dense + activation, LayerNorm, tied output."""
    w = {name: value.astype(np.float64) for name, value in weights.items()}
    picked = np.take_along_axis(sequence_output, positions[:, :, None], axis=1)
    acts = {"gelu": npr.gelu, "relu": lambda x: np.maximum(x, 0.0)}
    hidden = acts[config.hidden_act](
        picked @ w["cls/predictions/transform/dense/kernel"]
        + w["cls/predictions/transform/dense/bias"]
    )
    hidden = npr.layer_norm(
        hidden,
        w["cls/predictions/transform/LayerNorm/beta"],
        w["cls/predictions/transform/LayerNorm/gamma"],
    )
    return hidden @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]


def batch(config, seq_length, batch_size=3, seed=1):
    """Random ids and segments; every row after the first padded at its end."""
    rng = np.random.default_rng(seed)
    shape = (batch_size, seq_length)
    mask = np.ones(shape, np.int32)
    for row in range(1, batch_size):
        mask[row, seq_length - row :] = 0
    return {
        "input_word_ids": rng.integers(0, config.vocab_size, shape).astype(np.int32),
        "input_mask": mask,
        "input_type_ids": rng.integers(0, config.type_vocab_size, shape).astype(np.int32),
    }


def assert_outputs_match(outputs, reference, what, tolerance=1e-5):
    """pooled / sequence / every layer of a SavedModel's outputs against a numpy BERT's."""
    np.testing.assert_allclose(
        outputs["pooled_output"], reference["pooled_output"], atol=tolerance, err_msg=what
    )
    np.testing.assert_allclose(
        outputs["sequence_output"], reference["sequence_output"], atol=tolerance, err_msg=what
    )
    layers = outputs["encoder_outputs"]
    assert len(layers) == len(reference["all_encoder_layers"])
    for index, (ours, theirs) in enumerate(zip(layers, reference["all_encoder_layers"])):
        np.testing.assert_allclose(ours, theirs, atol=tolerance, err_msg=f"{what}, layer {index}")


def bert_model_outputs(config, checkpoint, inputs):
    """BertModel (graph mode) restored from `checkpoint`, run on `inputs`."""
    graph = tf.Graph()
    with graph.as_default():
        model = modeling.BertModel(
            config,
            is_training=False,
            input_ids=tf.constant(inputs["input_word_ids"]),
            input_mask=tf.constant(inputs["input_mask"]),
            token_type_ids=tf.constant(inputs["input_type_ids"]),
        )
        tvars = tf.compat.v1.trainable_variables()
        assignment, _ = modeling.get_assignment_map_from_checkpoint(tvars, checkpoint)
        assert len(assignment) == len(tvars)
        tf.compat.v1.train.init_from_checkpoint(checkpoint, assignment)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            pooled, sequence, layers = session.run(
                [
                    model.get_pooled_output(),
                    model.get_sequence_output(),
                    model.get_all_encoder_layers(),
                ]
            )
    return {"pooled_output": pooled, "sequence_output": sequence, "all_encoder_layers": layers}


def call(loaded, inputs, training=False, positions=None):
    """The SavedModel called as TF Hub users call it; outputs as numpy."""
    tensors = {name: tf.constant(value) for name, value in inputs.items()}
    if positions is not None:
        tensors[tfhub_encoder.MASKED_LM_POSITIONS] = tf.constant(positions)
        outputs = loaded.mlm(tensors, training=training)
    else:
        outputs = loaded(tensors, training=training)
    return tf.nest.map_structure(lambda t: t.numpy(), dict(outputs))


def unpack(archive, directory):
    """Unpacks tests/data/tfhub/<archive> into directory; returns the SavedModel's path."""
    with tarfile.open(os.path.join(TFHUB_DATA, archive), "r:xz") as tar:
        (top,) = {name.split("/")[0] for name in tar.getnames()}
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+ / 3.11.4+
            tar.extractall(directory, filter="data")
        else:
            tar.extractall(directory)
    return os.path.join(directory, top)


def tiny_checkpoint(directory, seed=0, **overrides):
    """(config, checkpoint path, bert_config.json, vocab.txt, weights) of a random tiny BERT."""
    os.makedirs(directory, exist_ok=True)
    config_file = write_bert_config(os.path.join(directory, "bert_config.json"), 40, **overrides)
    config = modeling.BertConfig.from_dict(tiny_bert_config(40, **overrides))
    weights = random_weights(config, seed)
    checkpoint = write_checkpoint(os.path.join(directory, "model.ckpt"), weights)
    vocab_file = write_lines(os.path.join(directory, "vocab.txt"), VOCAB)
    return config, checkpoint, config_file, vocab_file, weights


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny random BERT checkpoint, exported with its MLM head (do_lower_case False)."""
    root = tmp_path_factory.mktemp("exported")
    config, checkpoint, config_file, vocab_file, weights = tiny_checkpoint(str(root / "source"))
    hub_dir = str(root / "hub")
    tfhub_export.export_encoder(checkpoint, config_file, vocab_file, False, hub_dir, with_mlm=True)
    return {
        "config": config,
        "checkpoint": checkpoint,
        "config_file": config_file,
        "vocab_file": vocab_file,
        "weights": weights,
        "hub_dir": hub_dir,
        "root": root,
    }


# ---------------------------------------------------------------------------
# Fast: the graph code, the name mapping, bad input


@pytest.mark.parametrize("seq_length", [5, 13])
def test_bert_outputs_equal_numpy_bert_and_mlm_head(seq_length):
    config = modeling.BertConfig.from_dict(tiny_bert_config(40))
    weights = random_weights(config)
    inputs = batch(config, seq_length)
    positions = np.array([[0, 2], [1, 3], [4, 1]], np.int32)

    @tf.function(autograph=False)
    def forward(batch_inputs):
        constants = {name: tf.constant(value) for name, value in weights.items()}
        return tfhub_encoder.bert_outputs(config, constants, batch_inputs)

    feed = {name: tf.constant(value) for name, value in inputs.items()}
    feed[tfhub_encoder.MASKED_LM_POSITIONS] = tf.constant(positions)
    outputs = tf.nest.map_structure(lambda t: t.numpy(), forward(feed))
    reference = npr.bert(
        weights, config, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]
    )
    assert_outputs_match(outputs, reference, f"seq_length {seq_length}")
    np.testing.assert_array_equal(outputs["default"], outputs["pooled_output"])
    expected = numpy_mlm_logits(weights, config, reference["sequence_output"], positions)
    assert outputs["mlm_logits"].shape == (3, 2, config.vocab_size)
    np.testing.assert_allclose(outputs["mlm_logits"], expected, atol=1e-5)


@pytest.mark.parametrize(
    "name, ours",
    [
        ("word_embeddings/embeddings:0", "bert/embeddings/word_embeddings"),
        ("position_embedding/embeddings", "bert/embeddings/position_embeddings"),
        ("type_embeddings/embeddings", "bert/embeddings/token_type_embeddings"),
        ("embeddings/layer_norm/gamma", "bert/embeddings/LayerNorm/gamma"),
        (
            "bert_model/embedding_postprocessor/type_embeddings",
            "bert/embeddings/token_type_embeddings",
        ),
        ("bert_model/embedding_postprocessor/layer_norm/beta", "bert/embeddings/LayerNorm/beta"),
        (
            "transformer/layer_11/self_attention/query/kernel",
            "bert/encoder/layer_11/attention/self/query/kernel",
        ),
        (
            "encoder1/transformer/layer_0/self_attention/attention_output/bias",
            "bert/encoder/layer_0/attention/output/dense/bias",
        ),
        (
            "bert_model/encoder/layer_2/self_attention_output/kernel",
            "bert/encoder/layer_2/attention/output/dense/kernel",
        ),
        (
            "transformer/layer_1/self_attention_layer_norm/gamma",
            "bert/encoder/layer_1/attention/output/LayerNorm/gamma",
        ),
        (
            "transformer/layer_1/intermediate/kernel",
            "bert/encoder/layer_1/intermediate/dense/kernel",
        ),
        ("transformer/layer_1/output/bias", "bert/encoder/layer_1/output/dense/bias"),
        (
            "transformer/layer_1/output_layer_norm/beta",
            "bert/encoder/layer_1/output/LayerNorm/beta",
        ),
        ("pooler_transform/kernel", "bert/pooler/dense/kernel"),
        ("bert/cls/predictions/output_bias/bias", "cls/predictions/output_bias"),
        (
            "bert/cls/predictions/transform/LayerNorm/beta",
            "cls/predictions/transform/LayerNorm/beta",
        ),
        # The original's names map to themselves.
        (
            "bert/encoder/layer_3/attention/output/LayerNorm/gamma",
            "bert/encoder/layer_3/attention/output/LayerNorm/gamma",
        ),
        (
            "bert/encoder/layer_3/attention/output/dense/kernel",
            "bert/encoder/layer_3/attention/output/dense/kernel",
        ),
        ("bert/encoder/layer_3/output/dense/kernel", "bert/encoder/layer_3/output/dense/kernel"),
        ("bert/pooler/dense/bias", "bert/pooler/dense/bias"),
        # Not BERT's.
        ("embedding_projection/kernel", None),
        ("transformer/self_attention/query/kernel", None),
        ("transformer/layer_0/self_attention/relative_bias", None),
        ("final_layer_norm/gamma", None),
        ("do_lower_case", None),
    ],
)
def test_variables_are_recognised_by_name_whatever_the_prefix(name, ours):
    assert tfhub_mapping._role(name.removesuffix(":0")) == ours


def test_model_garden_attention_weights_flatten_heads_row_major():
    kernel = np.arange(6 * 2 * 3, dtype=np.float32).reshape(6, 2, 3)  # [hidden, heads, size]
    flat, heads = tfhub_mapping._to_our_layout(
        "bert/encoder/layer_0/attention/self/key/kernel", kernel
    )
    assert heads == 2 and flat.shape == (6, 6)
    # Column h * size + d of ours is head h, dimension d: how BertModel splits heads.
    assert flat[4, 1 * 3 + 2] == kernel[4, 1, 2]
    output = np.arange(2 * 3 * 6, dtype=np.float32).reshape(2, 3, 6)  # [heads, size, hidden]
    flat, heads = tfhub_mapping._to_our_layout(
        "bert/encoder/layer_0/attention/output/dense/kernel", output
    )
    assert heads == 2 and flat.shape == (6, 6) and flat[1 * 3 + 0, 5] == output[1, 0, 5]


def test_import_refuses_missing_directory_and_non_saved_model(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(UsageError, match=f"^--input={re.escape(missing)}: no such directory$"):
        tfhub_import.import_encoder(missing, str(tmp_path / "out"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="empty: not a SavedModel \\(no saved_model.pb\\)$"):
        tfhub_import.import_encoder(str(empty), str(tmp_path / "out"))
    tf1 = tmp_path / "tf1"
    tf1.mkdir()
    (tf1 / "tfhub_module.pb").write_bytes(b"")
    (tf1 / "saved_model.pb").write_bytes(b"")
    with pytest.raises(UsageError, match="tf1: a TF1 Hub module \\(tfhub_module.pb\\)"):
        tfhub_import.import_encoder(str(tf1), str(tmp_path / "out"))
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "saved_model.pb").write_bytes(b"\x08\x01not a protobuf at all")
    with pytest.raises(UsageError, match="corrupt: TensorFlow cannot load this SavedModel"):
        tfhub_import.import_encoder(str(corrupt), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_import_refuses_an_output_directory_that_holds_a_checkpoint(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "bert_config.json").write_text("{}")
    with pytest.raises(UsageError, match="already holds bert_config.json"):
        tfhub_import.import_encoder(str(tmp_path), str(out))
    with pytest.raises(UsageError, match="--output_dir is required"):
        tfhub_import.import_encoder(str(tmp_path), "")


def test_export_refuses_bad_input_before_writing_anything(tmp_path):
    config, checkpoint, config_file, vocab_file, weights = tiny_checkpoint(str(tmp_path / "src"))
    out = str(tmp_path / "hub")

    def export(**overrides):
        args = dict(
            checkpoint=checkpoint,
            bert_config=config_file,
            vocab_file=vocab_file,
            do_lower_case=True,
            output_dir=out,
        )
        args.update(overrides)
        tfhub_export.export_encoder(**args)

    nowhere = str(tmp_path / "nowhere")
    with pytest.raises(UsageError, match=f"^--bert_config_file={re.escape(nowhere)}: no such f"):
        export(bert_config=nowhere)
    with pytest.raises(UsageError, match=f"^--vocab_file={re.escape(nowhere)}: no such file$"):
        export(vocab_file=nowhere)
    with pytest.raises(UsageError, match=f"^--input={re.escape(nowhere)}: no checkpoint there$"):
        export(checkpoint=nowhere)
    long_vocab = write_lines(tmp_path / "long.txt", VOCAB + ["extra"])
    with pytest.raises(UsageError, match="41 tokens, more than vocab_size 40"):
        export(vocab_file=long_vocab)
    with pytest.raises(UsageError, match="has no variable cls/predictions/.*pre-training"):
        no_head = {k: v for k, v in weights.items() if not k.startswith("cls/")}
        export(checkpoint=write_checkpoint(tmp_path / "nohead.ckpt", no_head), with_mlm=True)
    wrong = write_bert_config(tmp_path / "wrong.json", 40, intermediate_size=48)
    with pytest.raises(UsageError, match="intermediate/dense/bias has shape \\[48\\] in the m"):
        export(bert_config=wrong)
    os.makedirs(out)
    with pytest.raises(UsageError, match=f"^--output_dir={re.escape(out)} already exists"):
        export()
    assert os.listdir(out) == []
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


def test_resolve_handle_takes_a_directory_and_needs_tensorflow_hub_for_the_rest(
    tmp_path, monkeypatch
):
    assert tfhub_import.resolve_handle(str(tmp_path)) == str(tmp_path)
    missing = re.escape(str(tmp_path / "nowhere"))
    with pytest.raises(UsageError, match=f"^--bert_hub_module_handle={missing}: no such dir"):
        tfhub_import.resolve_handle(str(tmp_path / "nowhere"))
    handle = "https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4"
    monkeypatch.setitem(sys.modules, "tensorflow_hub", None)
    with pytest.raises(UsageError, match="needs the tensorflow_hub package"):
        tfhub_import.resolve_handle(handle)

    class FakeHub:
        @staticmethod
        def resolve(name):
            if "kaggle" in name:
                raise OSError("no network")
            return f"/cache/{name.rsplit('/', 1)[-1]}"

    monkeypatch.setitem(sys.modules, "tensorflow_hub", FakeHub)
    assert tfhub_import.resolve_handle(handle) == "/cache/4"
    with pytest.raises(UsageError, match="tensorflow_hub cannot resolve it \\(no network\\)"):
        tfhub_import.resolve_handle("kaggle.com/models/google/bert")


# ---------------------------------------------------------------------------
# Slow: SavedModels written and loaded


@pytest.mark.slow
@pytest.mark.parametrize("seq_length", [6, 17])
def test_exported_encoder_outputs_equal_numpy_bert_and_bert_model(exported, seq_length):
    config, weights = exported["config"], exported["weights"]
    loaded = tf.saved_model.load(exported["hub_dir"])
    inputs = batch(config, seq_length, seed=seq_length)
    outputs = call(loaded, inputs)
    reference = npr.bert(
        weights, config, inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"]
    )
    assert_outputs_match(outputs, reference, "against numpy")
    assert_outputs_match(
        outputs, bert_model_outputs(config, exported["checkpoint"], inputs), "against BertModel"
    )
    assert sorted(outputs) == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
    positions = np.array([[0, seq_length - 1], [2, 1], [3, 3]], np.int32)
    mlm = call(loaded, inputs, positions=positions)
    expected = numpy_mlm_logits(weights, config, reference["sequence_output"], positions)
    np.testing.assert_allclose(mlm["mlm_logits"], expected, atol=1e-5)
    assert_outputs_match(mlm, reference, "mlm's encoder outputs")
    served = loaded.signatures["serving_default"](
        **{name: tf.constant(value) for name, value in inputs.items()}
    )
    np.testing.assert_allclose(served["pooled_output"], reference["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(
        served["encoder_outputs_1"], reference["all_encoder_layers"][1], atol=1e-5
    )


@pytest.mark.slow
def test_exported_encoder_carries_vocab_and_casing_and_fine_tunes(exported):
    loaded = tf.saved_model.load(exported["hub_dir"])
    with open(loaded.vocab_file.asset_path.numpy().decode(), encoding="utf-8") as f:
        assert f.read().splitlines() == VOCAB
    assert os.path.basename(loaded.vocab_file.asset_path.numpy().decode()) == "vocab.txt"
    assert loaded.do_lower_case.numpy() == np.False_ and not loaded.do_lower_case.trainable
    assert loaded.regularization_losses == []
    encoder_names = tfhub_encoder.encoder_variable_names(exported["config"])
    assert sorted(v.name.removesuffix(":0") for v in loaded.trainable_variables) == encoder_names
    assert len(loaded.variables) == len(encoder_names)
    assert len(loaded.mlm.trainable_variables) == len(encoder_names) + 5

    inputs = batch(exported["config"], 9)
    no_dropout = call(loaded, inputs)["pooled_output"]
    np.testing.assert_array_equal(call(loaded, inputs)["pooled_output"], no_dropout)
    assert not np.allclose(call(loaded, inputs, training=True)["pooled_output"], no_dropout)

    variables = list(loaded.trainable_variables)
    before = [v.numpy() for v in variables]
    with tf.GradientTape() as tape:
        pooled = loaded({k: tf.constant(v) for k, v in inputs.items()}, training=True)
        loss = tf.reduce_sum(pooled["pooled_output"] ** 2)
    gradients = tape.gradient(loss, variables)
    assert all(g is not None for g in gradients)
    for variable, gradient in zip(variables, gradients):
        variable.assign_sub(0.1 * tf.convert_to_tensor(gradient))
    changed = [not np.array_equal(b, v.numpy()) for b, v in zip(before, variables)]
    assert all(changed), [v.name for v, c in zip(variables, changed) if not c]
    assert not np.allclose(call(loaded, inputs)["pooled_output"], no_dropout)


@pytest.mark.slow
def test_export_then_import_gives_back_the_same_values_exactly(exported, tmp_path):
    result = tfhub_import.import_encoder(exported["hub_dir"], str(tmp_path / "back"))
    values = checkpoint_values(result["checkpoint"])
    assert sorted(values) == sorted(exported["weights"])
    for name, value in exported["weights"].items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)
    back = modeling.BertConfig.from_json_file(result["bert_config_file"])
    assert back.to_dict() == exported["config"].to_dict()
    with open(result["vocab_file"], "rb") as f, open(exported["vocab_file"], "rb") as g:
        assert f.read() == g.read()
    assert result["do_lower_case"] is False and result["with_mlm"] and result["assumed"] == []
    assert result["hidden_act_source"] == "its bert_config.json"
    assert sorted(os.listdir(tmp_path / "back")) == sorted(tf_checkpoint.CHECKPOINT_FILES)
    assert result["message"].endswith(
        f"--bert_config_file={tmp_path}/back/bert_config.json "
        f"--vocab_file={tmp_path}/back/vocab.txt "
        f"--init_checkpoint={tmp_path}/back/bert_model.ckpt --do_lower_case=False"
    )


@pytest.mark.slow
@pytest.mark.parametrize("hidden_act", ["relu", "gelu_erf"])
def test_an_unrecorded_activation_and_head_count_are_found_by_running_the_encoder(
    tmp_path, monkeypatch, hidden_act
):
    config, checkpoint, config_file, vocab_file, weights = tiny_checkpoint(
        str(tmp_path / "src"), hidden_act=hidden_act, num_attention_heads=4
    )
    hub_dir = str(tmp_path / "hub")
    tfhub_export.export_encoder(checkpoint, config_file, vocab_file, True, hub_dir)
    # As a foreign encoder with [hidden, hidden] attention kernels: no config to read.
    monkeypatch.setattr(tfhub_import, "_saved_config", lambda loaded, sizes, where: None)
    encoder = tfhub_import.read_encoder(hub_dir)
    assert encoder.config.hidden_act == hidden_act
    assert encoder.config.num_attention_heads == 4
    assert encoder.hidden_act_source.startswith("its outputs, matched by BertModel")
    assert "match too" not in encoder.hidden_act_source
    assert encoder.assumed == sorted(tfhub_import.ASSUMED_SETTINGS)
    assert encoder.with_mlm is False and encoder.do_lower_case is True
    for name, value in weights.items():
        if not name.startswith("cls/"):
            np.testing.assert_array_equal(encoder.variables[name], value, err_msg=name)


@pytest.mark.slow
def test_activations_the_weights_cannot_tell_apart_are_both_named(tmp_path, monkeypatch):
    # Weights at BERT's initial scale (0.02): the feed-forward inputs stay so
    # small that tanh and erf GELU differ by far less than the tolerance.
    config, _, config_file, vocab_file, _ = tiny_checkpoint(str(tmp_path / "src"))
    rng = np.random.default_rng(3)
    weights = {
        name: (1.0 if name.endswith("gamma") else 0.0) + 0.02 * rng.standard_normal(shape)
        for name, shape in modeling.bert_variable_shapes(config).items()
        if name.startswith("bert/")
    }
    weights = {name: value.astype(np.float32) for name, value in weights.items()}
    checkpoint = write_checkpoint(tmp_path / "small.ckpt", weights)
    hub_dir = str(tmp_path / "hub")
    tfhub_export.export_encoder(checkpoint, config_file, vocab_file, True, hub_dir)
    monkeypatch.setattr(tfhub_import, "_saved_config", lambda loaded, sizes, where: None)
    encoder = tfhub_import.read_encoder(hub_dir)
    other = {"gelu": "gelu_erf", "gelu_erf": "gelu"}[encoder.config.hidden_act]
    assert encoder.hidden_act_source.endswith(f"({other} match too on these weights)")


@pytest.mark.slow
def test_model_garden_encoder_imports_to_a_checkpoint_computing_its_outputs(tmp_path):
    hub_dir = unpack("model_garden_bert_mlm.tar.xz", str(tmp_path))
    result = tfhub_import.import_encoder(hub_dir, str(tmp_path / "ckpt"))
    config = modeling.BertConfig.from_json_file(result["bert_config_file"])
    sizes = {k: v for k, v in config.to_dict().items() if k in tiny_bert_config(0)}
    assert sizes == {
        "vocab_size": 100,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 24,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 24,
        "type_vocab_size": 3,
        "initializer_range": 0.02,
    }
    assert result["do_lower_case"] is True and result["with_mlm"] and result["unused"] == []
    assert "match too" not in result["hidden_act_source"]
    assert "hidden_dropout_prob=0.1" in result["message"]
    weights = checkpoint_values(result["checkpoint"])
    assert sorted(weights) == sorted(tfhub_encoder.encoder_variable_names(config, with_mlm=True))

    loaded = tf.saved_model.load(hub_dir)
    with (
        open(os.path.join(hub_dir, "assets", "vocab.txt"), "rb") as f,
        open(result["vocab_file"], "rb") as g,
    ):
        assert g.read() == f.read()
    for seq_length in (7, 19):
        inputs = batch(config, seq_length, seed=seq_length)
        theirs = call(loaded, inputs)
        reference = npr.bert(
            weights,
            config,
            inputs["input_word_ids"],
            inputs["input_mask"],
            inputs["input_type_ids"],
        )
        assert_outputs_match(theirs, reference, "Model Garden against numpy")
        ours = bert_model_outputs(config, result["checkpoint"], inputs)
        assert_outputs_match(theirs, ours, "Model Garden against BertModel")
        positions = np.array([[1, 0], [seq_length - 3, 2], [4, 4]], np.int32)
        mlm = call(loaded, inputs, positions=positions)
        expected = numpy_mlm_logits(weights, config, reference["sequence_output"], positions)
        np.testing.assert_allclose(mlm["mlm_logits"], expected, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "archive, message",
    [
        (
            "model_garden_albert.tar.xz",
            "not a BERT encoder: no per-layer weights \\(layer_0/...\\), only one set "
            "shared by every layer \\(transformer/self_attention/query/kernel\\), as in ALBERT$",
        ),
        (
            "model_garden_bert_pre_layer_norm.tar.xz",
            "not a BERT encoder: with its weights in BertModel the outputs "
            "differ by up to .* under every activation tried",
        ),
    ],
)
def test_non_bert_encoders_are_refused_in_one_line(tmp_path, archive, message):
    hub_dir = unpack(archive, str(tmp_path / "in"))
    out = tmp_path / "out"
    with pytest.raises(UsageError, match=f"^--input={re.escape(hub_dir)}: {message}") as e:
        tfhub_import.import_encoder(hub_dir, str(out))
    assert "\n" not in str(e.value)
    assert not out.exists()
    assert os.listdir(tmp_path) == ["in"]


def save_module(path, variables, vocab=True, callable_=True):
    """A SavedModel of bare variables (named as given), with or without the rest of the API."""
    module = tfhub_export._Reusable()
    module.variables = [tf.Variable(value, name=name) for name, value in variables.items()]
    module.trainable_variables = list(module.variables)
    if callable_:
        identity = tf.function(lambda inputs, training=False: dict(inputs), autograph=False)
        identity.get_concrete_function(tfhub_encoder.input_specs())
        module.__call__ = identity
    if vocab:
        vocab_file = write_lines(os.path.join(os.path.dirname(path), "vocab.txt"), VOCAB)
        module.vocab_file = tf.saved_model.Asset(vocab_file)
        module.do_lower_case = tf.Variable(True, trainable=False)
    tf.saved_model.save(module, path)
    return path


def model_garden_names(hidden=8, heads=2, layers=(0, 1), drop=(), embedding_width=None):
    """Variables named and shaped as Model Garden's BertEncoder has them."""
    size, width = hidden // heads, embedding_width or hidden
    names = {
        "word_embeddings/embeddings": [20, width],
        "position_embedding/embeddings": [10, hidden],
        "type_embeddings/embeddings": [2, hidden],
        "embeddings/layer_norm/gamma": [hidden],
        "embeddings/layer_norm/beta": [hidden],
        "pooler_transform/kernel": [hidden, hidden],
        "pooler_transform/bias": [hidden],
    }
    for i in layers:
        p = f"transformer/layer_{i}/"
        for part in ("query", "key", "value"):
            names[p + f"self_attention/{part}/kernel"] = [hidden, heads, size]
            names[p + f"self_attention/{part}/bias"] = [heads, size]
        names[p + "self_attention/attention_output/kernel"] = [heads, size, hidden]
        names[p + "self_attention/attention_output/bias"] = [hidden]
        for norm in ("self_attention_layer_norm", "output_layer_norm"):
            names[p + norm + "/gamma"] = [hidden]
            names[p + norm + "/beta"] = [hidden]
        names[p + "intermediate/kernel"] = [hidden, 12]
        names[p + "intermediate/bias"] = [12]
        names[p + "output/kernel"] = [12, hidden]
        names[p + "output/bias"] = [hidden]
    return {n: np.zeros(s, np.float32) for n, s in names.items() if n not in drop}


@pytest.mark.slow
@pytest.mark.parametrize(
    "variables, vocab, callable_, message",
    [
        (model_garden_names(), False, True, "no vocab_file asset \\(the WordPiece vocabulary\\)$"),
        (model_garden_names(), True, False, "the SavedModel cannot be called"),
        (model_garden_names(layers=(0, 2)), True, True, "not a BERT encoder: layer_1 is missing$"),
        (
            model_garden_names(drop=["transformer/layer_1/self_attention/key/bias"]),
            True,
            True,
            "not a BERT encoder: no variable for bert/encoder/layer_1/attention/self/key/bias$",
        ),
        (
            model_garden_names(drop=["pooler_transform/kernel"]),
            True,
            True,
            "not a BERT encoder: no variable for bert/pooler/dense/kernel$",
        ),
        (
            model_garden_names(embedding_width=4),
            True,
            True,
            "not a BERT encoder: word_embeddings/embeddings has shape \\[20, 4\\] but the "
            "layers are 8 wide "
            "\\(factorized embeddings",
        ),
        (
            {"dense/kernel": np.zeros([3, 3], np.float32)},
            True,
            True,
            "not a BERT encoder: no Transformer layer weights",
        ),
    ],
)
def test_encoders_missing_a_part_are_refused_naming_it(
    tmp_path, variables, vocab, callable_, message
):
    hub_dir = save_module(str(tmp_path / "hub"), variables, vocab, callable_)
    with pytest.raises(UsageError, match=f"^{re.escape(hub_dir)}: {message}"):
        tfhub_import.read_encoder(hub_dir)


@pytest.mark.slow
def test_a_failed_export_or_import_leaves_nothing(exported, tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tf_checkpoint, "write_checkpoint", fail)
    with pytest.raises(OSError):
        tfhub_import.import_encoder(exported["hub_dir"], str(tmp_path / "back"))
    monkeypatch.setattr(tf.saved_model, "save", fail)
    with pytest.raises(OSError):
        tfhub_export.export_encoder(
            exported["checkpoint"],
            exported["config_file"],
            exported["vocab_file"],
            True,
            str(tmp_path / "hub"),
        )
    assert os.listdir(tmp_path) == []
