"""create_vocab.py: vocabularies that FullTokenizer can use on the text they came from."""

import collections
import os
import random

import pytest
import reference_tokenizer
from absl import flags
from helpers import REPO, VOCAB_UNCASED, load_script, run_python

import tokenization
from bert_lib import script_flags

SCRIPT = os.path.join(REPO, "create_vocab.py")

_TEXT = """\
The lighthouse keeper climbed the spiral staircase every evening at dusk.
He trimmed the wick, polished the great lens and wound the clockwork that turned it.
Ships passing the headland counted the flashes: three short, one long, then darkness.
In winter the storms were unbelievably violent; spray reached the gallery sixty metres up.
His daughter kept a logbook of every ship, every storm and every unusual bird.
She recorded kittiwakes, fulmars, gannets and once, improbably, a snowy owl.
The lighthouse was automated in 1987 and the keeper's cottage became a museum.
Visitors can still climb the staircase, read the logbook and watch the lens turning.
Café owners in the village sell postcards of the lighthouse and of the naïve painting of the owl.
Über-enthusiastic photographers queue at dusk; the résumé of the keeper hangs in the hall.
Numbers like 1987, 2024 and 3.14159 appear too, as do symbols such as %, & and #.
Some readers write in other scripts: 東京 is Tokyo, Αθήνα is Athens, Москва is Moscow.
"""


def corpus_text(repeats=30, seed=1):
    """The text above, shuffled and repeated, with blank lines between documents."""
    rng = random.Random(seed)
    lines = _TEXT.splitlines()
    out = []
    for _ in range(repeats):
        rng.shuffle(lines)
        out.extend(lines[:7])
        out.append("")
        out.extend(lines[7:])
        out.append("")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def cv():
    return load_script("create_vocab")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("vocab_corpus")
    paths = []
    text = corpus_text()
    half = len(text) // 2
    cut = text.index("\n", half) + 1
    for k, part in enumerate((text[:cut], text[cut:])):
        path = directory / f"part-{k}.txt"
        path.write_text(part, encoding="utf-8")
        paths.append(str(path))
    return paths


def run_main(cv, args, capsys=None):
    """Runs create_vocab's main as its command line does (the flags parsed and checked by
    script_flags.run_main); returns (exit code, stderr text)."""
    flags.FLAGS.unparse_flags()
    code = 0
    try:
        script_flags.run_main(cv.main, argv=["create_vocab.py", *args])
    except SystemExit as e:
        code = e.code or 0
    finally:
        flags.FLAGS.unparse_flags()
    return code, capsys.readouterr().err if capsys is not None else ""


def build(cv, corpus, out, **settings):
    args = [f"--input_file={','.join(corpus)}", f"--output_file={out}"]
    args += [f"--{name}={value}" for name, value in settings.items()]
    code, _ = run_main(cv, args)
    assert code == 0
    with open(out, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def plain_word_counts(paths, do_lower_case):
    """Word counts from the plain reference tokenizer, independent of create_vocab."""
    counts = collections.Counter()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                counts.update(reference_tokenizer.basic_tokenize(line, do_lower_case))
    return counts


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_every_word_of_the_corpus_tokenizes_without_unk(cv, corpus, tmp_path, do_lower_case):
    out = tmp_path / "vocab.txt"
    vocab = build(cv, corpus, out, vocab_size=400, do_lower_case=do_lower_case)
    assert len(vocab) == 400
    tokenizer = tokenization.FullTokenizer(str(out), do_lower_case=do_lower_case)
    counts = plain_word_counts(corpus, do_lower_case)
    assert "Über" in counts or "uber" in counts
    for word in counts:
        pieces = tokenizer.tokenize(word)
        assert "[UNK]" not in pieces, word
        assert "".join(p[2:] if p.startswith("##") else p for p in pieces) == word


def test_frequent_words_stay_whole(cv, corpus, tmp_path):
    out = tmp_path / "vocab.txt"
    build(cv, corpus, out, vocab_size=500)
    tokenizer = tokenization.FullTokenizer(str(out))
    counts = plain_word_counts(corpus, True)
    frequent = [w for w, _ in counts.most_common(40) if len(w) > 1]
    assert "lighthouse" in frequent
    for word in frequent:
        assert tokenizer.tokenize(word) == [word]
    # A rarer word splits into pieces rather than becoming [UNK].
    assert len(tokenizer.tokenize("lighthouses")) >= 2


def test_special_tokens_come_first(cv, corpus, tmp_path):
    vocab = build(cv, corpus, tmp_path / "vocab.txt", vocab_size=300)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(vocab) == len(set(vocab))


def test_unused_slots_follow_googles_layout(cv, corpus, tmp_path):
    vocab = build(cv, corpus, tmp_path / "vocab.txt", vocab_size=1400, num_unused=994)
    with open(VOCAB_UNCASED, encoding="utf-8") as f:
        google = f.read().split("\n")
    # [PAD], [unused0..98], [UNK], [CLS], [SEP], [MASK], [unused99..993].
    assert vocab[:999] == google[:999]
    assert vocab[999] not in google[:999]


def test_vocab_size_is_respected_and_every_character_is_there(cv, corpus, tmp_path):
    counts = plain_word_counts(corpus, True)
    chars = {c for word in counts for c in word}
    for size in (5 + 2 * len(chars), 333, 450):
        vocab = build(cv, corpus, tmp_path / f"vocab-{size}.txt", vocab_size=size)
        assert len(vocab) == size
        assert chars <= set(vocab)
        assert {"##" + c for c in chars} <= set(vocab)
    # A tiny corpus runs out of pairs to merge before a large size is reached.
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("abc abc abd\n")
    vocab = build(cv, [str(tiny)], tmp_path / "vocab-tiny.txt", vocab_size=1000)
    # Characters by count (a: 3, b: 3, c: 2, d: 1) in both forms, then the merges
    # (a, ##b) x3 -> "ab", (ab, ##c) x2 -> "abc"; (ab, ##d) occurs once only.
    assert vocab[5:] == ["a", "b", "c", "d", "##a", "##b", "##c", "##d", "ab", "abc"]


def test_output_is_deterministic(cv, corpus, tmp_path):
    one = build(cv, corpus, tmp_path / "one.txt", vocab_size=450)
    two = build(cv, list(corpus), tmp_path / "two.txt", vocab_size=450)
    assert one == two


def naive_merges(word_counts, steps, min_frequency):
    """Recounts every pair from scratch before each merge: slow but obviously right."""
    words = {w: [w[0]] + ["##" + c for c in w[1:]] for w in word_counts}
    learned = []
    for _ in range(steps):
        pairs = collections.Counter()
        for word, pieces in words.items():
            for pair in zip(pieces, pieces[1:]):
                pairs[pair] += word_counts[word]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < min_frequency:
            break
        left, right = best
        new = left + right[2:]
        learned.append(new)
        for word, pieces in words.items():
            merged, i = [], 0
            while i < len(pieces):
                if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == best:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(pieces[i])
                    i += 1
            words[word] = merged
    return learned


def test_incremental_merging_matches_recounting(cv):
    rng = random.Random(3)
    letters = "aabbbcdeee"
    counts = collections.Counter()
    for _ in range(400):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 7)))
        counts[word] += rng.randint(1, 5)
    merger = cv._PairMerger(counts)
    ours = []
    while True:
        pair = merger.best_pair(2)
        if pair is None:
            break
        ours.append(merger.merge(pair))
    assert len(ours) > 50
    # Run to exhaustion: the same merges, in the same order, and no more.
    assert ours == naive_merges(counts, len(ours) + 10, 2)


@pytest.mark.slow
def test_command_line_writes_the_vocabulary(corpus, tmp_path):
    out = tmp_path / "vocab.txt"
    result = run_python(
        SCRIPT,
        f"--input_file={corpus[0]}",
        f"--output_file={out}",
        env={"TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr
    vocab = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    # The default size far exceeds what this corpus supports; merging stops early.
    assert 100 < len(vocab) < 30522
    assert sorted(os.listdir(tmp_path)) == ["vocab.txt"]


@pytest.mark.parametrize(
    "case, overrides, expected",
    [
        ("missing input", {"input_file": "{tmp}/absent.txt"}, "--input_file: no such file"),
        ("glob matches nothing", {"input_file": "{tmp}/x-*.txt"}, "--input_file: no file matches"),
        ("no output directory", {"output_file": "{tmp}/no/dir/v.txt"}, "no such directory"),
        ("size below specials", {"vocab_size": "4"}, "--vocab_size=4 is too small"),
        ("size below characters", {"vocab_size": "20"}, "--vocab_size=20 is too small"),
        ("negative unused", {"num_unused": "-1"}, "--num_unused=-1"),
        ("zero min frequency", {"min_frequency": "0"}, "--min_frequency must be positive, got 0"),
        (
            "zero word length",
            {"max_input_chars_per_word": "0"},
            "--max_input_chars_per_word must be pos",
        ),
        ("blank corpus", {"input_file": "BLANK"}, "--input_file: no words in"),
        ("not UTF-8", {"input_file": "LATIN1"}, "line 2 is not UTF-8"),
    ],
)
def test_bad_input_is_a_one_line_error(cv, corpus, tmp_path, capsys, case, overrides, expected):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "blank.txt").write_text("\n  \n\n")
    (tmp_path / "latin1.txt").write_bytes(b"fine\ncaf\xe9\n")
    settings = {"input_file": corpus[0], "output_file": str(work / "vocab.txt")}
    for name, value in overrides.items():
        value = value.replace("{tmp}", str(tmp_path))
        value = {"BLANK": "blank.txt", "LATIN1": "latin1.txt"}.get(value, value)
        if value in ("blank.txt", "latin1.txt"):
            value = str(tmp_path / value)
        settings[name] = value
    code, err = run_main(cv, [f"--{k}={v}" for k, v in settings.items()], capsys)
    assert code == 1, case
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ERROR: ")
    assert expected in lines[0]
    assert os.listdir(work) == []
