"""Runs a repository's steps on TensorFlow 1.15 and through run_tf1.py, in copies of it."""

import dataclasses
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_TF1 = os.path.join(REPO, "run_tf1.py")

# Importing TensorFlow 2 sets TF2_BEHAVIOR=1 in os.environ, which would switch a
# TensorFlow 1.15 child into v2 behaviour: children get this copy, taken first. Their
# output is unbuffered: a step that trains until Ctrl-C is interrupted after the lines
# it prints, which a buffered pipe would hold back until the step's timeout.
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("TF2_")}
BASE_ENV.update(
    {
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONHASHSEED": "0",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONUNBUFFERED": "1",
    }
)


@dataclasses.dataclass
class Step:
    """One command of a README's pipeline, as the README gives it.

    argv: the script (or -m module) and its arguments, run from `cwd` (relative to
    the clone). trains: a training step (its checkpoint is compared by variable
    names and shapes; the steps after it run in the cross copy from TF 1.15's
    weights). interrupt_after: (regex, count), for scripts that train until Ctrl-C
    (the README says to stop them): SIGINT once the output has matched count times.
    compare: globs (relative to the clone) of files whose numbers are compared.
    printed: a regex of printed lines whose numbers are compared (metrics a script
    only prints). scratch: absolute paths the step writes outside its copy (a
    notebook's `model_dir='/tmp/model_dir'`), removed before each run so that every
    run starts from none, as on a machine of its own.
    """

    argv: list
    cwd: str = "."
    trains: bool = False
    interrupt_after: tuple = None
    compare: tuple = ()
    printed: str = None
    timeout: int = 900
    env: dict = dataclasses.field(default_factory=dict)
    stdin: str = ""  # what a person types (an interactive prompt's lines)
    # The exit status TF 1.15's run ends with: 1 for an interactive loop that ends only
    # with an EOFError once the typed lines run out.
    exit_status: int = 0
    scratch: tuple = ()

    def script(self):
        """The step's script (or -m module) and the arguments that say what it does
        (`run_cnn.py train`, `main.py --mode=test`, `--do_eval`), for the table; corpus.py
        has the whole command."""
        start = 2 if self.argv[0] == "-m" else 1
        name = " ".join(self.argv[:start])
        modes = [
            arg
            for arg in self.argv[start:]
            if re.match(r"-{1,2}(mode|train|do_(?!lower)\w+|do-\w+|beam_width)\b", arg)
            or (arg == self.argv[start] and re.fullmatch(r"[a-z]+", arg))
        ]
        where = "" if self.cwd == "." else f"{self.cwd}/" if start == 1 else f"{self.cwd}: "
        return " ".join([f"{where}{name}", *modes])

    def text(self):
        where = f"(cd {self.cwd}) " if self.cwd != "." else ""
        return where + shlex.join(["python", *self.argv])


@dataclasses.dataclass
class StepRun:
    returncode: int
    output: str
    written: dict  # relative path -> size, files the step created or changed
    seconds: float


def _files(root):
    found = {}
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in ("__pycache__", ".git")]
        for name in names:
            if name.endswith(".pyc"):
                continue
            path = os.path.join(directory, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found[os.path.relpath(path, root)] = (stat.st_size, stat.st_mtime_ns)
    return found


def copy_clone(clone, destination, commit=None):
    """A copy of the clone without its .git (of `commit`'s tree when given)."""
    if os.path.exists(destination):
        shutil.rmtree(destination)
    if commit is None:
        shutil.copytree(clone, destination, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        return
    os.makedirs(destination)
    archive = subprocess.run(
        ["git", "-C", clone, "archive", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", destination], input=archive, check=True)


def command(step, side, pythons, options=()):
    """The command line of a step on a side: the TF 1.x Python ("tf115", the reference),
    or run_tf1.py on this project's TensorFlow (pythons: {"tf115": ..., "run_tf1": ...})."""
    argv = [_resolved(arg, step) for arg in step.argv]
    if side == "tf115":
        return [pythons["tf115"], *argv]
    return [pythons["run_tf1"], RUN_TF1, *options, *argv]


def _natural(path):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def _resolved(arg, step):
    """Paths a README leaves to the user, found from the step's folder: `{glob:P}` the
    last path P matches (in natural order: a run folder named by its start time, the
    highest checkpoint step), `{stem:P}` the same without its extension (a checkpoint's
    prefix from its .index), `{name:P}` its last component."""
    match = re.search(r"\{(glob|stem|name):([^}]*)\}", arg)
    if not match:
        return arg
    kind, pattern = match.groups()
    found = sorted(glob.glob(os.path.join(step.resolved_cwd, pattern)), key=_natural)
    path = os.path.relpath(found[-1], step.resolved_cwd) if found else pattern
    if kind == "stem":
        path = os.path.splitext(path)[0]
    elif kind == "name":
        path = os.path.basename(path)
    return arg[: match.start()] + path + arg[match.end() :]


def run_step(step, side, tree, pythons, log, options=()):
    """Runs the step in `tree`; returns its StepRun (output also appended to `log`)."""
    cwd = os.path.join(tree, step.cwd)
    step.resolved_cwd = cwd
    for path in step.scratch:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    before = _files(tree)
    cmd = command(step, side, pythons, options)
    env = dict(BASE_ENV, **step.env)
    start = time.time()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    proc.stdin.write(step.stdin)
    proc.stdin.close()
    lines = []
    timer = threading.Timer(step.timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    matches = 0
    interrupted = False
    try:
        for line in proc.stdout:
            lines.append(line)
            if step.interrupt_after and not interrupted:
                pattern, count = step.interrupt_after
                if re.search(pattern, line):
                    matches += 1
                    if matches >= count:
                        os.kill(proc.pid, signal.SIGINT)
                        interrupted = True
        proc.wait()
    finally:
        timer.cancel()
    output = "".join(lines)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ (cd {cwd} && {shlex.join(cmd)})\n{output}\n[exit {proc.returncode}]\n\n")
    after = _files(tree)
    written = {
        path: size for path, (size, mtime) in after.items() if before.get(path) != (size, mtime)
    }
    return StepRun(proc.returncode, output, written, time.time() - start)


def first_error_line(output):
    """The run's `ERROR:` line, else the last line of a traceback (an exception's)."""
    lines = output.splitlines()
    for line in lines:
        if line.startswith("ERROR:"):
            return line.strip()
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b", line):
            return line.strip()
    return (lines[-1].strip() if lines else "") or "(no output)"
