r"""``re2-train``: train any registered model from flags (a thin layer over :func:`re2_tf.fit`).

    re2-train --flagfile=configs/re2/sample.flags
    re2-train --model=re2 --dataset=wikiqa --data_dir=data/wikiqa --repeats=3
    re2-train --model=drcn --dataset=snli --helpfull     # DRCN's flags, SNLI defaults shown
    python -m re2_tf.cli.train ...                        # the same

Every field of :class:`re2_tf.config.TrainConfig` is a flag of the same name, and so is every
hyper-parameter of the selected ``--model`` (``--blocks=3``). Defaults layer as the config's
do (common defaults, the model's training defaults, its preset for ``--dataset``); ``--help``
shows the layered defaults of the model and dataset given. Only the flags given on the
command line or in a flagfile are explicit settings. A run directory records the resolved
settings in ``config.json`` and the flags that rebuild them in ``flags.txt``: rerunning the
same command (or ``--flagfile=<run>/flags.txt``) resumes the run.

A mistake (unknown flag or model, a value out of range, a missing file, an unwritable run
directory, a malformed data line) ends the command with one line on stderr,
``re2-train: error: --<flag>: <what is wrong and what to do>``, exit status 1, before anything
is written; ``--verbose`` shows the traceback.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from absl import flags

from re2_tf.api import console_handler, fit
from re2_tf.cli.common import run_command
from re2_tf.config import TrainConfig, layered_defaults
from re2_tf.models import MODEL_SPECS

__all__ = ["config_from_args", "define_flags", "parse_flags", "main", "run"]

FLAGS = flags.FLAGS
#: Flags that hold a list (comma-separated on the command line).
_LIST_FIELDS = ("test_splits", "labels", "devices")
_STRING_FIELDS = ("model", "dataset", "preset", "data_dir", "embeddings", "run_dir")
_BOOL_FIELDS = ("progress",)
_INT_FIELDS = ("length_multiple",)


def _fields():
    return [
        f
        for f in dataclasses.fields(TrainConfig)
        if f.metadata.get("group") and f.name != "hparams"
    ]


def define_flags(flag_values=FLAGS):
    """Define one flag per :class:`~re2_tf.config.TrainConfig` field (not the model's
    hyper-parameters: :func:`parse_flags` adds those once ``--model`` is known)."""
    for field in _fields():
        name, default, text = field.name, field.metadata["default"], field.metadata["help"]
        if name in flag_values:
            continue
        if name in _LIST_FIELDS:
            flags.DEFINE_list(name, list(default), text, flag_values=flag_values)
        elif isinstance(default, bool) or name in _BOOL_FIELDS:
            flags.DEFINE_bool(name, default, text, flag_values=flag_values)
        elif isinstance(default, int) or name in _INT_FIELDS:
            flags.DEFINE_integer(name, default, text, flag_values=flag_values)
        elif isinstance(default, float):
            flags.DEFINE_float(name, default, text, flag_values=flag_values)
        else:
            flags.DEFINE_string(name, default, text, flag_values=flag_values)


def define_model_flags(spec, flag_values=FLAGS):
    """One flag per hyper-parameter of ``spec`` (type from its default)."""
    settings = {field.name for field in _fields()}
    for name, hparam in spec.hparams.items():
        if name in settings:
            raise ValueError(f"{spec.name} hyper-parameter --{name} clashes with a setting")
        if name in flag_values:  # defined by an earlier parse in this process
            continue
        if hparam.choices is not None:
            flags.DEFINE_enum(
                name, hparam.default, list(hparam.choices), hparam.help, flag_values=flag_values
            )
            continue
        define = {
            bool: flags.DEFINE_bool,
            int: flags.DEFINE_integer,
            float: flags.DEFINE_float,
            str: flags.DEFINE_string,
        }[type(hparam.default)]
        bounds = hparam.range_text()
        text = f"{hparam.help} Range: {bounds}." if bounds else hparam.help
        define(name, hparam.default, text, flag_values=flag_values)


def _sniff(args, name, default):
    """The last value given to ``--name`` in ``args`` (flagfiles already expanded)."""
    value = default
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
    return value


def _flagfile_hint(args):
    """The error for a flagfile that cannot be opened: which one, and the flagfiles that do
    exist beside it (or where they live)."""
    for arg in args:
        if arg.startswith("--flagfile="):
            path = Path(arg.split("=", 1)[1])
            if path.is_file():
                continue
            folder = path.parent
            known = sorted(str(p) for p in folder.glob("*.flags")) if folder.is_dir() else []
            where = (
                f"flagfiles there: {', '.join(known)}"
                if known
                else "each model's flagfiles are in configs/<model>/"
            )
            return flags.Error(f"--flagfile: cannot open {path} (no such file); {where}")
    return None


def parse_flags(argv, flag_values=FLAGS):
    """Select the model, define its hyper-parameter flags, show the layered defaults of
    ``--model``/``--dataset``/``--preset`` as the flags' defaults, then parse.

    Raises:
        absl.flags.Error: an unknown flag, a bad value, a missing flagfile.
        re2_tf.errors.ConfigError: an unknown model, dataset or preset.
    """
    try:
        args = flag_values.read_flags_from_files(list(argv[1:]), force_gnu=False)
    except flags.CantOpenFlagFileError as error:
        raise _flagfile_hint(list(argv[1:])) or error from None
    _layer_defaults(args, flag_values)
    return flag_values(argv)


def config_from_args(args):
    """The :class:`re2_tf.TrainConfig` that ``re2-train <args>`` would train (``args`` the
    command-line arguments after the program name, flagfiles included), parsed into fresh
    flag values (the process's own flags are untouched).

    Raises:
        absl.flags.Error, re2_tf.errors.ConfigError: as :func:`parse_flags`.
    """

    values = flags.FlagValues()
    define_flags(values)
    parse_flags(["re2-train", *args], values)
    return TrainConfig.from_flags(values)


def _layer_defaults(args, flag_values):
    """Define the hyper-parameter flags of ``args``' ``--model`` and make every flag's
    default the layered one of its ``--model``/``--dataset``/``--preset``."""

    model = _sniff(args, "model", flag_values["model"].default)
    dataset = _sniff(args, "dataset", flag_values["dataset"].default)
    preset = _sniff(args, "preset", None)
    layered = layered_defaults(model, dataset, preset)
    define_model_flags(MODEL_SPECS[model], flag_values)
    flag_values[
        "model"
    ].help = f"Architecture: one of the registered models ({', '.join(MODEL_SPECS)})."
    for field in _fields():
        if field.name in layered:  # a custom dataset's labels have no default
            flag_values.set_default(field.name, layered[field.name])
    for name, value in layered["hparams"].items():
        flag_values.set_default(name, value)


def main(argv):
    """Build the config from the flags and call :func:`re2_tf.fit`."""
    if len(argv) > 1:
        raise flags.Error(
            f"unexpected arguments: {' '.join(argv[1:])} (settings are --name=value flags)"
        )

    console_handler()  # the library logs; the command shows the lines on stdout
    fit(TrainConfig.from_flags(FLAGS))


def _define_for(argv, flag_values=FLAGS):
    """The common flags, and the hyper-parameter flags of the ``--model`` on the command
    line with the layered defaults (so ``--help`` lists them); a mistake in the command line
    is left for :func:`parse_flags` to report."""
    define_flags(flag_values)
    try:
        args = flag_values.read_flags_from_files(list(argv[1:]), force_gnu=False)
        _layer_defaults(args, flag_values)
    except Exception:  # noqa: BLE001  (parse_flags reports it as one line)
        pass


def run(argv=None):
    """Console-script entry point (``re2-train``)."""
    argv = list(sys.argv if argv is None else argv)
    run_command(
        main,
        lambda: _define_for(argv),
        program="re2-train",
        doc=__doc__,
        argv=argv,
        flags_parser=parse_flags,
    )


if __name__ == "__main__":
    run()
