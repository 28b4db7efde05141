"""A script run as a user runs it, with a fault landed on it by its own files.

Usage: script_fault_worker.py WATCH_DIR TRIGGER SCRIPT [ARGS...]

Installs the fault TRIGGER describes (fault_trigger.py: "KILL:open:REGEX:N",
"REMOVE:call:NAME:REGEX", ...; files are watched under WATCH_DIR), then
runs SCRIPT with ARGS as __main__, as `python SCRIPT ARGS...` would: what
the run writes and prints, and its exit status, are the script's.
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
import os
import runpy
import sys

import fault_trigger


def main():
    watch_dir, trigger_text, script, *args = sys.argv[1:]
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    fault_trigger.install(watch_dir, trigger_text)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
