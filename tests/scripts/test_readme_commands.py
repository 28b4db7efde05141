"""Every `python <script>.py --flag=...` command shown in README.md uses real flags.

Commands are taken from the README's code blocks (fenced or indented), with
backslash continuations joined; each flag must be defined by the script it is
passed to (its own flags or the shared ones it imports, e.g. runner's).
"""

import os
import re
import shlex

import pytest
from absl import flags
from helpers import REPO, SCRIPTS, load_script

README = os.path.join(REPO, "README.md")


def code_blocks(text):
    """The README's code blocks: fenced ``` blocks and 4-space indented blocks."""
    blocks, current, fenced = [], [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if fenced:
                blocks.append("\n".join(current))
                current = []
            fenced = not fenced
            continue
        if fenced:
            current.append(line)
        elif line.startswith("    ") and line.strip():
            current.append(line[4:])
        elif current and not line.strip():
            current.append("")
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def commands(text):
    """(script name, [flag names]) for each python <script>.py command in `text`."""
    found = []
    for block in code_blocks(text):
        joined = re.sub(r"\\\n", " ", block)
        for line in joined.splitlines():
            match = re.search(r"\bpython3?\s+(\S+)\.py\b(.*)", line)
            if not match or os.path.basename(match.group(1)) not in SCRIPTS:
                continue
            words = shlex.split(match.group(2).split("#")[0].split("|")[0], posix=True)
            names = [w[2:].split("=", 1)[0] for w in words if w.startswith("--")]
            found.append((os.path.basename(match.group(1)), names, line.strip()))
    return found


def test_the_parser_finds_flags():
    text = """
Some prose.

```shell
python run_squad.py \\
  --vocab_file=$BERT_BASE_DIR/vocab.txt \\
  --do_train=True --nodo_lower_case
```

    python create_vocab.py --input_file='a/*.txt' --output_file=v.txt  # comment --x
"""
    assert [(s, n) for s, n, _ in commands(text)] == [
        ("run_squad", ["vocab_file", "do_train", "nodo_lower_case"]),
        ("create_vocab", ["input_file", "output_file"]),
    ]


with open(README, encoding="utf-8") as _f:
    README_COMMANDS = commands(_f.read())


def test_readme_shows_every_script():
    shown = {script for script, _, _ in README_COMMANDS}
    assert shown == set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_readme_flags_exist(script):
    load_script(script)
    known = set(flags.FLAGS)
    for _, names, line in (c for c in README_COMMANDS if c[0] == script):
        for name in names:
            if name not in known and name.startswith("no") and name[2:] in known:
                assert flags.FLAGS[name[2:]].boolean, f"--{name} is not boolean: {line}"
                continue
            assert name in known, f"{script}.py has no flag --{name} (README: {line[:80]})"
