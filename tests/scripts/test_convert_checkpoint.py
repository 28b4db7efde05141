"""Hugging Face <-> our checkpoints (export/hugging_face.py, convert_checkpoint.py), against numpy.

The Hugging Face side is built here with numpy only: random tensors under
Hugging Face's names, written and read by the minimal safetensors reader and
writer below (independent of the converter's). Each head's mapping is
checked by computing its outputs in numpy from the Hugging Face tensors, as
Hugging Face's layers define them (Linear: x @ W.T + b), and comparing with
what our scripts compute from the converted checkpoint.
"""

import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from classifier_helpers import VOCAB
from helpers import (
    checkpoint_values,
    error_line,
    load_script,
    run_script,
    write_bert_config,
    write_checkpoint,
    write_lines,
)

from bert_lib.export import hf_names, hugging_face, tf_checkpoint

HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS, TYPES = 32, 2, 4, 48, 24, 2
HF_CONFIG = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "vocab_size": len(VOCAB) + 3,
    "hidden_size": HIDDEN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "intermediate_size": INTERMEDIATE,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": POSITIONS,
    "type_vocab_size": TYPES,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "position_embedding_type": "absolute",
    "pad_token_id": 0,
}


@pytest.fixture(scope="module")
def cc():
    """The Hugging Face format's converters (the module convert_checkpoint.py runs)."""
    return hugging_face


@pytest.fixture(scope="module")
def script():
    return load_script("convert_checkpoint")


# ---------------------------------------------------------------------------
# An independent minimal safetensors reader / writer


def st_read(path):
    """{name: array} and the parsed header, from the format's definition alone."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    codes = {"F32": "<f4", "I64": "<i8", "F16": "<f2"}
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], codes[entry["dtype"]]).reshape(entry["shape"])
    return out, header, n, len(data)


def st_write(path, tensors, codes=None):
    codes = codes or {}
    header, chunks, offset = {}, [], 0
    for name, array in tensors.items():
        blob = array.tobytes() if name not in codes else codes[name][1]
        header[name] = {
            "dtype": codes.get(name, ("F32",))[0] if array.dtype == np.float32 else "I64",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        chunks.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


# ---------------------------------------------------------------------------
# Random Hugging Face models


def hf_tensors(heads=(), num_labels=3, seed=0, pooler=None):
    """Random float32 tensors under Hugging Face's names for a BERT with `heads`.

    As transformers saves them: no pooler in a question answering model.
    """
    rng = np.random.RandomState(seed)
    v = HF_CONFIG["vocab_size"]
    shapes = {
        "embeddings.word_embeddings.weight": [v, HIDDEN],
        "embeddings.position_embeddings.weight": [POSITIONS, HIDDEN],
        "embeddings.token_type_embeddings.weight": [TYPES, HIDDEN],
        "embeddings.LayerNorm.weight": [HIDDEN],
        "embeddings.LayerNorm.bias": [HIDDEN],
    }
    if pooler or (pooler is None and "squad" not in heads):
        shapes.update({"pooler.dense.weight": [HIDDEN, HIDDEN], "pooler.dense.bias": [HIDDEN]})
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name, (n_out, n_in) in {
            "attention.self.query": (HIDDEN, HIDDEN),
            "attention.self.key": (HIDDEN, HIDDEN),
            "attention.self.value": (HIDDEN, HIDDEN),
            "attention.output.dense": (HIDDEN, HIDDEN),
            "intermediate.dense": (INTERMEDIATE, HIDDEN),
            "output.dense": (HIDDEN, INTERMEDIATE),
        }.items():
            shapes[p + name + ".weight"] = [n_out, n_in]
            shapes[p + name + ".bias"] = [n_out]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + norm + ".weight"] = [HIDDEN]
            shapes[p + norm + ".bias"] = [HIDDEN]
    prefix = "bert." if heads else ""
    shapes = {prefix + k: s for k, s in shapes.items()}
    if "pretraining" in heads:
        shapes.update(
            {
                "cls.predictions.transform.dense.weight": [HIDDEN, HIDDEN],
                "cls.predictions.transform.dense.bias": [HIDDEN],
                "cls.predictions.transform.LayerNorm.weight": [HIDDEN],
                "cls.predictions.transform.LayerNorm.bias": [HIDDEN],
                "cls.predictions.bias": [v],
                "cls.seq_relationship.weight": [2, HIDDEN],
                "cls.seq_relationship.bias": [2],
            }
        )
    if "classifier" in heads:
        shapes.update({"classifier.weight": [num_labels, HIDDEN], "classifier.bias": [num_labels]})
    if "squad" in heads:
        shapes.update({"qa_outputs.weight": [2, HIDDEN], "qa_outputs.bias": [2]})
    tensors = {}
    for name, shape in shapes.items():
        scale = 0.5 if name.endswith("embeddings.weight") else 0.2
        value = rng.normal(0.0, scale, shape).astype(np.float32)
        if "LayerNorm.weight" in name:
            value += 1.0
        tensors[name] = value
    return tensors


ARCHITECTURES = {
    (): "BertModel",
    ("pretraining",): "BertForPreTraining",
    ("classifier",): "BertForSequenceClassification",
    ("squad",): "BertForQuestionAnswering",
}


def make_hf_dir(path, tensors, heads=(), vocab=True, tokenizer_config=True, **config):
    os.makedirs(path)
    hf_config = dict(HF_CONFIG, architectures=[ARCHITECTURES[tuple(heads)]], **config)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(hf_config, f)
    st_write(os.path.join(path, "model.safetensors"), tensors)
    if vocab:
        with open(os.path.join(path, "vocab.txt"), "w") as f:
            f.write("".join(t + "\n" for t in VOCAB))
    if tokenizer_config:
        with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)
    return str(path)


# ---------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("heads", list(ARCHITECTURES), ids=list(ARCHITECTURES.values()))
def test_hf_to_ours_to_hf_gives_back_every_tensor_bit_for_bit(cc, tmp_path, heads):
    tensors = hf_tensors(heads)
    hf_dir = make_hf_dir(tmp_path / "hf", tensors, heads)
    result = cc.hf_to_tf(hf_dir, str(tmp_path / "ours"))
    assert result["unused"] == []
    ours = str(tmp_path / "ours")
    back = cc.tf_to_hf(
        ours + "/bert_model.ckpt",
        ours + "/bert_config.json",
        ours + "/vocab.txt",
        True,
        str(tmp_path / "back"),
    )
    assert back["architecture"] == ARCHITECTURES[heads]
    again, _, _, _ = st_read(tmp_path / "back" / "model.safetensors")
    assert sorted(again) == sorted(tensors)
    for name, value in tensors.items():
        assert again[name].dtype == np.float32
        assert again[name].tobytes() == value.tobytes(), name
    config = json.loads((tmp_path / "back" / "config.json").read_text())
    assert config["architectures"] == [ARCHITECTURES[heads]]
    for key, value in HF_CONFIG.items():
        if key != "architectures":
            assert config[key] == value, key
    assert (tmp_path / "back" / "vocab.txt").read_text() == "".join(t + "\n" for t in VOCAB)
    assert json.loads((tmp_path / "back" / "tokenizer_config.json").read_text())["do_lower_case"]


def our_variables(cc, heads, num_labels=3):
    """Random variables under our names (via the HF names and the inverse layout)."""
    hf = hf_tensors(heads, num_labels=num_labels, seed=7, pooler=True)
    hf = {k[len("bert.") :] if k.startswith("bert.") else k: v for k, v in hf.items()}
    pairs = hf_names.encoder_names(LAYERS) + hf_names.POOLER
    for head_pairs in hf_names.HEADS.values():
        pairs += head_pairs
    return {ours: (hf[t].T.copy() if tr else hf[t]) for ours, t, tr in pairs if t in hf}


def bert_config_file(tmp_path, hidden_act="gelu"):
    """Our bert_config.json for the model HF_CONFIG describes, and its vocabulary."""
    config = write_bert_config(
        tmp_path / "bert_config.json",
        HF_CONFIG["vocab_size"],
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        max_position_embeddings=POSITIONS,
        type_vocab_size=TYPES,
        hidden_act=hidden_act,
    )
    return config, write_lines(tmp_path / "vocab.txt", VOCAB)


@pytest.mark.parametrize(
    "heads, task",
    [((), None), (("pretraining",), None), (("classifier",), "mnli"), (("squad",), None)],
    ids=["BertModel", "BertForPreTraining", "BertForSequenceClassification", "squad"],
)
def test_ours_to_hf_to_ours_gives_back_every_variable_and_drops_training_state(
    cc, tmp_path, heads, task
):
    variables = our_variables(cc, heads)
    state = {"global_step": np.array(1234, np.int64)}
    for name in list(variables)[:3]:
        state[name + "/adam_m"] = variables[name] * 0.5
        state[name + "/adam_v"] = variables[name] * 0.25
    write_checkpoint(str(tmp_path / "model.ckpt-1234"), {**variables, **state})
    config_file, vocab_file = bert_config_file(tmp_path)
    result = cc.tf_to_hf(
        str(tmp_path / "model.ckpt-1234"),
        config_file,
        vocab_file,
        False,
        str(tmp_path / "hf"),
        task_name=task,
    )
    assert sorted(result["dropped"]) == sorted(state)
    # Hugging Face's question answering model has no pooler: it is listed, not lost silently.
    pooler = ["bert/pooler/dense/bias", "bert/pooler/dense/kernel"] if "squad" in heads else []
    assert result["unused"] == pooler
    for name in pooler:
        del variables[name]
    hf_config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert hf_config["hidden_act"] == "gelu_new"  # ours is the tanh form
    if task:
        assert hf_config["id2label"] == {"0": "contradiction", "1": "entailment", "2": "neutral"}
    tok = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert tok["do_lower_case"] is False
    cc.hf_to_tf(str(tmp_path / "hf"), str(tmp_path / "ours"))
    again = checkpoint_values(str(tmp_path / "ours" / "bert_model.ckpt"))
    assert sorted(again) == sorted(variables)
    for name, value in variables.items():
        assert again[name].tobytes() == value.tobytes(), name
    written = json.loads((tmp_path / "ours" / "bert_config.json").read_text())
    assert written == json.loads(open(config_file).read())


def test_written_safetensors_has_the_layout_the_format_specifies(cc, tmp_path):
    variables = our_variables(cc, ("classifier",), num_labels=2)
    write_checkpoint(str(tmp_path / "model.ckpt"), variables)
    config_file, vocab_file = bert_config_file(tmp_path)
    cc.tf_to_hf(str(tmp_path), config_file, vocab_file, True, str(tmp_path / "hf"))
    path = tmp_path / "hf" / "model.safetensors"
    tensors, header, header_len, data_len = st_read(path)
    raw = path.read_bytes()
    assert int.from_bytes(raw[:8], "little") == header_len
    assert header_len % 8 == 0  # the tensors start 8-byte aligned
    assert header["__metadata__"] == {"format": "pt"}
    spans = sorted(e["data_offsets"] for n, e in header.items() if n != "__metadata__")
    assert spans[0][0] == 0 and spans[-1][1] == data_len  # no gap before, nothing after
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous
    for name, entry in header.items():
        if name != "__metadata__":
            assert entry["dtype"] == "F32"
            begin, end = entry["data_offsets"]
            assert end - begin == 4 * int(np.prod(entry["shape"]))
    # Dense kernels are [in, out] in ours and [out, in] in Hugging Face's layout;
    # the classifier matrix is [labels, hidden] in both.
    np.testing.assert_array_equal(
        tensors["bert.encoder.layer.1.intermediate.dense.weight"],
        variables["bert/encoder/layer_1/intermediate/dense/kernel"].T,
    )
    np.testing.assert_array_equal(tensors["classifier.weight"], variables["output_weights"])
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["id2label"] == {
        "0": "LABEL_0",
        "1": "LABEL_1",
    }


# ---------------------------------------------------------------------------
# Head math: numpy from the Hugging Face tensors against our scripts' graphs


def np_erf_gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def np_hf_bert(t, ids, mask, types):
    """Hugging Face's BertModel forward pass in float64 (exact erf GELU), from its tensors."""
    t = {
        k[len("bert.") :] if k.startswith("bert.") else k: v.astype(np.float64)
        for k, v in t.items()
    }

    def linear(x, name):
        return x @ t[name + ".weight"].T + t[name + ".bias"]

    def norm(x, name):
        return npr.layer_norm(x, t[name + ".bias"], t[name + ".weight"], epsilon=1e-12)

    batch, seq = ids.shape
    head = HIDDEN // HEADS
    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][:seq][None]
        + t["embeddings.token_type_embeddings.weight"][types]
    )
    x = norm(x, "embeddings.LayerNorm")
    bias = (1.0 - mask[:, None, None, :]) * -10000.0
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def split(y):
            return y.reshape(batch, seq, HEADS, head).transpose(0, 2, 1, 3)

        q, k, v = (split(linear(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + bias
        probs = npr.softmax(scores)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, HIDDEN)
        x = norm(
            linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm"
        )
        inner = np_erf_gelu(linear(x, p + "intermediate.dense"))
        x = norm(linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = np.tanh(linear(x[:, 0], "pooler.dense")) if "pooler.dense.bias" in t else None
    return x, pooled, t, linear, norm


INPUTS = (
    np.array([[2, 5, 6, 7, 8, 3, 0, 0], [2, 9, 10, 11, 3, 12, 14, 3]], np.int32),
    np.array([[1, 1, 1, 1, 1, 1, 0, 0], [1] * 8], np.int32),
    np.array([[0] * 8, [0, 0, 0, 0, 0, 1, 1, 1]], np.int32),
)


def run_converted(ours_dir, build):
    """Builds a graph with `build(config, ids, mask, types)`, loads the converted checkpoint."""
    import modeling

    config = modeling.BertConfig.from_json_file(os.path.join(ours_dir, "bert_config.json"))
    with tf.Graph().as_default():
        ids, mask, types = (tf.constant(a) for a in INPUTS)
        outputs = build(config, ids, mask, types)
        checkpoint = os.path.join(ours_dir, "bert_model.ckpt")
        saved = dict(tf.train.list_variables(checkpoint))
        tf.compat.v1.train.init_from_checkpoint(
            checkpoint,
            {
                v.op.name: v.op.name
                for v in tf.compat.v1.trainable_variables()
                if v.op.name in saved
            },
        )
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return session.run(outputs)


def test_squad_head_gives_huggingface_start_and_end_logits(cc, tmp_path):
    tensors = hf_tensors(("squad",), seed=3)
    cc.hf_to_tf(make_hf_dir(tmp_path / "hf", tensors, ("squad",)), str(tmp_path / "ours"))
    run_squad = load_script("run_squad")
    start, end = run_converted(
        str(tmp_path / "ours"),
        lambda config, ids, mask, types: run_squad.create_model(
            config, False, ids, mask, types, False
        ),
    )
    sequence, _, t, _, _ = np_hf_bert(tensors, *INPUTS)
    logits = sequence @ t["qa_outputs.weight"].T + t["qa_outputs.bias"]
    np.testing.assert_allclose(start, logits[..., 0], atol=2e-5)
    np.testing.assert_allclose(end, logits[..., 1], atol=2e-5)


def test_pretraining_heads_give_huggingface_mlm_and_nsp_outputs(cc, tmp_path):
    tensors = hf_tensors(("pretraining",), seed=4)
    cc.hf_to_tf(make_hf_dir(tmp_path / "hf", tensors, ("pretraining",)), str(tmp_path / "ours"))
    rp = load_script("run_pretraining")
    positions = np.array([[1, 3], [2, 6]], np.int32)

    def build(config, ids, mask, types):
        import modeling

        model = modeling.BertModel(config, False, ids, mask, types)
        zeros = tf.zeros([2, 2], tf.int32)
        _, _, mlm = rp.get_masked_lm_output(
            config,
            model.get_sequence_output(),
            model.get_embedding_table(),
            tf.constant(positions),
            zeros,
            tf.ones([2, 2]),
        )
        _, _, nsp = rp.get_next_sentence_output(
            config, model.get_pooled_output(), tf.zeros([2], tf.int32)
        )
        return mlm, nsp

    mlm, nsp = run_converted(str(tmp_path / "ours"), build)
    sequence, pooled, t, linear, norm = np_hf_bert(tensors, *INPUTS)
    picked = sequence[np.arange(2)[:, None], positions].reshape(4, HIDDEN)
    h = norm(
        np_erf_gelu(linear(picked, "cls.predictions.transform.dense")),
        "cls.predictions.transform.LayerNorm",
    )
    scores = h @ t["embeddings.word_embeddings.weight"].T + t["cls.predictions.bias"]
    np.testing.assert_allclose(mlm, npr.log_softmax(scores), atol=5e-5)
    nsp_scores = linear(pooled, "cls.seq_relationship")
    np.testing.assert_allclose(nsp, npr.log_softmax(nsp_scores), atol=2e-5)


@pytest.mark.slow
def test_huggingface_classifier_runs_in_run_classifier_eval_and_predict(cc, tmp_path):
    """A converted HF classifier goes straight into run_classifier.py --do_eval --do_predict.

    Its outputs are then checked against numpy from the tensors of the same
    checkpoint converted back to the HF layout (tf_to_hf), so both directions
    of the classifier mapping meet the layer math.
    """
    source = hf_tensors(("classifier",), num_labels=2, seed=5)
    hf_dir = make_hf_dir(tmp_path / "hf", source, ("classifier",))
    ours = str(tmp_path / "ours")
    cc.hf_to_tf(hf_dir, ours)
    hf_again = str(tmp_path / "hf_again")
    cc.tf_to_hf(
        f"{ours}/bert_model.ckpt",
        f"{ours}/bert_config.json",
        f"{ours}/vocab.txt",
        True,
        hf_again,
        "sst-2",
    )
    tensors, _, _, _ = st_read(os.path.join(hf_again, "model.safetensors"))
    data = tmp_path / "data"
    data.mkdir()
    dev = [("the dog is hairy .", 1), ("a bad movie", 0), ("cats run", 0), ("very good", 1)]
    test = ["the cat is not hairy", "good movie", "a very bad dog ."]
    (data / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in dev))
    (data / "test.tsv").write_text(
        "index\tsentence\n" + "".join(f"{i}\t{s}\n" for i, s in enumerate(test))
    )
    out = tmp_path / "run"
    result = run_script(
        "run_classifier.py",
        "--task_name=sst-2",
        "--do_eval=True",
        "--do_predict=True",
        f"--data_dir={data}",
        f"--vocab_file={ours}/vocab.txt",
        f"--bert_config_file={ours}/bert_config.json",
        f"--init_checkpoint={ours}/bert_model.ckpt",
        "--max_seq_length=8",
        f"--output_dir={out}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    predicted = np.loadtxt(out / "test_results.tsv", ndmin=2)

    import tokenization

    tokenizer = tokenization.FullTokenizer(f"{ours}/vocab.txt", do_lower_case=True)

    def probabilities(sentences):
        ids = np.zeros([len(sentences), 8], np.int64)
        mask = np.zeros_like(ids)
        for row, sentence in enumerate(sentences):
            pieces = ["[CLS]"] + tokenizer.tokenize(sentence)[:6] + ["[SEP]"]
            ids[row, : len(pieces)] = tokenizer.convert_tokens_to_ids(pieces)
            mask[row, : len(pieces)] = 1
        _, pooled, t, linear, _ = np_hf_bert(tensors, ids, mask, np.zeros_like(ids))
        return npr.softmax(linear(pooled, "classifier"))

    # float32 round-off is ~1e-7; tanh GELU in place of erf moves them by ~1e-5.
    np.testing.assert_allclose(predicted, probabilities(test), atol=1e-6)
    accuracy = np.mean(probabilities([s for s, _ in dev]).argmax(-1) == [y for _, y in dev])
    eval_results = dict(
        line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines()
    )
    assert float(eval_results["eval_accuracy"]) == pytest.approx(accuracy)


# ---------------------------------------------------------------------------
# Activations, vocabularies, weight files


@pytest.mark.parametrize(
    "hf_act, ours",
    [("gelu", "gelu_erf"), ("gelu_new", "gelu"), ("gelu_pytorch_tanh", "gelu"), ("relu", "relu")],
)
def test_activation_names_map_to_the_same_function(cc, tmp_path, hf_act, ours):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors(), hidden_act=hf_act)
    cc.hf_to_tf(hf_dir, str(tmp_path / "ours"))
    config = json.loads((tmp_path / "ours" / "bert_config.json").read_text())
    assert config["hidden_act"] == ours
    import modeling

    # The function ours computes is the one the Hugging Face name stands for.
    x = np.linspace(-4, 4, 17).astype(np.float32)
    definitions = {
        "gelu": np_erf_gelu(x.astype(np.float64)),
        "gelu_new": npr.gelu(x.astype(np.float64)),
        "relu": np.maximum(x, 0),
    }
    definitions["gelu_pytorch_tanh"] = definitions["gelu_new"]
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        values = session.run(modeling.get_activation(ours)(tf.constant(x)))
    np.testing.assert_allclose(values, definitions[hf_act], atol=1e-6)
    cc.tf_to_hf(
        str(tmp_path / "ours" / "bert_model.ckpt"),
        str(tmp_path / "ours" / "bert_config.json"),
        str(tmp_path / "ours" / "vocab.txt"),
        True,
        str(tmp_path / "back"),
    )
    back = json.loads((tmp_path / "back" / "config.json").read_text())["hidden_act"]
    assert back == ("gelu_new" if hf_act == "gelu_pytorch_tanh" else hf_act)


def test_vocabulary_comes_from_tokenizer_json_when_there_is_no_vocab_txt(cc, tmp_path):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors(), vocab=False, tokenizer_config=False)
    shuffled = list(enumerate(VOCAB))[::-1]
    with open(os.path.join(hf_dir, "tokenizer.json"), "w") as f:
        json.dump(
            {
                "normalizer": {"type": "BertNormalizer", "lowercase": False},
                "model": {"type": "WordPiece", "vocab": {t: i for i, t in shuffled}},
            },
            f,
        )
    result = cc.hf_to_tf(hf_dir, str(tmp_path / "ours"))
    assert (tmp_path / "ours" / "vocab.txt").read_text() == "".join(t + "\n" for t in VOCAB)
    assert result["do_lower_case"] is False


def test_sharded_safetensors_and_bf16_tensors_are_read(cc, tmp_path):
    tensors = hf_tensors()
    names = sorted(tensors)
    hf_dir = make_hf_dir(tmp_path / "hf", {}, vocab=True)
    os.remove(os.path.join(hf_dir, "model.safetensors"))
    # The word embeddings go in as bfloat16: the top 16 bits of each float32.
    word = "embeddings.word_embeddings.weight"
    truncated = (tensors[word].view(np.uint32) & 0xFFFF0000).view(np.float32)
    tensors[word] = truncated
    bf16 = {word: ("BF16", (truncated.view(np.uint32) >> 16).astype("<u2").tobytes())}
    half = len(names) // 2
    weight_map = {}
    for shard, part in (("a.safetensors", names[:half]), ("b.safetensors", names[half:])):
        st_write(os.path.join(hf_dir, shard), {n: tensors[n] for n in part}, bf16)
        weight_map.update({n: shard for n in part})
    with open(os.path.join(hf_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    cc.hf_to_tf(hf_dir, str(tmp_path / "ours"))
    got = checkpoint_values(str(tmp_path / "ours" / "bert_model.ckpt"))
    assert got["bert/embeddings/word_embeddings"].tobytes() == truncated.tobytes()
    np.testing.assert_array_equal(
        got["bert/encoder/layer_0/output/dense/kernel"],
        tensors["encoder.layer.0.output.dense.weight"].T,
    )


def test_pooler_may_be_absent_only_where_transformers_saves_none(cc, tmp_path):
    tensors = hf_tensors(("pretraining",))
    for name in ("cls.seq_relationship.weight", "cls.seq_relationship.bias"):
        del tensors[name]  # a BertForMaskedLM
    del tensors["bert.pooler.dense.weight"], tensors["bert.pooler.dense.bias"]
    hf_dir = make_hf_dir(tmp_path / "hf", tensors, ("pretraining",))
    result = cc.hf_to_tf(hf_dir, str(tmp_path / "ours"))
    assert result["heads"] == ["predictions"]
    saved = checkpoint_values(str(tmp_path / "ours" / "bert_model.ckpt"))
    assert "cls/predictions/output_bias" in saved
    assert not [name for name in saved if "pooler" in name]
    tensors = hf_tensors(("classifier",))
    del tensors["bert.pooler.dense.bias"]
    message = _hf_error(cc, tmp_path / "b", tensors, ("classifier",))
    assert "pooler.dense.bias is missing" in message


def test_unused_and_tied_tensors_are_listed_or_checked(cc, tmp_path):
    tensors = hf_tensors(("pretraining",))
    tensors["bert.embeddings.position_ids"] = np.arange(POSITIONS, dtype=np.int64)[None]
    tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"]
    tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"]
    hf_dir = make_hf_dir(tmp_path / "hf", tensors, ("pretraining",))
    result = cc.hf_to_tf(hf_dir, str(tmp_path / "ours"))
    assert result["unused"] == ["bert.embeddings.position_ids"]
    assert sorted(result["heads"]) == ["predictions", "seq_relationship"]


# ---------------------------------------------------------------------------
# Bad input: one-line errors naming the key or file, nothing written


def _hf_error(cc, tmp_path, tensors=None, heads=(), **config):
    hf_dir = make_hf_dir(
        tmp_path / "hf", hf_tensors(heads) if tensors is None else tensors, heads, **config
    )
    with pytest.raises(ValueError) as error:
        cc.hf_to_tf(hf_dir, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith(".")] == []
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "config, words",
    [
        ({"model_type": "roberta"}, ["model_type", "roberta"]),
        ({"model_type": "distilbert"}, ["model_type", "distilbert"]),
        ({"position_embedding_type": "relative_key"}, ["position_embedding_type"]),
        ({"hidden_act": "swish"}, ["hidden_act", "swish"]),
        ({"layer_norm_eps": 1e-5}, ["layer_norm_eps"]),
        ({"is_decoder": True}, ["is_decoder"]),
    ],
)
def test_models_that_are_not_this_bert_are_refused(cc, tmp_path, config, words):
    message = _hf_error(cc, tmp_path, **config)
    assert "config.json" in message
    for word in words:
        assert word in message


def test_missing_and_misshapen_tensors_are_named(cc, tmp_path):
    tensors = hf_tensors(("classifier",))
    del tensors["bert.encoder.layer.1.output.dense.weight"]
    message = _hf_error(cc, tmp_path / "a", tensors, ("classifier",))
    assert "encoder.layer.1.output.dense.weight is missing" in message
    tensors = hf_tensors(("classifier",))
    del tensors["classifier.bias"]
    assert "classifier.bias is missing" in _hf_error(cc, tmp_path / "b", tensors, ("classifier",))
    tensors = hf_tensors()
    tensors["pooler.dense.bias"] = np.zeros([HIDDEN + 1], np.float32)
    assert "pooler.dense.bias" in _hf_error(cc, tmp_path / "c", tensors)
    tensors = hf_tensors(("pretraining",))
    tensors["cls.predictions.decoder.weight"] = np.ones_like(
        tensors["bert.embeddings.word_embeddings.weight"]
    )
    assert "cls.predictions.decoder.weight" in _hf_error(
        cc, tmp_path / "d", tensors, ("pretraining",)
    )


def test_corrupt_safetensors_is_named(cc, tmp_path):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors())
    path = os.path.join(hf_dir, "model.safetensors")
    raw = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(raw[:-4])  # the last tensor loses its end
    with pytest.raises(ValueError, match="model.safetensors: tensor .* data_offsets"):
        cc.hf_to_tf(hf_dir, str(tmp_path / "out"))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", 10**9) + raw[8:])
    with pytest.raises(ValueError, match="header length"):
        cc.hf_to_tf(hf_dir, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_pytorch_bin_without_torch_asks_for_safetensors(cc, tmp_path, monkeypatch):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors())
    os.rename(os.path.join(hf_dir, "model.safetensors"), os.path.join(hf_dir, "pytorch_model.bin"))
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ValueError, match="pytorch_model.bin needs torch.*safetensors"):
        cc.hf_to_tf(hf_dir, str(tmp_path / "out"))
    os.remove(os.path.join(hf_dir, "pytorch_model.bin"))
    with pytest.raises(ValueError, match="no model.safetensors"):
        cc.hf_to_tf(hf_dir, str(tmp_path / "out"))


def test_existing_checkpoint_in_output_dir_is_not_overwritten(cc, tmp_path):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors())
    out = tmp_path / "out"
    out.mkdir()
    (out / "bert_model.ckpt.index").write_text("keep me")
    with pytest.raises(ValueError, match="already holds bert_model.ckpt.index"):
        cc.hf_to_tf(hf_dir, str(out))
    assert os.listdir(out) == ["bert_model.ckpt.index"]
    # An existing directory without those files is written into.
    (out / "bert_model.ckpt.index").unlink()
    (out / "notes.txt").write_text("mine")
    cc.hf_to_tf(hf_dir, str(out))
    assert sorted(os.listdir(out)) == sorted(tf_checkpoint.CHECKPOINT_FILES + ("notes.txt",))


def test_a_failure_while_writing_leaves_nothing(cc, tmp_path, monkeypatch):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors())

    def fail(prefix, variables):
        open(prefix + ".index", "w").close()
        raise OSError("disk full")

    monkeypatch.setattr(tf_checkpoint, "write_checkpoint", fail)
    with pytest.raises(OSError):
        cc.hf_to_tf(hf_dir, str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path)) == ["hf"]


def test_tf_to_hf_bad_inputs_are_named(cc, tmp_path):
    config_file, vocab_file = bert_config_file(tmp_path)
    variables = our_variables(cc, ("classifier",), num_labels=3)
    write_checkpoint(str(tmp_path / "cls.ckpt"), variables)
    with pytest.raises(ValueError, match="--task_name=mrpc has 2 outputs.*3 rows"):
        cc.tf_to_hf(
            str(tmp_path / "cls.ckpt"), config_file, vocab_file, True, str(tmp_path / "o"), "mrpc"
        )
    partial = dict(variables)
    del partial["bert/encoder/layer_0/attention/self/key/bias"]
    write_checkpoint(str(tmp_path / "partial.ckpt"), partial)
    with pytest.raises(ValueError, match="layer_0/attention/self/key/bias is missing"):
        cc.tf_to_hf(
            str(tmp_path / "partial.ckpt"), config_file, vocab_file, True, str(tmp_path / "o")
        )
    both = {**variables, **our_variables(cc, ("squad",))}
    write_checkpoint(str(tmp_path / "both.ckpt"), both)
    with pytest.raises(ValueError, match="both a classifier head"):
        cc.tf_to_hf(
            str(tmp_path / "both.ckpt"), config_file, vocab_file, True, str(tmp_path / "o")
        )
    with pytest.raises(ValueError, match="no checkpoint there"):
        cc.tf_to_hf(
            str(tmp_path / "nope.ckpt"), config_file, vocab_file, True, str(tmp_path / "o")
        )
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_command_line_errors_are_one_line(tmp_path):
    hf_dir = make_hf_dir(tmp_path / "hf", hf_tensors(), model_type="roberta")
    result = run_script(
        "convert_checkpoint.py",
        "--direction=hf_to_tf",
        f"--input={hf_dir}",
        f"--output_dir={tmp_path / 'out'}",
    )
    expected = f"ERROR: {hf_dir}/config.json: model_type is 'roberta', not 'bert'"
    assert error_line(result) == expected
    assert [line for line in result.stderr.splitlines() if line.startswith("ERROR:")] == [expected]
    assert not (tmp_path / "out").exists()
    shutil.rmtree(hf_dir)


@pytest.fixture
def parsed_flags(script):
    """Parses convert_checkpoint's flags in-process; undone after the test."""
    from absl import flags

    def parse(*args):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(["convert_checkpoint.py", *args])

    yield parse
    flags.FLAGS.unparse_flags()


@pytest.mark.parametrize(
    "direction, extra, message",
    [
        ("hub_to_tf", ["--vocab_file=v.txt"], "--vocab_file is for --direction=tf_to_hf or tf_t"),
        ("hub_to_tf", ["--do_lower_case=False"], "--do_lower_case is for --direction=tf_to_hf "),
        ("hf_to_tf", ["--with_mlm"], "--with_mlm is for --direction=tf_to_hub only$"),
        ("tf_to_hf", ["--with_mlm", "--bert_config_file=c", "--vocab_file=v"], "--with_mlm is"),
        ("tf_to_hub", ["--task_name=mrpc"], "--task_name is for --direction=tf_to_hf only$"),
        ("tf_to_hub", ["--vocab_file=v"], "^--bert_config_file is required with --direction=tf_"),
        (
            "tf_to_hub",
            ["--bert_config_file=c"],
            "^--vocab_file is required with --direction=tf_to",
        ),
    ],
)
def test_a_flag_of_another_direction_is_refused_before_any_work(
    script, parsed_flags, tmp_path, direction, extra, message
):
    parsed_flags(
        f"--direction={direction}", f"--input={tmp_path}", f"--output_dir={tmp_path / 'o'}", *extra
    )
    with pytest.raises(ValueError, match=message):
        script.main([])
    assert os.listdir(tmp_path) == []
