"""Side-by-side check of this project against the original 2018 BERT code.

`benchmarks/compat_check.py` is the command; the pieces live here by role:

  common       paths, the tiny model config, float32 helpers (Python 3.7 too)
  fixtures     the inputs both codes are given (Python 3.7 too)
  worker       in-process probes of one implementation, started under either
               interpreter: TensorFlow 1.15 for the original, this project's
               for ours (Python 3.7 too)
  comparators  how two outputs are compared (this project's interpreter)
  launcher     starts the scripts and workers of both codes, logs each command
  checks       one function per check: run both codes, compare
  orchestrator the command line

Everything that may run under the original's interpreter uses only the
standard library at import time and Python 3.7 syntax.
"""
