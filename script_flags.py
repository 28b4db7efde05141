"""Lets several scripts be imported into one process: `from bert import run_classifier, run_squad`.

The scripts define flags of the same names (max_seq_length, bert_config_file,
vocab_file, ...), as the original's did, and absl refuses a second definition
of a name unless one of the two allows overriding. Each script calls
`allow_redefinition(__name__)` after its last flag definition, so a script
imported later redefines the shared names instead of failing: in one process
the last imported script's defaults and help texts are the live ones. A
script run on its own (`python run_classifier.py`, `python -m
bert.run_classifier`) has exactly its own flags and defaults.
"""

from absl import flags


def allow_redefinition(module_name):
    """Marks every flag module `module_name` has defined so far as overridable."""
    for flag in flags.FLAGS.get_flags_for_module(module_name):
        flag.allow_override = True
