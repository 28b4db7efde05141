"""create_pretraining_data.py against the 2018 code's outputs and a plain reference.

Records are compared as bytes: ours are written in protobuf's deterministic
form (features sorted by name), and every record of the golden files is
parsed and re-serialized in that form before comparing, because protobuf's
default map order differs from one process to the next. Equal
deterministic bytes mean equal parsed Examples.
"""

import os
import random

import pytest
import reference_pretraining_data as reference
import tensorflow as tf
from absl import flags
from helpers import GOLDEN, REPO, VOCAB_UNCASED, error_line, load_script, run_code, run_python

from bert_lib import script_flags
from bert_lib.plumbing import fileio, tfrecord_format
from bert_lib.task_data import pretraining_records, pretraining_text, random_draws

SCRIPT = os.path.join(REPO, "create_pretraining_data.py")
GOLDEN_DIR = os.path.join(GOLDEN, "pretraining")
SAMPLE_TEXT = os.path.join(GOLDEN_DIR, "sample_text.txt")
DEFAULT_FLAGS = dict(
    max_seq_length=128,
    max_predictions_per_seq=20,
    masked_lm_prob=0.15,
    random_seed=12345,
    dupe_factor=2,
)
WWM_FLAGS = dict(
    do_whole_word_mask=True,
    max_seq_length=64,
    max_predictions_per_seq=10,
    masked_lm_prob=0.2,
    short_seq_prob=0.3,
    random_seed=7,
    dupe_factor=3,
)


@pytest.fixture(scope="module")
def cpd():
    return load_script("create_pretraining_data")


def read_records(path):
    return [record.numpy() for record in tf.data.TFRecordDataset(path)]


def canonical_records(path):
    return [
        tf.train.Example.FromString(record).SerializeToString(deterministic=True)
        for record in read_records(path)
    ]


def flag_args(settings):
    return [f"--{name}={value}" for name, value in settings.items()]


def run_subprocess(args):
    return run_python(SCRIPT, *args, env={"TF_CPP_MIN_LOG_LEVEL": "3"})


def run_in_process(cpd, args, capsys=None):
    """Runs the script's main as its command line does (the flags parsed and checked by
    script_flags.run_main); returns (exit code, stderr text)."""
    flags.FLAGS.unparse_flags()
    code = 0
    try:
        script_flags.run_main(cpd.main, argv=["create_pretraining_data.py", *args])
    except SystemExit as e:
        code = e.code or 0
    finally:
        flags.FLAGS.unparse_flags()
    err = capsys.readouterr().err if capsys is not None else ""
    return code, err


# ---------------------------------------------------------------------------
# The 2018 code's own outputs.


@pytest.mark.slow
def test_default_flags_reproduce_golden_records(tmp_path):
    out = tmp_path / "default.tfrecord"
    result = run_subprocess(
        [
            f"--input_file={SAMPLE_TEXT}",
            f"--output_file={out}",
            f"--vocab_file={VOCAB_UNCASED}",
            *flag_args(DEFAULT_FLAGS),
        ]
    )
    assert result.returncode == 0, result.stderr
    expected = canonical_records(os.path.join(GOLDEN_DIR, "default.tfrecord"))
    assert len(expected) == 23
    assert read_records(out) == expected
    # The first 20 instances are logged as the original logs them.
    assert result.stderr.count("*** Example ***") == 20
    assert "Wrote 23 total instances" in result.stderr


@pytest.mark.slow
def test_whole_word_mask_two_files_reproduce_golden_records(tmp_path):
    outs = [tmp_path / "wwm_a.tfrecord", tmp_path / "wwm_b.tfrecord"]
    result = run_subprocess(
        [
            f"--input_file={SAMPLE_TEXT}",
            f"--output_file={outs[0]},{outs[1]}",
            f"--vocab_file={VOCAB_UNCASED}",
            "--num_workers=2",
            *flag_args(WWM_FLAGS),
        ]
    )
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path)) == ["wwm_a.tfrecord", "wwm_b.tfrecord"]
    for name, out in zip(("wwm_a", "wwm_b"), outs):
        assert read_records(out) == canonical_records(os.path.join(GOLDEN_DIR, f"{name}.tfrecord"))


def test_reference_reproduces_golden_records():
    """The plain reference the larger cases rely on is itself faithful."""
    settings = reference.make_flags(**WWM_FLAGS, num_output_files=2)
    a, b = reference.serialized_examples([SAMPLE_TEXT], VOCAB_UNCASED, settings, "plain")
    assert a == canonical_records(os.path.join(GOLDEN_DIR, "wwm_a.tfrecord"))
    assert b == canonical_records(os.path.join(GOLDEN_DIR, "wwm_b.tfrecord"))


# ---------------------------------------------------------------------------
# Larger corpora against the reference.

_SUBJECTS = [
    "The ferryman",
    "Our neighbour's daughter",
    "A travelling photographer",
    "The committee",
    "Nobody in the village",
    "Her grandfather",
    "The hydroelectric authority",
    "An unconvinced archaeologist",
]
_VERBS = [
    "repaired",
    "photographed",
    "misunderstood",
    "catalogued",
    "recommissioned",
    "walked past",
    "disapproved of",
    "wrote about",
]
_OBJECTS = [
    "the old mill by the river",
    "a lighthouse nobody visited",
    "the unbelievably complicated timetable",
    "two thousand handwritten letters",
    "the municipal greenhouse",
    "an extraordinarily stubborn goat",
    "the counterrevolutionary pamphlets",
    "the café on Rue Dauphine",
]
_ENDINGS = [
    ".",
    " in 1893.",
    ", or so the story goes.",
    " before anyone noticed!",
    " (twice).",
    " - reluctantly.",
    "; nobody asked why?",
    " with characteristic thoroughness.",
]


def write_corpus(directory, num_files=3, num_documents=60, seed=0):
    """Writes a varied multi-file corpus; returns the file paths.

    Documents of 1 to 12 sentences, runs of blank and whitespace-only lines,
    CRLF endings, a lone carriage return, non-ASCII and control characters,
    and a document that runs on from one file into the next.
    """
    rng = random.Random(seed)
    lines = []
    for d in range(num_documents):
        for _ in range(rng.randint(1, 12)):
            sentence = " ".join(
                (rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS))
            ) + rng.choice(_ENDINGS)
            lines.append(sentence)
        if d % 7 == 3:
            lines.append("Zürich’s “naïve” résumé: 東京 and Ελλάδα\u200b too.")
        if d % 11 == 5:
            lines.append("tab\tseparated\x01control\x7fchars")
        lines.append("" if d % 5 else "   \t ")
        if d % 9 == 0:
            lines.append("")
    per_file = len(lines) // num_files
    paths = []
    for k in range(num_files):
        part = lines[k * per_file : (k + 1) * per_file if k < num_files - 1 else None]
        if k == 0:
            # No blank line at the end: the document continues in file 1.
            while part and not part[-1].strip():
                part.pop()
        text = "\n".join(part) + "\n"
        if k == 1:
            text = text.replace("\n", "\r\n").replace("goat", "go\rat")
        path = os.path.join(directory, f"part-{k}.txt")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    return write_corpus(str(directory))


@pytest.fixture(scope="module")
def vocab_cased(tmp_path_factory):
    """VOCAB_UNCASED with the capitalised form of 500 of its words added at the end: a cased
    vocabulary, which --do_lower_case=False needs (an uncased one is refused)."""
    with open(VOCAB_UNCASED, encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    words = [t for t in tokens[1996:] if t.isalpha() and t.islower()][:500]
    path = tmp_path_factory.mktemp("vocab") / "vocab_cased.txt"
    path.write_text("".join(t + "\n" for t in tokens + [w.capitalize() for w in words]))
    return str(path)


def run_ours(cpd, input_files, output_files, settings, num_workers=1, vocab_file=VOCAB_UNCASED):
    args = [
        f"--input_file={','.join(input_files)}",
        f"--output_file={','.join(str(p) for p in output_files)}",
        f"--vocab_file={vocab_file}",
        f"--num_workers={num_workers}",
        *flag_args(settings),
    ]
    code, _ = run_in_process(cpd, args)
    assert code == 0
    return [read_records(p) for p in output_files]


@pytest.mark.parametrize(
    "settings",
    [
        dict(
            do_whole_word_mask=True,
            max_seq_length=48,
            max_predictions_per_seq=7,
            masked_lm_prob=0.25,
            short_seq_prob=0.3,
            random_seed=3,
            dupe_factor=3,
        ),
        dict(do_lower_case=False, max_seq_length=96, random_seed=11, dupe_factor=2),
    ],
    ids=["whole_word_short", "cased_long"],
)
def test_multi_file_corpus_matches_reference(cpd, corpus, vocab_cased, tmp_path, settings):
    outputs = [tmp_path / f"out-{k}.tfrecord" for k in range(3)]
    vocab = VOCAB_UNCASED if settings.get("do_lower_case", True) else vocab_cased
    ours = run_ours(cpd, corpus, outputs, settings, vocab_file=vocab)
    expected = reference.serialized_examples(
        corpus, vocab, reference.make_flags(**settings, num_output_files=3), "plain"
    )
    assert sum(len(records) for records in expected) > 200
    for got, want in zip(ours, expected):
        assert got == want


def test_output_does_not_depend_on_num_workers(cpd, corpus, tmp_path, monkeypatch):
    # Small chunks so that both workers get several of them.
    monkeypatch.setattr(pretraining_text, "_LINES_PER_CHUNK", 37)
    settings = dict(do_whole_word_mask=True, max_seq_length=64, dupe_factor=2)
    one = run_ours(cpd, corpus, [tmp_path / "one.tfrecord"], settings, num_workers=1)
    two = run_ours(cpd, corpus, [tmp_path / "two.tfrecord"], settings, num_workers=2)
    assert len(one[0]) > 100
    assert one == two


@pytest.mark.slow
def test_command_line_and_in_process_runs_agree(cpd, corpus, tmp_path):
    settings = dict(max_seq_length=64, dupe_factor=2, random_seed=5)
    outputs = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"]
    result = run_subprocess(
        [
            f"--input_file={','.join(corpus)}",
            f"--output_file={','.join(str(p) for p in outputs)}",
            f"--vocab_file={VOCAB_UNCASED}",
            *flag_args(settings),
        ]
    )
    assert result.returncode == 0, result.stderr
    in_process = run_ours(
        cpd, corpus, [tmp_path / "c.tfrecord", tmp_path / "d.tfrecord"], settings
    )
    assert [read_records(p) for p in outputs] == in_process


@pytest.mark.slow
def test_local_run_never_imports_tensorflow(tmp_path):
    out = tmp_path / "x.tfrecord"
    code = (
        "from absl import app\n"
        "import create_pretraining_data as c\n"
        f"sys.argv = ['c', '--input_file={SAMPLE_TEXT}', '--output_file={out}',"
        f" '--vocab_file={VOCAB_UNCASED}', '--dupe_factor=1']\n"
        "try:\n    app.run(c.main)\nexcept SystemExit:\n    pass\n"
        "print('tensorflow' in sys.modules)\n"
    )
    result = run_code(code)
    assert result.stdout.strip() == "False", result.stderr
    assert len(read_records(out)) > 5


def test_tfrecord_files_equal_tensorflows(cpd, tmp_path, monkeypatch):
    rng = random.Random(2)
    records = [bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 7, 300, 2000])))]
    records += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 900))) for _ in range(300)]
    ours = [str(tmp_path / f"ours-{k}.tfrecord") for k in range(3)]
    monkeypatch.setattr(tfrecord_format, "_RECORDS_PER_BATCH", 37)  # several batches per file
    tfrecord_format.write_tfrecords(records, ours)
    for k, path in enumerate(ours):
        theirs = str(tmp_path / f"theirs-{k}.tfrecord")
        with tf.io.TFRecordWriter(theirs) as writer:
            for record in records[k::3]:
                writer.write(record)
        with open(path, "rb") as a, open(theirs, "rb") as b:
            assert a.read() == b.read()
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f"ours-{k}.tfrecord" for k in range(3)] + [f"theirs-{k}.tfrecord" for k in range(3)]
    )


def test_failed_write_leaves_no_file(cpd, tmp_path):
    with pytest.raises(TypeError):
        tfrecord_format.write_tfrecords([b"fine", "not bytes"], [str(tmp_path / "x.tfrecord")])
    assert os.listdir(tmp_path) == []


def test_example_decoder_matches_protobuf(cpd):
    rng = random.Random(4)
    for _ in range(20):
        ints = [rng.randint(-(2**63), 2**63 - 1) for _ in range(rng.randint(1, 9))]
        floats = [rng.uniform(-5, 5) for _ in range(rng.randint(1, 5))]
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "a": tf.train.Feature(int64_list=tf.train.Int64List(value=ints)),
                    "b": tf.train.Feature(float_list=tf.train.FloatList(value=floats)),
                }
            )
        )
        got = tfrecord_format.example_values(example.SerializeToString())
        assert got["a"] == ints
        assert got["b"] == list(example.features.feature["b"].float_list.value)


def test_glob_lists_files_as_tensorflow_does(cpd, tmp_path, monkeypatch):
    names = ["zeta.txt", "alpha.txt", ".hidden.txt", "a10.txt", "a2.txt", "mid", "b.md"]
    for name in names:
        (tmp_path / name).write_text("x\n")
    (tmp_path / "sub").mkdir()
    for pattern in ("*", "*.txt", "a?*.txt", "a[0-9]*", "zeta.txt", "missing.txt", "*/x*"):
        full = str(tmp_path / pattern)
        assert fileio.glob(full) == tf.io.gfile.glob(full), pattern
    monkeypatch.chdir(tmp_path)
    for pattern in ("*", "a*.txt", "zeta.txt"):
        assert fileio.glob(pattern) == tf.io.gfile.glob(pattern), pattern


def test_library_fallback_draws_give_the_same_records(cpd, corpus, tmp_path, monkeypatch):
    assert random_draws.FAST_DRAWS  # the direct getrandbits path is live on this Python
    settings = dict(do_whole_word_mask=True, max_seq_length=40, dupe_factor=1)
    fast = run_ours(cpd, corpus, [tmp_path / "fast.tfrecord"], settings)
    monkeypatch.setattr(random_draws, "FAST_DRAWS", False)
    slow = run_ours(cpd, corpus, [tmp_path / "slow.tfrecord"], settings)
    assert fast == slow


# ---------------------------------------------------------------------------
# The public helpers keep the original's names, signatures and draws.


def _sentences(seed, count):
    rng = random.Random(seed)
    pieces = ["the", "un", "##believ", "##ably", "quick", "fox", "##es", "run", ".", "##s"]
    return [[rng.choice(pieces) for _ in range(rng.randint(1, 9))] for _ in range(count)]


def test_create_instances_from_document_matches_reference(cpd):
    vocab_words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "x", "##y", "z"]
    documents = [_sentences(d, 2 + d % 5) for d in range(6)]
    for whole_word in (False, True):
        settings = reference.make_flags(
            max_seq_length=20,
            short_seq_prob=0.4,
            masked_lm_prob=0.3,
            max_predictions_per_seq=4,
            do_whole_word_mask=whole_word,
        )
        for d in range(len(documents)):
            ours = cpd.create_instances_from_document(
                documents,
                d,
                20,
                0.4,
                0.3,
                4,
                vocab_words,
                random.Random(d),
                do_whole_word_mask=whole_word,
            )
            theirs = reference.from_document(documents, d, settings, vocab_words, random.Random(d))
            assert len(ours) == len(theirs) > 0
            for a, b in zip(ours, theirs):
                assert a.tokens == b.tokens
                assert a.segment_ids == b.segment_ids
                assert a.is_random_next == b.is_random_next
                assert a.masked_lm_positions == b.positions
                assert a.masked_lm_labels == b.labels


def test_whole_word_piece_after_sep_joins_the_word_before(cpd):
    """As in the original, [SEP] does not end a word: "##c" extends "b ##x"."""
    tokens = ["[CLS]", "a", "b", "##x", "[SEP]", "##c", "d", "[SEP]"]
    vocab_words = ["q", "r"]
    for seed in range(40):
        ours = cpd.create_masked_lm_predictions(
            tokens, 0.5, 3, vocab_words, random.Random(seed), do_whole_word_mask=True
        )
        theirs = reference.mask(tokens, 0.5, 3, vocab_words, True, random.Random(seed))
        assert (ours[0], ours[1], ours[2]) == theirs
        positions = ours[1]
        assert (2 in positions) == (3 in positions) == (5 in positions)


def test_truncate_seq_pair_draws_like_the_original(cpd):
    for seed in range(20):
        a, b = list(range(seed)), list(range(100, 100 + 2 * seed))
        ra, rb = list(a), list(b)
        cpd.truncate_seq_pair(a, b, 9, random.Random(seed))
        reference.truncate(ra, rb, 9, random.Random(seed))
        assert (a, b) == (ra, rb)
        assert len(a) + len(b) <= 9


def test_encoder_bytes_equal_deterministic_protobuf(cpd):
    rng = random.Random(5)
    for max_seq_length, max_predictions in ((8, 2), (200, 30)):
        encoder = pretraining_records.PretrainingExampleEncoder(
            40000, max_seq_length, max_predictions
        )
        for _ in range(30):
            length = rng.randint(5, max_seq_length)
            ids = [rng.randrange(40000) for _ in range(length)]
            num_a = rng.randint(1, length - 4)
            num_b = length - num_a - 3
            positions = sorted(rng.sample(range(length), rng.randint(0, max_predictions)))
            labels = [rng.randrange(40000) for _ in positions]
            random_next = rng.random() < 0.5
            instance = reference.Instance(
                ids, [0] * (num_a + 2) + [1] * (num_b + 1), random_next, positions, labels
            )
            settings = reference.make_flags(
                max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions
            )
            identity = _Identity()
            expected = reference.to_example(instance, identity, settings)
            got = encoder.encode(ids, num_a, num_b, positions, labels, random_next)
            assert got == expected.SerializeToString(deterministic=True)


class _Identity(dict):
    def __missing__(self, key):
        return key


def test_training_instances_api_round_trips_through_writer(cpd, corpus, tmp_path):
    import tokenization

    tokenizer = tokenization.FullTokenizer(VOCAB_UNCASED, do_lower_case=True)
    instances = cpd.create_training_instances(
        corpus[:1], tokenizer, 64, 2, 0.1, 0.15, 10, random.Random(9), do_whole_word_mask=False
    )
    out = tmp_path / "api.tfrecord"
    cpd.write_instance_to_example_files(instances, tokenizer, 64, 10, [str(out)])
    expected = reference.serialized_examples(
        corpus[:1],
        VOCAB_UNCASED,
        reference.make_flags(
            max_seq_length=64, max_predictions_per_seq=10, random_seed=9, dupe_factor=2
        ),
    )[0]
    assert read_records(out) == expected
    assert "is_random_next: " in str(instances[0])


# ---------------------------------------------------------------------------
# Bad input: one line naming the culprit, exit code 1, no file left behind.


def _listing(directory):
    return sorted(os.listdir(directory))


@pytest.mark.slow
def test_missing_vocab_file_is_a_one_line_error(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = run_subprocess(
        [
            f"--input_file={SAMPLE_TEXT}",
            f"--output_file={out / 'x.tfrecord'}",
            f"--vocab_file={tmp_path / 'nope.txt'}",
        ]
    )
    missing = tmp_path / "nope.txt"
    assert error_line(result) == f"ERROR: --vocab_file: no such file: {missing}"
    assert _listing(out) == []


@pytest.mark.slow
def test_corpus_without_text_is_a_one_line_error(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n   \n\t\n\n")
    out = tmp_path / "out"
    out.mkdir()
    result = run_subprocess(
        [
            f"--input_file={blank}",
            f"--output_file={out / 'x.tfrecord'}",
            f"--vocab_file={VOCAB_UNCASED}",
        ]
    )
    assert "--input_file: no text in" in error_line(result)
    assert _listing(out) == []


def _bad_vocab(tmp_path):
    path = tmp_path / "vocab_no_mask.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
    return path


@pytest.mark.parametrize(
    "case, overrides, expected",
    [
        ("missing input", {"input_file": "{tmp}/absent.txt"}, "--input_file: no such file: "),
        (
            "glob matches nothing",
            {"input_file": "{tmp}/none-*.txt"},
            "--input_file: no file matches",
        ),
        ("vocab lacks [MASK]", {"vocab_file": "BAD_VOCAB"}, "--vocab_file: "),
        (
            "output directory missing",
            {"output_file": "{tmp}/no/dir/x.tfrecord"},
            "--output_file: no such directory",
        ),
        ("max_seq_length too small", {"max_seq_length": "4"}, "--max_seq_length=4"),
        ("masked_lm_prob zero", {"masked_lm_prob": "0"}, "--masked_lm_prob=0.0"),
        ("masked_lm_prob above one", {"masked_lm_prob": "1.5"}, "--masked_lm_prob=1.5"),
        ("dupe_factor zero", {"dupe_factor": "0"}, "--dupe_factor must be positive, got 0"),
        (
            "no predictions",
            {"max_predictions_per_seq": "0"},
            "--max_predictions_per_seq must be pos",
        ),
        ("short_seq_prob negative", {"short_seq_prob": "-0.1"}, "--short_seq_prob=-0.1"),
        ("no workers", {"num_workers": "0"}, "--num_workers must be positive, got 0"),
        ("input not UTF-8", {"input_file": "LATIN1"}, "line 2 is not UTF-8"),
    ],
)
def test_bad_input_is_a_one_line_error(cpd, tmp_path, capsys, case, overrides, expected):
    work = tmp_path / "work"
    work.mkdir()
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"fine line\ncaf\xe9 au lait\n")
    settings = {
        "input_file": SAMPLE_TEXT,
        "output_file": str(work / "x.tfrecord"),
        "vocab_file": VOCAB_UNCASED,
    }
    for name, value in overrides.items():
        value = value.replace("{tmp}", str(tmp_path))
        value = {"BAD_VOCAB": str(_bad_vocab(tmp_path)), "LATIN1": str(latin1)}.get(value, value)
        settings[name] = value
    code, err = run_in_process(cpd, flag_args(settings), capsys)
    assert code == 1, case
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ERROR: ")
    assert expected in lines[0]
    if case == "vocab lacks [MASK]":
        assert "lacks [MASK]" in lines[0]
    assert _listing(work) == []
