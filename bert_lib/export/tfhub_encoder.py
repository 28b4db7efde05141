"""BERT encoders in the TF Hub SavedModel format: a checkpoint out as one, one in as a checkpoint.

TensorFlow users share BERT encoders as TF2 SavedModels in the format TF Hub
and Kaggle publish (bert_en_uncased_L-12_H-768_A-12, the Small BERTs, the
domain experts) and TensorFlow Model Garden's `export_tfhub` writes. What
makes a SavedModel such an encoder, as loaded by `tf.saved_model.load`:

  * calling it with a dict of int32 [batch, seq] tensors `input_word_ids`,
    `input_mask` (1 = real token) and `input_type_ids`, and `training=`
    True or False (dropout), returns a dict: `pooled_output` [batch,
    hidden], `sequence_output` [batch, seq, hidden], `encoder_outputs` (a
    list, one [batch, seq, hidden] per layer) and `default` (the same as
    `pooled_output`); any batch size and sequence length;
  * `variables`, `trainable_variables` (a list of tf.Variables each) and
    `regularization_losses` (a list of functions, here none): what
    `hub.KerasLayer(path, trainable=True)` reads to fine-tune it;
  * `vocab_file`, a tf.saved_model.Asset (assets/vocab.txt), and
    `do_lower_case`, a non-trainable bool tf.Variable: how to tokenize;
  * optionally `mlm`, an object called the same way with one more input,
    int32 [batch, num_predictions] `masked_lm_positions`, that also returns
    `mlm_logits` [batch, num_predictions, vocab_size], and that has its own
    `variables` and `trainable_variables` (the encoder's and the head's).

`export_encoder` writes one from a checkpoint of the scripts: the forward
pass is `modeling.BertModel`'s own graph code, traced in a tf.function whose
variables are trainable tf.Variables holding the checkpoint's values (named
as in the checkpoint), so its outputs are BertModel's and gradients reach
every weight. It also carries assets/bert_config.json, so that importing it
back restores every setting exactly, and a `serving_default` signature with
flat outputs (encoder_outputs_<i> for the layers) for TensorFlow Serving.

`import_encoder` (and `read_encoder`, for run_classifier_with_tfhub.py)
goes the other way. Variables are recognised by what their names say they
are (Model Garden's `transformer/layer_3/self_attention/query/kernel`, the
original's `bert/encoder/layer_3/attention/self/query/kernel`, under any
prefix), never by their order; the sizes of the model follow from their
shapes (the number of attention heads from the [hidden, heads, head_size]
query kernels). What the weights do not say - the activation, and for
a foreign encoder with [hidden, hidden] attention kernels the number of
heads - is settled by running the SavedModel on a fixed input and keeping
the setting under which BertModel, with the mapped weights, gives the same
outputs within 1e-5. An encoder that matches under none is not a BERT
(a pre-LayerNorm Transformer has the same variables, say) and is refused.
The TF1 Hub module format of 2018 (tfhub_module.pb) is refused too: it is
called through TF1 signatures, not the API above.
"""

import os
import re
import shutil
import tempfile
import time

import numpy as np
import tensorflow as tf
from absl import logging

import modeling

from ..engine import checkpoints
from ..plumbing import atomic_write, checkpoint_shapes, errors, fileio, startup_checks
from ..plumbing.errors import UsageError

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
MASKED_LM_POSITIONS = "masked_lm_positions"
# The files import_encoder writes, as convert_checkpoint's hf_to_tf does.
CHECKPOINT_FILES = (
    "bert_config.json",
    "vocab.txt",
    "bert_model.ckpt.data-00000-of-00001",
    "bert_model.ckpt.index",
)
CHECKPOINT_NAME = "bert_model.ckpt"
# Asset names inside an exported SavedModel (assets/<name>).
VOCAB_ASSET = "vocab.txt"
CONFIG_ASSET = "bert_config.json"
# Activations an encoder may have been trained with, tried in this order.
ACTIVATIONS = ("gelu", "gelu_erf", "relu", "tanh", "linear")
# How close (absolute and relative) an encoder's outputs must come to
# BertModel's for the mapping to count as right.
TOLERANCE = 1e-5
# Values a foreign encoder's weights do not record: BERT's published ones.
ASSUMED_SETTINGS = {
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "initializer_range": 0.02,
}

_MLM_HEAD = (
    "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta",
    "cls/predictions/output_bias",
)


# ---------------------------------------------------------------------------
# The forward pass: BertModel's graph code over variables held elsewhere


def _variable_getter(variables):
    """A custom getter handing out `variables[name]` instead of creating variables.

    BertModel asks for each weight by its checkpoint name through
    tf.compat.v1.get_variable; answering from a dict lets the same graph
    code run over the tf.Variables of a SavedModel (exporting) or over
    tensors fed in (checking an import), in a tf.function or a graph.
    """

    def getter(getter, name, *args, shape=None, **kwargs):
        del getter, args, kwargs  # nothing is created
        if name not in variables:
            raise KeyError(f"no value for variable {name}")
        value = variables[name]
        if shape is not None and list(value.shape) != list(shape):
            raise ValueError(f"variable {name} has shape {list(value.shape)}, not {list(shape)}")
        return value

    return getter


def bert_outputs(config, variables, inputs, training=False):
    """The encoder's outputs for `inputs`, computed by modeling.BertModel.

    Call it while a tf.function is being traced. `variables` maps checkpoint
    names (bert/..., and cls/predictions/... for the masked LM) to
    tf.Variables or tensors; `inputs` is the dict of int32 [batch, seq]
    INPUT_NAMES, plus MASKED_LM_POSITIONS [batch, n] for `mlm_logits`.
    Returns {pooled_output, sequence_output, encoder_outputs (list), default}
    and, with positions, mlm_logits [batch, n, vocab_size].
    """
    getter = _variable_getter(variables)
    with tf.compat.v1.variable_scope("", custom_getter=getter, reuse=tf.compat.v1.AUTO_REUSE):
        model = modeling.BertModel(
            config,
            is_training=bool(training),
            input_ids=inputs["input_word_ids"],
            input_mask=inputs["input_mask"],
            token_type_ids=inputs["input_type_ids"],
            scope="bert",
        )
        outputs = {
            "pooled_output": model.get_pooled_output(),
            "sequence_output": model.get_sequence_output(),
            "encoder_outputs": list(model.get_all_encoder_layers()),
            "default": model.get_pooled_output(),
        }
        if MASKED_LM_POSITIONS in inputs:
            outputs["mlm_logits"] = masked_lm_logits(
                config,
                model.get_sequence_output(),
                model.get_embedding_table(),
                inputs[MASKED_LM_POSITIONS],
            )
    return outputs


def masked_lm_logits(config, sequence_output, embedding_table, positions):
    """The pre-training masked LM head's logits [batch, n, vocab_size] at `positions`.

    As run_pretraining's head (cls/predictions): a dense layer with the
    config's activation and a LayerNorm, then scores against every word
    embedding plus cls/predictions/output_bias. Variables come from the
    enclosing variable scope.
    """
    picked = tf.gather(sequence_output, positions, batch_dims=1)  # [batch, n, hidden]
    with tf.compat.v1.variable_scope("cls/predictions"):
        with tf.compat.v1.variable_scope("transform"):
            picked = modeling.dense(
                picked,
                config.hidden_size,
                activation=modeling.get_activation(config.hidden_act),
                name="dense",
            )
            picked = modeling.layer_norm(picked)
        output_bias = tf.compat.v1.get_variable("output_bias", shape=[config.vocab_size])
    flat = modeling.reshape_to_matrix(picked)
    logits = tf.nn.bias_add(tf.matmul(flat, embedding_table, transpose_b=True), output_bias)
    shape = tf.shape(positions)
    return tf.reshape(logits, [shape[0], shape[1], config.vocab_size])


# ---------------------------------------------------------------------------
# Export


def _input_specs(with_positions=False):
    specs = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
    if with_positions:
        specs[MASKED_LM_POSITIONS] = tf.TensorSpec([None, None], tf.int32, MASKED_LM_POSITIONS)
    return specs


class _Reusable(tf.Module):
    """A tf.Module whose `variables` and `trainable_variables` are saved attributes.

    tf.Module computes both as properties, and a SavedModel keeps no
    properties; the class attributes below shadow them, so that assigning
    lists makes them attributes that tf.saved_model.save writes and
    tf.saved_model.load gives back, as the Reusable SavedModel API asks.
    """

    variables = None
    trainable_variables = None


def _callable_object(config, variables, names, with_positions):
    """A saveable object whose __call__(inputs, training) runs the encoder."""
    obj = _Reusable()
    obj.variables = [variables[name] for name in names]
    obj.trainable_variables = list(obj.variables)
    obj.regularization_losses = []

    @tf.function(autograph=False)
    def call(inputs, training=False):
        return bert_outputs(config, variables, inputs, training)

    for training in (False, True):
        call.get_concrete_function(_input_specs(with_positions), training=training)
    obj.__call__ = call
    return obj


def _serving_signature(config, variables):
    """serving_default for TF Serving: flat outputs, one encoder_outputs_<i> per layer."""

    @tf.function(autograph=False, input_signature=[_input_specs()])
    def serve(inputs):
        outputs = bert_outputs(config, variables, inputs, training=False)
        flat = {k: outputs[k] for k in ("pooled_output", "sequence_output", "default")}
        for index, layer in enumerate(outputs["encoder_outputs"]):
            flat[f"encoder_outputs_{index}"] = layer
        return flat

    return serve.get_concrete_function()


def _read_checkpoint(checkpoint, flag):
    """({name: array}, path) of a checkpoint prefix (or one of its files, which stands
    for it) or of a directory's newest checkpoint."""
    path = checkpoint = startup_checks.checkpoint_prefix(checkpoint, flag)
    if checkpoint and os.path.isdir(checkpoint):
        path = checkpoints.newest_checkpoint(checkpoint)
        if path is None:
            raise UsageError(f"{flag}={checkpoint}: no checkpoint in this directory")
    try:
        reader = tf.train.load_checkpoint(path)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        raise UsageError(f"{flag}={checkpoint}: no checkpoint there") from None
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}, path


def _load_config(bert_config):
    if isinstance(bert_config, modeling.BertConfig):
        config = modeling.BertConfig.from_dict(bert_config.to_dict())
        config.validate()
        return config
    if not bert_config or not fileio.exists(bert_config) or fileio.isdir(bert_config):
        raise UsageError(f"--bert_config_file={bert_config}: no such file")
    try:
        return modeling.BertConfig.from_json_file(bert_config)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _read_vocab(path, source):
    """The lines of a vocab.txt (local or gs://...), without their line ends."""
    with fileio.open_binary(path) as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{source}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the end of the last line, or an empty file
    return [line.rstrip("\r") for line in lines]


def encoder_variable_names(config, with_mlm=False):
    """The checkpoint names an encoder of `config` is made of, in a fixed order.

    The pooler is included; with_mlm adds the masked LM head
    (cls/predictions/*), whose output weights are the word embeddings.
    """
    shapes = modeling.bert_variable_shapes(config)
    names = sorted(name for name in shapes if name.startswith("bert/"))
    if with_mlm:
        names += list(_MLM_HEAD)
    return names


def _checkpoint_values(values, path, config, names):
    """{name: float32 array} for `names`, checked against the config's shapes."""
    missing = [name for name in names if name not in values]
    if missing:
        hint = ""
        if missing[0] in _MLM_HEAD:
            hint = " (exporting the masked LM head needs a pre-training checkpoint)"
        raise UsageError(f"checkpoint {path} has no variable {missing[0]}{hint}")
    shapes = modeling.bert_variable_shapes(config)
    checkpoint_shapes.check_shapes(
        {name: shapes[name] for name in names},
        path,
        in_checkpoint={name: list(values[name].shape) for name in names},
        hint=" (does --bert_config_file belong to this checkpoint?)",
    )
    out = {}
    for name in names:
        value = values[name]
        if value.dtype.kind != "f":
            raise UsageError(f"checkpoint {path}: variable {name} is {value.dtype}, not a float")
        out[name] = value.astype(np.float32)
    return out


def export_encoder(
    checkpoint, bert_config, vocab_file, do_lower_case, output_dir, with_mlm=False, check=None
):
    """Writes a checkpoint of the scripts as a TF Hub-format BERT encoder SavedModel.

    Args:
      checkpoint: checkpoint path prefix, or a directory (its newest
        checkpoint): Google's, one the scripts wrote, one hf_to_tf wrote.
      bert_config: path of its bert_config.json, or a modeling.BertConfig.
      vocab_file: its vocab.txt; becomes the `vocab_file` asset (vocab.txt).
      do_lower_case: bool, stored as the `do_lower_case` variable.
      output_dir: the SavedModel directory to create; must not exist.
      with_mlm: also export the masked LM head as the `mlm` sub-object (the
        checkpoint must have cls/predictions/*).
      check: if given, called as check(config, names of the checkpoint's
        variables, vocabulary lines, do_lower_case, checkpoint path) once
        all is read and before anything is written (a converter's
        consistency check: it raises UsageError to stop).

    Returns:
      dict: output_dir, variables (how many), with_mlm.

    Raises:
      UsageError: a missing or unreadable input, a checkpoint that lacks a
        variable or does not fit the config, a vocabulary longer than
        vocab_size, or an existing output_dir. Nothing is left in
        output_dir's place then: the SavedModel is written to a staging
        directory renamed into place only when complete.
    """
    start = time.time()
    config = _load_config(bert_config)
    if not vocab_file or not fileio.exists(vocab_file) or fileio.isdir(vocab_file):
        raise UsageError(f"--vocab_file={vocab_file}: no such file")
    vocab = _read_vocab(vocab_file, vocab_file)
    if len(vocab) > config.vocab_size:
        raise UsageError(
            f"--vocab_file={vocab_file}: {len(vocab)} tokens, more than vocab_size "
            f"{config.vocab_size}"
        )
    if not output_dir:
        raise UsageError("--output_dir is required")
    startup_checks.check_new_output_dir(output_dir, "--output_dir")
    values, path = _read_checkpoint(checkpoint, "--input")
    if check is not None:
        check(config, list(values), vocab, bool(do_lower_case), path)
    names = encoder_variable_names(config, with_mlm)
    left_out = sorted(set(values) - set(names))
    if left_out:
        logging.info("Checkpoint variables not exported (%d): %s", len(left_out), left_out)
    values = _checkpoint_values(values, path, config, names)
    encoder_names = encoder_variable_names(config)

    with tempfile.TemporaryDirectory() as assets:
        vocab_copy = os.path.join(assets, VOCAB_ASSET)
        with fileio.open_binary(vocab_file) as source, open(vocab_copy, "wb") as copy:
            shutil.copyfileobj(source, copy)
        config_copy = os.path.join(assets, CONFIG_ASSET)
        with open(config_copy, "w", encoding="utf-8") as f:
            f.write(config.to_json_string())
        variables = {name: tf.Variable(values[name], name=name) for name in names}
        root = _callable_object(config, variables, encoder_names, with_positions=False)
        root.vocab_file = tf.saved_model.Asset(vocab_copy)
        root.bert_config_file = tf.saved_model.Asset(config_copy)
        root.do_lower_case = tf.Variable(
            bool(do_lower_case), trainable=False, name="do_lower_case"
        )
        if with_mlm:
            root.mlm = _callable_object(config, variables, names, with_positions=True)
        signatures = {"serving_default": _serving_signature(config, variables)}
        with atomic_write.staged_directory(output_dir, flag="--output_dir") as stage:
            tf.saved_model.save(root, stage, signatures=signatures)
    logging.info(
        "Exported %s (%d variables%s) to %s in %.1f s",
        path,
        len(names),
        ", with the masked LM head" if with_mlm else "",
        output_dir,
        time.time() - start,
    )
    return {"output_dir": output_dir, "variables": len(names), "with_mlm": bool(with_mlm)}


def write_checkpoint(prefix, values):
    """Writes {checkpoint name: array} as a name-based checkpoint (prefix.index, prefix.data-*).

    The names are the checkpoint's keys exactly, as Google's checkpoints
    and the scripts' --init_checkpoint expect.
    """
    names = sorted(values)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(values[name]) for name in names],
    )


# ---------------------------------------------------------------------------
# Import: what each variable of a SavedModel is


def _dense_roles(ours, theirs):
    return [(f"{ours}/kernel", f"(?:{theirs})/kernel"), (f"{ours}/bias", f"(?:{theirs})/bias")]


def _norm_roles(ours, theirs):
    return [(f"{ours}/gamma", f"(?:{theirs})/gamma"), (f"{ours}/beta", f"(?:{theirs})/beta")]


# (our checkpoint name, what the end of a variable's name may be), outside
# the layers. Model Garden's names (word_embeddings/embeddings,
# embeddings/layer_norm, pooler_transform, and before 2020
# embedding_postprocessor/...), the original's (bert/embeddings/...), and
# the masked LM head of either, under any prefix.
_GLOBAL_ROLES = (
    [
        ("bert/embeddings/word_embeddings", r"word_embeddings(?:/embeddings)?"),
        ("bert/embeddings/position_embeddings", r"position_embeddings?(?:/embeddings)?"),
        ("bert/embeddings/token_type_embeddings", r"(?:token_)?type_embeddings(?:/embeddings)?"),
    ]
    + _norm_roles(
        "bert/embeddings/LayerNorm",
        r"(?:embeddings|embedding_postprocessor)/(?:layer_norm|LayerNorm)",
    )
    + _dense_roles("bert/pooler/dense", r"pooler_transform|pooler/dense")
    + _dense_roles("cls/predictions/transform/dense", r"cls/predictions/transform/dense")
    + _norm_roles("cls/predictions/transform/LayerNorm", r"cls/predictions/transform/LayerNorm")
    + [("cls/predictions/output_bias", r"cls/predictions/output_bias(?:/bias)?")]
)

# Inside layer_<i>/: (our name under bert/encoder/layer_<i>/, Model Garden's
# or the original's name there).
_LAYER_ROLES = (
    _dense_roles("attention/self/query", r"self_attention/query|attention/self/query")
    + _dense_roles("attention/self/key", r"self_attention/key|attention/self/key")
    + _dense_roles("attention/self/value", r"self_attention/value|attention/self/value")
    + _dense_roles(
        "attention/output/dense",
        r"self_attention/attention_output|self_attention_output|attention/output/dense",
    )
    + _norm_roles(
        "attention/output/LayerNorm", r"self_attention_layer_norm|attention/output/LayerNorm"
    )
    + _dense_roles("intermediate/dense", r"intermediate(?:/dense)?")
    + _dense_roles("output/dense", r"output(?:/dense)?")
    + _norm_roles("output/LayerNorm", r"output_layer_norm|output/LayerNorm")
)

_GLOBAL_PATTERNS = [(ours, re.compile(f"(?:^|/)(?:{theirs})$")) for ours, theirs in _GLOBAL_ROLES]
_LAYER_PATTERNS = [(ours, re.compile(f"(?:{theirs})")) for ours, theirs in _LAYER_ROLES]
_LAYER_NAME = re.compile(r"(?:^|/)layer_(\d+)/(.+)$")
# A query kernel outside any layer_<i>: one set of weights for every layer.
_SHARED_QUERY = re.compile(r"(?:^|/)(?:self_attention|attention/self)/query/kernel$")


def _role(name):
    """Our checkpoint name for a SavedModel variable's name, or None if it has no place in BERT."""
    layer = _LAYER_NAME.search(name)
    if layer:
        index, rest = layer.groups()
        for ours, pattern in _LAYER_PATTERNS:
            if pattern.fullmatch(rest):
                return f"bert/encoder/layer_{index}/{ours}"
        return None
    for ours, pattern in _GLOBAL_PATTERNS:
        if pattern.search(name):
            return ours
    return None


def _to_our_layout(ours, value):
    """(value in our [in, out] layout, number of heads if its shape tells).

    Model Garden keeps attention weights per head: query/key/value kernels
    [hidden, heads, head_size] and biases [heads, head_size], the output
    kernel [heads, head_size, hidden]. Flattening heads x head_size row-major
    gives our [hidden, hidden] kernels, whose columns BertModel splits into
    heads the same way.
    """
    if re.search(r"attention/self/(query|key|value)/kernel$", ours) and value.ndim == 3:
        return value.reshape(value.shape[0], -1), value.shape[1]
    if re.search(r"attention/self/(query|key|value)/bias$", ours) and value.ndim == 2:
        return value.reshape(-1), value.shape[0]
    if ours.endswith("attention/output/dense/kernel") and value.ndim == 3:
        return value.reshape(-1, value.shape[2]), value.shape[0]
    return value, None


def _saved_variables(loaded, where):
    """[(name without ":0", float32 array)] of the encoder's (and its mlm's) variables."""
    if getattr(loaded, "variables", None) is None:
        raise UsageError(
            f"{where}: no `variables` list; not a TF2 Hub-format (Reusable SavedModel) encoder"
        )
    found, seen = [], set()
    sources = [loaded.variables]
    if hasattr(loaded, "mlm") and hasattr(loaded.mlm, "variables"):
        sources.append(loaded.mlm.variables)
    for variables in sources:
        for variable in variables:
            if id(variable) in seen or not variable.dtype.is_floating:
                continue
            seen.add(id(variable))
            name = re.sub(r":\d+$", "", variable.name)
            found.append((name, variable.numpy().astype(np.float32)))
    return found


def _map_variables(named, where):
    """({our name: array}, {our name: their name}, heads seen in shapes, unused names)."""
    values, sources, heads, unused = {}, {}, set(), []
    for name, value in named:
        ours = _role(name)
        if ours is None:
            unused.append(name)
            continue
        if ours in values:
            raise UsageError(f"{where}: both {sources[ours]} and {name} look like {ours}")
        values[ours], head_count = _to_our_layout(ours, value)
        sources[ours] = name
        if head_count is not None:
            heads.add(int(head_count))
    if not any(name.startswith("bert/encoder/layer_") for name in values):
        shared = [name for name in unused if _SHARED_QUERY.search(name)]
        if shared:
            raise UsageError(
                f"{where}: not a BERT encoder: no per-layer weights (layer_0/...), only one "
                f"set shared by every layer ({shared[0]}), as in ALBERT"
            )
        raise UsageError(
            f"{where}: not a BERT encoder: no Transformer layer weights "
            "(layer_0/self_attention/query/kernel or layer_0/attention/self/query/kernel)"
        )
    if len(heads) > 1:
        raise UsageError(f"{where}: attention weights disagree on the number of heads {heads}")
    return values, sources, heads, sorted(unused)


def _infer_sizes(values, sources, where):
    """The BertConfig sizes the mapped weights imply; UsageError naming what is missing."""
    for ours in (
        "bert/embeddings/word_embeddings",
        "bert/embeddings/position_embeddings",
        "bert/embeddings/token_type_embeddings",
        "bert/encoder/layer_0/attention/self/query/kernel",
        "bert/encoder/layer_0/intermediate/dense/kernel",
    ):
        if ours not in values:
            raise UsageError(f"{where}: not a BERT encoder: no variable for {ours}")
    word = values["bert/embeddings/word_embeddings"]
    query = values["bert/encoder/layer_0/attention/self/query/kernel"]
    if word.ndim != 2 or query.ndim != 2 or word.shape[1] != query.shape[0]:
        raise UsageError(
            f"{where}: not a BERT encoder: {sources['bert/embeddings/word_embeddings']} has "
            f"shape {list(word.shape)} but the layers are {query.shape[0]} wide (factorized "
            "embeddings, as in ALBERT, have no place in BERT)"
        )
    layer_name = re.compile(r"^bert/encoder/layer_(\d+)/")
    layers = sorted({int(m.group(1)) for m in map(layer_name.match, values) if m})
    if layers != list(range(len(layers))):
        gap = min(set(range(len(layers))) - set(layers))
        raise UsageError(f"{where}: not a BERT encoder: layer_{gap} is missing")
    return {
        "vocab_size": int(word.shape[0]),
        "hidden_size": int(word.shape[1]),
        "num_hidden_layers": len(layers),
        "intermediate_size": int(
            values["bert/encoder/layer_0/intermediate/dense/kernel"].shape[1]
        ),
        "max_position_embeddings": int(values["bert/embeddings/position_embeddings"].shape[0]),
        "type_vocab_size": int(values["bert/embeddings/token_type_embeddings"].shape[0]),
    }


def _check_complete(values, sources, config, where):
    """Checks every encoder variable is there in its shape; returns whether the MLM head is.

    The masked LM head counts only when all of its variables are there.
    """
    shapes = modeling.bert_variable_shapes(config)
    for ours in encoder_variable_names(config):
        if ours not in values:
            raise UsageError(f"{where}: not a BERT encoder: no variable for {ours}")
    with_mlm = all(name in values for name in _MLM_HEAD)
    for ours, value in values.items():
        if ours in shapes and list(value.shape) != shapes[ours]:
            raise UsageError(
                f"{where}: variable {sources[ours]} has shape {list(value.shape)}, but {ours} "
                f"must be {shapes[ours]} in a BERT of hidden size {config.hidden_size}"
            )
    return with_mlm


def _head_counts(heads, hidden_size):
    """Numbers of attention heads to try: the one the shapes tell, else every divisor."""
    if heads:
        return sorted(heads)
    divisors = [n for n in range(1, hidden_size + 1) if hidden_size % n == 0]
    # Most BERTs have 64-wide heads: try that first.
    return sorted(divisors, key=lambda n: (hidden_size // n != 64, n))


# ---------------------------------------------------------------------------
# Import: checking the mapping by running the encoder


def _probe_inputs(config, with_mlm):
    """A fixed batch: random ids and segments, the second row padded, two MLM positions."""
    rng = np.random.default_rng(20181011)
    seq_length = min(config.max_position_embeddings, 11)
    shape = (2, seq_length)
    mask = np.ones(shape, np.int32)
    mask[1, seq_length - seq_length // 3 :] = 0
    inputs = {
        "input_word_ids": rng.integers(0, config.vocab_size, shape).astype(np.int32),
        "input_mask": mask,
        "input_type_ids": rng.integers(0, config.type_vocab_size, shape).astype(np.int32),
    }
    if with_mlm:
        inputs[MASKED_LM_POSITIONS] = rng.integers(0, seq_length, (2, 2)).astype(np.int32)
    return inputs


def _outputs_as_numpy(outputs):
    out = {}
    for key in ("pooled_output", "sequence_output", "mlm_logits"):
        if key in outputs:
            out[key] = np.asarray(outputs[key])
    for index, layer in enumerate(outputs.get("encoder_outputs") or []):
        out[f"encoder_outputs_{index}"] = np.asarray(layer)
    return out


def _run_saved_model(loaded, inputs, where):
    """The SavedModel's own outputs on `inputs` (its mlm's too when positions are given)."""
    encoder_inputs = {name: tf.constant(inputs[name]) for name in INPUT_NAMES}
    try:
        outputs = dict(loaded(encoder_inputs, training=False))
        if MASKED_LM_POSITIONS in inputs:
            mlm_inputs = dict(encoder_inputs)
            mlm_inputs[MASKED_LM_POSITIONS] = tf.constant(inputs[MASKED_LM_POSITIONS])
            outputs["mlm_logits"] = loaded.mlm(mlm_inputs, training=False)["mlm_logits"]
    except (TypeError, ValueError, KeyError, tf.errors.OpError) as e:
        raise UsageError(
            f"{where}: calling it with a dict of int32 {', '.join(INPUT_NAMES)} failed "
            f"({errors.first_line(e)}); "
            "not a TF Hub-format BERT encoder"
        ) from None
    for key in ("pooled_output", "sequence_output"):
        if key not in outputs:
            raise UsageError(
                f"{where}: its outputs have no {key}; not a TF Hub-format BERT encoder"
            )
    return _outputs_as_numpy(outputs)


def _run_bert_model(config, values, inputs):
    """BertModel's outputs with `config` over the mapped weights `values` (numpy arrays).

    Built as a graph with the weights fed in, so that trying many settings
    neither retraces one tf.function again and again nor copies the weights
    into each graph.
    """
    graph = tf.Graph()
    with graph.as_default():
        weights = {
            name: tf.compat.v1.placeholder(tf.float32, v.shape) for name, v in values.items()
        }
        outputs = bert_outputs(config, weights, {k: tf.constant(v) for k, v in inputs.items()})
        with tf.compat.v1.Session(graph=graph) as session:
            feed = {weights[name]: value for name, value in values.items()}
            return _outputs_as_numpy(session.run(outputs, feed_dict=feed))


def _difference(ours, theirs):
    """The largest |ours - theirs| / (1 + |theirs|) over every output both have."""
    worst = 0.0
    for key, value in theirs.items():
        if key not in ours or ours[key].shape != value.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(ours[key] - value) / (1.0 + np.abs(value)))))
    return worst


def _settle_by_outputs(loaded, settings, values, head_counts, activations, with_mlm, where):
    """(num_attention_heads, hidden_act, difference, [(difference, act)]) matching the encoder.

    `settings` are the other BertConfig values. Tries each number of heads
    in turn and, for it, every activation, keeping the closest setting; the
    first number of heads with a setting within TOLERANCE ends the search.

    Raises:
      UsageError: no setting comes within TOLERANCE - not a BERT.
    """
    best = None
    for num_heads in head_counts:
        config = modeling.BertConfig.from_dict(dict(settings, num_attention_heads=num_heads))
        inputs = _probe_inputs(config, with_mlm)
        theirs = _run_saved_model(loaded, inputs, where)
        tried = []
        for act in activations:
            config.hidden_act = act
            tried.append((_difference(_run_bert_model(config, values, inputs), theirs), act))
        tried.sort()
        if best is None or tried[0][0] < best[0]:
            best = (tried[0][0], num_heads, tried[0][1], tried)
        if tried[0][0] <= TOLERANCE:
            break
    difference, num_heads, act, tried = best
    if difference > TOLERANCE:
        raise UsageError(
            f"{where}: not a BERT encoder: with its weights in BertModel the outputs differ by "
            f"up to {difference:.2g} (relative) under every activation tried "
            f"({', '.join(activations)}); a pre-LayerNorm or other Transformer?"
        )
    return num_heads, act, difference, tried


# ---------------------------------------------------------------------------
# Import: reading an encoder, writing its checkpoint


def _where(path, flag):
    return f"{flag}={path}" if flag else str(path)


def load_saved_model(hub_dir, flag=None):
    """tf.saved_model.load(hub_dir), with a one-line UsageError for anything else.

    Refuses a missing directory, a TF1 Hub module (tfhub_module.pb: the
    2018 format, which TensorFlow 2 cannot call as an encoder), a directory
    without saved_model.pb, one TensorFlow cannot load, and a SavedModel
    that cannot be called.
    """
    where = _where(hub_dir, flag)
    if not hub_dir or not os.path.isdir(hub_dir):
        raise UsageError(f"{where}: no such directory")
    if os.path.isfile(os.path.join(hub_dir, "tfhub_module.pb")):
        raise UsageError(
            f"{where}: a TF1 Hub module (tfhub_module.pb), the 2018 format; only TF2 "
            "SavedModel encoders are read: take the encoder's TF2 version"
        )
    if not any(
        os.path.isfile(os.path.join(hub_dir, name))
        for name in ("saved_model.pb", "saved_model.pbtxt")
    ):
        raise UsageError(f"{where}: not a SavedModel (no saved_model.pb)")
    try:
        loaded = tf.saved_model.load(hub_dir)
    except Exception as e:  # a corrupt file fails in many ways, all the input's fault
        raise UsageError(
            f"{where}: TensorFlow cannot load this SavedModel ({errors.first_line(e)})"
        ) from None
    if not callable(loaded):
        raise UsageError(f"{where}: the SavedModel cannot be called; not a TF Hub-format encoder")
    return loaded


def _tokenization(loaded, where):
    """(vocab.txt path inside the SavedModel, do_lower_case) from its attributes."""
    asset = getattr(loaded, "vocab_file", None)
    if asset is None:
        if getattr(loaded, "sp_model_file", None) is not None:
            raise UsageError(
                f"{where}: its tokenizer is a SentencePiece model (sp_model_file), not the "
                "WordPiece vocab_file BERT's tokenization needs"
            )
        raise UsageError(f"{where}: no vocab_file asset (the WordPiece vocabulary)")
    path = getattr(asset, "asset_path", asset)
    path = path.numpy().decode("utf-8") if hasattr(path, "numpy") else str(path)
    if not os.path.isfile(path):
        raise UsageError(f"{where}: its vocab_file asset {path} is missing")
    lower = getattr(loaded, "do_lower_case", None)
    if lower is None:
        raise UsageError(f"{where}: no do_lower_case variable beside its vocab_file")
    return path, bool(np.asarray(lower))


def _saved_config(loaded, sizes, where):
    """The BertConfig an encoder exported here carries (assets/bert_config.json), else None.

    Its sizes must be the ones the weights show.
    """
    asset = getattr(loaded, "bert_config_file", None)
    if asset is None:
        return None
    path = asset.asset_path.numpy().decode("utf-8")
    try:
        config = modeling.BertConfig.from_json_file(path)
    except (ValueError, OSError, tf.errors.OpError) as e:
        reason = errors.first_line(e)
        raise UsageError(f"{where}: its {CONFIG_ASSET} cannot be read ({reason})") from None
    for key, value in sizes.items():
        if getattr(config, key) != value:
            raise UsageError(
                f"{where}: its {CONFIG_ASSET} says {key}={getattr(config, key)} but the "
                f"weights show {value}"
            )
    return config


class HubEncoder:
    """A TF Hub-format BERT encoder read as this repository's model.

    Attributes:
      config: the modeling.BertConfig it computes as.
      variables: {checkpoint name: float32 array}: bert/* with the pooler,
        and cls/predictions/* when with_mlm.
      vocab_file: path of its vocab.txt (inside the SavedModel's assets/).
      vocab: the vocabulary's lines.
      do_lower_case: bool, as the encoder says.
      with_mlm: whether it has the masked LM head (its `mlm` sub-object).
      hidden_act_source: where the activation was learnt.
      assumed: BertConfig keys the SavedModel does not record, set to
        ASSUMED_SETTINGS.
      unused: names of its float variables that have no place in BERT.
      difference: largest relative difference between its outputs and
        BertModel's with `config` and `variables` on a fixed input.
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)


def read_encoder(hub_dir, flag=None):
    """Reads a TF Hub-format BERT encoder SavedModel (a local directory) as a HubEncoder.

    Variables are mapped by their names' meaning and checked against the
    shapes the sizes imply; then the encoder and BertModel are run on the
    same input, and the number of heads and the activation (where the
    SavedModel does not record them) are the ones under which the outputs,
    the masked LM logits included, agree within TOLERANCE.

    Raises:
      UsageError (one line, naming hub_dir, or `flag`=hub_dir): not a
        directory or not a SavedModel, no vocab_file asset or no
        do_lower_case, shared layer weights or factorized embeddings
        (ALBERT), a missing layer or variable, a shape that does not fit,
        outputs BertModel cannot reproduce.
    """
    where = _where(hub_dir, flag)
    loaded = load_saved_model(hub_dir, flag)
    vocab_file, do_lower_case = _tokenization(loaded, where)
    values, sources, heads, unused = _map_variables(_saved_variables(loaded, where), where)
    sizes = _infer_sizes(values, sources, where)
    saved = _saved_config(loaded, sizes, where)
    check_config = modeling.BertConfig(num_attention_heads=1, **sizes)
    with_mlm = _check_complete(values, sources, check_config, where) and hasattr(loaded, "mlm")
    for name in _MLM_HEAD:
        if not with_mlm and name in values:
            unused.append(sources[name])
            del values[name]
    if saved is not None:
        settings = saved.to_dict()
        head_counts, activations = [saved.num_attention_heads], [saved.hidden_act]
    else:
        settings = dict(sizes, **ASSUMED_SETTINGS)
        head_counts, activations = _head_counts(heads, sizes["hidden_size"]), ACTIVATIONS
    num_heads, act, difference, tried = _settle_by_outputs(
        loaded, settings, values, head_counts, activations, with_mlm, where
    )
    config = modeling.BertConfig.from_dict(
        dict(settings, num_attention_heads=num_heads, hidden_act=act)
    )
    vocab = _read_vocab(vocab_file, vocab_file)
    if len(vocab) > config.vocab_size:
        raise UsageError(
            f"{vocab_file}: {len(vocab)} tokens, more than the encoder's {config.vocab_size}"
        )
    if saved is not None:
        act_source = f"its {CONFIG_ASSET}"
    else:
        act_source = f"its outputs, matched by BertModel within {difference:.1g}"
        alike = [other for d, other in tried if other != act and d <= TOLERANCE]
        if alike:
            act_source += f" ({', '.join(alike)} match too on these weights)"
            logging.warning("%s: outputs match under %s and %s alike", where, act, alike)
    return HubEncoder(
        config=config,
        variables=values,
        vocab_file=vocab_file,
        vocab=vocab,
        do_lower_case=do_lower_case,
        with_mlm=with_mlm,
        hidden_act_source=act_source,
        assumed=[] if saved is not None else sorted(ASSUMED_SETTINGS),
        unused=sorted(unused),
        difference=difference,
    )


def _check_output_dir(output_dir, flag):
    if not output_dir:
        raise UsageError(f"{flag} is required")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise UsageError(f"{flag}={output_dir} is an existing file, not a directory")
    for name in CHECKPOINT_FILES:
        if os.path.exists(os.path.join(output_dir, name)):
            raise UsageError(f"{flag}={output_dir} already holds {name}; choose another directory")
    startup_checks.check_output_dir(output_dir, flag)


def write_encoder(encoder, output_dir, flag="--output_dir"):
    """Writes a HubEncoder as bert_config.json, vocab.txt and bert_model.ckpt.* in output_dir.

    All four files appear together or none does. Returns the checkpoint
    path prefix, for --init_checkpoint.

    Raises:
      UsageError: output_dir is a file or already holds one of the files.
    """
    _check_output_dir(output_dir, flag)
    with atomic_write.staged_directory(output_dir, CHECKPOINT_FILES, flag=flag) as stage:
        with open(os.path.join(stage, "bert_config.json"), "w", encoding="utf-8") as f:
            f.write(encoder.config.to_json_string())
        shutil.copyfile(encoder.vocab_file, os.path.join(stage, "vocab.txt"))
        write_checkpoint(os.path.join(stage, CHECKPOINT_NAME), encoder.variables)
    return os.path.join(output_dir, CHECKPOINT_NAME)


def checkpoint_in(encoder, directory, flag="--output_dir"):
    """The checkpoint prefix of `encoder` in `directory`: written there, or found there.

    For a script that fine-tunes a TF Hub encoder through --init_checkpoint
    machinery: the first run writes the four files (write_encoder); a later
    run in the same directory (resuming, or evaluating) finds them and uses
    them if they hold exactly this encoder.

    Raises:
      UsageError: the directory holds another encoder's files, or only some
        of them.
    """
    prefix = os.path.join(directory, CHECKPOINT_NAME)
    present = [name for name in CHECKPOINT_FILES if os.path.exists(os.path.join(directory, name))]
    if len(present) < len(CHECKPOINT_FILES):
        return write_encoder(encoder, directory, flag)
    held = tf.train.load_checkpoint(prefix)
    shapes = held.get_variable_to_shape_map()
    same = sorted(shapes) == sorted(encoder.variables) and all(
        np.array_equal(held.get_tensor(name), value) for name, value in encoder.variables.items()
    )
    config_file = os.path.join(directory, "bert_config.json")
    if not same or modeling.BertConfig.from_json_file(config_file).to_dict() != (
        encoder.config.to_dict()
    ):
        raise UsageError(
            f"{flag}={directory} holds the checkpoint of another encoder "
            f"({CHECKPOINT_NAME}); choose another directory"
        )
    return prefix


def import_encoder(
    hub_dir, output_dir, input_flag="--input", output_flag="--output_dir", check=None
):
    """Converts a TF Hub-format BERT encoder SavedModel into a checkpoint the scripts read.

    Writes output_dir/bert_config.json, vocab.txt (the vocab_file asset)
    and bert_model.ckpt.* under the original's variable names, the pooler
    included and the masked LM head as cls/predictions/* when the encoder
    has an `mlm`. See read_encoder for what is checked.

    Returns:
      dict: checkpoint (path prefix), bert_config_file, vocab_file,
      do_lower_case, hidden_act, hidden_act_source, assumed (config keys
      not recorded in the SavedModel), with_mlm, unused (its variables not
      converted), difference, and message: the lines for the user, with
      the flags to fine-tune the result (as hf_to_tf prints them).

    check: if given, called as check(config, variable names, vocabulary
    lines, do_lower_case, hub_dir) before anything is written (see
    export_encoder).

    Raises:
      UsageError: see read_encoder and write_encoder; nothing is written then.
    """
    start = time.time()
    _check_output_dir(output_dir, output_flag)
    encoder = read_encoder(hub_dir, input_flag)
    if check is not None:
        check(
            encoder.config, list(encoder.variables), encoder.vocab, encoder.do_lower_case, hub_dir
        )
    if encoder.unused:
        logging.info("Variables not converted (%d): %s", len(encoder.unused), encoder.unused)
    checkpoint = write_encoder(encoder, output_dir, output_flag)
    elapsed = time.time() - start
    logging.info("Wrote %d variables to %s in %.1f s", len(encoder.variables), output_dir, elapsed)
    result = {
        "checkpoint": checkpoint,
        "bert_config_file": os.path.join(output_dir, "bert_config.json"),
        "vocab_file": os.path.join(output_dir, "vocab.txt"),
        "do_lower_case": encoder.do_lower_case,
        "hidden_act": encoder.config.hidden_act,
        "hidden_act_source": encoder.hidden_act_source,
        "assumed": encoder.assumed,
        "with_mlm": encoder.with_mlm,
        "unused": encoder.unused,
        "difference": encoder.difference,
    }
    result["message"] = _import_message(result)
    return result


def _import_message(result):
    lines = [
        f"do_lower_case={result['do_lower_case']} (from the SavedModel's do_lower_case); "
        f"hidden_act={result['hidden_act']} (from {result['hidden_act_source']})."
    ]
    if result["assumed"]:
        lines.append(
            "Not recorded in the SavedModel, set to BERT's values in bert_config.json: "
            + ", ".join(f"{key}={ASSUMED_SETTINGS[key]}" for key in result["assumed"])
            + "."
        )
    lines.append(
        "Use the model with:\n"
        f"  --bert_config_file={result['bert_config_file']} "
        f"--vocab_file={result['vocab_file']} "
        f"--init_checkpoint={result['checkpoint']} "
        f"--do_lower_case={result['do_lower_case']}"
    )
    return "\n".join(lines)


def resolve_handle(handle, flag="--bert_hub_module_handle"):
    """The local directory of an encoder given as a path or a TF Hub / Kaggle handle.

    A local directory is used as it is. Anything else with a scheme or a
    model host in it is handed to tensorflow_hub.resolve (which downloads
    and caches it) when the tensorflow_hub package is installed; it is
    never required.

    Raises:
      UsageError: no handle, no such directory, a remote handle without
        tensorflow_hub, or one it cannot resolve.
    """
    if not handle:
        raise UsageError(f"{flag} is required")
    if os.path.isdir(handle):
        return handle
    if "://" not in handle and not re.match(r"^(www\.)?(tfhub\.dev|kaggle\.com)/", handle):
        raise UsageError(f"{flag}={handle}: no such directory")
    try:
        import tensorflow_hub
    except ImportError:
        raise UsageError(
            f"{flag}={handle}: not a local directory, and resolving a TF Hub handle needs the "
            "tensorflow_hub package (pip install tensorflow-hub); or download the model and "
            "give its directory"
        ) from None
    try:
        return tensorflow_hub.resolve(handle)
    except Exception as e:  # network, cache and format errors alike
        raise UsageError(
            f"{flag}={handle}: tensorflow_hub cannot resolve it ({errors.first_line(e)})"
        ) from None
