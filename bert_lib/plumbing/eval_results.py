"""eval_results.txt: "key = value" lines sorted by key, in one number format.

Integers print as integers and every other number as a float32 prints
(0.75, 0.1, 0.31428573), as the original's numpy results did, so a file
written here reads the same as one the original wrote.
"""

import numpy as np
from absl import logging

from . import atomic_write


def format_value(value):
    """One result value as eval_results.txt prints it."""
    if isinstance(value, (bool, int, np.integer)):
        return str(int(value))
    return str(np.float32(value))


def format_eval_results(result):
    """The text of eval_results.txt for `result` ({name: number})."""
    return "".join(f"{key} = {format_value(result[key])}\n" for key in sorted(result))


def write_eval_results(path, result):
    """Logs the results and writes them to `path`, all-or-nothing."""
    text = format_eval_results(result)
    logging.info("***** Eval results *****")
    for line in text.splitlines():
        logging.info("  %s", line)
    atomic_write.write_text(path, text)
