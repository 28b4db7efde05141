"""The Hugging Face format: a model directory as `save_pretrained` writes it, in and out.

hf_to_tf reads config.json, the weights (model.safetensors or its sharded
index, or pytorch_model.bin when torch is installed), the vocabulary
(vocab.txt or tokenizer.json) and tokenizer_config.json, and writes the
model directory the scripts read (tf_checkpoint.CHECKPOINT_FILES). tf_to_hf
reads any checkpoint the scripts read or write and writes config.json,
model.safetensors, vocab.txt and tokenizer_config.json. Which tensor is
which is hf_names'; the weights file is safetensors'.
"""

import json
import os
import re
import shutil
import time

import numpy as np
from absl import logging

import modeling

from ..bert_runs import checks
from ..plumbing import atomic_write
from ..plumbing import vocab_file as vocab_file_reader
from ..plumbing.errors import UsageError
from ..task_data import classifier_tasks  # the label names of --task_name
from . import hf_names, tf_checkpoint
from .safetensors import read_safetensors, write_safetensors

# Activation names: ours -> Hugging Face, and Hugging Face -> ours (each pair
# computes the same function).
ACT_TO_HF = {
    "gelu": "gelu_new",
    "gelu_erf": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
ACT_FROM_HF = {
    "gelu": "gelu_erf",
    "gelu_python": "gelu_erf",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}

# The one LayerNorm epsilon modeling.py uses.
LAYER_NORM_EPS = modeling.LAYER_NORM_EPSILON

HF_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json")


def _read_torch_file(path):
    try:
        import torch
    except ImportError:
        raise UsageError(
            f"{path}: reading pytorch_model.bin needs torch, which is not installed; "
            "save the model with safetensors (save_pretrained(..., safe_serialization=True)) "
            "and convert its model.safetensors"
        ) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several kinds for a bad file
        raise UsageError(f"{path}: torch cannot read it ({e})") from None
    tensors = {}
    for name, value in state.items():
        if value.dtype in (torch.float16, torch.bfloat16):
            value = value.float()
        tensors[name] = value.numpy()
    return tensors


def read_hf_weights(hf_dir):
    """Returns {name: numpy array} of a Hugging Face model directory's weights.

    Looks for model.safetensors, model.safetensors.index.json (shards),
    pytorch_model.bin and pytorch_model.bin.index.json, in that order.
    """
    for name, sharded, reader in (
        ("model.safetensors", False, lambda p: read_safetensors(p)[0]),
        ("model.safetensors.index.json", True, lambda p: read_safetensors(p)[0]),
        ("pytorch_model.bin", False, _read_torch_file),
        ("pytorch_model.bin.index.json", True, _read_torch_file),
    ):
        path = os.path.join(hf_dir, name)
        if not os.path.isfile(path):
            continue
        if not sharded:
            return reader(path)
        index = _read_json(path)
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise UsageError(f"{path}: no weight_map")
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            shard_path = os.path.join(hf_dir, shard)
            if not os.path.isfile(shard_path):
                raise UsageError(f"{path}: shard {shard} is missing")
            tensors.update(reader(shard_path))
        missing = sorted(set(weight_map) - set(tensors))
        if missing:
            raise UsageError(f"{path}: {missing[0]} is not in its shard {weight_map[missing[0]]}")
        return tensors
    raise UsageError(
        f"--input={hf_dir}: no model.safetensors, model.safetensors.index.json or "
        "pytorch_model.bin"
    )


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except ValueError as e:
        raise UsageError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path}: not a JSON object")
    return value


# Sizes a Hugging Face config must give: the keys of bert_config.json that fix a model's
# architecture, its activation apart (named otherwise there, and mapped below).
_HF_SIZES = tuple(key for key in checks.ARCHITECTURE_KEYS if key != "hidden_act")


def bert_config_from_hf(hf_config, source="config.json"):
    """Returns a modeling.BertConfig for a Hugging Face BERT config dict.

    Raises ValueError naming `source` and the key for a model that is not an
    encoder-only BERT with absolute positions, or an activation with no
    counterpart here.
    """
    model_type = hf_config.get("model_type")
    if model_type != "bert":
        raise UsageError(f"{source}: model_type is {model_type!r}, not 'bert'")
    position = hf_config.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise UsageError(
            f"{source}: position_embedding_type is {position!r}; only 'absolute' is supported"
        )
    for key in ("is_decoder", "add_cross_attention"):
        if hf_config.get(key):
            raise UsageError(f"{source}: {key} is true; only encoder models are supported")
    eps = hf_config.get("layer_norm_eps", LAYER_NORM_EPS)
    if eps != LAYER_NORM_EPS:
        raise UsageError(f"{source}: layer_norm_eps is {eps}; BertModel uses {LAYER_NORM_EPS}")
    act = hf_config.get("hidden_act")
    if not isinstance(act, str) or act.lower() not in ACT_FROM_HF:
        raise UsageError(
            f"{source}: hidden_act {act!r} has no counterpart here (known: "
            f"{', '.join(sorted(ACT_FROM_HF))})"
        )
    values = {}
    for key in _HF_SIZES:
        if key not in hf_config:
            raise UsageError(f"{source}: {key} is missing")
        values[key] = hf_config[key]
    values["hidden_act"] = ACT_FROM_HF[act.lower()]
    for key, default in (
        ("hidden_dropout_prob", 0.1),
        ("attention_probs_dropout_prob", 0.1),
        ("initializer_range", 0.02),
    ):
        values[key] = hf_config.get(key, default)
    config = modeling.BertConfig(**values)
    config.validate(source)
    return config


# The layer number in a Hugging Face encoder tensor's name.
_HF_LAYER = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.")


def _hf_vocab(hf_dir):
    """The WordPiece vocabulary lines: vocab.txt, else tokenizer.json's model.vocab."""
    path = os.path.join(hf_dir, "vocab.txt")
    if os.path.isfile(path):
        return vocab_file_reader.read_lines(path, "--input"), path
    path = os.path.join(hf_dir, "tokenizer.json")
    if not os.path.isfile(path):
        raise UsageError(f"--input={hf_dir}: neither vocab.txt nor tokenizer.json is there")
    model = _read_json(path).get("model") or {}
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise UsageError(f"{path}: model is {model.get('type')!r}, not a WordPiece vocabulary")
    by_id = {}
    for token, index in model["vocab"].items():
        if not isinstance(index, int) or index in by_id:
            raise UsageError(f"{path}: token {token!r} has id {index!r}, not a new integer")
        by_id[index] = token
    if sorted(by_id) != list(range(len(by_id))):
        raise UsageError(f"{path}: the vocabulary ids are not 0..{len(by_id) - 1}")
    for token in by_id.values():
        if "\n" in token or "\r" in token:
            raise UsageError(f"{path}: token {token!r} cannot be a line of vocab.txt")
    return [by_id[i] for i in range(len(by_id))], path


def _hf_lower_case(hf_dir):
    """(do_lower_case, where it came from)."""
    path = os.path.join(hf_dir, "tokenizer_config.json")
    if os.path.isfile(path):
        value = _read_json(path).get("do_lower_case")
        if isinstance(value, bool):
            return value, path
    path = os.path.join(hf_dir, "tokenizer.json")
    if os.path.isfile(path):
        normalizer = _read_json(path).get("normalizer") or {}
        if isinstance(normalizer.get("lowercase"), bool):
            return normalizer["lowercase"], path + " (normalizer.lowercase)"
    return True, "the BertTokenizer default (no tokenizer setting found)"


def _strip_base_prefix(weights):
    """Names without "bert."; the base model's names stand alone in a BertModel file."""
    out = {}
    for name, value in weights.items():
        short = name[len("bert.") :] if name.startswith("bert.") else name
        if short in out:
            raise UsageError(f"tensor {short} is there both with and without the 'bert.' prefix")
        out[short] = value
    return out


def _as_float32(name, value):
    if value.dtype.kind == "f" and value.dtype != np.float32:
        logging.info("Casting %s from %s to float32", name, value.dtype)
        return value.astype(np.float32)
    return value


def convert_hf_weights(weights, config, source):
    """Maps Hugging Face tensors to {our variable name: array}; also returns the unused names.

    Raises ValueError naming a missing tensor, a shape that does not fit the
    config, or a tied copy that differs from its original.
    """
    hf = _strip_base_prefix(weights)
    out, used = {}, set()

    def take(pairs, required=True):
        for ours, theirs, transpose in pairs:
            if theirs not in hf:
                if required:
                    raise UsageError(f"{source}: tensor {theirs} is missing")
                continue
            value = _as_float32(theirs, hf[theirs])
            out[ours] = np.ascontiguousarray(value.T) if transpose else value
            used.add(theirs)

    if "cls.predictions.bias" not in hf and "cls.predictions.decoder.bias" in hf:
        hf["cls.predictions.bias"] = hf["cls.predictions.decoder.bias"]
    heads = [
        h for h, pairs in hf_names.HEADS.items() if any(theirs in hf for _, theirs, _ in pairs)
    ]
    take(hf_names.encoder_names(config.num_hidden_layers))
    for head in heads:
        take(hf_names.HEADS[head])
    has_pooler = any(theirs in hf for _, theirs, _ in hf_names.POOLER)
    if has_pooler or hf_names.architecture(set(heads)) not in hf_names.NO_POOLER:
        take(hf_names.POOLER)
    else:
        logging.info("No pooler in the source (none in a %s)", hf_names.architecture(set(heads)))
    for copy, original in hf_names.TIED.items():
        if copy in hf and original in hf:
            if hf[copy].shape != hf[original].shape or not np.array_equal(hf[copy], hf[original]):
                raise UsageError(
                    f"{source}: {copy} differs from {original}; untied output embeddings "
                    "have no place in this model"
                )
            used.add(copy)
    expected = modeling.bert_variable_shapes(config)
    expected.update(hf_names.head_shapes(config, out))
    for name, value in out.items():
        if name in expected and list(value.shape) != expected[name]:
            hf_name = {ours: theirs for ours, theirs, _ in hf_names.all_pairs(config)}[name]
            raise UsageError(
                f"{source}: tensor {hf_name} has shape {list(hf[hf_name].shape)}, but "
                f"{name} must be {expected[name]} for this config"
            )
    unused = sorted(name for name in weights if hf_names.without_base_prefix(name) not in used)
    return out, heads, unused


def hf_to_tf(hf_dir, output_dir):
    """Converts a Hugging Face BERT directory into bert_config.json, vocab.txt, bert_model.ckpt.

    Returns a dict: do_lower_case, heads (names of hf_names.HEADS found), unused
    (source tensors not converted), checkpoint (path prefix written).

    Raises:
      ValueError: a bad input (not BERT, missing tensor, ...) or an output
        directory that already holds these files; nothing is written then.
    """
    start = time.time()
    if not os.path.isdir(hf_dir):
        raise UsageError(f"--input={hf_dir}: not a directory")
    tf_checkpoint.check_output_dir(output_dir, tf_checkpoint.CHECKPOINT_FILES)
    config_path = os.path.join(hf_dir, "config.json")
    if not os.path.isfile(config_path):
        raise UsageError(f"--input={hf_dir}: no config.json")
    config = bert_config_from_hf(_read_json(config_path), config_path)
    vocab, vocab_source = _hf_vocab(hf_dir)
    do_lower_case, case_source = _hf_lower_case(hf_dir)
    weights = read_hf_weights(hf_dir)
    variables, heads, unused = convert_hf_weights(weights, config, hf_dir)
    layers = {m.group(1) for m in map(_HF_LAYER.search, weights) if m}
    sources = checks.Sources(
        config_path, hf_dir, vocab_source, "--input", f"{case_source}'s do_lower_case"
    )
    names = [*variables, *(f"bert/encoder/layer_{n}/" for n in layers)]
    checks.check_converted_model(config, names, vocab, do_lower_case, sources)
    _log_list("Source tensors not converted", unused)
    checkpoint = tf_checkpoint.write_model(output_dir, config, variables, vocab_lines=vocab)
    logging.info(
        "Wrote %d variables (heads: %s) to %s in %.1f s",
        len(variables),
        ", ".join(heads) or "none",
        output_dir,
        time.time() - start,
    )
    return {
        "do_lower_case": do_lower_case,
        "do_lower_case_source": case_source,
        "heads": heads,
        "unused": unused,
        "checkpoint": checkpoint,
        "hidden_act": config.hidden_act,
    }


def hf_config_from_bert(config, architecture, labels=None):
    """The config.json dict for a BertConfig; labels name a classifier's outputs."""
    act = config.hidden_act
    if not isinstance(act, str) or act.lower() not in ACT_TO_HF:
        raise UsageError(f"hidden_act {act!r} has no Hugging Face counterpart")
    hf = {
        "architectures": [architecture],
        "model_type": "bert",
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "hidden_act": ACT_TO_HF[act.lower()],
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "hidden_size": config.hidden_size,
        "initializer_range": config.initializer_range,
        "intermediate_size": config.intermediate_size,
        "layer_norm_eps": LAYER_NORM_EPS,
        "max_position_embeddings": config.max_position_embeddings,
        "num_attention_heads": config.num_attention_heads,
        "num_hidden_layers": config.num_hidden_layers,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "type_vocab_size": config.type_vocab_size,
        "vocab_size": config.vocab_size,
        "torch_dtype": "float32",
    }
    if labels is not None:
        hf["id2label"] = {str(i): label for i, label in enumerate(labels)}
        hf["label2id"] = {label: i for i, label in enumerate(labels)}
        if len(labels) == 1:
            hf["problem_type"] = "regression"
    return hf


def _labels(task_name, num_labels):
    if task_name is None:
        return [f"LABEL_{i}" for i in range(num_labels)]
    processor = classifier_tasks.get_processor(task_name)
    # A regression task has one output, its score.
    labels = [classifier_tasks.SCORE_OUTPUT] if processor.is_regression else processor.get_labels()
    if len(labels) != num_labels:
        raise UsageError(
            f"--task_name={task_name} has {len(labels)} outputs, but the checkpoint's "
            f"output_weights has {num_labels} rows"
        )
    return labels


def convert_tf_variables(variables, config, source, task_name=None):
    """Maps our variables to (HF tensors, architecture, labels, dropped, unused).

    Raises ValueError naming a missing variable or a shape that does not fit.
    """
    present = [
        head for head, pairs in hf_names.HEADS.items() if any(o in variables for o, _, _ in pairs)
    ]
    if "classifier" in present and "squad" in present:
        raise UsageError(
            f"{source}: holds both a classifier head (output_weights) and a SQuAD head "
            "(cls/squad/output_weights); convert one model at a time"
        )
    task = [head for head in present if head in ("classifier", "squad")]
    heads = task or present
    architecture = hf_names.architecture(set(heads))
    prefix = "" if architecture == "BertModel" else "bert."
    base = hf_names.encoder_names(config.num_hidden_layers)
    if architecture not in hf_names.NO_POOLER:
        base += hf_names.POOLER
    pairs = [(o, prefix + t, tr) for o, t, tr in base]
    for head in heads:
        pairs += hf_names.HEADS[head]
    expected = modeling.bert_variable_shapes(config)
    expected.update(hf_names.head_shapes(config, variables))
    tensors, used = {}, set()
    for ours, theirs, transpose in pairs:
        if ours not in variables:
            raise UsageError(f"{source}: variable {ours} is missing")
        value = variables[ours]
        if ours in expected and list(value.shape) != expected[ours]:
            raise UsageError(
                f"{source}: variable {ours} has shape {list(value.shape)}, but the config "
                f"implies {expected[ours]}"
            )
        tensors[theirs] = np.ascontiguousarray(value.T) if transpose else value
        used.add(ours)
    labels = None
    if architecture == "BertForSequenceClassification":
        labels = _labels(task_name, int(variables["output_bias"].shape[0]))
    elif task_name is not None:
        raise UsageError(f"--task_name={task_name}: the checkpoint has no classifier head")
    rest = sorted(set(variables) - used)
    dropped = [name for name in rest if hf_names.TRAINING_STATE.search(name)]
    unused = [name for name in rest if not hf_names.TRAINING_STATE.search(name)]
    return tensors, architecture, labels, dropped, unused


def tf_to_hf(checkpoint, bert_config_file, vocab_file, do_lower_case, output_dir, task_name=None):
    """Converts a checkpoint of the scripts into a Hugging Face model directory.

    Returns a dict: architecture, labels (or None), dropped (training-state
    variables left out), unused (other variables not converted).

    Raises:
      ValueError: a bad input or an output directory that already holds
        these files; nothing is written then.
    """
    start = time.time()
    for flag, path in (("bert_config_file", bert_config_file), ("vocab_file", vocab_file)):
        if not path or not os.path.isfile(path):
            raise UsageError(f"--{flag}={path}: no such file")
    tf_checkpoint.check_output_dir(output_dir, HF_FILES)
    config = checks.load_bert_config(bert_config_file)
    variables, path = tf_checkpoint.read_checkpoint(checkpoint)
    vocab = vocab_file_reader.read_lines(vocab_file, "--vocab_file")
    sources = checks.Sources(bert_config_file, path, vocab_file, "--vocab_file", "--do_lower_case")
    checks.check_converted_model(config, list(variables), vocab, do_lower_case, sources)
    tensors, architecture, labels, dropped, unused = convert_tf_variables(
        variables, config, path, task_name
    )
    hf_config = hf_config_from_bert(config, architecture, labels)
    _log_list("Dropped training-state variables", dropped)
    _log_list("Variables not converted", unused)
    tokenizer_config = {
        "do_lower_case": bool(do_lower_case),
        "tokenizer_class": "BertTokenizer",
        "model_max_length": config.max_position_embeddings,
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "mask_token": "[MASK]",
        "unk_token": "[UNK]",
        "tokenize_chinese_chars": True,
        "strip_accents": None,
    }

    with atomic_write.staged_directory(output_dir, HF_FILES, flag="--output_dir") as stage:
        write_safetensors(
            os.path.join(stage, "model.safetensors"), tensors, metadata={"format": "pt"}
        )
        shutil.copyfile(vocab_file, os.path.join(stage, "vocab.txt"))
        for name, value in (
            ("tokenizer_config.json", tokenizer_config),
            ("config.json", hf_config),
        ):
            with open(os.path.join(stage, name), "w", encoding="utf-8") as f:
                f.write(json.dumps(value, indent=2, sort_keys=True) + "\n")
    logging.info(
        "Wrote %s (%d tensors) to %s in %.1f s",
        architecture,
        len(tensors),
        output_dir,
        time.time() - start,
    )
    return {"architecture": architecture, "labels": labels, "dropped": dropped, "unused": unused}


def _log_list(what, names):
    if names:
        logging.info("%s (%d): %s", what, len(names), ", ".join(names))
