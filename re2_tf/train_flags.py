"""``re2-train``'s flag layer as a library: one flag per :class:`re2_tf.config.TrainConfig` field
and per hyper-parameter of the selected model, with the layered defaults of
``--model``/``--dataset``/``--preset``, and the :class:`~re2_tf.config.TrainConfig` a command line
or a flagfile stands for.

    config = config_from_flagfile("configs/re2/wikiqa.flags", data_dir="data/wikiqa")
    re2_tf.fit(config, run_dir="checkpoints/wikiqa-re2")

Flags are parsed into fresh :class:`absl.flags.FlagValues` here (a process's own ``FLAGS`` are
untouched unless passed).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from absl import flags

from re2_tf.config import TrainConfig, layered_defaults
from re2_tf.models import MODEL_SPECS

__all__ = [
    "config_from_args",
    "config_from_flagfile",
    "define_flags",
    "define_model_flags",
    "parse_flags",
]

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


def config_from_flagfile(path, **overrides) -> TrainConfig:
    """The :class:`re2_tf.TrainConfig` of a flagfile (``configs/<model>/<task>.flags``), with
    ``overrides`` (settings or hyper-parameters, by name) applied as flags after it, so they
    are checked and layered as ``re2-train --flagfile=<path> --<name>=<value>`` would.

    Args:
        path: the flagfile (``str`` or ``os.PathLike``).
        **overrides: ``name=value``; ``True``/``False`` become ``--name``/``--noname``, a list
            or tuple a comma-separated value, ``None`` leaves the flag as the flagfile has it.

    Raises:
        absl.flags.Error: a missing flagfile, an unknown flag, a bad value.
        re2_tf.errors.ConfigError: an unknown model, dataset or preset.
    """
    args = [f"--flagfile={path}"]
    for name, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, bool):
            args.append(f"--{name}" if value else f"--no{name}")
        elif isinstance(value, (list, tuple)):
            args.append(f"--{name}={','.join(map(str, value))}")
        else:
            args.append(f"--{name}={value}")
    return config_from_args(args)
