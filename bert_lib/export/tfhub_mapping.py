"""What each variable of a TF Hub-format encoder is in BERT, and the settings its weights
do not record.

Variables are recognised by what their names say they are (Model Garden's
`transformer/layer_3/self_attention/query/kernel`, the original's
`bert/encoder/layer_3/attention/self/query/kernel`, under any prefix),
never by their order; the sizes of the model follow from their shapes (the
number of attention heads from the [hidden, heads, head_size] query
kernels). What the weights do not say - the activation, and for a foreign
encoder with [hidden, hidden] attention kernels the number of heads - is
settled by running the SavedModel on a fixed input and keeping the setting
under which BertModel, with the mapped weights, gives the same outputs
within TOLERANCE. An encoder that matches under none is not a BERT (a
pre-LayerNorm Transformer has the same variables, say) and is refused.
"""

import re

import numpy as np
import tensorflow as tf

import modeling

from ..plumbing import errors
from ..plumbing.errors import UsageError
from .tfhub_encoder import (
    INPUT_NAMES,
    MASKED_LM_POSITIONS,
    MLM_HEAD,
    bert_outputs,
    encoder_variable_names,
)

# Activations an encoder may have been trained with, tried in this order.
ACTIVATIONS = ("gelu", "gelu_erf", "relu", "tanh", "linear")
# How close (absolute and relative) an encoder's outputs must come to
# BertModel's for the mapping to count as right.
TOLERANCE = 1e-5


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


def saved_variables(loaded, where):
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


def map_variables(named, where):
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


def infer_sizes(values, sources, where):
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


def check_complete(values, sources, config, where):
    """Checks every encoder variable is there in its shape; returns whether the MLM head is.

    The masked LM head counts only when all of its variables are there.
    """
    shapes = modeling.bert_variable_shapes(config)
    for ours in encoder_variable_names(config):
        if ours not in values:
            raise UsageError(f"{where}: not a BERT encoder: no variable for {ours}")
    with_mlm = all(name in values for name in MLM_HEAD)
    for ours, value in values.items():
        if ours in shapes and list(value.shape) != shapes[ours]:
            raise UsageError(
                f"{where}: variable {sources[ours]} has shape {list(value.shape)}, but {ours} "
                f"must be {shapes[ours]} in a BERT of hidden size {config.hidden_size}"
            )
    return with_mlm


def head_counts(heads, hidden_size):
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


def settle_by_outputs(loaded, settings, values, head_counts, activations, with_mlm, where):
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
