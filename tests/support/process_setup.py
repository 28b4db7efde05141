"""What every test process sets up first: TensorFlow quiet and on the CPU, the repository
and this folder importable.

conftest.py imports it for pytest's processes; the worker scripts in this folder, which
tests start as processes of their own, import it before anything else.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

SUPPORT = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(SUPPORT))
for path in (SUPPORT, REPO):
    if path not in sys.path:
        sys.path.insert(0, path)
