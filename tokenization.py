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

TensorFlow is imported only by `load_vocab` (for `tf.io.gfile`, so gs://
paths work), which keeps `import tokenization` cheap in worker processes.
"""

import collections
import re
import unicodedata

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
_CJK_RE = re.compile(
    "(["
    "\u4e00-\u9fff"
    "\u3400-\u4dbf"
    "\U00020000-\U0002a6df"
    "\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f"
    "\U0002b820-\U0002ceaf"
    "\uf900-\ufaff"
    "\U0002f800-\U0002fa1f"
    "])"
)

# ASCII characters that are neither letters, digits nor space count as
# punctuation, even those Unicode files under symbols ($, +, <, ^, `, |, ~).
_ASCII_PUNCT = "!-/:-@\\[-`{-~"
_ASCII_PUNCT_SPLIT_RE = re.compile(f"[{_ASCII_PUNCT}]|[^{_ASCII_PUNCT}]+")
_ASCII_PUNCT_RE = re.compile(f"[{_ASCII_PUNCT}]")
# ASCII control characters that cleaning deletes (\t, \n, \r become spaces).
_ASCII_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# Size bounds of the memo tables; a full table is emptied and refilled.
_CHAR_TABLE_LIMIT = 1 << 16
_WORD_CACHE_LIMIT = 1 << 17


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises ValueError if `do_lower_case` contradicts a known Google checkpoint.

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
    raise ValueError(
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


def load_vocab(vocab_file):
    """Reads a vocabulary: one token per line, whitespace-stripped, id = line number.

    Returns an OrderedDict token -> id. Lines split on "\\n" only, and the file
    must be UTF-8. A token listed twice keeps its first position and its last id.
    """
    import tensorflow as tf

    with tf.io.gfile.GFile(vocab_file, "rb") as reader:
        text = reader.read().decode("utf-8")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline ending the last line opens no new line
    vocab = collections.OrderedDict()
    for index, line in enumerate(lines):
        vocab[line.strip()] = index
    return vocab


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
        self._cache = {}
        self._cache_key = None

    def tokenize(self, text):
        """Returns the word pieces of `text` (str, or bytes decoded as UTF-8)."""
        basic = self.basic_tokenizer
        wordpiece = self.wordpiece_tokenizer
        if (
            type(basic).tokenize is not BasicTokenizer.tokenize
            or type(wordpiece).tokenize is not WordpieceTokenizer.tokenize
        ):
            # Someone swapped in their own stage: compose the stages as given.
            return [piece for token in basic.tokenize(text) for piece in wordpiece.tokenize(token)]

        key = (basic.do_lower_case, *wordpiece._settings())
        cache = self._cache
        if key != self._cache_key:
            cache.clear()
            self._cache_key = key
        output = []
        for word in basic._split_words(text):
            pieces = cache.get(word)
            if pieces is None:
                pieces = tuple(
                    piece
                    for token in basic._word_tokens(word)
                    for piece in wordpiece._word_pieces(token)
                )
                if len(cache) >= _WORD_CACHE_LIMIT:
                    cache.clear()
                cache[word] = pieces
            output += pieces
        return output

    def convert_tokens_to_ids(self, tokens):
        """Maps tokens to ids with this tokenizer's vocabulary."""
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        """Maps ids back to tokens with this tokenizer's vocabulary."""
        return convert_by_vocab(self.inv_vocab, ids)


class BasicTokenizer:
    """Cleans text, spaces out CJK ideographs, lower-cases, splits off punctuation."""

    def __init__(self, do_lower_case=True):
        """`do_lower_case`: lower-case and strip accents (for uncased models)."""
        self.do_lower_case = do_lower_case
        self._cache = {}
        self._cache_lower = do_lower_case

    def tokenize(self, text):
        """Returns the basic tokens of `text` (str, or bytes decoded as UTF-8)."""
        cache = self._cache
        if self._cache_lower != self.do_lower_case:
            cache.clear()
            self._cache_lower = self.do_lower_case
        output = []
        for word in self._split_words(text):
            tokens = cache.get(word)
            if tokens is None:
                tokens = self._word_tokens(word)
                if len(cache) >= _WORD_CACHE_LIMIT:
                    cache.clear()
                cache[word] = tokens
            output += tokens
        return output

    def _split_words(self, text):
        """Cleans `text`, spaces out CJK characters and splits it on whitespace."""
        text = convert_to_unicode(text)
        if text.isascii():
            # No CJK, no Unicode spaces; if there are no control characters
            # either, cleaning changes nothing that split() would not undo.
            if _ASCII_CONTROL_RE.search(text) is not None:
                text = text.translate(_CLEAN_TABLE)
            return text.split()
        text = _CJK_RE.sub(r" \1 ", text.translate(_CLEAN_TABLE))
        return text.split()

    def _word_tokens(self, word):
        """The tokens of one whitespace-free word, as a tuple."""
        was_ascii = word.isascii()
        if self.do_lower_case:
            word = word.lower()
            word = self._run_strip_accents(word)
        if was_ascii:
            return tuple(self._run_split_on_punc(word))
        # Beyond ASCII, lower-casing or decomposing might in principle yield
        # whitespace, which the final whitespace split removes.
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
        return _CJK_RE.match(chr(cp)) is not None

    def _clean_text(self, text):
        """Drops NUL, U+FFFD and control characters; turns whitespace into spaces."""
        return text.translate(_CLEAN_TABLE)


class WordpieceTokenizer:
    """Splits words into the longest vocabulary pieces, left to right."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self._cache = {}
        self._cache_key = None
        self._longest = None

    def tokenize(self, text):
        """Returns the word pieces of the whitespace-separated words in `text`.

        Each word is matched greedily: the longest vocabulary entry that
        starts the word, then the longest "##"-prefixed entry that continues
        it, and so on. A word with no match at some position, or longer than
        `max_input_chars_per_word`, becomes a single `unk_token`. For example
        "unaffable" -> ["un", "##aff", "##able"].
        """
        output = []
        for token in convert_to_unicode(text).split():
            output += self._word_pieces(token)
        return output

    def _settings(self):
        """What the pieces of a word depend on; the memo is reset when it changes."""
        return (self.vocab, len(self.vocab), self.unk_token, self.max_input_chars_per_word)

    def _word_pieces(self, word):
        """The word pieces of one whitespace-free word, as a tuple (memoised)."""
        key = self._settings()
        if key != self._cache_key:
            self._cache.clear()
            self._cache_key = key
            self._longest = _longest_key(self.vocab)
        pieces = self._cache.get(word)
        if pieces is None:
            pieces = self._match(word)
            if len(self._cache) >= _WORD_CACHE_LIMIT:
                self._cache.clear()
            self._cache[word] = pieces
        return pieces

    def _match(self, word):
        """Greedy longest-match-first split of `word`; (unk_token,) on failure."""
        length = len(word)
        if length > self.max_input_chars_per_word:
            return (self.unk_token,)
        vocab = self.vocab
        if word in vocab:
            return (word,)
        # No vocabulary entry is longer than `longest`, so longer candidates
        # can be skipped without changing which one matches first.
        longest = self._longest or length
        pieces = []
        start = 0
        while start < length:
            end = min(length, start + longest)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            else:
                return (self.unk_token,)
            pieces.append(piece)
            start = end
        return tuple(pieces)


def _longest_key(vocab):
    """Length of the longest str key of `vocab`, or None if it cannot be known."""
    try:
        return max((len(key) for key in vocab), default=0) or None
    except TypeError:
        return None


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
