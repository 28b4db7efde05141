"""Checks every script makes before any work, each with one message.

A mistake in flags or files is caught here, as a UsageError naming the
flag and file, instead of minutes later deep in a graph: configs,
checkpoints against the config (shapes, missing and extra layers),
vocabularies (special tokens, each token once, casing against
--do_lower_case, size against vocab_size), output locations (makeable,
writable, not a file) and outputs that would overwrite an input. No
TensorFlow is imported (except for a path with a scheme), so the
data-preparation scripts use these too.
"""

import codecs
import os
import re
import tempfile

from absl import logging

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


def encoder_layers(names):
    """The sorted numbers of the encoder layers (bert/encoder/layer_N/...) among `names`."""
    layers = set()
    for name in names:
        match = _ENCODER_LAYER.match(name)
        if match:
            layers.add(int(match.group(1)))
    return sorted(layers)


_ENCODER_LAYER = re.compile(r"^bert/encoder/layer_(\d+)/")


def _layer_span(layers):
    return f"layer_{layers[0]}" if len(layers) == 1 else f"layer_{layers[0]} to layer_{layers[-1]}"


def check_init_checkpoint(
    init_checkpoint, bert_config, config_file, allow_partial=False, flag="--init_checkpoint"
):
    """The checkpoint must fit the config: no variable of another shape, and (unless
    `allow_partial`) every embedding and encoder variable the config makes and no
    encoder layer beyond the config's.

    Task heads and the pooler may be missing (a fine-tuning head starts
    fresh; question-answering and masked-LM conversions have no pooler).
    With `allow_partial` the run starts the missing variables from their
    initializers and drops the extra layers, and the log says which; a
    checkpoint holding none of the model's variables is refused all the same.
    """
    import modeling

    from . import checkpoint_shapes

    in_checkpoint = checkpoint_shapes.read_shapes(init_checkpoint, flag)
    if not in_checkpoint:
        raise UsageError(f"{flag}: {init_checkpoint} holds no variables")
    expected = modeling.bert_variable_shapes(bert_config)
    checkpoint_shapes.check_shapes(
        expected,
        init_checkpoint,
        in_checkpoint,
        hint=" (does --bert_config_file belong to this checkpoint?)",
    )
    encoder = [n for n in expected if n.startswith(("bert/embeddings/", "bert/encoder/"))]
    missing = [name for name in encoder if name not in in_checkpoint]
    num_layers = bert_config.num_hidden_layers
    held = encoder_layers(in_checkpoint)
    extra = [layer for layer in held if layer >= num_layers]
    if len(missing) == len(encoder):
        raise UsageError(
            f"{flag}: {init_checkpoint} holds none of the embedding and encoder variables "
            f"of the model --bert_config_file describes (first: {encoder[0]}); is it a BERT "
            "checkpoint?"
        )
    layers = f"{num_layers} layers in {config_file} but {len(held)} in the checkpoint"
    if allow_partial:
        if extra:
            logging.warning(
                "--allow_partial_init_checkpoint: %s (%s): its %s are not loaded",
                init_checkpoint,
                layers,
                _layer_span(extra),
            )
        if missing:
            logging.warning(
                "--allow_partial_init_checkpoint: %s lacks %d variable(s) of the model (%s); "
                "they start from their initializers: %s",
                init_checkpoint,
                len(missing),
                layers,
                ", ".join(missing),
            )
        return
    if extra:
        raise UsageError(
            f"{flag}: {init_checkpoint} has more encoder layers than the model "
            f"--bert_config_file describes ({layers}): its {_layer_span(extra)} would be "
            f"dropped; pass --allow_partial_init_checkpoint to start from its first "
            f"{num_layers} layer(s)"
        )
    if missing:
        which = f"{layers}; " if any(name.startswith("bert/encoder/") for name in missing) else ""
        raise UsageError(
            f"{flag}: {init_checkpoint} lacks {len(missing)} variable(s) of the model "
            f"--bert_config_file describes ({which}first missing: {missing[0]}); pass "
            "--allow_partial_init_checkpoint to start those from scratch"
        )


def check_vocab_size(
    vocab_size_of_file, bert_config, vocab_file, config_file, flag="--vocab_file"
):
    """The vocabulary must fit the embedding table: no id without a row, and no table far
    larger than the vocabulary (a vocabulary of another model)."""
    vocab_size = bert_config.vocab_size
    if vocab_size_of_file > vocab_size:
        raise UsageError(
            f"{flag}: {vocab_file} has {vocab_size_of_file} tokens but vocab_size in "
            f"{config_file} is {vocab_size}: ids from {vocab_size} up have no embedding"
        )
    if vocab_size - vocab_size_of_file > VOCAB_PADDING:
        raise UsageError(
            f"{flag}: {vocab_file} has {vocab_size_of_file} tokens but vocab_size in "
            f"{config_file} is {vocab_size}: is it the vocabulary of another model?"
        )


def _nearest_existing(path):
    """`path`, or its nearest ancestor that exists."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _can_write_in(directory):
    """Whether files can be made in `directory`: its mode allows it and a probe succeeds.

    The probe (a directory made and removed at once) catches what the mode
    does not tell: a read-only file system, a virtual one (/proc), root.
    """
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=directory))
    except OSError:
        return False
    return True


def check_output_location(path, flag, as_directory=True):
    """`path` (a directory with `as_directory`, else a file) can be made or written.

    It need not exist yet: the nearest ancestor that does must be a
    directory this process can write in. Remote paths (gs://...) are left
    to their file system.
    """
    if not path or fileio.is_remote(path):
        return
    full = os.path.abspath(path)
    existing = _nearest_existing(full)
    if existing == full:
        if as_directory and not os.path.isdir(full):
            raise UsageError(f"{flag}: {path} is a file, not a directory")
        if not as_directory and os.path.isdir(full):
            raise UsageError(f"{flag}: {path} is a directory")
        directory = full if as_directory else os.path.dirname(full)
    elif not os.path.isdir(existing):
        raise UsageError(f"{flag}: {existing} is a file, not a directory (in {path})")
    else:
        directory = existing
    if not _can_write_in(directory):
        where = "" if directory in (full, os.path.dirname(full)) else f" (to make {path})"
        raise UsageError(
            f"{flag}: cannot write in {directory}{where}: permission denied or read-only"
        )


def check_output_dir(path, flag="--output_dir"):
    """An output directory need not exist yet, but must be one (or be makeable) and writable."""
    check_output_location(path, flag)


def check_new_output_dir(path, flag):
    """An output directory that must not exist yet (a SavedModel's), but can be made."""
    if path and fileio.exists(path):
        raise UsageError(f"{flag}={path} already exists; choose a new directory")
    check_output_location(path, flag)


def check_output_file(path, flag="--output_file"):
    """An output file's directory must be makeable and writable, and the path not a directory."""
    if not path:
        raise UsageError(f"{flag} is required")
    check_output_location(path, flag, as_directory=False)


def _file_identity(path):
    """What makes two paths the same file: (device, inode) when it exists, else the real path."""
    try:
        status = os.stat(path)
        return (status.st_dev, status.st_ino)
    except OSError:
        return os.path.realpath(path)


def check_outputs_are_not_inputs(outputs, inputs):
    """Refuses a run that would write over one of its own input files.

    `outputs` and `inputs` are (name, path) pairs; a name says where the
    path comes from ("--output_file", "--output_dir's test_results.tsv").
    Paths are compared as files (links and relative forms resolved);
    remote paths as written.
    """
    known = {}
    for name, path in inputs:
        if path:
            key = path if fileio.is_remote(path) else _file_identity(path)
            known.setdefault(key, (name, path))
    for name, path in outputs:
        if not path:
            continue
        key = path if fileio.is_remote(path) else _file_identity(path)
        if key in known:
            input_name, input_path = known[key]
            raise UsageError(
                f"{name}={path} is also the input {input_name}={input_path}: the run would "
                "overwrite it; write the output elsewhere"
            )


def checkpoint_files(prefix):
    """The files of a local checkpoint `prefix` (.index, .data-*, .meta) that exist."""
    if not prefix or fileio.is_remote(prefix):
        return []
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    if not os.path.isdir(directory):
        return []
    pattern = re.compile(re.escape(base) + r"\.(index|meta|data-\d+-of-\d+)$")
    return [os.path.join(directory, name) for name in os.listdir(directory) if pattern.match(name)]


# A checkpoint file's name, named where its prefix was meant: model.ckpt-300.index.
_CHECKPOINT_FILE = re.compile(r"^(.+)\.(index|meta|data-\d{5}-of-\d{5})$")


def checkpoint_prefix(path, flag="--init_checkpoint"):
    """The checkpoint prefix `path` names: a file of a checkpoint stands for its prefix.

    `model.ckpt-300.index` (or .data-00000-of-00001, .meta) names the
    checkpoint model.ckpt-300 when that checkpoint's index exists; the
    change is logged. Anything else is returned as it is.
    """
    if not path:
        return path
    match = _CHECKPOINT_FILE.match(path)
    if match is None or not fileio.exists(match.group(1) + ".index"):
        return path
    prefix = match.group(1)
    logging.info(
        "%s=%s is a file of the checkpoint %s: reading that checkpoint", flag, path, prefix
    )
    return prefix


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
    vocab_file,
    do_lower_case,
    flag="--vocab_file",
    bert_config=None,
    config_file=None,
    lower_case_source="--do_lower_case",
):
    """The FullTokenizer of `vocab_file`: an existing UTF-8 file with every special token,
    each token once, whose casing `do_lower_case` fits (check_vocab_case; the setting
    comes from `lower_case_source`).

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
    vocab = tokenizer.vocab
    source = f"{flag}: {vocab_file}"
    if len(vocab) <= max(vocab.values(), default=-1):  # a token is on two lines
        check_vocab_tokens(_vocab_file_tokens(vocab_file), source)
    check_vocab_case(list(vocab), do_lower_case, source, lower_case_source)
    if bert_config is not None:
        check_vocab_size(len(tokenizer.vocab), bert_config, vocab_file, config_file)
    return tokenizer


def _vocab_file_tokens(vocab_file):
    """The tokens of a vocabulary file, one a line, as tokenization.load_vocab reads them."""
    with fileio.open_binary(vocab_file) as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.strip() for line in lines]


def check_vocab_tokens(tokens, source):
    """Each token once: a token on two lines has one id, and the model's row of the other
    line is never used (a vocabulary edited by hand, or merged from two)."""
    first_line = {}
    for line_number, token in enumerate(tokens, start=1):
        if token in first_line:
            raise UsageError(
                f"{source}: line {line_number} repeats the token {token!r} of line "
                f"{first_line[token]}; a vocabulary lists each token once (its line is its id)"
            )
        first_line[token] = line_number


# Below this many word pieces with cased letters a vocabulary is too small to
# tell whether it is cased (a test's, say).
MIN_PIECES_TO_TELL_CASE = 100


def vocabulary_casing(tokens):
    """ "uncased", "cased", or None when the vocabulary does not tell.

    An uncased vocabulary was learnt from lower-cased text: of its word
    pieces with cased letters (bracketed tokens such as [CLS] aside), none
    or almost none (one in a thousand) has a capital. A cased one has
    capitals in more than one in a hundred (Google's: about a fifth).
    """
    with_case = capitalised = 0
    for token in tokens:
        if token.startswith("[") and token.endswith("]"):
            continue
        if token.lower() != token.upper():
            with_case += 1
            capitalised += token != token.lower()
    if with_case < MIN_PIECES_TO_TELL_CASE:
        return None
    if capitalised * 1000 <= with_case:
        return "uncased"
    if capitalised * 100 > with_case:
        return "cased"
    return None


def check_vocab_case(tokens, do_lower_case, source, lower_case_source="--do_lower_case"):
    """do_lower_case=False with an uncased vocabulary is refused: no capitalised word of
    the text would be found in it ([UNK], or split into odd pieces).

    The other way round (a cased vocabulary, text lower-cased) loses the case
    but still finds every word: it is logged, not refused.
    """
    casing = vocabulary_casing(tokens)
    if casing == "uncased" and not do_lower_case:
        raise UsageError(
            f"{lower_case_source}=False, but {source} is uncased (its word pieces have no "
            "capitals): capitalised words would not be found in it; pass "
            f"{lower_case_source}=True"
        )
    if casing == "cased" and do_lower_case:
        logging.warning(
            "%s is cased (many of its word pieces have capitals) but %s=True lower-cases "
            "the text: its capitalised pieces are never used. Pass %s=False if the model "
            "is cased.",
            source,
            lower_case_source,
            lower_case_source,
        )


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
