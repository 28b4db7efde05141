"""A plain, character-by-character implementation of BERT tokenization.

Written straight from the BERT tokenization rules with no caching and no fast paths,
so that it can serve as an independent oracle: tests/model/test_tokenization.py
checks `tokenization` against it on random text, and
benchmarks/tokenizer_speed.py measures how much faster `tokenization` is.
Only the standard library is used.
"""

import unicodedata


def load_vocab(path):
    """Token -> line number, each line stripped; lines end at "\\n" only."""
    vocab = {}
    with open(path, "rb") as f:
        index = 0
        for raw in f:  # binary files split on b"\n" alone
            vocab[raw.decode("utf-8").strip()] = index
            index += 1
    return vocab


def to_text(text):
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    return text


def is_whitespace(char):
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char):
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char)[0] == "P"


def is_cjk(char):
    cp = ord(char)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokenize(text, do_lower_case=True):
    text = to_text(text)
    cleaned = []
    for char in text:
        if ord(char) in (0, 0xFFFD) or is_control(char):
            continue
        if is_whitespace(char):
            cleaned.append(" ")
        elif is_cjk(char):
            cleaned.append(" " + char + " ")
        else:
            cleaned.append(char)
    pieces = []
    for word in "".join(cleaned).split():
        if do_lower_case:
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        current = []
        for char in word:
            if is_punctuation(char):
                if current:
                    pieces.append("".join(current))
                    current = []
                pieces.append(char)
            else:
                current.append(char)
        if current:
            pieces.append("".join(current))
    return " ".join(pieces).split()


def wordpiece_tokenize(text, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
    output = []
    for word in to_text(text).split():
        if len(word) > max_input_chars_per_word:
            output.append(unk_token)
            continue
        pieces = []
        start = 0
        while start < len(word):
            found = None
            for end in range(len(word), start, -1):
                candidate = word[start:end]
                if start > 0:
                    candidate = "##" + candidate
                if candidate in vocab:
                    found = candidate
                    break
            if found is None:
                pieces = [unk_token]
                break
            pieces.append(found)
            start += len(found) - (2 if start > 0 else 0)
        output.extend(pieces)
    return output


def full_tokenize(text, vocab, do_lower_case=True):
    output = []
    for token in basic_tokenize(text, do_lower_case):
        output.extend(wordpiece_tokenize(token, vocab))
    return output
