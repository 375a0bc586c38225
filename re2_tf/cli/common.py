"""Plumbing shared by the command-line entry points of :mod:`re2_tf.cli`."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

from absl import app, flags

from re2_tf.errors import ConfigError, WorkerLostError

__all__ = [
    "USER_ERRORS",
    "HELP_ARGS",
    "define_verbose_flag",
    "error_message",
    "help_text",
    "run_app",
    "run_command",
]

#: Exceptions that are a user's mistake (a flag, a file, a setting) or a failure the user
#: resolves (a lost worker of a multi-worker run), printed as one line.
USER_ERRORS = (ValueError, OSError, KeyError, flags.Error, WorkerLostError)


def define_verbose_flag(flag_values=flags.FLAGS):
    """``--verbose``: show the traceback of a user error (defined once per process)."""
    if "verbose" not in flag_values:
        flags.DEFINE_bool(
            "verbose",
            False,
            "On an error, print the full traceback instead of one line.",
            flag_values=flag_values,
        )


def error_message(error: BaseException) -> str:
    """One line for ``error``: its message (a ``KeyError``'s without the quotes repr adds),
    ``"<type>: <message>"`` when the message alone would be empty."""
    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    message = " ".join(str(message).split())  # one line
    field = getattr(error, "field", None) if isinstance(error, ConfigError) else None
    if field and message.startswith(f"{field}:"):  # settings are flags on the command line
        message = f"--{field.split('.')[-1]}:{message[len(field) + 1 :]}"
    return message or type(error).__name__


def _wants_traceback(argv) -> bool:
    return os.environ.get("RE2_TF_TRACEBACK") == "1" or any(
        arg in ("--verbose", "--verbose=true", "--verbose=True", "--verbose=1")
        for arg in (argv or [])
    )


def run_app(main, *, program: str, flags_parser=None, argv=None):
    """Run ``main`` under absl (``app.run``), turning user errors into one line.

    Args:
        main: ``main(argv) -> int | None``, the command.
        program: the command's name in messages (``re2-train``).
        flags_parser: absl flags parser (``app.run``'s), default absl's own.
        argv: the command line (default ``sys.argv``).

    A user error (:data:`USER_ERRORS`) raised while flags are parsed or by ``main`` is
    printed to stderr as ``<program>: error: <message>`` and the process exits with status
    1, unless ``--verbose`` (or ``RE2_TF_TRACEBACK=1``) asks for the traceback.
    """
    argv = list(sys.argv if argv is None else argv)
    define_verbose_flag()
    verbose = _wants_traceback(argv)

    def guarded_main(args):
        try:
            return main(args)
        except USER_ERRORS as error:
            if verbose:
                raise
            _fail(program, error)

    def guarded_parser(args):
        try:
            if flags_parser is None:
                return app.parse_flags_with_usage(args)
            return flags_parser(args)
        except USER_ERRORS as error:
            if verbose:
                raise
            _fail(program, error)

    app.run(guarded_main, argv=argv, flags_parser=guarded_parser)


def write_record(path, record):
    """Write ``record`` (JSON-serialisable) to ``path`` as indented JSON, creating its folder:
    a command's ``--json_out``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")


def write_run_flags(directory, module_name, flag_values=flags.FLAGS):
    """Write the flags a command defined in module ``module_name`` ran with to
    ``<directory>/flags.txt`` (:data:`re2_tf.runs.RUN_FLAGFILE`), one ``--name=value`` per line,
    so that the output can be rerun with ``--flagfile``. Creates ``directory``."""
    # lazy: every command imports this module, re2-predict too, which imports no Keras
    from re2_tf.runs import RUN_FLAGFILE

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    own = flag_values.get_key_flags_for_module(sys.modules[module_name])
    (directory / RUN_FLAGFILE).write_text("".join(f.serialize() + "\n" for f in own))


def _fail(program, error):
    if os.environ.get("RE2_TF_TRACEBACK") == "1":
        traceback.print_exc()
    print(f"{program}: error: {error_message(error)}", file=sys.stderr)
    sys.exit(1)


#: Arguments that ask for the command's help (absl's ``--helpfull`` is left to absl).
HELP_ARGS = ("--help", "-h", "-?", "--helpshort", "--help=true", "--help=True")


def help_text(program, doc, flag_values=flags.FLAGS):
    """``doc`` (the command's module docstring) and the flags registered under ``program``."""
    lines = [
        line
        for line in flag_values.module_help(program).splitlines()
        if line.strip() and line != f"{program}:"
    ]
    listed = "\n".join(lines) or "  (none)"
    return (
        f"{(doc or program).strip()}\n\nflags:\n{listed}\n\n"
        "Try --helpfull to get a list of all flags."
    )


def _wants_help(argv):
    for arg in argv[1:]:
        if arg == "--":
            return False
        if arg in HELP_ARGS:
            return True
    return False


def run_command(
    main, define_flags, *, program, doc, argv=None, flags_parser=None, flag_values=flags.FLAGS
):
    """Define the command's flags, answer ``--help``, then run ``main`` under :func:`run_app`.

    absl's ``--help`` lists the flags of the main module only -- under a console script
    that is the generated wrapper, which defines none -- and exits with status 1. Here the
    flags ``define_flags`` adds are registered under ``program``, and ``--help`` (``-h``,
    ``-?``, ``--helpshort``) prints the command's docstring and those flags, exit status 0.
    ``--helpfull`` is absl's.

    Args:
        main: ``main(argv)``, the command.
        define_flags: defines the command's flags (called once here).
        program: the command's name (``re2-evaluate``): in messages, and the key its flags
            are listed under.
        doc: the usage text ``--help`` prints first (the command module's docstring).
        argv: the command line (default ``sys.argv``).
        flags_parser: absl flags parser (default absl's own), as in :func:`run_app`.
    """
    argv = list(sys.argv if argv is None else argv)
    before = set(flag_values)
    define_flags()
    define_verbose_flag(flag_values)
    for name in [*sorted(set(flag_values) - before), "verbose"]:
        if flag_values[name] not in flag_values.flags_by_module_dict().get(program, []):
            flag_values.register_flag_by_module(program, flag_values[name])
    if _wants_help(argv):
        print(help_text(program, doc, flag_values))
        sys.exit(0)
    run_app(main, program=program, flags_parser=flags_parser, argv=argv)
