"""BERT's modules as the package `bert`: `from bert import modeling, tokenization, run_classifier`.

The repository is flat: each module here is also a file run or imported by
its own name from a clone (`python run_classifier.py`, `import modeling`).
Installed (`pip install .`), the same files form this package; nothing is
imported until asked for, so importing `bert` defines no flags.
"""
