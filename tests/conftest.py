"""Process set-up for every test (support/process_setup.py: TensorFlow quiet and on the
CPU, the repository and the tests' support code importable); the files with the most slow
tests collected first.

The tests are grouped by what they test (model/, engine/, task_data/, export/,
scripts/, tf1/, plumbing/, project/, benchmarks/); the code they share lives in
support/ (`from helpers import run_script`).
"""

import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))

import process_setup  # noqa: E402, F401


def pytest_collection_modifyitems(items):
    """Orders files by how many of their tests are marked slow (processes started, models
    trained), most first, keeping each file's own order. When `make test` spreads files
    over processes, the long ones then start at once and no process is left alone with
    one at the end."""
    slow = collections.Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])
