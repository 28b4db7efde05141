"""Checks that the BERT model a run starts from fits, each with one message, before any work.

Its config file (readable, every architecture key), --max_seq_length
against its positions, its vocabulary (BERT's special tokens, each token
once, its casing against --do_lower_case, its size against the config's
vocab_size), and --init_checkpoint against the config (shapes, missing and
extra layers): each mistake is a UsageError naming the flag and the file,
instead of a failure minutes later deep in a graph. check_model runs them
for every script; check_converted_model applies them to what a
converter (bert_lib/export) writes. Whether --output_dir's run is this run is
output_dir_run.py's. TensorFlow (with modeling, and the checkpoint readers) is
imported only by the checks that need it, so the data-preparation scripts
check their vocabulary without paying for it.
"""

import collections
import json
import re

from absl import logging

import tokenization

from ..plumbing import fileio, startup_checks
from ..plumbing import vocab_file as vocab_file_reader
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

    from ..plumbing import checkpoint_shapes

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
    startup_checks.check_input_file(vocab_file, flag)
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
    return vocab_file_reader.tokens(vocab_file_reader.read_lines(vocab_file))


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


# Where the parts of a converted model come from, for the messages: its
# config, its weights, its vocabulary (and the flag that gives it) and its
# do_lower_case.
Sources = collections.namedtuple("Sources", "config weights vocab vocab_flag lower_case")


def check_converted_model(config, names, vocab, do_lower_case, sources):
    """The one consistency check of every conversion, before anything is written.

    config: the modeling.BertConfig written; names: the names of the
    weights in our layout (bert/encoder/layer_0/..., optimizer slots
    included); vocab: the vocabulary's lines; do_lower_case: the
    tokenization written or printed. The weights must hold exactly the
    config's encoder layers (the converters read only those: more would be
    dropped), and the vocabulary must be one the scripts take: each token
    once, BERT's special tokens, as many lines as the embedding has rows
    (up to the padding some models add) and a casing do_lower_case fits.
    """
    layers = encoder_layers(names)
    if layers != list(range(config.num_hidden_layers)):
        raise UsageError(
            f"{sources.weights} holds {len(layers)} encoder layers but num_hidden_layers is "
            f"{config.num_hidden_layers} in {sources.config}: the converted model would "
            f"{'drop' if len(layers) > config.num_hidden_layers else 'lack'} layers; give the "
            "config of these weights"
        )
    tokens = vocab_file_reader.tokens(vocab)
    where = f"{sources.vocab_flag}: {sources.vocab}"
    check_vocab_tokens(tokens, where)
    missing = [token for token in tokenization.SPECIAL_TOKENS if token not in tokens]
    if missing:
        raise UsageError(f"{where} lacks {', '.join(missing)}")
    check_vocab_size(len(tokens), config, sources.vocab, sources.config, flag=sources.vocab_flag)
    check_vocab_case(tokens, do_lower_case, where, sources.lower_case)


def check_model(model, output_dir=None, with_vocab=True):
    """Checks the model a script starts from; returns (bert_config, tokenizer).

    `model` is a script_flags.ModelSettings (the values of the model flags).
    --do_lower_case against a released checkpoint's name (when the script
    has the flag); the config file (readable, valid, every architecture
    key); --max_seq_length against its positions; --init_checkpoint
    (shapes, and every encoder variable unless
    --allow_partial_init_checkpoint); `output_dir` not a file; the
    vocabulary (special tokens, and its size against vocab_size). The
    tokenizer is None without `with_vocab`. Every script runs it from its
    _check_flags.
    """
    if model.do_lower_case is not None:
        tokenization.validate_case_matches_checkpoint(model.do_lower_case, model.init_checkpoint)
    bert_config = load_bert_config(model.bert_config_file)
    check_seq_length(model.max_seq_length, bert_config)
    if model.init_checkpoint:
        check_init_checkpoint(
            model.init_checkpoint,
            bert_config,
            model.bert_config_file,
            allow_partial=bool(model.allow_partial_init_checkpoint),
        )
    startup_checks.check_output_dir(output_dir)
    tokenizer = None
    if with_vocab:
        tokenizer = load_tokenizer(
            model.vocab_file,
            model.do_lower_case,
            bert_config=bert_config,
            config_file=model.bert_config_file,
        )
    return bert_config, tokenizer
