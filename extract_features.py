"""Extracts BERT's per-token hidden states (contextual embeddings) as JSON lines.

One input line is one example: a sentence, or a pair "text_a ||| text_b".
Each output line holds, for every word piece of the example (with [CLS] and
[SEP]), the values of the encoder layers named by --layers, rounded to six
decimals, in the original script's format:

    {"linex_index": 0, "features": [{"token": "[CLS]", "layers":
        [{"index": -1, "values": [...]}, ...]}, ...]}
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import contextlib
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from absl import flags, logging

import modeling
import tokenization
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, model_fns
from bert_lib.plumbing import atomic_write, errors, fileio, startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.plumbing.progress import Progress
from bert_lib.task_data import dynamic_padding
from bert_lib.task_data.text_pairs import (
    check_room_for_pairs,
    pack_pair,
    split_text_pair,
    truncate_seq_pair,
)

FLAGS = flags.FLAGS

script_flags.define_model_flags(__name__)
script_flags.define_flags("input_file", "output_file", module=__name__)
# Prediction only: no training, distribution or evaluation-while-training flags.
script_flags.define_engine_flags(__name__, training=False)
flags.DEFINE_string(
    "layers", "-1,-2,-3,-4", "Comma-separated encoder layers to output; -1 is the last."
)
script_flags.define_integer(
    "batch_size", 32, "Batch size for predictions.", script_flags.POSITIVE, module=__name__
)
flags.DEFINE_bool(
    "use_one_hot_embeddings",
    False,
    "Look embeddings up with a one-hot matmul instead of a gather (faster on TPUs).",
)

flags.DEFINE_enum(
    "pooling",
    None,
    ["cls", "mean"],
    "Also write one vector per example, of the first layer in --layers: 'cls' takes "
    "the [CLS] vector, 'mean' the mean over the real word pieces (padding excluded).",
)
flags.DEFINE_string(
    "pooled_output_file",
    None,
    "With --pooling: where the JSON lines of sentence vectors go (default: "
    "--output_file with '.pooled.jsonl' in place of its extension). The same "
    "vectors are written as float32 [examples, hidden] to the same name with '.npy'.",
)

# Examples below this index are logged in full while converting.
_NUM_LOGGED_EXAMPLES = 5


class InputExample:
    """One input line: text_a, and text_b for a pair (else None)."""

    def __init__(self, unique_id, text_a, text_b):
        self.unique_id = unique_id
        self.text_a = text_a
        self.text_b = text_b


class InputFeatures:
    """One example as model input; `tokens` are the unpadded word pieces."""

    def __init__(self, unique_id, tokens, input_ids, input_mask, input_type_ids):
        self.unique_id = unique_id
        self.tokens = tokens
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.input_type_ids = input_type_ids


# Prediction sorts windows of this many batches by length: the outputs of a
# window (every token's layers) wait in memory until their turn to be written.
WINDOW_BATCHES = 4


def input_fn_builder(features, seq_length, padding=dynamic_padding.OFF):
    """Returns an input_fn serving `features` from in-memory constants, in order.

    Fine for the modest inputs this script is meant for; the batches keep
    their remainder so every example is predicted. `padding`
    (dynamic_padding.Settings) cuts and groups the batches.
    """
    unique_ids = [f.unique_id for f in features]
    input_ids = [f.input_ids for f in features]
    input_mask = [f.input_mask for f in features]
    input_type_ids = [f.input_type_ids for f in features]

    def input_fn(params):
        """Builds the tf.data pipeline."""
        num_examples = len(features)
        dataset = tf.data.Dataset.from_tensor_slices(
            {
                "unique_ids": tf.constant(unique_ids, shape=[num_examples], dtype=tf.int32),
                "input_ids": tf.constant(
                    input_ids, shape=[num_examples, seq_length], dtype=tf.int32
                ),
                "input_mask": tf.constant(
                    input_mask, shape=[num_examples, seq_length], dtype=tf.int32
                ),
                "input_type_ids": tf.constant(
                    input_type_ids, shape=[num_examples, seq_length], dtype=tf.int32
                ),
            }
        )
        return dynamic_padding.batch(
            dataset,
            params["batch_size"],
            False,
            padding,
            False,
            keys=("input_ids", "input_mask", "input_type_ids"),
        )

    return input_fn


def model_fn_builder(
    bert_config,
    init_checkpoint,
    layer_indexes,
    use_tpu,
    use_one_hot_embeddings,
    pooling=None,
    precision="fp32",
):
    """Returns a PREDICT-only model_fn giving "unique_id" and "layer_output_<i>".

    With `pooling` ("cls" or "mean") it also gives "pooled": one [hidden]
    vector per example of layer_indexes[0], see pool_layer. The Transformer
    layers compute in `precision` (fp32, bf16 or fp16); the outputs are
    float32.
    """
    compute_dtype = model_fns.compute_dtype(precision)

    def model_fn(features, labels, mode, params):
        """Runs BERT and exposes the requested encoder layers."""
        del labels
        if mode != engine.ModeKeys.PREDICT:
            raise ValueError(f"Only PREDICT modes are supported: {mode}")

        model = modeling.BertModel(
            config=bert_config,
            is_training=False,
            input_ids=features["input_ids"],
            input_mask=features["input_mask"],
            token_type_ids=features["input_type_ids"],
            use_one_hot_embeddings=use_one_hot_embeddings,
            compute_dtype=compute_dtype,
        )

        scaffold_fn = model_fns.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        all_layers = model.get_all_encoder_layers()
        predictions = {"unique_id": features["unique_ids"]}
        for i, layer_index in enumerate(layer_indexes):
            predictions[f"layer_output_{i}"] = all_layers[layer_index]
        if pooling:
            predictions["pooled"] = pool_layer(
                all_layers[layer_indexes[0]], features["input_mask"], pooling
            )
        predictions = dynamic_padding.pass_index(features, predictions)
        return engine.EstimatorSpec(mode=mode, predictions=predictions, scaffold_fn=scaffold_fn)

    return model_fn


def pool_layer(layer, input_mask, pooling):
    """One vector per example from a [batch, seq, hidden] layer.

    "cls": the vector at position 0. "mean": the mean over positions whose
    input_mask is 1, so padding never dilutes short inputs.
    """
    if pooling == "cls":
        return layer[:, 0]
    mask = tf.cast(input_mask, layer.dtype)[:, :, None]
    return tf.reduce_sum(layer * mask, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)


def pooled_output_paths(output_file, pooled_output_file=None):
    """The (.jsonl, .npy) paths of the sentence vectors for --output_file."""
    jsonl = pooled_output_file or f"{os.path.splitext(output_file)[0]}.pooled.jsonl"
    return jsonl, f"{os.path.splitext(jsonl)[0]}.npy"


def convert_examples_to_features(examples, seq_length, tokenizer):
    """Turns examples into InputFeatures of "[CLS] a [SEP] (b [SEP])", padded.

    Pairs are cut to seq_length - 3 pieces by trimming the longer text;
    single texts to seq_length - 2. Type ids are 0 through the first [SEP],
    1 after it.
    """
    features = []
    for ex_index, example in enumerate(examples):
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None

        tokens, input_ids, input_mask, input_type_ids = pack_pair(
            tokenizer, tokens_a, tokens_b, seq_length
        )

        if ex_index < _NUM_LOGGED_EXAMPLES:
            logging.info("*** Example ***")
            logging.info("unique_id: %s", example.unique_id)
            logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
            logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
            logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
            logging.info("input_type_ids: %s", " ".join(str(x) for x in input_type_ids))

        features.append(
            InputFeatures(
                unique_id=example.unique_id,
                tokens=tokens,
                input_ids=input_ids,
                input_mask=input_mask,
                input_type_ids=input_type_ids,
            )
        )
    return features


# Kept under the original's name for code that imports it from here.
_truncate_seq_pair = truncate_seq_pair


def read_examples(input_file):
    """Reads one InputExample per line (stripped); "a ||| b" makes a pair.

    unique_id is the 0-based line number. A blank line is an example with
    empty text, as before. A line that is not UTF-8 is a UsageError naming
    the file and line.
    """
    examples = []
    for line_number, raw in fileio.numbered_lines(input_file):
        unique_id = line_number - 1
        line = startup_checks.decode_line(raw, input_file, line_number)
        text_a, text_b = split_text_pair(line)
        examples.append(InputExample(unique_id=unique_id, text_a=text_a, text_b=text_b))
    return examples


def parse_layers(layers, num_hidden_layers):
    """Parses --layers ("-1,-2") into ints, each a valid index into the encoder layers."""
    indexes = []
    for part in layers.split(","):
        try:
            index = int(part)
        except ValueError:
            raise UsageError(
                f"--layers={layers}: {part.strip()!r} is not an integer layer index"
            ) from None
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise UsageError(
                f"--layers={layers}: layer {index} does not exist in a model with "
                f"{num_hidden_layers} layers (use -{num_hidden_layers}..{num_hidden_layers - 1})"
            )
        indexes.append(index)
    return indexes


def feature_json(unique_id, feature, result, layer_indexes):
    """The output record of one example: its tokens and their layer values (6 decimals)."""
    all_features = []
    for i, token in enumerate(feature.tokens):
        all_layers = []
        for j, layer_index in enumerate(layer_indexes):
            layer_output = result[f"layer_output_{j}"]
            layers = collections.OrderedDict()
            layers["index"] = layer_index
            layers["values"] = [round(float(x), 6) for x in layer_output[i : i + 1].flat]
            all_layers.append(layers)
        token_features = collections.OrderedDict()
        token_features["token"] = token
        token_features["layers"] = all_layers
        all_features.append(token_features)
    output_json = collections.OrderedDict()
    output_json["linex_index"] = unique_id
    output_json["features"] = all_features
    return output_json


def write_pooled(pooled, jsonl_path, npy_path):
    """Writes {unique_id: vector} as JSON lines (6 decimals) and a float32 .npy.

    Rows are in unique_id (input line) order; both files appear only complete.
    """
    ids = sorted(pooled)
    matrix = np.zeros([0, 0], np.float32)  # an empty input file
    if ids:
        matrix = np.stack([np.asarray(pooled[i], np.float32) for i in ids])
    for path in (jsonl_path, npy_path):
        fileio.makedirs(os.path.dirname(os.path.abspath(path)))
    with atomic_write.atomic_files([jsonl_path], "w", flag="--pooled_output_file") as (writer,):
        for unique_id, vector in zip(ids, matrix):
            record = {"linex_index": unique_id, "embedding": [round(float(x), 6) for x in vector]}
            writer.write(json.dumps(record) + "\n")
    with atomic_write.atomic_files([npy_path], "wb", flag="--pooled_output_file") as (writer,):
        np.save(writer, matrix)
    logging.info("Wrote %d sentence vectors to %s and %s", len(ids), jsonl_path, npy_path)


def _write_features(estimator, input_fn, features, layer_indexes, output_file, pooled=None):
    """Writes one JSON line per example to `output_file`, all-or-nothing.

    With `pooled` (a dict), each example's sentence vector is kept in it by unique_id.
    """
    unique_id_to_feature = {feature.unique_id: feature for feature in features}
    progress = Progress("Writing", len(features), "examples")
    with atomic_write.atomic_files([output_file], "w", flag="--output_file") as (writer,):
        results = dynamic_padding.in_input_order(estimator.predict(input_fn))
        for count, result in enumerate(results, start=1):
            unique_id = int(result["unique_id"])
            record = feature_json(
                unique_id, unique_id_to_feature[unique_id], result, layer_indexes
            )
            writer.write(json.dumps(record) + "\n")
            if pooled is not None:
                pooled[unique_id] = result["pooled"]
            progress.update(count, force=count == len(features))


@contextlib.contextmanager
def _naming_unreadable_checkpoint(init_checkpoint):
    """The checkpoint is the only file TensorFlow reads here: a read error names it.

    A checkpoint cut short or damaged fails only when its values are read,
    with TensorFlow's OutOfRangeError or DataLossError and no file name.
    """
    try:
        yield
    except (tf.errors.OutOfRangeError, tf.errors.DataLossError) as e:
        raise UsageError(
            f"--init_checkpoint: cannot read {init_checkpoint} "
            f"(cut short or damaged?): {errors.first_line(e)}"
        ) from e


# The flags of this script read as they are (the model flags apart, in
# script_flags.ModelSettings).
_FLAG_NAMES = (
    "input_file output_file layers batch_size use_tpu use_one_hot_embeddings pooling "
    "pooled_output_file precision"
).split()

# What settings_from_flags reads: the model flags (model), the padding of
# prediction batches and each flag of _FLAG_NAMES.
Settings = collections.namedtuple("Settings", ["model", "padding", *_FLAG_NAMES])


def settings_from_flags():
    """Reads the flags once into Settings; refuses padding flags that cannot work
    (UsageError naming the flag; each number's rule was checked as the command line was
    read)."""
    script_flags.check_padding_flags()
    return Settings(
        model=script_flags.model_settings_from_flags(),
        padding=script_flags.padding_from_flags(is_training=False, window_batches=WINDOW_BATCHES),
        **{name: FLAGS[name].value for name in _FLAG_NAMES},
    )


def _check_flags(settings):
    """Checks the settings, the config, the checkpoint and the input before any work.

    Returns (bert_config, layer_indexes, tokenizer, examples).
    """
    model, input_file = settings.model, settings.input_file
    startup_checks.check_input_file(model.bert_config_file, "--bert_config_file")
    bert_config, tokenizer = checks.check_model(model)
    layer_indexes = parse_layers(settings.layers, bert_config.num_hidden_layers)
    startup_checks.check_output_file(settings.output_file)
    startup_checks.check_input_file(input_file, "--input_file")
    outputs = [("--output_file", settings.output_file)]
    if settings.pooling:
        jsonl, npy = pooled_output_paths(settings.output_file, settings.pooled_output_file)
        outputs += [("--pooled_output_file", jsonl), ("--pooled_output_file (.npy)", npy)]
        startup_checks.check_output_file(jsonl, "--pooled_output_file")
    startup_checks.check_outputs_are_not_inputs(
        outputs,
        [
            ("--input_file", input_file),
            ("--vocab_file", model.vocab_file),
            ("--bert_config_file", model.bert_config_file),
            *(
                ("--init_checkpoint", f)
                for f in startup_checks.checkpoint_files(model.init_checkpoint)
            ),
        ],
    )
    examples = read_examples(input_file)
    if not any(e.text_a.strip() or (e.text_b or "").strip() for e in examples):
        raise UsageError(f"--input_file: {input_file} holds no text (no non-blank line)")
    check_room_for_pairs(examples, model.max_seq_length, f"--input_file={input_file}")
    return bert_config, layer_indexes, tokenizer, examples


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    bert_config, layer_indexes, tokenizer, examples = _check_flags(settings)
    model, output_file, pooling = settings.model, settings.output_file, settings.pooling
    features = convert_examples_to_features(
        examples=examples, seq_length=model.max_seq_length, tokenizer=tokenizer
    )

    model_fn = model_fn_builder(
        bert_config=bert_config,
        init_checkpoint=model.init_checkpoint,
        layer_indexes=layer_indexes,
        use_tpu=settings.use_tpu,
        use_one_hot_embeddings=settings.use_one_hot_embeddings,
        pooling=pooling,
        precision=settings.precision,
    )
    pooled_jsonl = pooled_npy = None
    pooled = {}
    if pooling:
        pooled_jsonl, pooled_npy = pooled_output_paths(output_file, settings.pooled_output_file)
    # Nothing is trained or saved; the engine only needs a scratch directory.
    scratch_dir = tempfile.mkdtemp(prefix="extract_features-")
    try:
        estimator = engine.Estimator(
            model_fn=model_fn,
            config=script_flags.run_config_from_flags(model_dir=scratch_dir),
            predict_batch_size=settings.batch_size,
        )
        input_fn = input_fn_builder(
            features=features, seq_length=model.max_seq_length, padding=settings.padding
        )
        fileio.makedirs(os.path.dirname(os.path.abspath(output_file)))
        with _naming_unreadable_checkpoint(model.init_checkpoint):
            _write_features(
                estimator,
                input_fn,
                features,
                layer_indexes,
                output_file,
                pooled if pooling else None,
            )
        if pooling:
            write_pooled(pooled, pooled_jsonl, pooled_npy)
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("init_checkpoint")
    flags.mark_flag_as_required("output_file")
    script_flags.run_main(main)
