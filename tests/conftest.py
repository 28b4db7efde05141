"""Process set-up for every test: TensorFlow quiet and on the CPU, the repository importable;
the longest test files collected first.

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

# The files that take longest, longest first (measured on the 2-core machine). They
# are collected first, so that when `make test` spreads files over processes the
# long ones start at once and no process is left alone with one at the end.
LONG_FILES = [
    "test_bad_input.py",
    "test_dynamic_padding.py",
    "test_runner.py",
    "test_preemption.py",
    "test_run_classifier_with_tfhub.py",
    "test_demo.py",
    "test_eval_during_training.py",
    "test_custom_task.py",
    "test_xla.py",
    "test_run_pretraining.py",
    "test_mixed_precision.py",
    "test_gradient_accumulation.py",
    "test_run_classifier.py",
    "test_run_squad.py",
    "test_tfhub_encoder.py",
    "test_lamb.py",
    "test_helpers.py",
    "test_plumbing.py",
    "test_compat_check.py",
    "test_tf1.py",
    "test_peer_speed.py",
    "test_package_install.py",
]


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.path)), len(rank)))
