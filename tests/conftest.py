"""Shared test set-up: quiet TensorFlow, the repo on sys.path, script loading."""

import importlib
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data")
GOLDEN = os.path.join(DATA, "golden")
VOCAB_UNCASED = os.path.join(DATA, "vocab_uncased.txt")

if REPO not in sys.path:
    sys.path.insert(0, REPO)

# Top-level scripts that define absl flags at import time, as the original does.
_SCRIPTS = (
    "create_pretraining_data",
    "create_vocab",
    "run_pretraining",
    "run_classifier",
    "run_squad",
    "extract_features",
    "run_ner",
)


def load_script(name):
    """Imports (or re-imports) one script so that its flags are the live ones.

    Several scripts define flags of the same name (bert_config_file,
    max_seq_length, ...), so two of them cannot be imported side by side in
    one process. This drops the flags the other scripts registered and
    (re)imports the one asked for. Flags of shared modules stay.
    """
    from absl import flags

    fv = flags.FLAGS
    for flag_name in list(fv):
        owner = fv.find_module_defining_flag(flag_name)
        if owner in _SCRIPTS or owner == name:
            delattr(fv, flag_name)
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)
