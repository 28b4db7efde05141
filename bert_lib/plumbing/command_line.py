"""The scripts' entry point: parse the command line, run main, report a user's mistake in one line.

run_main is every script's last line (through script_flags, which the
scripts import anyway) and tf.app.run's in the TF 1.x layer (bert_lib/tf1):
it parses the flags as absl's app.run does, and turns a refused command line
or a user error raised by main into one "ERROR: ..." line and exit status 1
(errors.py). It is the one module of the package, besides script_flags.py,
that reads flags: they are what it parses. It imports none of the BERT
modules (modeling, tokenization, optimization), so that the TF 1.x layer
leaves those names to the user's own files.
"""

import difflib
import gc
import re
import sys

from absl import app, flags, logging

from . import cpu_kernels, errors

FLAGS = flags.FLAGS


def _meant(name):
    """The defined flag `name` (an unknown one) likely meant, or None."""
    close = difflib.get_close_matches(name, list(FLAGS), n=1, cutoff=0.6)
    return close[0] if close else None


def _flag_error(error):
    """One line for a command line absl refuses: the flag, and the likely one meant."""
    if isinstance(error, flags.UnrecognizedFlagError):
        name = error.flagname
        close = _meant(name)
        meant = f"; did you mean --{close}?" if close else ""
        return f"--{name}: unknown flag{meant} (--helpfull lists them all)"
    message = str(error).splitlines()[0]
    required = re.match(
        r"flag --(\w+)=None: Flag --\w+ must have a value other than None", message
    )
    if required:
        return f"--{required.group(1)} is required"
    # A flag's rule (an absl validator, script_flags) names the flag and value itself.
    refused = re.match(r"flag --(\w+)=.*?: (--\1[= ].*)$", message)
    if isinstance(error, flags.IllegalFlagValueError) and refused:
        return refused.group(2)
    return message


def parse_flags(argv):
    """Parses the command line as absl does; a refused one is one ERROR line, exit 1."""
    try:
        return FLAGS(argv)
    except flags.Error as error:
        sys.stderr.write(f"ERROR: {_flag_error(error)}\n")
        sys.stderr.flush()
        sys.exit(1)


# An argument absl would read as a flag: -x, --name, --name=value (not "-", "-3", "--").
_FLAG_LIKE = re.compile(r"--?([A-Za-z_][\w.-]*)")


def parse_known_flags(argv):
    """Parses the flags defined and leaves the others in the argv main gets, as TF 1.x's
    tf.app.run did (absl's known_only); one WARNING line names each flag left.

    A defined flag with a bad value is still refused in one ERROR line, exit 1.
    """
    try:
        rest = FLAGS(argv, known_only=True)
    except flags.Error as error:
        sys.stderr.write(f"ERROR: {_flag_error(error)}\n")
        sys.stderr.flush()
        sys.exit(1)
    ignored = []
    for arg in rest[1:]:
        if arg == "--":
            break
        match = _FLAG_LIKE.fullmatch(arg.split("=", 1)[0])
        if match:
            meant = _meant(match.group(1))
            ignored.append(match.group(0) + (f" (did you mean --{meant}?)" if meant else ""))
    if ignored:
        sys.stderr.write(
            "WARNING: not flags of this script, ignored as TF 1.x's tf.app.run ignored them "
            f"(they stay in main's argv): {', '.join(ignored)}\n"
        )
        sys.stderr.flush()
    return rest


def _show_traceback():
    """--show_traceback, where the script defines it."""
    return "show_traceback" in FLAGS and bool(FLAGS["show_traceback"].value)


def run_main(main, argv=None, flags_parser=parse_flags, **script_defaults):
    """Runs a script's `main` through absl's app.run: a user error becomes one line, exit 1.

    That holds for the command line too (an unknown flag, a missing required
    one; `flags_parser=parse_known_flags` lets unknown flags through, as TF
    1.x's tf.app.run did). `script_defaults` set the defaults that are this
    script's own for shared flags (run_squad.py: max_seq_length=384) before
    it is read.
    """
    for name, value in script_defaults.items():
        FLAGS.set_default(name, value)
    # What the script has imported by now (some 270k objects for TensorFlow
    # alone) lives until exit. Frozen, the cyclic garbage collector no longer
    # rescans it during graph building or at interpreter shutdown: about 1.4
    # CPU-seconds less per run, most of it at exit.
    gc.freeze()

    def run(args):
        if "tensorflow" in sys.modules:
            logging.info("%s", cpu_kernels.describe())
        return errors.call(main, args, show_traceback=_show_traceback)

    app.run(run, argv=argv, flags_parser=flags_parser)
