"""The one reader of vocabulary files (vocab.txt) for the package's code.

A vocabulary is a UTF-8 text file with one token a line, its line number
its id. The lines are split as tokenization.load_vocab splits them (on
"\\n" only, the newline ending the last line opening no new line), so a
check made on these lines speaks of the ids the scripts will use.
tokenization.py keeps a reader of its own, to be copyable alone.
"""

from . import fileio
from .errors import UsageError


def read_lines(path, flag=None):
    """The lines of a vocabulary file (local, or gs://... through TensorFlow), in order,
    without their line ends ("\\n", and a "\\r" before it).

    Raises:
      UsageError: the file is not UTF-8 text, naming the flag, the file and the line.
    """
    with fileio.open_binary(path) as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        where = f"{flag}: " if flag else ""
        line_number = data.count(b"\n", 0, e.start) + 1
        raise UsageError(f"{where}{path}: line {line_number} is not UTF-8 text") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline ending the last line, or an empty file
    return [line.rstrip("\r") for line in lines]


def tokens(lines):
    """The tokens of a vocabulary's lines: each line without the whitespace around it, as
    tokenization.load_vocab keeps them."""
    return [line.strip() for line in lines]
