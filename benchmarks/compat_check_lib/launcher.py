"""Starts the scripts and workers of both codes, each with its own log, and lists every command."""

import os
import re
import shlex
import shutil
import subprocess
import sys

from .common import REPO, read_text

# Importing TensorFlow 2 sets TF2_BEHAVIOR=1 (and more) in os.environ, which
# would switch a TensorFlow 1.15 child into v2 behaviour: children get this copy,
# taken when this module is first imported, before anything imports TensorFlow.
BASE_ENV = dict(os.environ)

# The folder that holds this package, so that `python -m compat_check_lib.worker` finds it.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def logged_command(cmd, env, cwd):
    """The line commands.log keeps for a run: a shell command that runs it again as it
    ran, with the environment variables it was given beyond this process's own."""
    extra = [f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()) if BASE_ENV.get(k) != v]
    setting = f"env {' '.join(extra)} " if extra else ""
    return f"(cd {shlex.quote(cwd)} && {setting}{shlex.join(cmd)})"


class Runner:
    """Starts scripts of this project or of the original and logs each command."""

    def __init__(self, original_dir, original_python, work_dir):
        self.original_python = original_python
        self.work = os.path.abspath(work_dir)
        orig = os.path.abspath(original_dir)
        if os.path.exists(os.path.join(orig, "bert", "run_classifier.py")):
            self.orig_package = True
        elif os.path.exists(os.path.join(orig, "run_classifier.py")):
            self.orig_package = False
        else:
            sys.exit(
                f"ERROR: --original_dir={orig} holds neither bert/run_classifier.py "
                "nor run_classifier.py"
            )
        self.orig_dir = orig
        self.log = open(os.path.join(self.work, "commands.log"), "a", encoding="utf-8")

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def _run(self, cmd, env, cwd, log_name):
        self.log.write(f"{logged_command(cmd, env, cwd)}  > {log_name}\n")
        self.log.flush()
        with open(self.path(log_name), "w", encoding="utf-8") as out:
            proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        return proc.returncode

    def ours(self, script, flags, log_name):
        cmd = [sys.executable, os.path.join(REPO, script + ".py"), *flags]
        return self._run(cmd, dict(BASE_ENV), REPO, log_name)

    def original(self, script, flags, log_name):
        env = dict(BASE_ENV, PYTHONPATH=self.orig_dir)
        if self.orig_package:
            cmd = [self.original_python, "-m", "bert." + script, *flags]
        else:
            cmd = [self.original_python, os.path.join(self.orig_dir, script + ".py"), *flags]
        return self._run(cmd, env, self.work, log_name)

    def tf1(self, script, flags, log_name):
        """The original's unchanged script, with its own modules beside it, through run_tf1.py."""
        env = dict(BASE_ENV, PYTHONPATH=self.orig_dir)
        script_dir = os.path.join(self.orig_dir, "bert") if self.orig_package else self.orig_dir
        cmd = [
            sys.executable,
            os.path.join(REPO, "run_tf1.py"),
            os.path.join(script_dir, script + ".py"),
            *flags,
        ]
        return self._run(cmd, env, self.work, log_name)

    def user_script(self, path, flags, log_name, through_run_tf1):
        """A TF 1.x script written here (tests/data/tf1_scripts): under TensorFlow 1.15, or
        unchanged through run_tf1.py on this project's TensorFlow."""
        if through_run_tf1:
            cmd = [sys.executable, os.path.join(REPO, "run_tf1.py"), path, *flags]
        else:
            cmd = [self.original_python, path, *flags]
        return self._run(cmd, dict(BASE_ENV), self.work, log_name)

    def worker(self, impl, flags, log_name):
        """Runs compat_check_lib.worker for one implementation under that implementation's
        interpreter."""
        python = self.original_python if impl == "original" else sys.executable
        impl_dir = self.orig_dir if impl == "original" else REPO
        return self._run(
            worker_command(python, impl, impl_dir, flags), worker_env(), self.work, log_name
        )


def worker_command(python, impl, impl_dir, flags):
    return [
        python,
        "-m",
        "compat_check_lib.worker",
        f"--worker_impl={impl}",
        f"--worker_impl_dir={impl_dir}",
        *flags,
    ]


def worker_env():
    """The starting environment, with this package importable."""
    paths = [PACKAGE_PARENT] + [p for p in [BASE_ENV.get("PYTHONPATH")] if p]
    return dict(BASE_ENV, PYTHONPATH=os.pathsep.join(paths))


def copy_checkpoint(prefix, directory):
    """Copies one checkpoint into a fresh directory whose `checkpoint` file names it."""
    if os.path.exists(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    base = os.path.basename(prefix)
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(base + "."):
            shutil.copy(os.path.join(os.path.dirname(prefix), name), directory)
    with open(os.path.join(directory, "checkpoint"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{base}"\nall_model_checkpoint_paths: "{base}"\n')


def newest_checkpoint(directory):
    """The checkpoint prefix a `checkpoint` file names; exits when there is none."""
    state = os.path.join(directory, "checkpoint")
    match = (
        re.search(r'^model_checkpoint_path: "(.*)"', read_text(state), re.M)
        if os.path.exists(state)
        else None
    )
    if not match:
        sys.exit(f"ERROR: no checkpoint in {directory}; see the logs in it and next to it")
    return os.path.join(directory, match.group(1))
