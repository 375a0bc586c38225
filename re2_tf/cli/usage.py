"""``--help`` of a command: its usage text and its own flags, on stdout, exit status 0.

absl's ``--help`` lists the flags of the main module only -- under a console script that is
the generated wrapper, which defines none, so ``re2-evaluate --help`` would list no flag --
and exits with status 1. :func:`run_command` registers the flags a command defines under the
command's name and answers ``--help``/``-h``/``-?``/``--helpshort`` itself; everything else
goes to :func:`re2_tf.cli.common.run_app`. (Meant to become part of ``run_app``.)
"""

from __future__ import annotations

import sys

from absl import flags

from re2_tf.cli.common import define_verbose_flag, run_app

__all__ = ["HELP_ARGS", "help_text", "run_command"]

#: Arguments that ask for the command's help (absl's ``--helpfull`` is left to absl).
HELP_ARGS = ("--help", "-h", "-?", "--helpshort", "--help=true", "--help=True")


def help_text(program, doc, flag_values=flags.FLAGS):
    """``doc`` (the command's module docstring) and the flags registered under ``program``."""
    lines = [line for line in flag_values.module_help(program).splitlines()
             if line.strip() and line != f"{program}:"]
    listed = "\n".join(lines) or "  (none)"
    return (f"{(doc or program).strip()}\n\nflags:\n{listed}\n\n"
            "Try --helpfull to get a list of all flags.")


def _wants_help(argv):
    for arg in argv[1:]:
        if arg == "--":
            return False
        if arg in HELP_ARGS:
            return True
    return False


def run_command(main, define_flags, *, program, doc, argv=None, flag_values=flags.FLAGS):
    """Define the command's flags, then run ``main`` under :func:`run_app`.

    Args:
        main: ``main(argv)``, the command.
        define_flags: defines the command's flags (called once here).
        program: the command's name (``re2-evaluate``): in messages, and the key its flags
            are listed under.
        doc: the usage text ``--help`` prints first (the command module's docstring).
        argv: the command line (default ``sys.argv``).
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
    run_app(main, program=program, argv=argv)
