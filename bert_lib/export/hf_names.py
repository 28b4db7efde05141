"""Variable names: ours (the original's checkpoints) and Hugging Face's, for each part of BERT.

Each pair is (our name, Hugging Face's name, whether the array is
transposed between them): dense kernels are [in, out] here and [out, in]
there; the task heads' output matrices are [out, in] in both.
"""

import re

# Variables of training state, not of the model: dropped by tf_to_hf.
TRAINING_STATE = re.compile(
    r"(^|/)(global_step|examples_trained|adam_[mv]|Adam(_\d+)?|Momentum|good_steps|"
    r"current_loss_scale|loss_scale\w*)$"
)


def encoder_names(num_layers):
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
TIED = {
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}


def architecture(heads):
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
NO_POOLER = ("BertForQuestionAnswering", "BertForMaskedLM")


def without_base_prefix(name):
    return name[len("bert.") :] if name.startswith("bert.") else name


def all_pairs(config):
    pairs = encoder_names(config.num_hidden_layers) + POOLER
    for head_pairs in HEADS.values():
        pairs += head_pairs
    return pairs


def head_shapes(config, variables):
    """Shapes of the task heads, their number of outputs taken from output_bias."""
    shapes = {}
    for prefix in ("", "cls/squad/"):
        if prefix + "output_bias" in variables:
            n = int(variables[prefix + "output_bias"].shape[0]) if prefix == "" else 2
            shapes[prefix + "output_weights"] = [n, config.hidden_size]
            shapes[prefix + "output_bias"] = [n]
    return shapes
