"""Plumbing shared by the command-line entry points of :mod:`re2_tf.cli`."""

from __future__ import annotations

import os
import sys
import traceback

from absl import app, flags

__all__ = ["USER_ERRORS", "define_verbose_flag", "error_message", "run_app"]

#: Exceptions that are a user's mistake (a flag, a file, a setting), printed as one line.
USER_ERRORS = (ValueError, OSError, KeyError, flags.Error)


def define_verbose_flag(flag_values=flags.FLAGS):
    """``--verbose``: show the traceback of a user error (defined once per process)."""
    if "verbose" not in flag_values:
        flags.DEFINE_bool("verbose", False, "On an error, print the full traceback instead "
                          "of one line.", flag_values=flag_values)


def error_message(error: BaseException) -> str:
    """One line for ``error``: its message (a ``KeyError``'s without the quotes repr adds),
    ``"<type>: <message>"`` when the message alone would be empty."""
    from re2_tf.errors import ConfigError

    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    message = " ".join(str(message).split())  # one line
    field = getattr(error, "field", None) if isinstance(error, ConfigError) else None
    if field and message.startswith(f"{field}:"):  # settings are flags on the command line
        message = f"--{field.split('.')[-1]}:{message[len(field) + 1:]}"
    return message or type(error).__name__


def _wants_traceback(argv) -> bool:
    return os.environ.get("RE2_TF_TRACEBACK") == "1" or any(
        arg in ("--verbose", "--verbose=true", "--verbose=True", "--verbose=1")
        for arg in (argv or []))


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


def _fail(program, error):
    if os.environ.get("RE2_TF_TRACEBACK") == "1":
        traceback.print_exc()
    print(f"{program}: error: {error_message(error)}", file=sys.stderr)
    sys.exit(1)
