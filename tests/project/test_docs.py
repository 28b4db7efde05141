"""The documentation holds together: links resolve, README stays an overview, nothing
points outside the repository.

The pages are README.md, BENCHMARKS.md, COMPATIBILITY.md and docs/*.md. In each:

- every relative link `[text](path#anchor)` names a file inside the repository, and its
  anchor a heading of that file as GitHub names it (see `anchor`);
- no link is an absolute path, and no `../` path climbs out of the repository;
- a path in backticks that starts with one of the repository's folders
  (`bert_lib/engine/estimator.py`, `tests/support/helpers.py`) exists, so that a file
  that moves cannot leave its old name behind on a page;
- a section named in quotes (`"Jobs of real size" below`, `see "Differences"`,
  `BENCHMARKS.md, "The speed"`) is the start of a heading or of a paragraph's bold
  lead-in, above or below as the page says, or in a page it names, so that a renamed
  section cannot leave its old title quoted (see `section_reference_problems`).

Besides: README.md is at most README_MAX_LINES lines and links every docs page, and every
docs page the code names (an error message pointing to docs/tf1.md, say) exists. The
checks are functions of a directory; the self-tests run them on a small tree with one
mistake of each kind.
"""

import glob
import os
import re

import pytest
from helpers import REPO

README_MAX_LINES = 600
# The repository's own folders: a path in backticks starting with one of these must exist.
FOLDERS = ("bert_lib", "tests", "benchmarks", "docs", "demo_data", ".ci")
# Not the project's code: tools' directories, the demo's output, users' code the tests run.
NOT_CODE = (".git", ".venv", "output", os.path.join("tests", "data"))

FENCE = re.compile(r"^ {0,3}```.*?^ {0,3}```[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
CLIMB = re.compile(r"(?<![\w./-])((?:\.\./)+[\w./-]*)")


def pages(root):
    """The documentation pages under `root`, as paths relative to it."""
    names = ["README.md", "BENCHMARKS.md", "COMPATIBILITY.md"]
    names += sorted(
        os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md"))
    )
    return [name for name in names if os.path.isfile(os.path.join(root, name))]


def code_files(root):
    """The project's code under `root`: Python files, shell scripts, the Makefile."""
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [
            d for d in subdirs if os.path.relpath(os.path.join(directory, d), root) not in NOT_CODE
        ]
        for name in files:
            if name.endswith((".py", ".sh")) or name == "Makefile":
                yield os.path.join(directory, name)


def _read(root, name):
    with open(os.path.join(root, name), encoding="utf-8") as f:
        return f.read()


def prose(text):
    """`text` without its fenced code blocks (their lines become empty)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def anchor(heading_text):
    """The anchor GitHub gives a heading: its text as shown (code spans, links and emphasis
    reduced to their words), lower-cased, every character but letters, digits, `_`, `-`
    and spaces dropped, each space made a `-`."""
    text = LINK.sub(lambda m: m.group(1), heading_text)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text):
    """The anchors of every heading in a page; a repeated one gets -1, -2, ... as on
    GitHub."""
    seen, found = {}, set()
    for match in HEADING.finditer(prose(text)):
        name = anchor(match.group(2))
        if name in seen:
            seen[name] += 1
            name = f"{name}-{seen[name]}"
        else:
            seen[name] = 0
        found.add(name)
    return found


def _inside(root, path):
    return os.path.commonpath([os.path.abspath(root), os.path.abspath(path)]) == os.path.abspath(
        root
    )


def link_problems(root, name):
    """What is wrong with the links of page `name` under `root`: one line each."""
    text = prose(_read(root, name))
    here = os.path.dirname(os.path.join(root, name))
    problems = []
    for match in LINK.finditer(CODE_SPAN.sub("", text)):
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        path, _, fragment = target.partition("#")
        if path.startswith("/"):
            problems.append(f"{name}: link {target} is an absolute path")
            continue
        full = os.path.normpath(os.path.join(here, path)) if path else os.path.join(root, name)
        if not _inside(root, full):
            problems.append(f"{name}: link {target} leads out of the repository")
        elif not os.path.exists(full):
            problems.append(f"{name}: link {target}: no such file")
        elif fragment and fragment not in anchors(_read(root, os.path.relpath(full, root))):
            problems.append(f"{name}: link {target}: no heading with that anchor")
    return problems


def path_problems(root, name):
    """Paths on page `name` that leave the repository (`../` past its root) or name a file of
    one of its folders that is not there."""
    text = _read(root, name)
    here = os.path.dirname(os.path.join(root, name))
    problems = []
    for match in CLIMB.finditer(text):
        path = match.group(1)
        path = path[:-1] if path.endswith(".") and not path.endswith("..") else path
        if not _inside(root, os.path.normpath(os.path.join(here, path))):
            problems.append(f"{name}: {path} is outside the repository")
    for match in CODE_SPAN.finditer(prose(text)):
        words = match.group(1).split()
        path = words[0] if words else ""
        if re.fullmatch(rf"(?:{'|'.join(map(re.escape, FOLDERS))})(?:/[\w.*/-]*)?", path):
            if not glob.glob(os.path.join(root, path)):
                problems.append(f"{name}: `{path}` does not exist")
    return problems


# A section named in quotes: `"Name" above|below`, `see|in|of "Name"`, `page.md, "Name"`.
QUOTED_SECTION = re.compile(
    r'"(?P<a>[^"]{3,100})"\s+(?P<where>above|below)\b'
    r'|\b(?:[Ss]ee|in|of)\s+"(?P<b>[^"]{3,100})"(?!\s+(?:above|below)\b)'
    r'|\.md(?:,|\'s)\s+"(?P<c>[^"]{3,100})"(?!\s+(?:above|below)\b)'
)
PAGE_NAME = re.compile(r"[\w./-]+\.md\b")
LEAD_IN = re.compile(r"^ {0,3}\*\*(.+?)\*\*", re.M | re.S)


def _words(text):
    """`text` as a reader matches a title: no markup, one space between words, lower case."""
    text = LINK.sub(lambda m: m.group(1), text)
    return " ".join(text.replace("`", "").replace("*", "").split()).lower()


def titles(text):
    """Where each heading and each bold lead-in of a paragraph (`**The speed.** ...`)
    starts in `text`, with its words."""
    text = prose(text)
    found = [(m.start(), _words(m.group(2))) for m in HEADING.finditer(text)]
    found += [(m.start(), _words(m.group(1))) for m in LEAD_IN.finditer(text)]
    return found


def section_reference_problems(root, name):
    """Sections page `name` names in quotes ("Jobs of real size" below, see "Differences")
    that are the start of no heading or bold lead-in, of this page (in the direction said)
    or of a page it names or links."""
    text = prose(_read(root, name))
    here = os.path.dirname(os.path.join(root, name))
    others = set()
    for page in PAGE_NAME.findall(text):
        for base in (here, root):
            full = os.path.normpath(os.path.join(base, page))
            if os.path.isfile(full) and _inside(root, full) and full != os.path.join(root, name):
                others.add(os.path.relpath(full, root))
    elsewhere = [title for page in sorted(others) for _, title in titles(_read(root, page))]
    own = titles(_read(root, name))
    problems = []
    for match in QUOTED_SECTION.finditer(text):
        quoted = match.group("a") or match.group("b") or match.group("c")
        wanted, where = _words(quoted), match.group("where")
        if where:
            candidates = [
                title
                for start, title in own
                if (start < match.start() if where == "above" else start > match.end())
            ]
        else:
            candidates = [title for _, title in own] + elsewhere
        if not any(title.startswith(wanted) for title in candidates):
            said = f" {where}" if where else ""
            problems.append(f'{name}: "{" ".join(quoted.split())}"{said}: no such section')
    return problems


def test_every_link_resolves():
    problems = [p for name in pages(REPO) for p in link_problems(REPO, name)]
    assert not problems, "\n".join(problems)


def test_no_page_names_a_path_that_is_not_there_or_outside_the_repository():
    problems = [p for name in pages(REPO) for p in path_problems(REPO, name)]
    assert not problems, "\n".join(problems)


def test_every_section_named_in_quotes_exists():
    problems = [p for name in pages(REPO) for p in section_reference_problems(REPO, name)]
    assert not problems, "\n".join(problems)


def test_readme_is_an_overview():
    lines = _read(REPO, "README.md").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines"


def test_readme_links_every_docs_page():
    linked = {
        os.path.normpath(m.group(2).partition("#")[0])
        for m in LINK.finditer(prose(_read(REPO, "README.md")))
    }
    docs = [name for name in pages(REPO) if name.startswith("docs" + os.sep)]
    assert len(docs) >= 9  # one page per topic
    assert [name for name in docs if name not in linked] == []


def test_every_docs_page_the_code_names_exists():
    named = set()
    for path in code_files(REPO):
        if os.path.samefile(path, __file__):  # its self-tests name pages that do not exist
            continue
        with open(path, encoding="utf-8") as f:
            named.update((path, page) for page in re.findall(r"docs/[\w-]+\.md", f.read()))
    assert any(page == "docs/tf1.md" for _, page in named)  # the TF 1.x layer's errors
    missing = [f"{path}: {page}" for path, page in named if not os.path.isfile(REPO + "/" + page)]
    assert not missing, "\n".join(missing)


def test_the_folders_checked_exist():
    assert all(os.path.isdir(os.path.join(REPO, folder)) for folder in FOLDERS)


# ---------------------------------------------------------------------------
# The checks themselves, on a small tree


@pytest.mark.parametrize(
    "heading, expected",
    [
        ("Your own data (--task_name=custom)", "your-own-data---task_namecustom"),
        ("SQuAD 1.1 and 2.0 (run_squad.py)", "squad-11-and-20-run_squadpy"),
        (
            "The original's scripts through run_tf1.py (`--checks=tf1`)",
            "the-originals-scripts-through-run_tf1py---checkstf1",
        ),
        ("Against KerasHub and transformers + torch", "against-kerashub-and-transformers--torch"),
        ("See [the page](x.md) **now**", "see-the-page-now"),
    ],
)
def test_anchors_are_githubs(heading, expected):
    assert anchor(heading) == expected


def _tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(root)


GOOD = {
    "README.md": "# Title\n\nSee [a](docs/a.md#part-two), [b](#title) and "
    "[c](https://example.org/x.md).\n",
    "docs/a.md": "# A\n\n## Part two\n\n## Part two\n\n[back](../README.md#title), "
    "[twice](#part-two-1); `docs/a.md`\n\n```\n# not a heading\n[x](nowhere.md)\n```\n",
}


def test_a_sound_tree_passes(tmp_path):
    root = _tree(tmp_path, GOOD)
    assert pages(root) == ["README.md", os.path.join("docs", "a.md")]
    assert [p for name in pages(root) for p in link_problems(root, name)] == []
    assert [p for name in pages(root) for p in path_problems(root, name)] == []


def test_the_checks_catch_a_broken_link_of_each_kind(tmp_path):
    root = _tree(
        tmp_path / "repo",
        {
            "README.md": "# Title\n\n[gone](docs/gone.md), [anchor](docs/a.md#part-three), "
            "[self](#no-such), [abs](/abs/page.md), [out](../../outside/notes.md)\n",
            "docs/a.md": "# A\n\n## Part two\n\nSee `bert_lib/moved.py` and ../../x/notes.md.\n",
        },
    )
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "notes.md").write_text("# Outside\n")
    problems = link_problems(root, "README.md") + path_problems(root, "docs/a.md")
    assert problems == [
        "README.md: link docs/gone.md: no such file",
        "README.md: link docs/a.md#part-three: no heading with that anchor",
        "README.md: link #no-such: no heading with that anchor",
        "README.md: link /abs/page.md is an absolute path",
        "README.md: link ../../outside/notes.md leads out of the repository",
        "docs/a.md: ../../x/notes.md is outside the repository",
        "docs/a.md: `bert_lib/moved.py` does not exist",
    ]


def test_sections_named_in_quotes_are_found_where_the_page_says(tmp_path):
    root = _tree(
        tmp_path,
        {
            "README.md": '# Title\n\n## Part two (2026)\n\n**A lead-in.** As in "Part two"\n'
            'above and "A `lead-in`" above, "Later\npart" below; see "Elsewhere" and '
            '[docs/a.md, "Its part"](docs/a.md#its-part-and-more).\n\n## Later part\n',
            "docs/a.md": "# Elsewhere\n\n## Its part, and more\n",
        },
    )
    assert section_reference_problems(root, "README.md") == []


def test_the_section_check_catches_a_missing_section_and_the_wrong_direction(tmp_path):
    root = _tree(
        tmp_path,
        {
            "README.md": '# Title\n\n## Part two\n\nSee "Part three"; "Part two" below,\n'
            '"Later part" above; [BENCH.md, "bf16 that keeps\nthe model"](BENCH.md#bench).\n\n'
            '```\nsee "Not prose"\n```\n\n## Later part\n',
            "BENCH.md": "# Bench\n\n**The bias fault.** text\n",
        },
    )
    assert section_reference_problems(root, "README.md") == [
        'README.md: "Part three": no such section',
        'README.md: "Part two" below: no such section',
        'README.md: "Later part" above: no such section',
        'README.md: "bf16 that keeps the model": no such section',
    ]
