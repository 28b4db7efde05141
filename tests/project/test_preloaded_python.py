"""The preloaded Python's runs against CPython's own: the same probe script run both ways.

tests/support/preloaded_python.py forks the scripts the tests run from a
process that has imported TensorFlow once. Each probe below runs once in
a fresh interpreter (subprocess, as before) and once forked, and what the
script saw (argv, __name__, sys.path[0], working directory, environment)
and what the caller got (stdout, stderr, exit status) must be the same,
but for the process ids, which must differ from the test's and from each
other's.
"""

import json
import os
import subprocess
import sys
import textwrap

import preloaded_python
import pytest
from helpers import SUBPROCESS_TIMEOUT, run_python, subprocess_env

PROBE = textwrap.dedent(
    """
    import json, os, sys
    print(json.dumps({
        "argv": sys.argv,
        "name": __name__,
        "path0": sys.path[0],
        "cwd": os.getcwd(),
        "marker": os.environ.get("PROBE_MARKER"),
        "removed_set": "PROBE_REMOVED" in os.environ,
        "pid": os.getpid(),
    }))
    print("to stderr", file=sys.stderr)
    mode = sys.argv[1]
    if mode == "raise":
        raise ValueError("probe failed")
    if mode == "exit_text":
        sys.exit("a message")
    sys.exit(int(mode))
    """
)


@pytest.fixture(scope="module")
def preloaded(tmp_path_factory):
    # PROBE_REMOVED is in the preloaded Python's environment and in no run's.
    env = dict(subprocess_env(), PROBE_REMOVED="1")
    runner = preloaded_python.PreloadedPython(
        sys.executable, env, str(tmp_path_factory.mktemp("preloaded"))
    )
    yield runner
    runner.close()


def _seen(result):
    lines = result.stdout.splitlines()
    seen = json.loads(lines[0])
    return seen.pop("pid"), seen


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["0", "3", "raise", "exit_text"])
def test_a_forked_run_sees_and_gives_what_a_fresh_interpreter_does(preloaded, tmp_path, mode):
    script_dir = tmp_path / "scripts"
    script_dir.mkdir()
    script = script_dir / "probe.py"
    script.write_text(PROBE)
    work = tmp_path / "work"
    work.mkdir()
    env = {"PROBE_MARKER": "here"}
    fresh = run_python(str(script), mode, "--flag=1", env=env, cwd=str(work))
    full_env = subprocess_env(env)
    forked = preloaded.run(
        [str(script), mode, "--flag=1"], full_env, str(work), SUBPROCESS_TIMEOUT
    )
    assert forked is not None
    assert forked.returncode == fresh.returncode
    assert forked.returncode == {"0": 0, "3": 3, "raise": 1, "exit_text": 1}[mode]
    fresh_pid, fresh_seen = _seen(fresh)
    forked_pid, forked_seen = _seen(forked)
    assert forked_seen == fresh_seen
    assert forked_seen["name"] == "__main__" and forked_seen["marker"] == "here"
    assert not forked_seen["removed_set"]
    assert forked_seen["path0"] == str(script_dir) and forked_seen["cwd"] == str(work)
    assert len({fresh_pid, forked_pid, os.getpid()}) == 3
    assert forked.stdout == fresh.stdout.replace(str(fresh_pid), str(forked_pid))
    assert forked.stderr.splitlines()[0] == "to stderr"
    if mode == "raise":
        assert "Traceback" in forked.stderr and "Traceback" in fresh.stderr
        assert forked.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]
    else:
        assert forked.stderr == fresh.stderr


@pytest.mark.slow
def test_a_run_that_changes_import_time_settings_is_left_to_a_fresh_interpreter(preloaded):
    env = subprocess_env({"TF_ENABLE_ONEDNN_OPTS": "0"})
    assert not preloaded.can_run(env)
    assert preloaded.run([sys.executable, "-c", "pass"], env, os.getcwd(), 60) is None
    assert preloaded.can_run(dict(subprocess_env({"TF_CONFIG": "{}"}), PROBE_REMOVED="1"))


@pytest.mark.slow
def test_a_run_past_its_time_is_killed_and_reported_as_a_timeout(preloaded, tmp_path):
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(600)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        preloaded.run([str(script)], subprocess_env(), str(tmp_path), 2)
    # The preloaded Python goes on serving after the killed run.
    quick = tmp_path / "quick.py"
    quick.write_text("print('after')\n")
    result = preloaded.run([str(quick)], subprocess_env(), str(tmp_path), 60)
    assert (result.returncode, result.stdout) == (0, "after\n")
