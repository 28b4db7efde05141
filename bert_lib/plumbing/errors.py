"""One error contract for every script: "ERROR: <one line>" on stderr, exit status 1.

A mistake the user can fix is raised as a UsageError where the bad value
enters (a flag, a file, a line of a file, a key of a config), with a message
naming it: the one class the package and the scripts raise for bad input.
modeling.py and tokenization.py, which must work copied alone, raise their
own InputError, recognised here as the same (is_user_error). That, a
RunError (a run that cannot go on, say a NaN loss), an OSError (a missing or
unreadable file, a full disk) and TensorFlow's errors about data (not found,
corrupt, truncated) are reported in one line with no traceback; anything
else, a plain ValueError included, is a bug and keeps its traceback. This
module imports no TensorFlow, so the data-preparation scripts can use it
without paying for TensorFlow: TensorFlow's errors are recognised by the
module their class comes from. Scripts reach it through their entry point,
run_main (command_line.py).

A script stopped by SIGTERM or Ctrl-C (SIGINT) ends with one line,
"STOPPED: <what was saved, how to go on>", and exit status 128 + the
signal's number (143 for SIGTERM, 130 for SIGINT): what a shell reports for
a process that signal ended, so a scheduler or restart loop that treats
"ended by SIGTERM" as "preempted, start again" keeps working, and a
person's Ctrl-C stays distinguishable from a preemption. Training catches
both signals itself (engine/signals.py: it saves the step, then raises
Stopped); anywhere else SIGTERM raises Stopped at once, as Ctrl-C raises
KeyboardInterrupt, so that atomic_write's temporary files are removed and
nothing is left half-written.
"""

import contextlib
import os
import re
import signal
import sys
import threading
import traceback


class UsageError(ValueError):
    """A mistake in flags or input files; run_main reports it in one line."""


class RunError(RuntimeError):
    """A run that cannot go on for a reason the user can act on (say a NaN loss)."""


class Stopped(BaseException):
    """The run was stopped by a signal; the message says what was saved and how to go on.

    A BaseException, as KeyboardInterrupt is, so that `except Exception`
    clauses on the way up do not swallow it and cleanup still runs.
    """

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum = int(signum)

    @property
    def exit_status(self):
        """128 + the signal's number, as a shell reports a process that signal ended."""
        return 128 + self.signum


def signal_name(signum):
    return signal.Signals(signum).name


def _stopped_outside_training(signum):
    return Stopped(
        signum,
        f"{signal_name(signum)}: stopped before the end, with no output left half-written; "
        "the same command runs it again (training resumes from its newest checkpoint)",
    )


def _raise_stopped(signum, frame):
    """SIGTERM outside training: raised where the main thread is, like KeyboardInterrupt.

    A second SIGTERM (while cleaning up after the first) ends the process at once.
    """
    del frame
    signal.signal(signum, signal.SIG_DFL)
    raise _stopped_outside_training(signum)


# Whether this thread holds SIGTERM back (sigterm_held_for_forks); a forked child
# inherits the value with the blocked signal.
_HELD_FOR_FORKS = False


def _default_sigterm_in_forked_child():
    """A forked child (create_pretraining_data's pool workers) is not the run: SIGTERM,
    which its pool ends it with, ends it as it ends any process. Reset at the fork, the
    default acts even on a child stuck in C code, where no Python handler would run.
    A child forked under sigterm_held_for_forks (or by a thread started there, which
    inherits the block: a pool's replacement workers) gets a SIGTERM sent before this
    reset only now, with the default in place."""
    global _HELD_FOR_FORKS
    inherited = signal.getsignal(signal.SIGTERM)
    if inherited is _raise_stopped:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _HELD_FOR_FORKS or inherited is _raise_stopped:
        _HELD_FOR_FORKS = False
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


os.register_at_fork(after_in_child=_default_sigterm_in_forked_child)


@contextlib.contextmanager
def sigterm_held_for_forks():
    """Holds SIGTERM back in this thread while it forks workers (a process pool).

    Without it, a SIGTERM sent to a child between the fork and the reset of its handler
    (a pool terminated right after it started) reaches the parent's Python handler in
    the child, which stops nothing there: the child lives on and the pool's join waits
    for it forever. Held, the signal waits in the child until its default is back.
    Only this thread's mask changes: this process's own SIGTERM still arrives as before
    (through another thread at once, or here when the block ends).
    """
    global _HELD_FOR_FORKS
    if _HELD_FOR_FORKS:
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    _HELD_FOR_FORKS = True
    try:
        yield
    finally:
        _HELD_FOR_FORKS = False
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


@contextlib.contextmanager
def _sigterm_raises():
    """Within the block, SIGTERM raises Stopped in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# TensorFlow runtime errors that come from the data a user gave: missing,
# unreadable, corrupt or truncated files, records that do not parse, a
# full disk or too little memory.
_TF_USER_ERRORS = frozenset(
    [
        "NotFoundError",
        "DataLossError",
        "OutOfRangeError",
        "InvalidArgumentError",
        "PermissionDeniedError",
        "ResourceExhaustedError",
        "FailedPreconditionError",
    ]
)

_GENERIC_LINES = ("Graph execution error:", "Detected at node", "Detected unsupported", "Node: ")
_STACK_HEAD = re.compile(r"defined at \(most recent call last\):\s*$")
_STACK_LINE = re.compile(r"^\s+(File \".*\", line \d+, in .*|\S.*)$")
_NODE = re.compile(r"\{\{function_node [^}]*\}\}|\{\{node [^}]*\}\}|\[\[.*?\]\]|\[Op:\w+\]")


def is_tf_error(error):
    """Whether `error` is a tf.errors.OpError (a TensorFlow runtime error)."""
    return any(
        cls.__name__ == "OpError" and cls.__module__.startswith("tensorflow")
        for cls in type(error).__mro__
    )


# modeling.py and tokenization.py import no other module of the project, so that
# each works copied alone into another project (as the original's did): instead
# of UsageError, each raises its own InputError, a ValueError, for a config,
# checkpoint or vocabulary that does not fit. Those classes count as UsageError.
# They are taken from the modules already imported (importing modeling here
# would import TensorFlow): a module not imported yet has raised nothing.
_MODULES_WITH_INPUT_ERROR = ("modeling", "tokenization")


def _input_error_classes():
    """The InputError classes of the modules of _MODULES_WITH_INPUT_ERROR imported so far.

    They sit beside the package in a clone (`modeling`) and in the package
    `bert` when installed (`bert.modeling`).
    """
    classes = []
    for name in _MODULES_WITH_INPUT_ERROR:
        for module_name in (name, f"bert.{name}"):
            error_class = getattr(sys.modules.get(module_name), "InputError", None)
            if isinstance(error_class, type):
                classes.append(error_class)
    return tuple(classes)


def is_user_error(error):
    """Whether `error` is a user's mistake (one line) rather than a bug (traceback).

    UsageError, modeling's and tokenization's InputError, RunError and
    OSError are; so are TensorFlow's runtime errors about data (not found,
    data loss, out of range, ...). Nothing else is: a ValueError that
    reaches the top without having been turned into a UsageError where the
    bad value entered is a bug.
    """
    if isinstance(error, (UsageError, RunError, OSError, *_input_error_classes())):
        return True
    if is_tf_error(error):
        return type(error).__name__ in _TF_USER_ERRORS
    return False


def _tf_message_lines(message):
    """The lines of a TensorFlow error message with its "defined at" stack left out.

    TensorFlow puts "Detected at node X defined at (most recent call last):"
    and a Python stack before the actual message; the stack's lines are
    indented, and the message follows it.
    """
    lines = str(message).splitlines()
    kept, in_stack = [], False
    for line in lines:
        if _STACK_HEAD.search(line):
            in_stack = True
            continue
        if in_stack:
            if not line.strip() or _STACK_LINE.match(line):
                continue
            in_stack = False
        kept.append(line)
    return kept


def first_line(error):
    """The first informative line of an error's message, for a one-line report."""
    message = getattr(error, "message", None) or str(error)
    for line in _tf_message_lines(message):
        line = _NODE.sub("", line).strip()
        if line and not line.startswith(_GENERIC_LINES):
            return line
    return type(error).__name__


def message(error):
    """The text after "ERROR: " for a user error: TF errors keep their class name."""
    text = first_line(error)
    if is_tf_error(error):
        return f"{type(error).__name__}: {text}"
    return text


def report(error, show_traceback=False):
    """Writes "ERROR: <one line>" (after the traceback if `show_traceback`); exits 1."""
    if show_traceback:
        traceback.print_exception(type(error), error, error.__traceback__)
    sys.stderr.write(f"ERROR: {message(error)}\n")
    sys.stderr.flush()
    sys.exit(1)


def report_stopped(stopped):
    """Writes "STOPPED: <one line>" and exits with the stop's status (128 + signal)."""
    sys.stdout.flush()
    sys.stderr.write(f"STOPPED: {stopped}\n")
    sys.stderr.flush()
    sys.exit(stopped.exit_status)


def call(function, *args, show_traceback=lambda: False):
    """Returns function(*args); a user error is reported in one line (exit 1), a bug re-raised.

    show_traceback() says whether to print a user error's traceback too
    (asked only when there is one, as flags are parsed by then). SIGTERM
    and Ctrl-C end it with one STOPPED line (see the module doc).
    """
    try:
        with _sigterm_raises():
            return function(*args)
    except Stopped as e:
        report_stopped(e)
    except KeyboardInterrupt:
        report_stopped(_stopped_outside_training(signal.SIGINT))
    except Exception as e:
        if not is_user_error(e):
            raise
        report(e, show_traceback())
