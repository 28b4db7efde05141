"""Checks every script makes before any work, each with one message.

A mistake in flags or files is caught here, as a UsageError naming the
flag and file, instead of minutes later deep in a graph. No TensorFlow is
imported (except for a path with a scheme), so the data-preparation
scripts use these too.
"""

import codecs
import os

import tokenization

from . import fileio
from .errors import UsageError


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
    import json

    import modeling

    check_input_file(config_file, flag)
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

    from . import checkpoint_shapes

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


def check_output_dir(path, flag="--output_dir"):
    """An output directory may not exist yet, but must not be a file."""
    if path and fileio.exists(path) and not fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a file, not a directory")


def check_output_file(path, flag="--output_file"):
    """An output file's directory must exist (or be creatable) and the path not be a directory."""
    if not path:
        raise UsageError(f"{flag} is required")
    directory = os.path.dirname(path) or "."
    if fileio.exists(directory) and not fileio.isdir(directory):
        raise UsageError(f"{flag}: {directory} is a file, not a directory")
    if fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a directory")


def check_input_file(path, flag):
    """`path` must be an existing file (not a directory)."""
    if not path or not fileio.exists(path):
        raise UsageError(f"{flag}: no such file: {path}")
    if fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a directory")


def expand_input_files(patterns, flag="--input_file"):
    """The files a comma-separated list of paths and globs names, in tf.io.gfile order.

    Each entry must match at least one file and no directory.
    """
    files = []
    for pattern in patterns.split(","):
        if not pattern:
            raise UsageError(f"{flag}: empty entry in {patterns!r}")
        matches = fileio.glob(pattern)
        if not matches:
            if any(c in pattern for c in "*?["):
                raise UsageError(f"{flag}: no file matches {pattern}")
            raise UsageError(f"{flag}: no such file: {pattern}")
        for path in matches:
            if fileio.isdir(path):
                raise UsageError(f"{flag}: {path} is a directory")
        files.extend(matches)
    return files


def load_tokenizer(
    vocab_file, do_lower_case, flag="--vocab_file", bert_config=None, config_file=None
):
    """The FullTokenizer of `vocab_file`: an existing UTF-8 file with every special token.

    With `bert_config` (read from `config_file`), the vocabulary must also fit
    its vocab_size (check_vocab_size).
    """
    check_input_file(vocab_file, flag)
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


def _not_utf8(path, line_number, flag):
    where = f"{flag}: " if flag else ""
    return UsageError(f"{where}{path}: line {line_number} is not UTF-8 text")


def _without_bom(data):
    """A byte-order mark at the start (Excel's "CSV UTF-8" writes one) is not text."""
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data


def decode_line(raw, path, line_number, flag="--input_file"):
    """One line of an input file as text; names the file and line if it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _not_utf8(path, line_number, flag) from None


def text_lines(path, flag=None):
    """Yields the lines of a UTF-8 text file, each ending in "\n".

    A byte-order mark at the start is dropped; a line that is not UTF-8 (say
    Windows-1252) is a UsageError naming the file and the line.
    """
    for line_number, raw in fileio.numbered_lines(path):
        if line_number == 1:
            raw = _without_bom(raw)
        yield decode_line(raw, path, line_number, flag) + "\n"


def read_text(path, flag=None):
    """A whole UTF-8 text file (a JSON file, say) as a string; names the first line that
    is not UTF-8. A byte-order mark at the start is dropped."""
    with fileio.open_binary(path) as f:
        data = _without_bom(f.read())
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _not_utf8(path, data.count(b"\n", 0, e.start) + 1, flag) from None
