"""Process set-up for every test: TensorFlow quiet and on the CPU, the repository importable.

The helpers tests share live in helpers.py (`from helpers import run_script`).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
for path in (TESTS, REPO):
    if path not in sys.path:
        sys.path.insert(0, path)
