"""Tokenization: golden outputs, each tokenization rule, and an oracle.

The oracle is tests/support/reference_tokenizer.py, a plain character-by-character
implementation of the same rules; random text from many Unicode categories
must tokenize identically through it and through the memoised fast paths.
"""

import copy
import json
import os
import pickle
import random
import unicodedata

import pytest
import reference_tokenizer as ref
from helpers import GOLDEN, VOCAB_UNCASED, run_code

import tokenization

GOLDEN_TOKENIZATION = os.path.join(GOLDEN, "tokenization", "expected.jsonl")

SMALL_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing"]


def _write_vocab(tmp_path, tokens, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes("".join(t + "\n" for t in tokens).encode("utf-8"))
    return str(path)


def _vocab_dict(tokens):
    return {token: i for i, token in enumerate(tokens)}


@pytest.fixture(scope="module")
def uncased_tokenizers():
    return {
        True: tokenization.FullTokenizer(VOCAB_UNCASED, do_lower_case=True),
        False: tokenization.FullTokenizer(VOCAB_UNCASED, do_lower_case=False),
    }


@pytest.fixture(scope="module")
def uncased_vocab():
    return ref.load_vocab(VOCAB_UNCASED)


# --- Golden outputs of the original code -------------------------------------------------


def _golden_records():
    with open(GOLDEN_TOKENIZATION, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_golden_file_covers_both_casings():
    casings = {record["do_lower_case"] for record in _golden_records()}
    assert casings == {True, False}


@pytest.mark.parametrize("record", _golden_records(), ids=lambda r: repr(r["text"][:30]))
def test_matches_golden_output(record, uncased_tokenizers):
    lower = record["do_lower_case"]
    tokenizer = uncased_tokenizers[lower]
    for _ in range(2):  # the second pass is served from the memo
        basic = tokenization.BasicTokenizer(do_lower_case=lower).tokenize(record["text"])
        pieces = tokenizer.tokenize(record["text"])
        assert basic == record["basic"]
        assert pieces == record["wordpiece"]
        assert tokenizer.convert_tokens_to_ids(pieces) == record["ids"]
        assert tokenizer.convert_ids_to_tokens(record["ids"]) == record["wordpiece"]


# --- The behaviour the original tests pinned, in our words --------------------------------


def test_full_tokenizer_splits_accented_word_and_punctuation(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, SMALL_VOCAB + [","]))
    tokens = tokenizer.tokenize("UNwant\u00e9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tokenizer.convert_ids_to_tokens([7, 4, 5, 10, 8, 9]) == tokens


def test_basic_tokenizer_spaces_out_chinese_characters():
    tokens = tokenization.BasicTokenizer().tokenize("ah\u535a\u63a8zz")
    assert tokens == ["ah", "\u535a", "\u63a8", "zz"]


def test_basic_tokenizer_lower_cases_and_splits():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "hello",
        "!",
        "how",
        "are",
        "you",
        "?",
    ]
    assert tokenizer.tokenize("H\u00e9llo") == ["hello"]


def test_basic_tokenizer_keeps_case_when_asked():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "HeLLo",
        "!",
        "how",
        "Are",
        "yoU",
        "?",
    ]


def test_wordpiece_tokenizer_on_empty_known_and_unknown_words():
    tokenizer = tokenization.WordpieceTokenizer(vocab=_vocab_dict(SMALL_VOCAB))
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_module_level_convert_functions():
    vocab = _vocab_dict(SMALL_VOCAB)
    tokens = ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenization.convert_tokens_to_ids(vocab, tokens) == [7, 4, 5, 8, 9]
    inv = {v: k for k, v in vocab.items()}
    assert tokenization.convert_ids_to_tokens(inv, [7, 4, 5, 8, 9]) == tokens
    assert tokenization.convert_by_vocab(vocab, ["wa"]) == [6]
    with pytest.raises(KeyError):
        tokenization.convert_tokens_to_ids(vocab, ["nope"])


@pytest.mark.parametrize("char", [" ", "\t", "\r", "\n", "\u00a0", "\u3000", "\u2002", "\u202f"])
def test_is_whitespace_true(char):
    assert tokenization._is_whitespace(char)


@pytest.mark.parametrize("char", ["A", "-", "\u2028", "\u200b", "\x0b", "\x85"])
def test_is_whitespace_false(char):
    # U+2028 is Zl, U+200B is Cf, \x0b and \x85 are Cc: none of them is Zs.
    assert not tokenization._is_whitespace(char)


@pytest.mark.parametrize("char", ["\u0005", "\x00", "\x7f", "\x85", "\u200b", "\ufeff", "\xad"])
def test_is_control_true(char):
    assert tokenization._is_control(char)


@pytest.mark.parametrize("char", ["A", " ", "\t", "\r", "\n", "\ue000", "\u0378", "\ufffd"])
def test_is_control_false(char):
    # Private use (Co) and unassigned (Cn) code points are not control characters.
    assert not tokenization._is_control(char)


# --- The tokenization rules, one by one ---------------------------------------------------


@pytest.mark.parametrize("lower", [True, False])
def test_control_characters_nul_and_replacement_char_are_dropped(lower):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=lower)
    text = "a\x00b\x07c\x1bd\x7fe\x85f\u200bg\ufeffh\xadi\ufffdj\u2060k"
    assert tokenizer.tokenize(text) == ["abcdefghijk"]
    # Dropping a control character joins its neighbours, even ones that
    # str.split would have treated as whitespace.
    assert tokenizer.tokenize("x\x1cy\x0bz\x0cw") == ["xyzw"]


def test_tab_newline_and_carriage_return_separate_words():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize("a\tb\nc\rd\r\ne") == ["a", "b", "c", "d", "e"]
    assert not tokenization._is_control("\n")
    assert tokenization._is_whitespace("\n")


@pytest.mark.parametrize(
    "space", ["\u00a0", "\u1680", "\u2000", "\u2005", "\u200a", "\u202f", "\u205f", "\u3000"]
)
def test_unicode_space_separators_separate_words(space):
    assert unicodedata.category(space) == "Zs"
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"left{space}right") == ["left", "right"]


def test_line_separator_splits_like_python_whitespace():
    # U+2028 is not cleaned to a space, but the whitespace split still splits on it.
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize("up\u2028down") == ["up", "down"]


CJK_BLOCKS = [
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
]


def _in_cjk_block(cp):
    return any(lo <= cp <= hi for lo, hi in CJK_BLOCKS)


@pytest.mark.parametrize("block", CJK_BLOCKS, ids=lambda b: f"{b[0]:X}-{b[1]:X}")
def test_cjk_block_boundaries(block):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    lo, hi = block
    for cp in (lo, lo + 1, (lo + hi) // 2, hi - 1, hi):
        char = chr(cp)
        assert tokenizer.tokenize(f"ab{char}cd") == ["ab", char, "cd"], hex(cp)
        assert tokenizer._is_chinese_char(cp)
    for cp in (lo - 1, hi + 1):
        if _in_cjk_block(cp):
            continue  # the neighbouring block starts right here
        char = chr(cp)
        assert tokenizer.tokenize(f"ab{char}cd") == [f"ab{char}cd"], hex(cp)
        assert not tokenizer._is_chinese_char(cp)


def test_other_east_asian_scripts_are_not_spaced_out():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    # Hiragana, Katakana, Hangul and CJK Extension F (U+2CEB0) stay whole words.
    assert tokenizer.tokenize("ひらがなカタカナ한국어\U0002ceb0") == [
        "ひらがなカタカナ한국어\U0002ceb0"
    ]


def test_accents_are_stripped_only_when_lower_casing():
    text = "H\u00e9llo \u00dcn\u00efc\u00f6d\u00e9 e\u0301 \u0301"
    assert tokenization.BasicTokenizer(do_lower_case=True).tokenize(text) == [
        "hello",
        "unicode",
        "e",
    ]
    assert tokenization.BasicTokenizer(do_lower_case=False).tokenize(text) == [
        "H\u00e9llo",
        "\u00dcn\u00efc\u00f6d\u00e9",
        "e\u0301",
        "\u0301",
    ]


def test_lower_casing_uses_full_unicode_rules():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    # Dotted capital I lowers to i + U+0307 (Mn, then stripped); Kelvin sign to k.
    assert tokenizer.tokenize("\u0130stanbul \u212a") == ["istanbul", "k"]
    assert tokenizer.tokenize("STRASSE Stra\u00dfe") == ["strasse", "stra\u00dfe"]


ASCII_PUNCTUATION = [chr(cp) for cp in range(33, 127) if not chr(cp).isalnum()]


def test_ascii_punctuation_set_is_every_non_alphanumeric_printable():
    expected = [
        chr(cp) for cp in (*range(33, 48), *range(58, 65), *range(91, 97), *range(123, 127))
    ]
    assert ASCII_PUNCTUATION == expected


@pytest.mark.parametrize("char", ASCII_PUNCTUATION)
def test_each_ascii_punctuation_char_is_split_off(char):
    assert tokenization._is_punctuation(char)
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"a{char}b{char}{char}") == ["a", char, "b", char, char]


def test_ascii_symbols_outside_unicode_punctuation_still_split():
    for char in "$+<=>^`|~":
        assert not unicodedata.category(char).startswith("P")
        assert tokenization._is_punctuation(char)


@pytest.mark.parametrize(
    "char", ["\u00bf", "\u2014", "\u00ab", "\u00bb", "\u3001", "\uff08", "\u2026"]
)
def test_unicode_punctuation_is_split_off(char):
    assert unicodedata.category(char).startswith("P")
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"x{char}y") == ["x", char, "y"]


@pytest.mark.parametrize("char", ["\u00a9", "\u00b1", "\u20ac", "\u2122", "\U0001f600", "A", "7"])
def test_non_punctuation_stays_inside_words(char):
    assert not tokenization._is_punctuation(char)
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"x{char}y") == [f"x{char}y"]


def test_long_words_become_unknown():
    vocab = _vocab_dict(["[UNK]", "a", "##a"])
    tokenizer = tokenization.WordpieceTokenizer(vocab=vocab)
    assert tokenizer.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert tokenizer.tokenize("a" * 201) == ["[UNK]"]
    short = tokenization.WordpieceTokenizer(vocab=vocab, max_input_chars_per_word=3)
    assert short.tokenize("aaa aaaa") == ["a", "##a", "##a", "[UNK]"]
    custom = tokenization.WordpieceTokenizer(vocab=vocab, unk_token="<?>")
    assert custom.tokenize("ab") == ["<?>"]


def test_greedy_longest_match_first():
    vocab = _vocab_dict(["[UNK]", "un", "una", "##affable", "##ble", "##b", "##ffa", "##ff"])
    tokenizer = tokenization.WordpieceTokenizer(vocab=vocab)
    assert tokenizer.tokenize("unable") == ["una", "##ble"]
    assert tokenizer.tokenize("unab") == ["una", "##b"]
    assert tokenizer.tokenize("unaffa") == ["una", "##ffa"]
    assert tokenizer.tokenize("unaffable") == ["una", "##ffa", "##ble"]
    # "un" + "##affable" would cover "unaffable", but the longest first piece
    # "una" wins and matching never backtracks: "##ffable" has no cover.
    no_backtracking = tokenization.WordpieceTokenizer(_vocab_dict(["un", "una", "##affable"]))
    assert no_backtracking.tokenize("unaffable") == ["[UNK]"]


def test_longest_vocabulary_entry_can_start_a_longer_word(uncased_vocab):
    tokenizer = tokenization.WordpieceTokenizer(_vocab_dict(["a", "abc", "##d", "##cd"]))
    assert tokenizer.tokenize("abcd abccd") == ["abc", "##d", "abc", "##cd"]
    bert = tokenization.WordpieceTokenizer(uncased_vocab)
    assert max(map(len, uncased_vocab)) == len("telecommunications")
    assert bert.tokenize("telecommunicationsly") == ["telecommunications", "##ly"]


def test_whole_word_is_unknown_if_any_position_fails():
    vocab = _vocab_dict(["[UNK]", "run", "##ning", "##n"])
    tokenizer = tokenization.WordpieceTokenizer(vocab=vocab)
    assert tokenizer.tokenize("running") == ["run", "##ning"]
    assert tokenizer.tokenize("runningx") == ["[UNK]"]
    assert tokenizer.tokenize("xrunning running") == ["[UNK]", "run", "##ning"]


def test_bytes_are_decoded_as_utf8_dropping_invalid_bytes(uncased_tokenizers):
    text = b"Caf\xc3\xa9 \xff\xfebar \xe4\xb8\xad"
    assert tokenization.convert_to_unicode(text) == "Caf\u00e9 bar \u4e2d"
    assert tokenization.BasicTokenizer().tokenize(text) == ["cafe", "bar", "\u4e2d"]
    assert uncased_tokenizers[True].tokenize(text) == ["cafe", "bar", "\u4e2d"]
    assert tokenization.WordpieceTokenizer(_vocab_dict(SMALL_VOCAB)).tokenize(b"wa un") == [
        "wa",
        "un",
    ]


def test_convert_to_unicode_and_printable_text():
    assert tokenization.convert_to_unicode("h\u00e9") == "h\u00e9"
    assert tokenization.printable_text("h\u00e9") == "h\u00e9"
    assert tokenization.printable_text(b"h\xc3\xa9\xff") == "h\u00e9"
    for bad in (None, 3, ["a"]):
        with pytest.raises(ValueError, match="Unsupported string type"):
            tokenization.convert_to_unicode(bad)
        with pytest.raises(ValueError, match="Unsupported string type"):
            tokenization.printable_text(bad)


def test_whitespace_tokenize():
    assert tokenization.whitespace_tokenize("  a \t b\n") == ["a", "b"]
    assert tokenization.whitespace_tokenize(" \n ") == []


def test_load_vocab_strips_lines_and_numbers_them(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"  hello \n\tworld\r\n\nx\ry\n[UNK]\n\xc3\xa9t\xc3\xa9\nlast")
    vocab = tokenization.load_vocab(str(path))
    assert isinstance(vocab, tokenization.collections.OrderedDict)
    # Lines end at "\n" only, so "x\ry" is one token; a blank line is the token "".
    assert list(vocab.items()) == [
        ("hello", 0),
        ("world", 1),
        ("", 2),
        ("x\ry", 3),
        ("[UNK]", 4),
        ("\u00e9t\u00e9", 5),
        ("last", 6),
    ]
    assert vocab == ref.load_vocab(str(path))


def test_load_vocab_trailing_newline_and_duplicates(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"a\nb\na\n")
    vocab = tokenization.load_vocab(str(path))
    # A repeated token keeps its first position and takes the later id.
    assert list(vocab.items()) == [("a", 2), ("b", 1)]
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert tokenization.load_vocab(str(empty)) == {}


def test_load_vocab_reads_through_tf_gfile():
    # ram:// exists only inside TensorFlow's file system layer, as gs:// does.
    import tensorflow as tf

    path = "ram://tokenization_test/vocab.txt"
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("[UNK]\nhello\n")
    assert list(tokenization.load_vocab(path).items()) == [("[UNK]", 0), ("hello", 1)]
    assert tokenization.FullTokenizer(path).tokenize("Hello!") == ["hello", "[UNK]"]


def test_load_vocab_of_the_bert_base_vocabulary(uncased_vocab):
    vocab = tokenization.load_vocab(VOCAB_UNCASED)
    assert len(vocab) == 30522
    assert vocab == uncased_vocab
    assert list(vocab)[:2] == ["[PAD]", "[unused0]"]
    assert vocab["[UNK]"] == 100 and vocab["[CLS]"] == 101 and vocab["[SEP]"] == 102


def test_full_tokenizer_exposes_vocab_and_stages(uncased_tokenizers):
    tokenizer = uncased_tokenizers[True]
    assert isinstance(tokenizer.vocab, tokenization.collections.OrderedDict)
    assert all(tokenizer.inv_vocab[i] == token for token, i in tokenizer.vocab.items())
    assert tokenizer.basic_tokenizer.do_lower_case is True
    assert tokenizer.wordpiece_tokenizer.vocab is tokenizer.vocab
    assert tokenizer.wordpiece_tokenizer.unk_token == "[UNK]"
    assert tokenizer.wordpiece_tokenizer.max_input_chars_per_word == 200
    assert uncased_tokenizers[False].basic_tokenizer.do_lower_case is False


def test_vocab_without_unk_still_tokenizes_known_words(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, ["hello", ",", "world", "!"]))
    assert tokenizer.tokenize("Hello, world!") == ["hello", ",", "world", "!"]
    assert tokenizer.tokenize("hello xyz") == ["hello", "[UNK]"]
    assert tokenizer.convert_tokens_to_ids(["world", "hello"]) == [2, 0]


LOWER_CASED_MODELS = [
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
]
CASED_MODELS = ["cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16", "multi_cased_L-12_H-768_A-12"]


@pytest.mark.parametrize("model", LOWER_CASED_MODELS)
def test_validate_case_lower_cased_models(model):
    checkpoint = f"gs://bucket/models/{model}/bert_model.ckpt"
    tokenization.validate_case_matches_checkpoint(True, checkpoint)
    with pytest.raises(ValueError, match="--do_lower_case=True") as info:
        tokenization.validate_case_matches_checkpoint(False, checkpoint)
    assert model in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("model", CASED_MODELS)
def test_validate_case_cased_models(model):
    checkpoint = f"/data/{model}/bert_model.ckpt"
    tokenization.validate_case_matches_checkpoint(False, checkpoint)
    with pytest.raises(ValueError, match="--do_lower_case=False") as info:
        tokenization.validate_case_matches_checkpoint(True, checkpoint)
    assert model in str(info.value)


@pytest.mark.parametrize(
    "checkpoint",
    [
        "",
        None,
        "/data/my_model/bert_model.ckpt",
        "/data/uncased_L-12_H-768_A-12/model.ckpt-1000",
        "/data/uncased_L-12_H-768_A-12",
        "/data/my.uncased_L-2/bert_model.ckpt",
    ],
)
def test_validate_case_ignores_unknown_names(checkpoint):
    for lower in (True, False):
        tokenization.validate_case_matches_checkpoint(lower, checkpoint)


def test_validate_case_uses_the_directory_right_before_the_checkpoint():
    # The name may follow a character outside [A-Za-z0-9_-] in the same directory.
    with pytest.raises(ValueError):
        tokenization.validate_case_matches_checkpoint(
            True, "/x/v1.cased_L-12_H-768_A-12/bert_model.ckpt.index"
        )
    tokenization.validate_case_matches_checkpoint(
        True, "/cased_L-12_H-768_A-12/sub/bert_model.ckpt"
    )


# --- Private helpers users call directly ---------------------------------------------------


def test_private_step_methods_keep_their_contracts():
    tokenizer = tokenization.BasicTokenizer()
    text = "a\x00\u200b b\tc\u3000\u4e2d\u00e9\ufffd"
    assert tokenizer._clean_text(text) == "a b c \u4e2d\u00e9"
    assert tokenizer._tokenize_chinese_chars("x\u4e2dy\U00020000") == "x \u4e2d y \U00020000 "
    assert tokenizer._tokenize_chinese_chars("plain") == "plain"
    assert tokenizer._run_strip_accents("r\u00e9sum\u00e9") == "resume"
    assert tokenizer._run_split_on_punc("a,b..c") == ["a", ",", "b", ".", ".", "c"]
    assert tokenizer._run_split_on_punc("\u00bfqu\u00e9?") == ["\u00bf", "qu\u00e9", "?"]
    assert tokenizer._run_split_on_punc("") == []


# --- Memoisation must be invisible ---------------------------------------------------------


def test_returned_lists_are_fresh(uncased_tokenizers):
    tokenizer = uncased_tokenizers[True]
    first = tokenizer.tokenize("the cat sat")
    first.append("mutated")
    assert tokenizer.tokenize("the cat sat") == ["the", "cat", "sat"]
    basic = tokenization.BasicTokenizer()
    out = basic.tokenize("Hi there")
    out.clear()
    assert basic.tokenize("Hi there") == ["hi", "there"]


def test_changes_after_first_use_are_honoured(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, SMALL_VOCAB))
    assert tokenizer.tokenize("Wax wa") == ["[UNK]", "wa"]
    tokenizer.vocab["wax"] = len(tokenizer.vocab)
    assert tokenizer.tokenize("Wax wa") == ["wax", "wa"]
    tokenizer.basic_tokenizer.do_lower_case = False
    assert tokenizer.tokenize("Wax wa") == ["[UNK]", "wa"]
    tokenizer.wordpiece_tokenizer.unk_token = "<unk>"
    assert tokenizer.tokenize("Wax wa") == ["<unk>", "wa"]
    tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 2
    assert tokenizer.tokenize("wax wa") == ["<unk>", "wa"]


def test_replaced_stages_are_used(tmp_path):
    class ShoutingBasic(tokenization.BasicTokenizer):
        def tokenize(self, text):
            return [t.upper() for t in super().tokenize(text)]

    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, SMALL_VOCAB + ["WA"]))
    assert tokenizer.tokenize("wa") == ["wa"]
    tokenizer.basic_tokenizer = ShoutingBasic()
    assert tokenizer.tokenize("wa") == ["WA"]


def test_overridden_steps_are_called(uncased_vocab):
    class KeepHyphens(tokenization.BasicTokenizer):
        def _run_split_on_punc(self, text):
            return [piece for part in text.split(",") for piece in (part, ",")][:-1]

    class NoCleaning(tokenization.BasicTokenizer):
        def _clean_text(self, text):
            return text

    assert KeepHyphens().tokenize("Well-known, sure-fire") == ["well-known", ",", "sure-fire"]
    assert NoCleaning(do_lower_case=False).tokenize("a\x00b c") == ["a\x00b", "c"]
    full = tokenization.FullTokenizer(VOCAB_UNCASED)
    full.basic_tokenizer = KeepHyphens()
    assert full.tokenize("well-known") == ref.wordpiece_tokenize("well-known", uncased_vocab)
    assert "well" in full.tokenize("well-known") and "-" not in full.tokenize("well-known")
    assert full.tokenize("fire, well") == ["fire", ",", "well"]


def test_copied_and_pickled_tokenizers_behave_alike(uncased_tokenizers):
    original = uncased_tokenizers[True]
    text = "Copies must not share a stale memo: Zoë's café."
    expected = original.tokenize(text)
    for clone in (
        copy.copy(original),
        copy.deepcopy(original),
        pickle.loads(pickle.dumps(original)),
    ):
        assert clone.tokenize(text) == expected
    shallow = copy.copy(original)
    shallow.basic_tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert shallow.tokenize("Caf\u00e9") == ["[UNK]"]
    assert original.tokenize("Caf\u00e9") == ["cafe"]
    basic = tokenization.BasicTokenizer(do_lower_case=False)
    assert basic.tokenize("Ab") == ["Ab"]
    twin = copy.copy(basic)
    twin.do_lower_case = True
    assert twin.tokenize("Ab") == ["ab"]
    assert basic.tokenize("Ab") == ["Ab"]


def test_bounded_memo_tables_give_the_same_results(monkeypatch, uncased_vocab):
    monkeypatch.setattr(tokenization, "_WORD_CACHE_LIMIT", 4)
    monkeypatch.setattr(tokenization, "_CHAR_TABLE_LIMIT", 8)
    texts = _random_texts(random.Random(5), 150)
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    wordpiece = tokenization.WordpieceTokenizer(uncased_vocab)
    for text in texts + texts:
        assert basic.tokenize(text) == ref.basic_tokenize(text, True)
        assert len(basic._memo) <= 4
        joined = " ".join(ref.basic_tokenize(text, True))
        assert wordpiece.tokenize(joined) == ref.wordpiece_tokenize(joined, uncased_vocab)
    assert len(tokenization._CLEAN_TABLE) <= 8


@pytest.mark.slow
def test_import_does_not_load_tensorflow():
    result = run_code("import tokenization\nsys.exit('tensorflow' in sys.modules)")
    assert result.returncode == 0, result.stderr


# --- Random text through both implementations ----------------------------------------------

# Ranges of code points to draw from, with weights: ASCII dominates, as in real text.
_POOLS = [
    (30, [(0x20, 0x7E)]),  # printable ASCII, letters and punctuation
    (3, [(0x00, 0x1F), (0x7F, 0x7F)]),  # ASCII controls incl. \t \n \r
    (5, [(0xA0, 0xFF), (0x100, 0x17F)]),  # Latin-1 and Latin Extended-A
    (4, [(0x300, 0x36F)]),  # combining marks
    (4, [(lo, lo + 40) for lo, _ in CJK_BLOCKS] + [(hi - 40, hi + 40) for _, hi in CJK_BLOCKS]),
    (2, [(0x3040, 0x30FF), (0xAC00, 0xAC40)]),  # kana, hangul
    (2, [(0x200B, 0x200F), (0x2060, 0x2064), (0xFEFF, 0xFEFF), (0xAD, 0xAD)]),  # zero-width
    (2, [(0x2000, 0x200A), (0x3000, 0x3000), (0x1680, 0x1680), (0x202F, 0x202F)]),  # Zs
    (1, [(0x2028, 0x2029), (0x85, 0x85), (0xFFFD, 0xFFFD)]),
    (3, [(0x1F300, 0x1F64F), (0x1F3FB, 0x1F3FF), (0x2600, 0x26FF)]),  # emoji, symbols
    (3, [(0x2010, 0x2027), (0x3001, 0x3003), (0xFF01, 0xFF0F), (0x00A1, 0x00BF)]),  # punct.
    (2, [(0x370, 0x3FF), (0x400, 0x4FF), (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F)]),
    (1, [(0x130, 0x130), (0x1E9E, 0x1E9E), (0x212A, 0x212B), (0xFB00, 0xFB06), (0x1F0, 0x1F0)]),
    (1, [(0xE000, 0xE010), (0x0378, 0x0379), (0xD800, 0xD801), (0xE0001, 0xE0001)]),
]
_WORDS = ["running", "unaffable", "Caf\u00e9", "na\u00efve", "THE", "want", "##ing", "[UNK]"]


def _random_char(rng):
    weights = [w for w, _ in _POOLS]
    ranges = rng.choices(_POOLS, weights)[0][1]
    lo, hi = rng.choice(ranges)
    return chr(rng.randint(lo, hi))


def _random_texts(rng, count):
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, 12)):
            if rng.random() < 0.3:
                parts.append(rng.choice(_WORDS))
            else:
                parts.append("".join(_random_char(rng) for _ in range(rng.randint(1, 8))))
            parts.append(rng.choice([" ", "", "\t", "  ", "\n"]))
        texts.append("".join(parts))
    return texts


def test_random_unicode_text_matches_reference(uncased_tokenizers, uncased_vocab):
    rng = random.Random(2018)
    texts = _random_texts(rng, 1500)
    for lower in (True, False):
        full = uncased_tokenizers[lower]
        basic = tokenization.BasicTokenizer(do_lower_case=lower)
        expected = []
        for text in texts:
            want_basic = ref.basic_tokenize(text, lower)
            want_full = ref.full_tokenize(text, uncased_vocab, lower)
            expected.append((want_basic, want_full))
            assert basic.tokenize(text) == want_basic, repr(text)
            assert full.tokenize(text) == want_full, repr(text)
        # Again, in another order, now mostly from the memo tables.
        order = list(range(len(texts)))
        rng.shuffle(order)
        for i in order:
            assert basic.tokenize(texts[i]) == expected[i][0], repr(texts[i])
            assert full.tokenize(texts[i]) == expected[i][1], repr(texts[i])
            encoded = texts[i].encode("utf-8", "surrogatepass")
            assert full.tokenize(encoded) == ref.full_tokenize(encoded, uncased_vocab, lower)


def test_random_ascii_text_matches_reference(uncased_tokenizers, uncased_vocab):
    # Pure-ASCII text takes its own fast paths; controls and tabs included.
    rng = random.Random(31)
    alphabet = [chr(cp) for cp in range(128)] + list("aeinrst ") * 20
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(2000)]
    texts += [
        rng.choice(_WORDS[:2] + ["RUNNING,", "(want)", "x\x00y", "a\tb"]) for _ in range(200)
    ]
    for lower in (True, False):
        full = uncased_tokenizers[lower]
        basic = tokenization.BasicTokenizer(do_lower_case=lower)
        for text in texts + texts:
            assert basic.tokenize(text) == ref.basic_tokenize(text, lower), repr(text)
            assert full.tokenize(text) == ref.full_tokenize(text, uncased_vocab, lower), repr(text)


def test_random_words_through_a_small_vocabulary_match_reference():
    rng = random.Random(7)
    alphabet = "abc\u00e9\u4e2d"
    tokens = ["[UNK]"]
    for _ in range(60):
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        tokens.append(piece if rng.random() < 0.5 else "##" + piece)
    vocab = _vocab_dict(tokens)
    tokenizer = tokenization.WordpieceTokenizer(vocab, max_input_chars_per_word=12)
    for _ in range(3000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14)))
        assert tokenizer.tokenize(word) == ref.wordpiece_tokenize(word, vocab, "[UNK]", 12), word
