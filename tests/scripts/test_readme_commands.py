"""Every `python <script>.py --flag=...` command shown in README.md and docs/*.md uses real flags.

Commands are taken from the pages' code blocks (fenced or indented), with
backslash continuations joined; each flag must be defined by the script it is
passed to (its own flags or the shared ones it takes from bert_lib/script_flags.py).
README shows every script at least once.
"""

import glob
import os
import re
import shlex

import pytest
from absl import flags
from helpers import REPO, SCRIPTS, load_script

README = os.path.join(REPO, "README.md")
DOCS = sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))


def code_blocks(text):
    """A page's code blocks: fenced ``` blocks and 4-space indented blocks."""
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


def page_commands(path):
    """(script, [flag names], line, page) for each command shown on the page at `path`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    page = os.path.relpath(path, REPO)
    return [(script, names, line, page) for script, names, line in commands(text)]


README_COMMANDS = page_commands(README)
COMMANDS = README_COMMANDS + [c for path in DOCS for c in page_commands(path)]


def test_the_docs_are_read():
    """The pages are there and hold commands, so an empty glob cannot pass unnoticed."""
    assert DOCS
    assert any(page.startswith("docs") for *_, page in COMMANDS)


def test_readme_shows_every_script():
    shown = {script for script, *_ in README_COMMANDS}
    assert shown == set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_flags_shown_exist(script):
    load_script(script)
    known = set(flags.FLAGS)
    for _, names, line, page in (c for c in COMMANDS if c[0] == script):
        for name in names:
            if name not in known and name.startswith("no") and name[2:] in known:
                assert flags.FLAGS[name[2:]].boolean, f"--{name} is not boolean: {page}: {line}"
                continue
            assert name in known, f"{script}.py has no flag --{name} ({page}: {line[:80]})"
