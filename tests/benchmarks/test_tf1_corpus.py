"""The parts of benchmarks/tf1_corpus_lib/ that run without the corpus: what counts as the same
output, what counts as a file TF 1.15 wrote and run_tf1.py did not, and the harness's run of
a step (a tiny script of its own, on this Python, both sides)."""

import os
import sys

from helpers import REPO

BENCHMARKS = os.path.join(REPO, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

from tf1_corpus_lib import compare, runner  # noqa: E402


def test_numbers_agree_to_round_off_or_the_last_printed_digit():
    same = compare.compare_token_lists
    assert same(["acc", "80.11", "f1", "61.22"], ["acc", "80.11", "f1", "61.22"]).ok
    assert same(["acc", "80.11"], ["acc", "80.12"]).ok  # one unit of the last printed digit
    assert same(["loss", "2.3456789"], ["loss", "2.3456791"]).ok  # float32 round-off
    assert not same(["acc", "80.11"], ["acc", "80.13"]).ok
    assert not same(["loss", "0.123456"], ["loss", "0.123496"]).ok
    assert not same(["acc", "80.11"], ["f1", "80.11"]).ok
    assert not same(["acc", "80.11"], ["acc", "80.11", "extra"]).ok


def test_a_file_tf115_wrote_and_run_tf1_did_not_is_missing_whatever_its_time_stamp():
    tf115 = [
        "out/events.out.tfevents.1795835800.hostA",
        "runs/1795835067/checkpoints/model-6.index",
        "out/graph.pbtxt",
        "out/model.ckpt-0.index",
    ]
    run_tf1 = [
        "out/events.out.tfevents.1795839999.hostB.123.0.v2",
        "runs/1795839001/checkpoints/model-6.index",
        "out/model.ckpt-4.index",
    ]
    assert compare.missing_files(tf115, run_tf1) == ["out/graph.pbtxt", "out/model.ckpt-0.index"]
    # A run stopped by Ctrl-C saves at whichever step the signal came.
    assert compare.missing_files(tf115, run_tf1, any_step=True) == ["out/graph.pbtxt"]


def test_a_profile_empty_events_file_is_a_file_of_its_own():
    """TF 1.15's Keras TensorBoard callback wrote `events...profile-empty` beside its events
    file: a run that wrote only the events file wrote fewer files."""
    tf115 = [
        "out/logs/events.out.tfevents.1795939824.vm",
        "out/logs/events.out.tfevents.1795939829.vm.profile-empty",
    ]
    assert compare.missing_files(tf115, ["out/logs/events.out.tfevents.1795939923.vm"]) == [
        "out/logs/events.out.tfevents.profile-empty"
    ]
    ours = [
        "out/logs/events.out.tfevents.1795939923.vmB",
        "out/logs/events.out.tfevents.1.b.profile-empty",
    ]
    assert compare.missing_files(tf115, ours) == []


def test_a_checkpoint_in_other_shards_and_a_profile_in_another_format_are_the_same_files():
    tf115 = [
        "out/keras_export/variables/variables.data-00000-of-00002",
        "out/keras_export/variables/variables.data-00001-of-00002",
        "out/keras_tensorboard/plugins/profile/2026-11-29_08-01-23/local.trace",
        "out/model.ckpt-4.data-00000-of-00001",
    ]
    run_tf1 = [
        "out/keras_export/variables/variables.data-00000-of-00001",
        "out/keras_tensorboard/plugins/profile/2026_11_29_08_01_41/vm.xplane.pb",
    ]
    assert compare.missing_files(tf115, run_tf1) == ["out/model.ckpt-4.data-#"]
    assert compare.missing_files(["out/plugins/profile/t/local.trace"], []) == [
        "out/plugins/profile/#/trace"
    ]


def test_a_step_records_what_it_wrote_and_a_readme_path_is_found_at_run_time(tmp_path):
    tree = tmp_path / "tree"
    (tree / "runs" / "1795835067").mkdir(parents=True)
    (tree / "write.py").write_text(
        "import sys\nopen(sys.argv[1] + '/out.txt', 'w').write(input() + '\\n')\n"
    )
    step = runner.Step(["write.py", "{glob:runs/1*}"], stdin="typed\n")
    pythons = {"tf115": sys.executable, "run_tf1": sys.executable}
    done = runner.run_step(step, "tf115", str(tree), pythons, str(tmp_path / "log"))
    assert done.returncode == 0, done.output
    assert list(done.written) == [os.path.join("runs", "1795835067", "out.txt")]
    assert (tree / "runs" / "1795835067" / "out.txt").read_text() == "typed\n"
    line = "ERROR: main.py:3: one line"
    assert runner.first_error_line(f"x\n{line}\nTraceback\n") == line
