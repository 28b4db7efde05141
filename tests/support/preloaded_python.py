"""Scripts and test workers run in processes forked from one that has already imported TensorFlow.

Importing TensorFlow costs about 4.7 CPU seconds on the 2-core test
machine, and the suite runs the scripts several hundred times (every
refusal of bad input is a run of its own). So each test process keeps one
"preloaded" Python beside it: started once, with the environment a test's
subprocess gets (helpers.subprocess_env), it imports what every script
imports first (cpu_kernels' choice of CPU kernels, then TensorFlow) and
waits. For each run it forks a child that becomes `python script.py args`:
the run's environment, working directory, argv, sys.path[0] and standard
streams (files the caller reads), the script executed as __main__, its
exit status that of SystemExit or 1 with the traceback printed, atexit
handlers run. The child is a real process (its own pid, signals, exit
status, files written), so what the tests check of a run (one ERROR line,
exit status 1, no traceback, nothing half written) is checked of a
process; what it saves is only the import.

A run whose environment differs from the preloaded one in anything read
while TensorFlow is imported (TF_ENABLE_ONEDNN_OPTS, TF_CPP_*, PYTHON*,
thread and allocator settings) starts a fresh interpreter instead, as does a
run asked for while another is under way in the same test process.

Run as a program, this file is the preloaded Python: it reads one JSON
request a line on standard input and answers on standard output with the
child's pid, then its exit status.
"""

import atexit
import importlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import time
import traceback

# Variables read while TensorFlow (or Python) starts: a run that sets any of these
# otherwise than the preloaded interpreter had them gets a fresh interpreter.
IMPORT_TIME_PREFIXES = (
    "PYTHON",
    "TF_ENABLE_ONEDNN",
    "TF_CPP_",
    "TF_NUM_",
    "TF_XLA_FLAGS",
    "XLA_FLAGS",
    "OMP_",
    "KMP_",
    "MKL",
    "LD_",
    "MALLOC",
    "CUDA_VISIBLE_DEVICES",
)


class PreloadedPython:
    """One preloaded interpreter for this test process (see the module docstring)."""

    def __init__(self, python, env, scratch_dir):
        self._env = dict(env)
        self._scratch = scratch_dir
        self._lock = threading.Lock()
        self._process = None
        self._python = python
        self._runs = 0
        self._pending = b""
        self._registered = False

    def can_run(self, env):
        """Whether a run with `env` may be forked from the preloaded interpreter."""
        keys = set(env) | set(self._env)
        return not any(
            env.get(key) != self._env.get(key)
            for key in keys
            if key.startswith(IMPORT_TIME_PREFIXES)
        )

    def run(self, argv, env, cwd, timeout):
        """Runs `python argv` (argv[0] a script) to the end; None if it must run fresh."""
        if not self.can_run(env) or not self._lock.acquire(blocking=False):
            return None
        try:
            self._start()
            self._runs += 1
            out = os.path.join(self._scratch, f"run{self._runs}.stdout")
            err = os.path.join(self._scratch, f"run{self._runs}.stderr")
            request = {"argv": list(argv), "env": env, "cwd": cwd, "stdout": out, "stderr": err}
            self._process.stdin.write((json.dumps(request) + "\n").encode())
            pid = self._answer(60)["pid"]
            answer = self._answer(timeout)
            if answer is None:
                os.kill(pid, signal.SIGKILL)
                self._answer(60)
                raise subprocess.TimeoutExpired(argv, timeout)
            stdout, stderr = (_read_and_remove(path) for path in (out, err))
            args = [self._python, *argv]
            return subprocess.CompletedProcess(args, answer["status"], stdout, stderr)
        finally:
            self._lock.release()

    def _start(self):
        if self._process is not None and self._process.poll() is None:
            return
        log = open(os.path.join(self._scratch, "preloaded.log"), "ab")
        self._process = subprocess.Popen(
            [self._python, os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=self._env,
            bufsize=0,
        )
        log.close()
        self._pending = b""
        if not self._registered:
            atexit.register(self.close)
            self._registered = True
        if self._answer(600) != {"ready": True}:
            raise RuntimeError("the preloaded Python did not start")

    def _answer(self, timeout):
        """The next JSON line from the preloaded interpreter, or None after `timeout` s.

        Read from the pipe's descriptor directly, so that no answer waits in a
        buffer that select() does not see.
        """
        deadline = time.monotonic() + timeout
        fd = self._process.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the preloaded Python ended")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        if self._process is not None and self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait(timeout=60)


def _read_and_remove(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    os.remove(path)
    return text


# ---------------------------------------------------------------------------
# The preloaded interpreter itself


def _exit_status(code):
    """The status a Python process exits with for SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _become_the_run(request, preload_env):
    """In the forked child: turn into `python argv` and exit with its status."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        target = os.open(path, flags, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(request["env"])
    # What the preload itself set (cpu_kernels' choice), as a fresh run sets it too.
    for key, value in preload_env.items():
        os.environ.setdefault(key, value)
    os.chdir(request["cwd"])
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    status = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        status = _exit_status(stop.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(status)


def serve():
    """Imports what the scripts import first, then forks one child a request."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path[0] = repo
    before = dict(os.environ)
    # cpu_kernels first: it chooses the CPU kernels before TensorFlow is imported.
    importlib.import_module("bert_lib.plumbing.cpu_kernels")
    importlib.import_module("tensorflow")

    preload_env = {k: v for k, v in os.environ.items() if before.get(k) != v}
    answers = sys.stdout
    print(json.dumps({"ready": True}), file=answers, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _become_the_run(request, preload_env)
        print(json.dumps({"pid": pid}), file=answers, flush=True)
        _, wait_status = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(wait_status)
        print(json.dumps({"status": status}), file=answers, flush=True)


if __name__ == "__main__":
    serve()
