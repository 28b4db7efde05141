"""tensorflow.examples.tutorials.mnist.input_data through run_tf1.py against TF 1.15's
(tests/data/golden/tf1_15/apis/mnist_input_data, made by
tests/data/tf1_scripts/mnist_input_data/run_input_data.py on TF 1.15, on tiny MNIST files
of the idx format the script writes)."""

import os

import pytest
from helpers import DATA, GOLDEN, REPO, run_script, run_tf1_for_json

SCRIPT = os.path.join(DATA, "tf1_scripts", "mnist_input_data", "run_input_data.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "mnist_input_data", "results.json")


@pytest.mark.slow
def test_read_data_sets_gives_tf115s_arrays_batches_and_seeding(tmp_path):
    """The same printed lines, splits (validation first), shapes, dtypes and values (float32
    times 1/255, float64 one-hot rows, uint8 unreshaped), the same batches across epochs
    from the same seeds (read_data_sets' seed, tf.set_random_seed), the same numbers drawn
    from numpy's global generator after it, the same refusals: TF 1.15's results.json
    exactly."""
    got, want = run_tf1_for_json(SCRIPT, tmp_path, WANT)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_a_missing_file_that_cannot_be_downloaded_is_one_error_line_naming_it(tmp_path):
    """TF 1.15 downloads a missing file from source_url; where that fails (here a port
    nothing listens on), the run ends with one ERROR line naming the file, exit 1."""
    data = tmp_path / "MNIST_data"
    script = tmp_path / "tutorial.py"
    script.write_text(
        "from tensorflow.examples.tutorials.mnist import input_data\n"
        f"mnist = input_data.read_data_sets({str(data)!r}, one_hot=True,\n"
        "                                  source_url='http://127.0.0.1:9/')\n"
    )
    result = run_script("run_tf1.py", str(script), cwd=REPO)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "tutorial.py:2" in lines[0]
    assert str(data / "train-images-idx3-ubyte.gz") in lines[0]
    assert "Traceback" not in result.stderr
    assert not (data / "train-images-idx3-ubyte.gz").exists()
