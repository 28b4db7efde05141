"""Faults landed on a running process at the moment it writes or reads one of its own files.

The fault workers (fault_worker.py, script_fault_worker.py) install one
Trigger from a text:

  "ACTION:open:REGEX:N"       at the N-th open for writing of a path matching
                              REGEX (a Python audit hook on open());
  "ACTION:call:NAME:REGEX"    when a function called NAME (a Python
                              function by its qualified name, "Saver.restore",
                              or its plain name; a built-in one, "replace",
                              by its name) is called while a file matching
                              REGEX, and not empty, lies under WATCH_DIR (its
                              path relative to WATCH_DIR is matched): a step
                              of a checkpoint save, the start of training
                              once its records are written, the rename that
                              puts a complete file in place, ...

ACTION is one of:
  KILL    SIGKILL to itself;
  TERM    SIGTERM to itself, then a pause so that the signal is recorded
          before the run goes on;
  RMDIR   WATCH_DIR removed;
  REMOVE  every file under WATCH_DIR matching REGEX removed (a file deleted
          by another process between listing and reading);
  DAMAGE  a byte in the middle of each file under WATCH_DIR matching REGEX
          changed (a disk fault under a file already written);
  DAMAGE_FIRST  the same, but the 20th byte: in the first record of a
          TFRecord file, the first tensor of a checkpoint's data;
  WAIT    the run writes a file `waiting` beside WATCH_DIR and waits there
          until a file `release` appears beside it, for a test to start
          another job meanwhile.
"""

import os
import re
import shutil
import signal
import sys
import time


def files_under(directory):
    """(path relative to `directory`, full path) of every file below it."""
    found = []
    for root, _, names in os.walk(directory):
        for name in names:
            full = os.path.join(root, name)
            found.append((os.path.relpath(full, directory), full))
    return found


class Trigger:
    def __init__(self, watch_dir, text):
        self.watch_dir = watch_dir
        self.action, self.kind, *rest = text.split(":")
        if self.kind == "call":
            self.function, pattern = rest
            self.count = 1
        else:
            pattern, count = rest
            self.count = int(count)
        self.pattern = re.compile(pattern)
        self.seen = 0
        self.fired = False

    def _matching(self):
        if not os.path.isdir(self.watch_dir):
            return []
        return [
            full
            for relative, full in files_under(self.watch_dir)
            if self.pattern.search(relative) and os.path.getsize(full) > 0
        ]

    def fire(self):
        self.fired = True
        if self.action == "KILL":
            os.kill(os.getpid(), signal.SIGKILL)
        elif self.action == "TERM":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
        elif self.action == "RMDIR":
            shutil.rmtree(self.watch_dir)
        elif self.action == "REMOVE":
            for path in self._matching():
                os.remove(path)
        elif self.action in ("DAMAGE", "DAMAGE_FIRST"):
            for path in self._matching():
                with open(path, "r+b") as f:
                    f.seek(os.path.getsize(path) // 2 if self.action == "DAMAGE" else 19)
                    byte = f.read(1)
                    f.seek(-1, os.SEEK_CUR)
                    f.write(bytes([byte[0] ^ 0xFF]))
        elif self.action == "WAIT":
            beside = os.path.dirname(os.path.abspath(self.watch_dir))
            open(os.path.join(beside, "waiting"), "w").close()
            while not os.path.exists(os.path.join(beside, "release")):
                time.sleep(0.05)
        else:
            raise ValueError(f"unknown action {self.action}")

    def audit(self, event, args):
        if self.fired or self.kind != "open" or event != "open":
            return
        path, mode = args[0], args[1]
        if isinstance(path, str) and mode and "w" in str(mode) and self.pattern.search(path):
            self.seen += 1
            if self.seen == self.count:
                self.fire()

    def profile(self, frame, event, arg):
        if self.fired:
            return
        if event == "call":
            code = frame.f_code
            names = (code.co_name, getattr(code, "co_qualname", None))
        elif event == "c_call":
            names = (getattr(arg, "__name__", None),)
        else:
            return
        if self.function not in names:
            return
        if self._matching():
            self.fire()


def install(watch_dir, text):
    """Lands the fault `text` describes (see the module doc) on this process."""
    if not text:
        return
    trigger = Trigger(watch_dir, text)
    if trigger.kind == "open":
        sys.addaudithook(trigger.audit)
    else:
        sys.setprofile(trigger.profile)
