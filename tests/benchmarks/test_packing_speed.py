"""The parts of benchmarks/packing_speed.py that need neither TensorFlow 1.15 nor a timed run:
its corpora, the instance counts it reads from our progress lines, its table."""

import os
import sys

from helpers import REPO

BENCHMARKS = os.path.join(REPO, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import packing_speed  # noqa: E402


def _documents(path):
    with open(path, encoding="utf-8") as f:
        return [block.splitlines() for block in f.read().split("\n\n") if block.strip()]


def test_short_documents_are_a_few_sentences_and_long_ones_many(tmp_path):
    packing_speed.write_corpus("short", tmp_path / "short.txt")
    packing_speed.write_corpus("long", tmp_path / "long.txt")
    short, long = _documents(tmp_path / "short.txt"), _documents(tmp_path / "long.txt")
    assert len(short) > 300 and all(len(d) >= 2 for d in short)
    mean = sum(map(len, short)) / len(short)
    assert mean < 10 < sum(map(len, long)) / len(long)


def test_instances_trained_is_the_last_count_of_the_progress_lines(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "Training: 1/4 steps, loss = 11, 16 examples\n"
        "Training: 2/4 steps (3/s), loss = 10.9, 72.7 examples/s, 36 examples, 1s elapsed\n"
        "Training: 4/4 steps (3/s), loss = 10.8, 70.1 examples/s, 1,234 examples, 2s elapsed\n",
        encoding="utf-8",
    )
    assert packing_speed._instances_trained(str(log)) == 1234


def test_report_gives_rates_against_the_original_and_unpacked_and_metric_means():
    def run(rate, accuracy):
        return {
            "returncode": 0,
            "instances_per_wall_second": rate,
            "eval": dict.fromkeys(packing_speed.METRICS, accuracy),
            "log": "x.log",
        }

    cases = {
        "short128": {
            "corpus": "short",
            "seq": 128,
            "shares": {"padding": 0.41, "packed_padding": 0.03},
            "results": {
                "original": [run(10.0, 0.5)],
                "unpacked": [run(15.0, 0.5)],
                "packed": [run(24.0, 0.4), run(26.0, 0.6)],
            },
        }
    }
    lines = packing_speed.report(cases).splitlines()
    assert lines[2].startswith("| short | 128 | 41% / 3% | original | 10.0 |  |  | 0.5000")
    assert lines[3].startswith("| short | 128 | 41% / 3% | unpacked | 15.0 | 1.50 |  | 0.5000")
    assert lines[4].startswith("| short | 128 | 41% / 3% | packed | 25.0 | 2.50 | 1.67 | 0.5000")
