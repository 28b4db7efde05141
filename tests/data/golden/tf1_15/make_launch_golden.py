"""Makes launch.json: what TensorFlow 1.15.5 with numpy 1.18.5 gave for the scripts of
tests/data/tf1_scripts/launch, run the way tests/tf1/test_tf1_launch.py runs them through
run_tf1.py (see tests/data/README.md).

    python tests/data/golden/tf1_15/make_launch_golden.py --tf115_python=PY37

Each run's last line of output is the JSON its script printed. Keeps to Python 3.7.
"""

import argparse
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
LAUNCH = os.path.join(REPO, "tests", "data", "tf1_scripts", "launch")

# name -> the command line after the interpreter, run from LAUNCH.
RUNS = {
    "flags_app": ["flags_app.py", "--steps=3", "--extra_flag=1", "--stepz=2", "pos", "--do_train"],
    "module_train": ["-m", "tf1pkg.train", "--units=2", "--readme_flag=x", "tail"],
    "module_package": ["-m", "tf1pkg", "a", "--b=1"],
    "numpy_cases": ["numpy_cases.py"],
    "collections_cases": ["collections_cases.py"],
    "old_protobuf_cases": ["old_protobuf_cases.py"],
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tf115_python", required=True)
    args = parser.parse_args()
    golden = {}
    for name, command in sorted(RUNS.items()):
        output = subprocess.run(
            [args.tf115_python] + command, cwd=LAUNCH, check=True, stdout=subprocess.PIPE
        ).stdout.decode("utf-8")
        golden[name] = json.loads(output.strip().splitlines()[-1])
    with open(os.path.join(HERE, "launch.json"), "w") as f:
        json.dump({"runs": RUNS, "outputs": golden}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
