"""Checks that the BERT model a run starts from fits, each with one message, before any work.

Its config file (readable, every architecture key), --max_seq_length
against its positions, its vocabulary (BERT's special tokens, its size
against the config's vocab_size), --init_checkpoint against the config, and a
task head already in --output_dir against the task's labels: each mistake
is a UsageError naming the flag and the file, instead of a failure minutes
later deep in a graph. script_flags.check_model runs the first four for
every script. TensorFlow (with modeling, and the checkpoint readers) is
imported only by the checks that need it, so the data-preparation scripts
check their vocabulary without paying for it.
"""

import json

import tokenization

from ..plumbing import fileio, startup_checks
from ..plumbing.errors import UsageError


def check_seq_length(max_seq_length, bert_config):
    """--max_seq_length must fit the model's position embeddings."""
    if max_seq_length > bert_config.max_position_embeddings:
        raise UsageError(
            f"Cannot use sequence length {max_seq_length} because the BERT model "
            f"was only trained up to sequence length {bert_config.max_position_embeddings}"
        )


# The keys that fix a model's architecture: every released bert_config.json
# has them, and a config without one would silently take BertConfig's default
# (12 layers, 768 wide, ...) over a checkpoint of another shape.
ARCHITECTURE_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
)

# A config's vocab_size may exceed the vocabulary's lines by this much or less:
# some models round the embedding table up (to a multiple of 8, 64 or 128).
VOCAB_PADDING = 128


def load_bert_config(config_file, flag="--bert_config_file"):
    """The BertConfig of an existing, valid config file holding every architecture key."""
    import modeling

    startup_checks.check_input_file(config_file, flag)
    config = modeling.BertConfig.from_json_file(config_file)
    with fileio.open_binary(config_file) as f:
        given = json.loads(f.read().decode("utf-8"))
    missing = [key for key in ARCHITECTURE_KEYS if key not in given]
    if missing:
        raise UsageError(
            f"{flag}: {config_file} has no {', '.join(missing)} (every BERT config gives "
            "all of " + ", ".join(ARCHITECTURE_KEYS) + ")"
        )
    return config


def _layer_count(names):
    layers = {name.split("/")[2] for name in names if name.startswith("bert/encoder/layer_")}
    return len(layers)


def check_init_checkpoint(
    init_checkpoint, bert_config, config_file, allow_partial=False, flag="--init_checkpoint"
):
    """The checkpoint must fit the config: no variable of another shape, and (unless
    `allow_partial`) every embedding and encoder variable the config makes.

    Task heads and the pooler may be missing (a fine-tuning head starts
    fresh; question-answering and masked-LM conversions have no pooler).
    """
    import modeling

    from ..plumbing import checkpoint_shapes

    in_checkpoint = checkpoint_shapes.read_shapes(init_checkpoint, flag)
    expected = modeling.bert_variable_shapes(bert_config)
    checkpoint_shapes.check_shapes(
        expected,
        init_checkpoint,
        in_checkpoint,
        hint=" (does --bert_config_file belong to this checkpoint?)",
    )
    encoder = [n for n in expected if n.startswith(("bert/embeddings/", "bert/encoder/"))]
    missing = [name for name in encoder if name not in in_checkpoint]
    if not missing or allow_partial:
        return
    layers = (
        f"{bert_config.num_hidden_layers} layers in {config_file} but "
        f"{_layer_count(in_checkpoint)} in the checkpoint; "
        if any(name.startswith("bert/encoder/") for name in missing)
        else ""
    )
    raise UsageError(
        f"{flag}: {init_checkpoint} lacks {len(missing)} variable(s) of the model "
        f"--bert_config_file describes ({layers}first missing: {missing[0]}); pass "
        "--allow_partial_init_checkpoint to start those from scratch"
    )


def check_vocab_size(vocab_size_of_file, bert_config, vocab_file, config_file):
    """The vocabulary must fit the embedding table: no id without a row, and no table far
    larger than the vocabulary (a vocabulary of another model)."""
    vocab_size = bert_config.vocab_size
    if vocab_size_of_file > vocab_size:
        raise UsageError(
            f"--vocab_file: {vocab_file} has {vocab_size_of_file} tokens but vocab_size in "
            f"{config_file} is {vocab_size}: ids from {vocab_size} up have no embedding"
        )
    if vocab_size - vocab_size_of_file > VOCAB_PADDING:
        raise UsageError(
            f"--vocab_file: {vocab_file} has {vocab_size_of_file} tokens but vocab_size in "
            f"{config_file} is {vocab_size}: is it the vocabulary of another model?"
        )


def load_tokenizer(
    vocab_file, do_lower_case, flag="--vocab_file", bert_config=None, config_file=None
):
    """The FullTokenizer of `vocab_file`: an existing UTF-8 file with every special token.

    With `bert_config` (read from `config_file`), the vocabulary must also fit
    its vocab_size (check_vocab_size).
    """
    startup_checks.check_input_file(vocab_file, flag)
    try:
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    except UnicodeDecodeError as e:
        raise UsageError(f"{flag}: {vocab_file} is not UTF-8 text ({e.reason})") from None
    try:
        tokenization.check_special_tokens(tokenizer.vocab, vocab_file)
    except tokenization.InputError as e:
        raise UsageError(str(e).replace("--vocab_file", flag, 1)) from None
    if bert_config is not None:
        check_vocab_size(len(tokenizer.vocab), bert_config, vocab_file, config_file)
    return tokenizer


def check_task_head(output_dir, init_checkpoint, num_labels, hidden_size):
    """A checkpoint already in output_dir, and --init_checkpoint, must fit this task's head.

    Training resumes from the one in output_dir and eval / predict / export
    read it; a head with another number of labels (say an MNLI model under
    --task_name=mrpc) would otherwise be restored as it is, giving outputs of
    the wrong width. An --init_checkpoint fine-tuned on such a task would
    only be refused while warm starting, after the records were written.
    Either may hold no head at all (a pre-trained checkpoint has none).
    """
    import tensorflow as tf

    from ..plumbing import checkpoint_shapes

    expected = {"output_weights": [num_labels, hidden_size], "output_bias": [num_labels]}
    newest = tf.train.latest_checkpoint(output_dir) if output_dir else None
    if newest is not None:
        checkpoint_shapes.check_shapes(
            expected, newest, hint=" (it belongs to another task: use another --output_dir)"
        )
    if init_checkpoint:
        checkpoint_shapes.check_shapes(
            expected,
            init_checkpoint,
            hint=" (--init_checkpoint was fine-tuned on another task: start from a "
            "pre-trained checkpoint)",
            flag="--init_checkpoint",
        )
