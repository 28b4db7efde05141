"""Converts BERT checkpoints between this repository's format, Hugging Face's and TF Hub's.

    python convert_checkpoint.py --direction=hf_to_tf --input=HF_DIR --output_dir=OUT
    python convert_checkpoint.py --direction=tf_to_hf --input=CKPT_PREFIX \\
        --bert_config_file=bert_config.json --vocab_file=vocab.txt \\
        --do_lower_case=True --output_dir=OUT [--task_name=TASK]
    python convert_checkpoint.py --direction=hub_to_tf --input=HUB_DIR --output_dir=OUT
    python convert_checkpoint.py --direction=tf_to_hub --input=CKPT_PREFIX \\
        --bert_config_file=bert_config.json --vocab_file=vocab.txt \\
        --do_lower_case=True --output_dir=OUT [--with_mlm]

hf_to_tf reads a directory as Hugging Face's `save_pretrained` writes it
(config.json, model.safetensors or its sharded index, or pytorch_model.bin
when torch is installed; vocab.txt or tokenizer.json; tokenizer_config.json)
and writes OUT/bert_config.json, OUT/vocab.txt and OUT/bert_model.ckpt.*
under the variable names the scripts use, ready for --init_checkpoint.
tf_to_hf reads any checkpoint the scripts read or write and writes
OUT/config.json, OUT/model.safetensors, OUT/vocab.txt and
OUT/tokenizer_config.json. Safetensors files are read and written with numpy
alone: an 8-byte little-endian header length, a JSON header giving each
tensor's dtype, shape and [begin, end) byte offsets into the data that
follows, and the little-endian tensor bytes.

hub_to_tf and tf_to_hub are tfhub_encoder's import_encoder and
export_encoder: a BERT encoder in the TF Hub SavedModel format (as TF Hub,
Kaggle and TensorFlow Model Garden publish them: called with
input_word_ids, input_mask and input_type_ids, it returns pooled_output,
sequence_output and encoder_outputs, and carries its vocab_file and
do_lower_case) becomes the same three files as hf_to_tf writes, and any
checkpoint becomes such an encoder, with --with_mlm its masked LM head too
(the `mlm` sub-object). Like hf_to_tf, hub_to_tf prints the flags that use
the result.

Heads that are present carry over: the pretraining heads (cls/predictions,
cls/seq_relationship), run_classifier's output_weights / output_bias
(Hugging Face's classifier.*) and run_squad's cls/squad/output_* (qa_outputs.*,
row 0 the start logits, row 1 the end logits). Dense kernels are stored
[in, out] here and [out, in] there; the head matrices above are [out, in] in
both. Hugging Face's question answering and masked LM models have no
pooler, so none is required from them and none is written to them. Floating
tensors are float32 here; float16 / bfloat16 sources are widened exactly.
A TF Hub encoder holds the encoder alone (and the masked LM head): a task
head is left out of it and listed in the log.

Activations keep the function the model was trained with:

    ours (bert_config.json)   Hugging Face (config.json)
    gelu (tanh approx.)       gelu_new  (also read: gelu_pytorch_tanh, gelu_fast)
    gelu_erf (exact)          gelu      (also read: gelu_python)
    relu / tanh / linear      relu / tanh / linear

Optimizer slots, global_step and loss-scale variables are dropped, and every
source tensor that is not converted is listed in the log. Nothing appears in
OUT until every file has been written.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import json
import os
import re
import shutil
import struct
import time

import numpy as np
import tensorflow as tf
from absl import flags, logging

import modeling
import tokenization
from bert_lib import engine, script_flags
from bert_lib.export import tfhub_encoder
from bert_lib.model import checks
from bert_lib.plumbing import atomic_write, startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import classifier_data  # the label names of --task_name

FLAGS = flags.FLAGS

flags.DEFINE_enum(
    "direction",
    None,
    ["hf_to_tf", "tf_to_hf", "hub_to_tf", "tf_to_hub"],
    "hf_to_tf: a Hugging Face model directory to a checkpoint the scripts read; "
    "tf_to_hf: a checkpoint to a Hugging Face model directory; "
    "hub_to_tf: a TF Hub-format BERT encoder (a TF2 SavedModel directory) to a checkpoint; "
    "tf_to_hub: a checkpoint to a TF Hub-format BERT encoder.",
)
flags.DEFINE_string(
    "input",
    None,
    "hf_to_tf: the Hugging Face model directory; hub_to_tf: the encoder's SavedModel "
    "directory; tf_to_hf, tf_to_hub: the checkpoint path prefix (e.g. model.ckpt-1000) or a "
    "directory holding checkpoints (the newest is used).",
)
flags.DEFINE_bool(
    "with_mlm",
    False,
    "tf_to_hub: also export the masked LM head (cls/predictions/*, so a pre-training "
    "checkpoint) as the encoder's `mlm` sub-object, which returns mlm_logits.",
)
# The flags this script shares with the others (bert_lib/script_flags.py).
script_flags.define_flags(
    "output_dir", "bert_config_file", "vocab_file", "do_lower_case", "task_name", "show_traceback"
)

# The flags beyond --input and --output_dir each direction takes: (required, optional).
# Any other of these given on the command line is refused.
DIRECTION_FLAGS = {
    "hf_to_tf": ((), ()),
    "tf_to_hf": (("bert_config_file", "vocab_file"), ("do_lower_case", "task_name")),
    "hub_to_tf": ((), ()),
    "tf_to_hub": (("bert_config_file", "vocab_file"), ("do_lower_case", "with_mlm")),
}

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

# Variables of training state, not of the model: dropped by tf_to_hf.
_TRAINING_STATE_RE = re.compile(
    r"(^|/)(global_step|adam_[mv]|Adam(_\d+)?|Momentum|good_steps|current_loss_scale|"
    r"loss_scale\w*)$"
)

# safetensors dtype codes and their numpy dtypes (little-endian).
_ST_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",  # widened to float32 on reading
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_NP_TO_ST = {np.dtype(v): k for k, v in _ST_DTYPES.items() if k != "BF16"}

HF_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json")
TF_FILES = (
    "bert_config.json",
    "vocab.txt",
    "bert_model.ckpt.data-00000-of-00001",
    "bert_model.ckpt.index",
)


# ---------------------------------------------------------------------------
# safetensors, numpy only


def read_safetensors(path):
    """Returns {name: numpy array} from a .safetensors file, and its __metadata__.

    BF16 tensors are widened to float32 (exactly: bfloat16 is the top half of
    a float32). Raises ValueError naming the file and key for a malformed file.
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise UsageError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise UsageError(f"{path}: header length {header_len} exceeds the file size")
    try:
        header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"{path}: the safetensors header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise UsageError(f"{path}: the safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    buffer = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, entry in header.items():
        try:
            dtype_code, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise UsageError(f"{path}: tensor {name} has a malformed header entry") from None
        if dtype_code not in _ST_DTYPES:
            raise UsageError(f"{path}: tensor {name} has unsupported dtype {dtype_code}")
        if not all(isinstance(n, int) and n >= 0 for n in [*shape, begin, end]):
            raise UsageError(f"{path}: tensor {name} has a malformed shape or data_offsets")
        dtype = np.dtype(_ST_DTYPES[dtype_code])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(buffer) or end - begin != count * dtype.itemsize:
            raise UsageError(
                f"{path}: tensor {name} has data_offsets [{begin}, {end}] that do not fit its "
                f"shape {shape} and dtype {dtype_code} in {len(buffer)} bytes of data"
            )
        array = np.frombuffer(buffer[begin:end], dtype=dtype).reshape(shape)
        if dtype_code == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = array.astype(array.dtype.newbyteorder("="))
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: numpy array} as a .safetensors file (names sorted, data contiguous).

    The header is padded with spaces to a multiple of 8 bytes, so every
    tensor starts 8-byte aligned.
    """
    header, offset, order = {}, 0, sorted(tensors)
    for name in order:
        array = tensors[name]
        if array.dtype not in _NP_TO_ST:
            raise ValueError(f"{path}: tensor {name} has dtype {array.dtype}, not storable")
        header[name] = {
            "dtype": _NP_TO_ST[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    if metadata:
        header["__metadata__"] = dict(metadata)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for name in order:
            f.write(np.ascontiguousarray(tensors[name], tensors[name].dtype.newbyteorder("<")))


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


# ---------------------------------------------------------------------------
# Variable names: ours <-> Hugging Face's


def _encoder_names(num_layers):
    """[(our name, HF name without the "bert." prefix, transpose)] of the encoder.

    The pooler is apart (POOLER): Hugging Face's question answering and
    masked LM models have none.
    """
    names = [
        ("bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight", False),
        ("bert/embeddings/position_embeddings", "embeddings.position_embeddings.weight", False),
        (
            "bert/embeddings/token_type_embeddings",
            "embeddings.token_type_embeddings.weight",
            False,
        ),
    ]
    names += _layer_norm("bert/embeddings/LayerNorm", "embeddings.LayerNorm")
    for i in range(num_layers):
        ours, theirs = f"bert/encoder/layer_{i}/", f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            names += _dense(ours + "attention/self/" + part, theirs + "attention.self." + part)
        names += _dense(ours + "attention/output/dense", theirs + "attention.output.dense")
        names += _layer_norm(
            ours + "attention/output/LayerNorm", theirs + "attention.output.LayerNorm"
        )
        names += _dense(ours + "intermediate/dense", theirs + "intermediate.dense")
        names += _dense(ours + "output/dense", theirs + "output.dense")
        names += _layer_norm(ours + "output/LayerNorm", theirs + "output.LayerNorm")
    return names


def _dense(ours, theirs):
    return [
        (ours + "/kernel", theirs + ".weight", True),
        (ours + "/bias", theirs + ".bias", False),
    ]


def _layer_norm(ours, theirs):
    return [
        (ours + "/gamma", theirs + ".weight", False),
        (ours + "/beta", theirs + ".bias", False),
    ]


def _output_layer(ours, theirs):
    # [num_outputs, hidden] in both layouts: the scripts multiply with transpose_b.
    return [
        (ours + "output_weights", theirs + "weight", False),
        (ours + "output_bias", theirs + "bias", False),
    ]


# Heads: name -> [(our name, HF name, transpose)].
POOLER = _dense("bert/pooler/dense", "pooler.dense")
HEADS = {
    "predictions": _dense("cls/predictions/transform/dense", "cls.predictions.transform.dense")
    + _layer_norm("cls/predictions/transform/LayerNorm", "cls.predictions.transform.LayerNorm")
    + [("cls/predictions/output_bias", "cls.predictions.bias", False)],
    "seq_relationship": _output_layer("cls/seq_relationship/", "cls.seq_relationship."),
    "classifier": _output_layer("", "classifier."),
    "squad": _output_layer("cls/squad/", "qa_outputs."),
}
# Tied copies Hugging Face may also store: each must equal the tensor named.
_HF_TIED = {
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}


def _architecture(heads):
    if "squad" in heads:
        return "BertForQuestionAnswering"
    if "classifier" in heads:
        return "BertForSequenceClassification"
    if heads == {"predictions", "seq_relationship"}:
        return "BertForPreTraining"
    if heads == {"predictions"}:
        return "BertForMaskedLM"
    if heads == {"seq_relationship"}:
        return "BertForNextSentencePrediction"
    return "BertModel"


# Hugging Face builds these without a pooler.
_NO_POOLER = ("BertForQuestionAnswering", "BertForMaskedLM")


# ---------------------------------------------------------------------------
# Hugging Face -> ours


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except ValueError as e:
        raise UsageError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path}: not a JSON object")
    return value


# Sizes a Hugging Face config must give (the same keys as bert_config.json's).
_HF_SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


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
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n").rstrip("\r") for line in f], path
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
    heads = [h for h, pairs in HEADS.items() if any(theirs in hf for _, theirs, _ in pairs)]
    take(_encoder_names(config.num_hidden_layers))
    for head in heads:
        take(HEADS[head])
    has_pooler = any(theirs in hf for _, theirs, _ in POOLER)
    if has_pooler or _architecture(set(heads)) not in _NO_POOLER:
        take(POOLER)
    else:
        logging.info("No pooler in the source (none in a %s)", _architecture(set(heads)))
    for copy, original in _HF_TIED.items():
        if copy in hf and original in hf:
            if hf[copy].shape != hf[original].shape or not np.array_equal(hf[copy], hf[original]):
                raise UsageError(
                    f"{source}: {copy} differs from {original}; untied output embeddings "
                    "have no place in this model"
                )
            used.add(copy)
    expected = modeling.bert_variable_shapes(config)
    expected.update(_head_shapes(config, out))
    for name, value in out.items():
        if name in expected and list(value.shape) != expected[name]:
            hf_name = {ours: theirs for ours, theirs, _ in _all_pairs(config)}[name]
            raise UsageError(
                f"{source}: tensor {hf_name} has shape {list(hf[hf_name].shape)}, but "
                f"{name} must be {expected[name]} for this config"
            )
    unused = sorted(name for name in weights if _strip_one(name) not in used)
    return out, heads, unused


def _strip_one(name):
    return name[len("bert.") :] if name.startswith("bert.") else name


def _all_pairs(config):
    pairs = _encoder_names(config.num_hidden_layers) + POOLER
    for head_pairs in HEADS.values():
        pairs += head_pairs
    return pairs


def _head_shapes(config, variables):
    """Shapes of the task heads, their number of outputs taken from output_bias."""
    shapes = {}
    for prefix in ("", "cls/squad/"):
        if prefix + "output_bias" in variables:
            n = int(variables[prefix + "output_bias"].shape[0]) if prefix == "" else 2
            shapes[prefix + "output_weights"] = [n, config.hidden_size]
            shapes[prefix + "output_bias"] = [n]
    return shapes


def hf_to_tf(hf_dir, output_dir):
    """Converts a Hugging Face BERT directory into bert_config.json, vocab.txt, bert_model.ckpt.

    Returns a dict: do_lower_case, heads (names of HEADS found), unused
    (source tensors not converted), checkpoint (path prefix written).

    Raises:
      ValueError: a bad input (not BERT, missing tensor, ...) or an output
        directory that already holds these files; nothing is written then.
    """
    start = time.time()
    if not os.path.isdir(hf_dir):
        raise UsageError(f"--input={hf_dir}: not a directory")
    _check_output_dir(output_dir, TF_FILES)
    config_path = os.path.join(hf_dir, "config.json")
    if not os.path.isfile(config_path):
        raise UsageError(f"--input={hf_dir}: no config.json")
    config = bert_config_from_hf(_read_json(config_path), config_path)
    vocab, vocab_source = _hf_vocab(hf_dir)
    do_lower_case, case_source = _hf_lower_case(hf_dir)
    weights = read_hf_weights(hf_dir)
    variables, heads, unused = convert_hf_weights(weights, config, hf_dir)
    layers = {m.group(1) for m in map(_HF_LAYER.search, weights) if m}
    check_converted_model(
        config,
        [*variables, *(f"bert/encoder/layer_{n}/" for n in layers)],
        vocab,
        do_lower_case,
        Sources(config_path, hf_dir, vocab_source, "--input", f"{case_source}'s do_lower_case"),
    )
    _log_list("Source tensors not converted", unused)

    def write(stage):
        with open(os.path.join(stage, "bert_config.json"), "w", encoding="utf-8") as f:
            f.write(config.to_json_string())
        with open(os.path.join(stage, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in vocab))
        write_tf_checkpoint(os.path.join(stage, "bert_model.ckpt"), variables)

    _write_directory(output_dir, TF_FILES, write)
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
        "checkpoint": os.path.join(output_dir, "bert_model.ckpt"),
        "hidden_act": config.hidden_act,
    }


def write_tf_checkpoint(prefix, variables):
    """Writes {name: array} as a name-based TF checkpoint (prefix.index, prefix.data-*)."""
    names = sorted(variables)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        inputs = [tf.compat.v1.placeholder(tf.as_dtype(variables[n].dtype)) for n in names]
        save = tf.raw_ops.SaveV2(
            prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=inputs
        )
        session.run(save, feed_dict={p: variables[n] for p, n in zip(inputs, names)})


# ---------------------------------------------------------------------------
# ours -> Hugging Face


def read_tf_checkpoint(checkpoint):
    """{name: array} of every variable in a checkpoint (prefix, or directory: the newest;
    one of its files, model.ckpt-300.index, stands for its prefix)."""
    path = checkpoint = startup_checks.checkpoint_prefix(checkpoint, "--input")
    if os.path.isdir(checkpoint):
        path = engine.newest_checkpoint(checkpoint)
        if path is None:
            raise UsageError(f"--input={checkpoint}: no checkpoint in this directory")
    try:
        reader = tf.train.load_checkpoint(path)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        raise UsageError(f"--input={checkpoint}: no checkpoint there") from None
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}, path


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
    labels = classifier_data.get_processor(task_name).get_labels()
    labels = labels or ["score"]  # a regression task: one output
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
    present = [head for head, pairs in HEADS.items() if any(o in variables for o, _, _ in pairs)]
    if "classifier" in present and "squad" in present:
        raise UsageError(
            f"{source}: holds both a classifier head (output_weights) and a SQuAD head "
            "(cls/squad/output_weights); convert one model at a time"
        )
    task = [head for head in present if head in ("classifier", "squad")]
    heads = task or present
    architecture = _architecture(set(heads))
    prefix = "" if architecture == "BertModel" else "bert."
    base = _encoder_names(config.num_hidden_layers)
    if architecture not in _NO_POOLER:
        base += POOLER
    pairs = [(o, prefix + t, tr) for o, t, tr in base]
    for head in heads:
        pairs += HEADS[head]
    expected = modeling.bert_variable_shapes(config)
    expected.update(_head_shapes(config, variables))
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
    dropped = [name for name in rest if _TRAINING_STATE_RE.search(name)]
    unused = [name for name in rest if not _TRAINING_STATE_RE.search(name)]
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
    _check_output_dir(output_dir, HF_FILES)
    config = checks.load_bert_config(bert_config_file)
    variables, path = read_tf_checkpoint(checkpoint)
    vocab = startup_checks.read_text(vocab_file, "--vocab_file").split("\n")
    check_converted_model(
        config, list(variables), vocab[:-1] if vocab[-1] == "" else vocab, do_lower_case,
        Sources(bert_config_file, path, vocab_file, "--vocab_file", "--do_lower_case"),
    )  # fmt: skip
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

    def write(stage):
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

    _write_directory(output_dir, HF_FILES, write)
    logging.info(
        "Wrote %s (%d tensors) to %s in %.1f s",
        architecture,
        len(tensors),
        output_dir,
        time.time() - start,
    )
    return {"architecture": architecture, "labels": labels, "dropped": dropped, "unused": unused}


# ---------------------------------------------------------------------------
# What every direction writes: a model every script accepts, or nothing

# Where the parts of a converted model come from, for the messages: its
# config, its weights, its vocabulary (and the flag that gives it) and its
# do_lower_case.
Sources = collections.namedtuple("Sources", "config weights vocab vocab_flag lower_case")


def check_converted_model(config, names, vocab, do_lower_case, sources):
    """The one consistency check of every direction, before anything is written.

    config: the modeling.BertConfig written; names: the names of the
    weights in our layout (bert/encoder/layer_0/..., optimizer slots
    included); vocab: the vocabulary's lines; do_lower_case: the
    tokenization written or printed. The weights must hold exactly the
    config's encoder layers (the converters read only those: more would be
    dropped), and the vocabulary must be one the scripts take: each token
    once, BERT's special tokens, as many lines as the embedding has rows
    (up to the padding some models add) and a casing do_lower_case fits.
    """
    layers = checks.encoder_layers(names)
    if layers != list(range(config.num_hidden_layers)):
        raise UsageError(
            f"{sources.weights} holds {len(layers)} encoder layers but num_hidden_layers is "
            f"{config.num_hidden_layers} in {sources.config}: the converted model would "
            f"{'drop' if len(layers) > config.num_hidden_layers else 'lack'} layers; give the "
            "config of these weights"
        )
    tokens = [line.strip() for line in vocab]
    where = f"{sources.vocab_flag}: {sources.vocab}"
    checks.check_vocab_tokens(tokens, where)
    missing = [token for token in tokenization.SPECIAL_TOKENS if token not in tokens]
    if missing:
        raise UsageError(f"{where} lacks {', '.join(missing)}")
    checks.check_vocab_size(
        len(tokens), config, sources.vocab, sources.config, flag=sources.vocab_flag
    )
    checks.check_vocab_case(tokens, do_lower_case, where, sources.lower_case)


# ---------------------------------------------------------------------------
# Output: all files or none


def _check_output_dir(output_dir, names):
    if not output_dir:
        raise UsageError("--output_dir is required")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise UsageError(f"--output_dir={output_dir} is an existing file, not a directory")
    for name in names:
        if os.path.exists(os.path.join(output_dir, name)):
            raise UsageError(
                f"--output_dir={output_dir} already holds {name}; choose another directory"
            )
    startup_checks.check_output_dir(output_dir)


def _write_directory(output_dir, names, write):
    """Has write(stage) fill a staging directory that then becomes output_dir's files."""
    with atomic_write.staged_directory(output_dir, names, flag="--output_dir") as stage:
        write(stage)


def _log_list(what, names):
    if names:
        logging.info("%s (%d): %s", what, len(names), ", ".join(names))


# ---------------------------------------------------------------------------
# The command: one function per direction


# The flags this script reads, read once by settings_from_flags, and the
# names of those given on the command line (`given`).
Settings = collections.namedtuple(
    "Settings",
    "direction input output_dir bert_config_file vocab_file do_lower_case task_name with_mlm "
    "given",
)


def settings_from_flags():
    names = Settings._fields[:-1]
    given = {name for name in names if FLAGS[name].present}
    return Settings(*(FLAGS[name].value for name in names), given=given)


def _check_direction_flags(settings):
    """Refuses a flag the direction does not take, and asks for one it needs."""
    direction = settings.direction
    required, optional = DIRECTION_FLAGS[direction]
    for name in sorted(set().union(*(r + o for r, o in DIRECTION_FLAGS.values()))):
        if name in settings.given and name not in required + optional:
            takers = [d for d, (r, o) in DIRECTION_FLAGS.items() if name in r + o]
            raise UsageError(f"--{name} is for --direction={' or '.join(takers)} only")
    for name in required:
        if not getattr(settings, name):
            raise UsageError(f"--{name} is required with --direction={direction}")


def _run_hf_to_tf(settings):
    result = hf_to_tf(settings.input, settings.output_dir)
    out = settings.output_dir
    print(
        f"do_lower_case={result['do_lower_case']} (from {result['do_lower_case_source']}); "
        f"hidden_act={result['hidden_act']}. Use the model with:\n"
        f"  --bert_config_file={os.path.join(out, 'bert_config.json')} "
        f"--vocab_file={os.path.join(out, 'vocab.txt')} "
        f"--init_checkpoint={result['checkpoint']} "
        f"--do_lower_case={result['do_lower_case']}"
    )


def _run_tf_to_hf(settings):
    result = tf_to_hf(
        settings.input,
        settings.bert_config_file,
        settings.vocab_file,
        settings.do_lower_case,
        settings.output_dir,
        settings.task_name,
    )
    print(f"Wrote a {result['architecture']} to {settings.output_dir}")


def _run_hub_to_tf(settings):
    def check(config, names, vocab, do_lower_case, hub_dir):
        where = f"--input={hub_dir}"
        sources = Sources(f"{where} (its weights' sizes)", where, "its vocab_file", where,
                          f"{where}: its do_lower_case")  # fmt: skip
        check_converted_model(config, names, vocab, do_lower_case, sources)

    result = tfhub_encoder.import_encoder(settings.input, settings.output_dir, check=check)
    print(result["message"])


def _run_tf_to_hub(settings):
    def check(config, names, vocab, do_lower_case, path):
        sources = Sources(settings.bert_config_file, path, settings.vocab_file, "--vocab_file",
                          "--do_lower_case")  # fmt: skip
        check_converted_model(config, names, vocab, do_lower_case, sources)

    result = tfhub_encoder.export_encoder(
        settings.input,
        settings.bert_config_file,
        settings.vocab_file,
        settings.do_lower_case,
        settings.output_dir,
        with_mlm=settings.with_mlm,
        check=check,
    )
    head = " and its masked LM head (mlm)" if result["with_mlm"] else ""
    print(
        f"Wrote a TF Hub-format BERT encoder{head} ({result['variables']} variables, "
        f"do_lower_case={bool(settings.do_lower_case)}) to {settings.output_dir}. Fine-tune it "
        f"with run_classifier_with_tfhub.py --bert_hub_module_handle={settings.output_dir}, or "
        "load it "
        "with tf.saved_model.load or hub.KerasLayer(..., trainable=True)."
    )


DIRECTIONS = {
    "hf_to_tf": _run_hf_to_tf,
    "tf_to_hf": _run_tf_to_hf,
    "hub_to_tf": _run_hub_to_tf,
    "tf_to_hub": _run_tf_to_hub,
}


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    _check_direction_flags(settings)
    DIRECTIONS[settings.direction](settings)


if __name__ == "__main__":
    flags.mark_flag_as_required("direction")
    flags.mark_flag_as_required("input")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
