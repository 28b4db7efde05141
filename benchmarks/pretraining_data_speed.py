"""Times create_pretraining_data.py against a plain implementation of the same recipe.

Both run as child processes on the same corpus, vocabulary and flags:
tests/support/reference_pretraining_data.py (the pre-training data recipe written out plainly:
character-by-character tokenization, string tokens, one protobuf Example
per instance, every instance held until the final shuffle - the 2018
code's approach) and create_pretraining_data.py. Their output files must
be byte-identical. For each run the script reports wall time, CPU time
(user + system, child processes included) and peak resident memory of the
process (from os.wait4), then the reference/ours ratios. Both sides pay for
importing TensorFlow.

--make_corpus writes a corpus of --corpus_mb MB first, from English text
found on this machine (the golden sample text, demo_data/corpus, the
common licence texts and the pydoc topics of this Python), one sentence a
line, a blank line between documents, repeated in a shuffled order until
the size is reached. Generated corpora are not meant to be committed.

    .venv/bin/python benchmarks/pretraining_data_speed.py \\
        --make_corpus=/tmp/corpus.txt --corpus_mb=5 --dupe_factor=5
"""

import glob
import os
import random
import re
import subprocess
import sys
import tempfile
import time

from absl import app, flags

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DATA = os.path.join(_REPO, "tests", "data")

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Corpus to use (comma-separated files).")
flags.DEFINE_string("make_corpus", None, "Write a corpus here first and use it.")
flags.DEFINE_float("corpus_mb", 5.0, "Size of the corpus --make_corpus writes, in MB.")
flags.DEFINE_string(
    "vocab_file", os.path.join(_DATA, "vocab_uncased.txt"), "WordPiece vocabulary."
)
flags.DEFINE_integer("dupe_factor", 5, "Passes over the corpus, as in create_pretraining_data.")
flags.DEFINE_integer("max_seq_length", 128, "As in create_pretraining_data.")
flags.DEFINE_bool("do_whole_word_mask", False, "As in create_pretraining_data.")
flags.DEFINE_integer("num_workers", None, "Passed to create_pretraining_data (default: its own).")
flags.DEFINE_string("work_dir", None, "Where outputs go (default: a temporary directory).")


def _sentences(text):
    text = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s) > 1]


def _source_documents():
    """Lists of sentences from English prose available on this machine."""
    documents = []
    plain = [os.path.join(_DATA, "golden", "pretraining", "sample_text.txt")]
    plain += sorted(glob.glob(os.path.join(_REPO, "demo_data", "corpus", "*.txt")))
    for path in plain:
        with open(path, encoding="utf-8") as f:
            for block in re.split(r"\n\s*\n", f.read()):
                lines = [line.strip() for line in block.splitlines() if line.strip()]
                if lines:
                    documents.append(lines)
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="ignore") as f:
                for block in re.split(r"\n\s*\n", f.read()):
                    sentences = _sentences(block)
                    if len(sentences) >= 2:
                        documents.append(sentences)
    try:
        import pydoc_data.topics as topics

        for key in sorted(topics.topics):
            sentences = _sentences(topics.topics[key])
            for start in range(0, len(sentences), 8):
                if len(sentences[start : start + 8]) >= 2:
                    documents.append(sentences[start : start + 8])
    except ImportError:
        pass
    return documents


def make_corpus(path, megabytes):
    documents = _source_documents()
    rng = random.Random(0)
    target = int(megabytes * 1e6)
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            rng.shuffle(documents)
            for doc in documents:
                block = "\n".join(doc) + "\n\n"
                f.write(block)
                size += len(block.encode("utf-8"))
                if size >= target:
                    break
    return len(documents)


def _run(args):
    """(wall seconds, CPU seconds, peak RSS in MB, stderr) of one child process."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, *args], stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    if process.returncode != 0:
        sys.exit(f"{args[0]} failed:\n{text[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def main(argv):
    del argv
    if FLAGS.make_corpus:
        count = make_corpus(FLAGS.make_corpus, FLAGS.corpus_mb)
        print(f"wrote {FLAGS.make_corpus} from {count} source documents")
        corpus = FLAGS.make_corpus
    elif FLAGS.input_file:
        corpus = FLAGS.input_file
    else:
        sys.exit("pass --input_file or --make_corpus")
    megabytes = sum(os.path.getsize(p) for p in corpus.split(",")) / 1e6
    work = FLAGS.work_dir or tempfile.mkdtemp(prefix="pretraining_data_speed_")
    common = [
        f"--input_file={corpus}",
        f"--vocab_file={FLAGS.vocab_file}",
        f"--dupe_factor={FLAGS.dupe_factor}",
        f"--max_seq_length={FLAGS.max_seq_length}",
        f"--do_whole_word_mask={FLAGS.do_whole_word_mask}",
    ]
    reference_out = os.path.join(work, "reference.tfrecord")
    ours_out = os.path.join(work, "ours.tfrecord")
    ours_args = [os.path.join(_REPO, "create_pretraining_data.py"), f"--output_file={ours_out}"]
    if FLAGS.num_workers:
        ours_args.append(f"--num_workers={FLAGS.num_workers}")

    print(f"corpus: {corpus} ({megabytes:.2f} MB), dupe_factor {FLAGS.dupe_factor}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ref = _run(
        [
            os.path.join(_REPO, "tests", "support", "reference_pretraining_data.py"),
            f"--output_file={reference_out}",
            "--tokenizer=plain",
            *common,
        ]
    )
    ours = _run([*ours_args, *common])
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with open(reference_out, "rb") as a, open(ours_out, "rb") as b:
        identical = a.read() == b.read()
    instances = re.search(r"Wrote (\d+) total instances", ours[3])
    print(f"instances: {instances.group(1) if instances else '?'}")
    print(f"{'':12}{'wall s':>10}{'CPU s':>10}{'peak RSS MB':>14}")
    for name, (wall, cpu, rss, _) in (("reference", ref), ("ours", ours)):
        print(f"{name:12}{wall:10.2f}{cpu:10.2f}{rss:14.0f}")
    print(
        f"ratio reference/ours: wall {ref[0] / ours[0]:.2f}x, CPU {ref[1] / ours[1]:.2f}x, "
        f"peak RSS {ref[2] / ours[2]:.2f}x"
    )
    print(f"outputs identical: {identical}")
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    app.run(main)
