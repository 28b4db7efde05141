"""WordPiece tokenization, exactly as BERT's released vocabularies expect it.

The public names and their behaviour are those of the 2018 BERT code:
`FullTokenizer` runs `BasicTokenizer` (cleaning, CJK spacing, optional lower
casing and accent stripping, punctuation splitting) and then
`WordpieceTokenizer` (greedy longest-match-first against the vocabulary).

Output is token-for-token identical to that algorithm on any text. It is
much faster because real text repeats the same words constantly: everything
after the whitespace split depends on the word alone, so the result for each
word is computed once and kept in a bounded cache. Per-character Unicode
classification is likewise done once per code point, and pure-ASCII text
skips the Unicode work altogether.

TensorFlow is imported only by `load_vocab`, and only for paths with a
scheme (gs://, ...: `tf.io.gfile` reads those), which keeps `import
tokenization` and local vocabularies cheap in worker processes, and lets
the file work where TensorFlow is not installed at all. It imports nothing
else outside the standard library either, so it works copied alone.
"""

import collections
import itertools
import re
import unicodedata


class InputError(ValueError):
    """A vocabulary or a casing that does not fit: the user's mistake, which the scripts
    report in one ERROR line. A ValueError, as the original raised."""


# Checkpoint directory names of Google's released models, by casing.
_LOWER_CASED_MODELS = (
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
)
_CASED_MODELS = (
    "cased_L-12_H-768_A-12",
    "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12",
)
# The directory holding `bert_model.ckpt`; the unescaped dot is deliberate, it
# matches the same paths the released code accepted.
_MODEL_DIR_RE = re.compile(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt")

# Unicode blocks of CJK ideographs; each such character becomes its own word.
_CJK_BLOCKS = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_CJK_RE = re.compile("([" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_BLOCKS) + "])")

# ASCII characters that are neither letters, digits nor space count as
# punctuation, even those Unicode files under symbols ($, +, <, ^, `, |, ~).
_ASCII_PUNCT = "!-/:-@\\[-`{-~"
_ASCII_PUNCT_SPLIT_RE = re.compile(f"[{_ASCII_PUNCT}]|[^{_ASCII_PUNCT}]+")
_ASCII_PUNCT_RE = re.compile(f"[{_ASCII_PUNCT}]")
# The basic tokens of cleaned ASCII text: punctuation characters one by one,
# and the runs of other non-whitespace characters between them.
_ASCII_TOKEN_RE = re.compile(f"[{_ASCII_PUNCT}]|[^{_ASCII_PUNCT}\\s]+")
# ASCII control characters that cleaning deletes (\t, \n, \r become spaces).
_ASCII_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# Size bounds of the memo tables; a full table is emptied and refilled.
_CHAR_TABLE_LIMIT = 1 << 16
_WORD_CACHE_LIMIT = 1 << 17


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises InputError (a ValueError) if `do_lower_case` contradicts a known Google checkpoint.

    The casing of a released model is not stored in its config, so it is
    inferred from the name of the directory holding `bert_model.ckpt`.
    Unknown names (and an empty `init_checkpoint`) are accepted silently.
    """
    if not init_checkpoint:
        return
    match = _MODEL_DIR_RE.match(init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)
    if model_name in _LOWER_CASED_MODELS and not do_lower_case:
        given, casing, wanted = "False", "lower-cased (uncased)", "True"
    elif model_name in _CASED_MODELS and do_lower_case:
        given, casing, wanted = "True", "cased", "False"
    else:
        return
    raise InputError(
        f"--do_lower_case={given} does not fit --init_checkpoint={init_checkpoint}: "
        f"`{model_name}` is a {casing} model, so pass --do_lower_case={wanted} to "
        "tokenize text the way the model was pre-trained. If this check is wrong "
        "for your checkpoint, rename its directory."
    )


def convert_to_unicode(text):
    """Returns `text` as str; bytes are decoded as UTF-8, dropping invalid bytes."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


def printable_text(text):
    """Returns `text` as a str fit for printing or logging (bytes decoded as UTF-8)."""
    return convert_to_unicode(text)


class VocabNotUtf8Error(UnicodeDecodeError, InputError):
    """A vocabulary file that is not UTF-8; unlike the plain error, it names the file."""

    def __init__(self, error, vocab_file):
        super().__init__(error.encoding, error.object, error.start, error.end, error.reason)
        self.vocab_file = vocab_file

    def __str__(self):
        return (
            f"--vocab_file: {self.vocab_file} is not UTF-8 text "
            f"({self.reason} at byte {self.start})"
        )


def load_vocab(vocab_file):
    """Reads a vocabulary: one token per line, whitespace-stripped, id = line number.

    Returns an OrderedDict token -> id. Lines split on "\\n" only, and the file
    must be UTF-8. A token listed twice keeps its first position and its last id.
    """
    if "://" in str(vocab_file):
        import tensorflow as tf  # gs://, ram://, ... live in TensorFlow's file systems

        with tf.io.gfile.GFile(vocab_file, "rb") as reader:
            data = reader.read()
    else:
        with open(vocab_file, "rb") as reader:
            data = reader.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise VocabNotUtf8Error(e, vocab_file) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline ending the last line opens no new line
    vocab = collections.OrderedDict()
    for index, line in enumerate(lines):
        vocab[line.strip()] = index
    return vocab


# Tokens every script relies on: the model input frame and masked-LM masking.
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "[UNK]")


def check_special_tokens(vocab, vocab_file):
    """Raises InputError (a ValueError) naming `vocab_file` if `vocab` lacks any SPECIAL_TOKENS.

    The scripts call this on every --vocab_file, so that a wrong file fails
    at once instead of as a KeyError deep in feature conversion.
    """
    missing = [token for token in SPECIAL_TOKENS if token not in vocab]
    if missing:
        raise InputError(f"--vocab_file: {vocab_file} lacks {', '.join(missing)}")


def convert_by_vocab(vocab, items):
    """Maps each item through `vocab` (tokens to ids or ids to tokens)."""
    return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens):
    """Maps tokens to ids; a token missing from `vocab` raises KeyError."""
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    """Maps ids to tokens; an id missing from `inv_vocab` raises KeyError."""
    return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
    """Splits `text` on whitespace, dropping empty pieces."""
    return text.split()


class FullTokenizer:
    """End-to-end tokenization: basic tokenization, then WordPiece."""

    def __init__(self, vocab_file, do_lower_case=True):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        self._memo = None
        self._memo_key = None

    def tokenize(self, text):
        """Returns the word pieces of `text` (str, or bytes decoded as UTF-8)."""
        basic = self.basic_tokenizer
        wordpiece = self.wordpiece_tokenizer
        vocab = wordpiece.vocab
        key = (
            basic,
            wordpiece,
            basic.do_lower_case,
            vocab,
            len(vocab),
            wordpiece.unk_token,
            wordpiece.max_input_chars_per_word,
        )
        memo = self._memo
        if memo is None or memo.owner is not self or key != self._memo_key:
            memo = self._memo = self._new_memo(basic, wordpiece)
            self._memo_key = key
        if memo.compute is None:
            # A stage was replaced by one with its own tokenize: compose them as given.
            return [piece for token in basic.tokenize(text) for piece in wordpiece.tokenize(token)]
        if type(text) is not str:
            text = convert_to_unicode(text)
        return list(_concat(map(memo.__getitem__, basic._split_words(text))))

    def _new_memo(self, basic, wordpiece):
        """A memo of cleaned word -> its word pieces, for the stages as they are now."""
        if (
            type(basic).tokenize is not BasicTokenizer.tokenize
            or type(wordpiece).tokenize is not WordpieceTokenizer.tokenize
        ):
            return _WordMemo(self, None)
        tokens_of = basic._current_memo().compute
        pieces_of = wordpiece._current_memo().__getitem__

        def pieces_of_word(word):
            tokens = tokens_of(word)
            if len(tokens) == 1:
                return pieces_of(tokens[0])
            return tuple(_concat(map(pieces_of, tokens)))

        return _WordMemo(self, pieces_of_word)

    def convert_tokens_to_ids(self, tokens):
        """Maps tokens to ids with this tokenizer's vocabulary."""
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        """Maps ids back to tokens with this tokenizer's vocabulary."""
        return convert_by_vocab(self.inv_vocab, ids)


class BasicTokenizer:
    """Cleans text, spaces out CJK ideographs, lower-cases, splits off punctuation.

    A subclass that overrides one of the per-step methods (_clean_text,
    _tokenize_chinese_chars, _run_strip_accents, _run_split_on_punc) has them
    called as the steps run; words are still memoised.
    """

    _STEPS = ("_clean_text", "_tokenize_chinese_chars", "_run_strip_accents", "_run_split_on_punc")

    def __init__(self, do_lower_case=True):
        """`do_lower_case`: lower-case and strip accents (for uncased models)."""
        self.do_lower_case = do_lower_case
        self._memo = None
        self._memo_key = None
        self._plain = True

    def tokenize(self, text):
        """Returns the basic tokens of `text` (str, or bytes decoded as UTF-8)."""
        memo = self._current_memo()
        if type(text) is not str:
            text = convert_to_unicode(text)
        if self._plain and text.isascii():
            return _ascii_basic_tokens(text, self.do_lower_case)
        return list(_concat(map(memo.__getitem__, self._split_words(text))))

    def _current_memo(self):
        """The word -> tokens memo, renewed if lower-casing was switched since."""
        memo = self._memo
        if memo is None or memo.owner is not self or self.do_lower_case != self._memo_key:
            cls = type(self)
            self._plain = all(getattr(cls, s) is getattr(BasicTokenizer, s) for s in self._STEPS)
            memo = self._memo = _WordMemo(self, self._word_tokens_function())
            self._memo_key = self.do_lower_case
        return memo

    def _split_words(self, text):
        """Cleans str `text`, spaces out CJK characters and splits it on whitespace."""
        if not self._plain:
            return self._tokenize_chinese_chars(self._clean_text(text)).split()
        if text.isascii():
            # Lower-casing ASCII commutes with the split and is idempotent,
            # so doing it here already means fewer distinct words to memoise.
            text = _ascii_clean(text)
            return (text.lower() if self.do_lower_case else text).split()
        return _CJK_RE.sub(r" \1 ", text.translate(_CLEAN_TABLE)).split()

    def _word_tokens_function(self):
        """word -> tuple of its tokens, for the current settings (see _word_tokens)."""
        if not self._plain:
            return self._word_tokens
        lower = self.do_lower_case
        word_tokens = self._word_tokens

        def plain_word_tokens(word):
            if not word.isascii():
                return word_tokens(word)
            if lower:
                word = word.lower()
            if _ASCII_PUNCT_RE.search(word) is None:
                return (word,)
            return tuple(_ASCII_PUNCT_SPLIT_RE.findall(word))

        return plain_word_tokens

    def _word_tokens(self, word):
        """The tokens of one cleaned, whitespace-free word, as a tuple."""
        if self.do_lower_case:
            word = word.lower()
            word = self._run_strip_accents(word)
        # The final whitespace split drops empty pieces and any whitespace
        # that lower-casing or decomposition might in principle introduce.
        return tuple(piece for token in self._run_split_on_punc(word) for piece in token.split())

    def _run_strip_accents(self, text):
        """NFD-decomposes `text` and drops nonspacing marks (category Mn)."""
        if text.isascii():
            return text
        return unicodedata.normalize("NFD", text).translate(_NONSPACING_MARK_TABLE)

    def _run_split_on_punc(self, text):
        """Splits `text` so that every punctuation character is a piece of its own."""
        if text.isascii():
            if _ASCII_PUNCT_RE.search(text) is None:
                return [text] if text else []
            return _ASCII_PUNCT_SPLIT_RE.findall(text)
        output = []
        start = 0
        is_punct = _PUNCTUATION_TABLE
        for i, char in enumerate(text):
            if is_punct[char]:
                if start < i:
                    output.append(text[start:i])
                output.append(char)
                start = i + 1
        if start < len(text):
            output.append(text[start:])
        return output

    def _tokenize_chinese_chars(self, text):
        """Puts a space on both sides of every CJK ideograph."""
        if text.isascii():
            return text
        return _CJK_RE.sub(r" \1 ", text)

    def _is_chinese_char(self, cp):
        """Whether code point `cp` lies in one of the CJK ideograph blocks."""
        return any(lo <= cp <= hi for lo, hi in _CJK_BLOCKS)

    def _clean_text(self, text):
        """Drops NUL, U+FFFD and control characters; turns whitespace into spaces."""
        return text.translate(_CLEAN_TABLE)


class WordpieceTokenizer:
    """Splits words into the longest vocabulary pieces, left to right."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self._memo = None
        self._memo_key = None
        self._longest = None
        self._stems = None

    def tokenize(self, text):
        """Returns the word pieces of the whitespace-separated words in `text`.

        Each word is matched greedily: the longest vocabulary entry that
        starts the word, then the longest "##"-prefixed entry that continues
        it, and so on. A word with no match at some position, or longer than
        `max_input_chars_per_word`, becomes a single `unk_token`. For example
        "unaffable" -> ["un", "##aff", "##able"].
        """
        memo = self._current_memo()
        return list(_concat(map(memo.__getitem__, convert_to_unicode(text).split())))

    def _current_memo(self):
        """The word -> pieces memo, renewed if the settings changed since it was made."""
        vocab = self.vocab
        key = (vocab, len(vocab), self.unk_token, self.max_input_chars_per_word)
        memo = self._memo
        if memo is None or memo.owner is not self or key != self._memo_key:
            self._longest, self._stems = _vocab_shape(vocab)
            memo = self._memo = _WordMemo(self, self._match)
            self._memo_key = key
        return memo

    def _match(self, word):
        """Greedy longest-match-first split of `word`; (unk_token,) on failure."""
        length = len(word)
        if length > self.max_input_chars_per_word:
            return (self.unk_token,)
        vocab = self.vocab
        if word in vocab:
            return (word,)
        # Candidates longer than any vocabulary entry cannot match, so the
        # search starts at the longest one that could.
        longest, stems = self._longest, self._stems
        end = min(length, longest) if longest else length
        while end > 0 and word[:end] not in vocab:
            end -= 1
        if end == 0:
            return (self.unk_token,)
        pieces = [word[:end]]
        start = end
        while start < length:
            if stems is None:
                end = length
                while end > start and "##" + word[start:end] not in vocab:
                    end -= 1
            else:
                # `stems` holds the continuation entries without their "##".
                end = min(length, start + stems[0])
                stem_set = stems[1]
                while end > start and word[start:end] not in stem_set:
                    end -= 1
            if end == start:
                return (self.unk_token,)
            pieces.append("##" + word[start:end])
            start = end
        return tuple(pieces)


def _ascii_clean(text):
    """`_clean_text` for ASCII text: drops control characters, \\t \\n \\r -> space."""
    if text.isprintable() or _ASCII_CONTROL_RE.search(text) is None:
        return text  # split() treats \t \n \r as spaces anyway
    return text.translate(_CLEAN_TABLE)


def _ascii_basic_tokens(text, do_lower_case):
    """All basic tokens of ASCII `text`, without splitting it into words first."""
    text = _ascii_clean(text)
    if do_lower_case:
        text = text.lower()
    return _ASCII_TOKEN_RE.findall(text)


def _vocab_shape(vocab):
    """(longest entry length, (longest stem length, set of stems)) of a str vocabulary.

    A stem is a "##" entry without its "##". Either part is None when the
    vocabulary is not a collection of str, and matching then does without.
    """
    try:
        longest = max(map(len, vocab), default=0)
        stems = {token[2:] for token in vocab if token.startswith("##")}
    except (TypeError, AttributeError):
        return None, None
    return longest, (max(map(len, stems), default=0), stems)


def _is_whitespace(char):
    """Space, tab, newline, carriage return, or any Unicode space separator (Zs)."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    """Categories Cc and Cf, except tab, newline and carriage return (whitespace)."""
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """Non-alphanumeric printable ASCII, or any Unicode punctuation category (P*)."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


_concat = itertools.chain.from_iterable


class _WordMemo(dict):
    """word -> tuple of tokens, computed by `compute(word)` on first sight.

    Bounded: a full memo is emptied and refills with the words in use. A memo
    belongs to one tokenizer (`owner`); copies and unpickled tokenizers build
    their own instead of sharing it.
    """

    __slots__ = ("owner", "compute")

    def __init__(self, owner, compute):
        super().__init__()
        self.owner = owner
        self.compute = compute

    def __missing__(self, word):
        tokens = self.compute(word)
        if len(self) >= _WORD_CACHE_LIMIT:
            self.clear()
        self[word] = tokens
        return tokens

    def __reduce__(self):
        return (_WordMemo, (None, None))


class _MemoTable(dict):
    """A lookup table that computes each missing entry once, bounded in size.

    Used both as a `str.translate` table (keys are code points) and as a
    per-character predicate (keys are characters).
    """

    __slots__ = ("_compute",)

    def __init__(self, compute):
        super().__init__()
        self._compute = compute

    def __missing__(self, key):
        value = self._compute(key)
        if len(self) >= _CHAR_TABLE_LIMIT:
            self.clear()
        self[key] = value
        return value


def _clean_char(cp):
    char = chr(cp)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
        return None
    if _is_whitespace(char):
        return " "
    return cp


def _keep_unless_nonspacing_mark(cp):
    return None if unicodedata.category(chr(cp)) == "Mn" else cp


_CLEAN_TABLE = _MemoTable(_clean_char)
_NONSPACING_MARK_TABLE = _MemoTable(_keep_unless_nonspacing_mark)
_PUNCTUATION_TABLE = _MemoTable(_is_punctuation)
