"""``TrainConfig``: one object that describes a training run.

A run is described by one frozen dataclass, :class:`TrainConfig`, and started by one function,
:func:`re2_tf.fit`. The command line (``re2-train``, :mod:`re2_tf.cli.train`) builds the same
object from its flags (:meth:`TrainConfig.from_flags`), and a run directory's ``config.json``
rebuilds it (:meth:`TrainConfig.from_json`), so a notebook, a sweep, a test and the CLI all
start identical runs.

Why a frozen dataclass (and not ``ml_collections.ConfigDict``): the settings are a fixed,
typed set known in advance (the flags), so typos must fail (``TrainConfig(lr_decay=...)`` is a
``TypeError``), configs must be hashable values that compare equal field by field, and
``dataclasses.replace`` gives the copy-with-changes a sweep needs. A ConfigDict's open,
mutable attribute bag would allow exactly the silent mistakes this object exists to stop, and
it would be one more dependency.

Defaults come in three layers, each replacing the one before (as the flags do):

1. the common defaults below (the RE2 release's ``configs/default.json5``);
2. the model's own training defaults (``ModelSpec.training``) and hyper-parameter defaults
   (``ModelSpec.hparams``): :mod:`re2_tf.models` states each once;
3. the model's preset for the dataset (``ModelSpec.presets[dataset]``; ``preset="none"``
   skips it, ``preset="<dataset>"`` picks another);

and what the caller sets explicitly wins over all three. The config remembers which fields
were set explicitly (:attr:`TrainConfig.explicit`), so ``config.replace(model="drcn")``
re-applies DRCN's defaults and preset to every field the caller did not set.

Fields, by group (:data:`GROUPS`):

- **data**: ``model``, ``dataset``, ``preset``, ``data_dir``, ``embeddings``, ``min_df``,
  ``lower_case``, ``max_len``, ``long_pairs``, ``eval_split``, ``test_splits``, and for
  ``dataset="custom"`` ``labels``, ``metric``, ``tokenizer``;
- **model**: ``hparams`` (the model's hyper-parameters, ``{name: value}``; every name the
  model has, resolved);
- **optimisation**: ``epochs``, ``max_samples``, ``batch_size``, ``optimizer``,
  ``lr_schedule``, ``lr``, ``min_lr``, ``lr_decay_rate``, ``lr_decay_samples``,
  ``lr_warmup_samples``, ``warmup_ratio``, ``plateau_factor``, ``weight_decay``, ``beta1``,
  ``beta2``, ``grad_clipping``, ``accumulation_steps``, ``max_loss``, ``group_by_length``,
  ``max_negatives``, ``mixed_precision``;
- **evaluation routine**: ``eval_per_samples``, ``eval_per_samples_warmup``,
  ``eval_warmup_samples``, ``eval_epoch``, ``min_samples``, ``tolerance_samples``,
  ``log_per_samples``;
- **run control**: ``run_dir``, ``seed``, ``repeats``, ``deterministic``, ``overwrite``,
  ``progress``, ``threads``, ``jit_compile``, ``distribution``, ``devices``,
  ``logical_cpus``, ``length_multiple``.

Counts given in samples are converted to updates as ``ceil(samples / batch_size)``, as the
release does.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from re2_tf.data import datasets
from re2_tf.data.pipeline import LONG_PAIR_POLICIES
from re2_tf.data.tokenization import TOKENIZERS
from re2_tf.errors import ConfigError
from re2_tf.models import MODEL_SPECS  # importing the package registers every model
from re2_tf.training.distribution import STRATEGIES
from re2_tf.training.optimizers import OPTIMIZERS, SCHEDULES
from re2_tf.training.precision import POLICIES

__all__ = ["TrainConfig", "GROUPS", "CONTROL_FIELDS", "CUSTOM_METRICS", "layered_defaults"]

#: ``metric`` choices of ``dataset="custom"``: selection metric, watched metrics, ranking.
CUSTOM_METRICS = {
    "accuracy": ("acc", (), False),
    "f1": ("f1", ("acc", "auc"), False),
    "map_mrr": ("mrr", ("map",), True),
}

_GROUP = "group"


class _Unset:
    """The default of every field in ``__init__``: tells a value the caller gave (even one
    equal to the common default) from one to be layered in."""

    def __repr__(self):
        return "<unset>"


_UNSET = _Unset()


def _field(default, group, help_text):
    return dataclasses.field(
        default=_UNSET, metadata={_GROUP: group, "help": help_text, "default": default}
    )


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run (see the module docstring for the layering).

    Construct with keyword arguments; fields left out take the layered defaults of the
    chosen ``model`` and ``dataset``. Hyper-parameters go in ``hparams``::

        TrainConfig(model="re2", dataset="wikiqa", hparams={"blocks": 2}, epochs=3)

    Raises:
        ConfigError: on the first invalid setting, naming it (``batch_size must be >= 1,
            got 0``); ``TypeError`` for an unknown keyword.
    """

    # data ------------------------------------------------------------------------------
    model: str = _field("re2", "data", "Architecture, a name in re2_tf.models.MODEL_SPECS.")
    dataset: str = _field(
        "sample",
        "data",
        "Dataset (label names, metric, tokeniser, "
        "preset); 'custom' takes them from labels/metric/tokenizer.",
    )
    preset: str | None = _field(
        None,
        "data",
        "Model preset to apply (default: the dataset's, if the model has one; 'none' = no preset).",
    )
    data_dir: str | None = _field(
        None,
        "data",
        "Prepared data directory with train/<eval_split>/test.txt (default: data/<dataset>).",
    )
    embeddings: str | None = _field(
        None,
        "data",
        "GloVe-format vectors (.txt, .gz or .zip); none = random, trainable embeddings.",
    )
    min_df: int = _field(
        5, "data", "Keep training words seen at least this often (or having a vector)."
    )
    lower_case: bool = _field(True, "data", "Lower-case text and vectors.")
    max_len: int = _field(
        0,
        "data",
        "Longest training text in tokens; 0 = unlimited (the "
        "release's 999 is accepted and means 999).",
    )
    long_pairs: str = _field(
        "drop",
        "data",
        "Training pairs with a longer text: drop (the release) or truncate; both are counted.",
    )
    eval_split: str = _field("dev", "data", "Split used for model selection.")
    test_splits: tuple = _field(
        ("test",),
        "data",
        "Splits scored with the best checkpoint after training (missing files are skipped).",
    )
    labels: tuple = _field(
        (),
        "data",
        "dataset=custom: label names in label-id order (the "
        "files' third column holds a name or an id).",
    )
    metric: str = _field(
        "accuracy",
        "data",
        "dataset=custom: accuracy, f1 (two labels) or map_mrr (ranking; needs <split>.ids files).",
    )
    tokenizer: str = _field(
        "whitespace",
        "data",
        "dataset=custom: tokeniser of the raw text "
        "(a name in re2_tf.data.tokenization.TOKENIZERS).",
    )
    # model -----------------------------------------------------------------------------
    hparams: Mapping[str, Any] = _field(None, "model", "The model's hyper-parameters.")
    # optimisation ----------------------------------------------------------------------
    epochs: int = _field(30, "optimisation", "Passes over the training data.")
    max_samples: int = _field(
        0,
        "optimisation",
        "Stop after the fewest updates that see this many training samples (pairs, or "
        "ranking triples; each pass's last batch is short), even within a pass; 0 = no limit "
        "(epochs passes). Schedules and warm-up follow the shorter run; a run that ends before "
        "its first evaluation point evaluates at its last update.",
    )
    batch_size: int = _field(128, "optimisation", "Pairs (or ranking triples) per update.")
    optimizer: str = _field("adam", "optimisation", "Optimiser.")
    lr_schedule: str = _field(
        "release",
        "optimisation",
        "Learning-rate schedule: release = "
        "linear warm-up then stepwise exponential decay (RE2); plateau = "
        "multiply by plateau_factor when the dev metric does not improve "
        "(DRCN); linear = linear warm-up then linear decay to 0 (BERT); "
        "constant.",
    )
    lr: float = _field(1e-3, "optimisation", "Peak learning rate.")
    min_lr: float = _field(
        6e-5, "optimisation", "Learning-rate floor and warm-up start (release schedule)."
    )
    lr_decay_rate: float = _field(
        0.95, "optimisation", "Exponential decay factor (1 = fixed rate; release schedule)."
    )
    lr_decay_samples: int = _field(
        128000, "optimisation", "Samples between decays (release schedule)."
    )
    lr_warmup_samples: int = _field(
        0,
        "optimisation",
        "Samples of linear learning-rate "
        "warm-up (release and linear schedules). Set this or "
        "warmup_ratio, not both.",
    )
    warmup_ratio: float = _field(
        0.0,
        "optimisation",
        "Warm-up as a fraction of all updates "
        "(BERT's warmup_proportion: int(ratio * updates) updates).",
    )
    plateau_factor: float = _field(
        0.85,
        "optimisation",
        "Learning-rate factor per evaluation without improvement (plateau schedule).",
    )
    weight_decay: float = _field(0.0, "optimisation", "Decoupled weight decay (adamw).")
    beta1: float = _field(0.9, "optimisation", "Adam/AdamW beta1.")
    beta2: float = _field(0.999, "optimisation", "Adam/AdamW beta2.")
    grad_clipping: float = _field(5.0, "optimisation", "Clip gradients to this global norm.")
    accumulation_steps: int = _field(
        1,
        "optimisation",
        "Split each batch into this many "
        "micro-batches and take one update on their summed "
        "gradients (same update, less memory).",
    )
    max_loss: float = _field(999.0, "optimisation", "Stop when a batch loss exceeds this.")
    group_by_length: int = _field(
        0,
        "optimisation",
        "Batch training pairs of similar length "
        "in windows of this many batches (0 = off, the release).",
    )
    max_negatives: int = _field(
        0,
        "optimisation",
        "Pairwise ranking losses: at most this many negatives per positive answer (0 = all).",
    )
    mixed_precision: str = _field(
        "none",
        "optimisation",
        "none (float32), bf16 (Keras mixed_bfloat16) or fp16 (mixed_float16 with dynamic loss "
        "scaling): layers compute in 16 bits, weights and outputs stay float32 "
        "(re2_tf/training/precision.py).",
    )
    # evaluation routine ----------------------------------------------------------------
    eval_per_samples: int = _field(6400, "evaluation", "Evaluate every this many samples.")
    eval_per_samples_warmup: int = _field(
        40000, "evaluation", "Evaluation interval during the evaluation warm-up."
    )
    eval_warmup_samples: int = _field(
        0, "evaluation", "Samples during which the warm-up interval applies."
    )
    eval_epoch: bool = _field(
        True, "evaluation", "Also evaluate after every pass over the training data."
    )
    min_samples: int = _field(
        0, "evaluation", "Train at least this many samples before early stopping."
    )
    tolerance_samples: int = _field(
        400000, "evaluation", "Stop when the best dev score is older than this."
    )
    log_per_samples: int = _field(
        5120, "evaluation", "TensorBoard training summaries every this many samples."
    )
    # run control -----------------------------------------------------------------------
    run_dir: str | None = _field(
        None, "control", "Run directory (default: checkpoints/<dataset>-<model>)."
    )
    seed: int = _field(1, "control", "Random seed (initialisation, dropout, shuffling).")
    repeats: int = _field(
        1, "control", "Train this many seeds (seed, seed+1, ...) and report mean ± std."
    )
    deterministic: bool = _field(
        True, "control", "TensorFlow op determinism, so a seed repeats exactly."
    )
    overwrite: bool = _field(
        False, "control", "Delete an existing run directory instead of resuming it."
    )
    progress: bool | None = _field(
        None, "control", "Progress bar (default: when stdout is a terminal)."
    )
    threads: int = _field(0, "control", "Intra-op threads (0 = TensorFlow's default).")
    jit_compile: bool = _field(
        False,
        "control",
        "XLA-compile the training step (needs deterministic=False; one process).",
    )
    distribution: str = _field(
        "none",
        "control",
        "none (one process), mirrored (tf.distribute.MirroredStrategy: every local GPU, "
        "--devices, or --logical_cpus CPU devices) or multi_worker "
        "(tf.distribute.MultiWorkerMirroredStrategy: one process per host of TF_CONFIG, "
        'e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
        '"task": {"type": "worker", "index": 0}}\' with index 1 on host2; '
        "the same command on every host). --batch_size is the global batch.",
    )
    devices: tuple = _field(
        (), "control", "Devices of a mirrored run (e.g. /gpu:0,/gpu:1; default: every GPU)."
    )
    logical_cpus: int = _field(
        0,
        "control",
        "Split the CPU into this many logical devices (mirrored replicas on a CPU-only host).",
    )
    length_multiple: int | None = _field(
        None,
        "control",
        "Pad each training batch's texts "
        "to a multiple of this (default: 8 with "
        "jit_compile, else 0 = none).",
    )
    # which fields the caller set (not a setting; excluded from equality)
    explicit: frozenset = dataclasses.field(
        default=frozenset(), compare=False, repr=False, metadata={_GROUP: None}
    )

    # ------------------------------------------------------------------ construction
    def __post_init__(self):
        given = {f.name for f in _settings_fields() if getattr(self, f.name) is not _UNSET}
        hparams = self.hparams
        if hparams is not _UNSET and hparams is not None and not isinstance(hparams, Mapping):
            raise ConfigError(
                f"hparams: must be a mapping of hyper-parameter names to values, got {hparams!r}",
                field="hparams",
            )
        given.discard("hparams")
        explicit = frozenset(self.explicit) | given
        if hparams is not _UNSET and hparams:
            explicit |= {f"hparams.{name}" for name in hparams}
        object.__setattr__(self, "explicit", explicit)
        for f in _settings_fields():  # layer 1: the common defaults
            if getattr(self, f.name) is _UNSET:
                object.__setattr__(self, f.name, f.metadata["default"])
        _resolve(self)
        _validate(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainConfig:
        """A config from ``{field: value}``; a key that is neither a field nor a
        hyper-parameter of the model is a :class:`ConfigError` naming it. Hyper-parameters
        may be given in ``hparams`` or at the top level (as flags give them)."""
        values = dict(values)
        names = {f.name for f in _settings_fields()}
        hparams = dict(values.pop("hparams", None) or {})
        model = values.get("model", "re2")
        known_hparams = _spec(model).hparams
        for key in list(values):
            if key not in names:
                if key in known_hparams:
                    hparams[key] = values.pop(key)
                else:
                    raise ConfigError(
                        f"{key}: not a setting of re2_tf.TrainConfig nor a "
                        f"hyper-parameter of model {model!r} (its "
                        f"hyper-parameters: {', '.join(sorted(known_hparams))})",
                        field=key,
                    )
        return cls(**values, hparams=hparams or None)

    @classmethod
    def from_flags(cls, flag_values) -> TrainConfig:
        """A config from parsed absl flags (``re2_tf.cli.train``'s): every flag named like a
        field or like one of the model's hyper-parameters. Only flags the user set (on the
        command line or in a flagfile) count as explicit, so the model's and the dataset's
        defaults still apply to the others."""
        names = {f.name for f in _settings_fields()}
        model = flag_values["model"].value
        hparam_names = set(_spec(model).hparams)
        values = {}
        for name in names | hparam_names:
            if name not in flag_values:
                continue
            flag = flag_values[name]
            if not flag.present and name != "model":
                continue
            value = flag.value
            if isinstance(value, list):
                value = tuple(value)
            values[name] = value
        return cls.from_dict(values)

    @classmethod
    def from_json(cls, path) -> TrainConfig:
        """The config a run directory was trained with, from its ``config.json`` (a path to
        the file or to the run directory).

        Raises:
            FileNotFoundError: naming the path when there is no ``config.json``.
        """
        path = Path(path)
        if path.is_dir():
            path = path / "config.json"
        if not path.exists():
            raise FileNotFoundError(f"{path} not found: not a re2_tf run directory")
        record = json.loads(path.read_text())
        settings = dict(record.get("settings", {}))
        settings.update(
            model=record["model"], dataset=record["dataset"], hparams=record.get("model_kwargs", {})
        )
        if record.get("embeddings"):
            settings["embeddings"] = record["embeddings"]["path"]
        if record["dataset"] == "custom":
            metric = {selection: name for name, (selection, _, _) in CUSTOM_METRICS.items()}
            settings.update(
                labels=tuple(record["label_names"]),
                tokenizer=record["tokenizer"],
                metric=metric[record["metric"]],
            )
        data = record.get("data", {})
        if "train" in data:
            settings["data_dir"] = str(Path(data["train"]["path"]).parent)
        for name in ("test_splits", "labels", "devices"):
            if name in settings and isinstance(settings[name], list):
                settings[name] = tuple(settings[name])
        names = {f.name for f in _settings_fields()}
        return cls(**{k: v for k, v in settings.items() if k in names})

    def replace(self, **changes) -> TrainConfig:
        """A copy with ``changes``; fields the caller never set are re-derived from the
        (possibly new) model's and dataset's defaults. ``hparams`` changes merge into the
        explicitly set hyper-parameters."""
        values = {name: getattr(self, name) for name in self.explicit if "." not in name}
        hparams = {
            name.split(".", 1)[1]: self.hparams[name.split(".", 1)[1]]
            for name in self.explicit
            if name.startswith("hparams.")
        }
        if "model" in changes and changes["model"] != self.model:
            hparams = {}  # another model's hyper-parameters do not carry over
        hparams.update(changes.pop("hparams", None) or {})
        values.update(changes)
        values["hparams"] = hparams or None
        return TrainConfig(**values)

    # ------------------------------------------------------------------ views
    def as_dict(self, grouped: bool = False) -> dict:
        """``{field: value}`` (JSON-ready), or ``{group: {field: value}}`` with ``grouped``."""
        flat = {f.name: _jsonable(getattr(self, f.name)) for f in _settings_fields()}
        if not grouped:
            return flat
        out = {}
        for f in _settings_fields():
            out.setdefault(f.metadata[_GROUP], {})[f.name] = flat[f.name]
        return out

    @property
    def spec(self):
        """The model's :class:`re2_tf.models.spec.ModelSpec`."""
        return _spec(self.model)

    @property
    def dataset_spec(self):
        """The :class:`re2_tf.data.datasets.DatasetSpec` (built from ``labels``, ``metric``
        and ``tokenizer`` for ``dataset="custom"``)."""

        if self.dataset == datasets.CUSTOM:
            selection, watch, ranking = CUSTOM_METRICS[self.metric]
            return datasets.custom_dataset(
                self.labels, selection, self.tokenizer, ranking=ranking, watch_metrics=watch
            )
        return datasets.get_dataset(self.dataset)

    @property
    def resolved_data_dir(self) -> Path:
        """``data_dir``, or when unset :func:`re2_tf.data.datasets.default_data_dir`: the bundled
        sample inside the package, else ``data/<dataset>`` under the current directory."""

        return Path(self.data_dir) if self.data_dir else datasets.default_data_dir(self.dataset)

    @property
    def resolved_run_dir(self) -> Path:
        """``run_dir``, or ``checkpoints/<dataset>-<model>`` when unset."""
        return Path(self.run_dir or Path("checkpoints") / f"{self.dataset}-{self.model}")

    @property
    def max_len_or_none(self) -> int | None:
        """``max_len`` for :func:`re2_tf.data.pipeline.encode_examples`: ``None`` = no limit."""
        return self.max_len or None

    def steps(self, samples: int) -> int:
        """``ceil(samples / batch_size)``: the release's conversion of samples to updates."""
        return int(math.ceil(samples / self.batch_size))

    def samples_seen(self, updates: int, units: int) -> int:
        """Training samples (pairs, or ranking triples) that ``updates`` updates compute on,
        passing over ``units`` samples in batches of ``batch_size`` (each pass's last batch is
        short): ``k * units`` for ``k`` whole passes, plus ``batch_size`` per update after them.

        Raises:
            ValueError: ``units`` below 1 or ``updates`` negative.
        """
        if units < 1 or updates < 0:
            raise ValueError(
                f"samples_seen needs units >= 1 and updates >= 0, got {units}, {updates}"
            )
        per_pass = self.steps(units)
        passes, rest = divmod(updates, per_pass)
        return passes * units + rest * self.batch_size

    def updates_for_samples(self, samples: int, units: int) -> int:
        """The fewest updates whose :meth:`samples_seen` over ``units`` samples reaches
        ``samples`` (how ``max_samples`` becomes updates: whole passes, each with its short
        last batch, then ``ceil(rest / batch_size)`` updates of the next pass).

        Raises:
            ValueError: ``units`` below 1 or ``samples`` negative.
        """
        if units < 1 or samples < 0:
            raise ValueError(
                f"updates_for_samples needs units >= 1 and samples >= 0, got {units}, {samples}"
            )
        passes, rest = divmod(samples, units)
        return passes * self.steps(units) + self.steps(rest)

    def warmup_steps(self, total_steps: int) -> int:
        """Updates of learning-rate warm-up: ``int(warmup_ratio * total_steps)`` (BERT's
        ``num_warmup_steps``) or ``ceil(lr_warmup_samples / batch_size)``."""
        if self.warmup_ratio:
            return int(self.warmup_ratio * total_steps)
        return self.steps(self.lr_warmup_samples)

    def check_files(self) -> None:
        """Check the files the run reads exist: ``<data_dir>/train.txt``, the selection
        split, and ``embeddings``.

        Raises:
            ConfigError: naming the field and the missing file, and what to do.
        """
        data_dir = self.resolved_data_dir
        if not data_dir.is_dir():
            bundled = datasets.BUNDLED / self.dataset
            hint = (
                f"the package's own copy is {bundled}; leave --data_dir unset to use it"
                if bundled.is_dir()
                else f"prepare it with: re2-prepare --dataset={self.dataset} "
                f"--input=<downloaded corpus> --output={data_dir}"
            )
            raise ConfigError(f"data_dir: {data_dir} is not a directory ({hint})", field="data_dir")
        for split in ("train", self.eval_split):
            if not (data_dir / f"{split}.txt").is_file():
                raise ConfigError(
                    f"data_dir: {data_dir / (split + '.txt')} not found (a "
                    "prepared directory holds train.txt, dev.txt, test.txt)",
                    field="data_dir",
                )
        if self.embeddings and not Path(self.embeddings).is_file():
            raise ConfigError(
                f"embeddings: {self.embeddings} not found (download the "
                "vectors, or leave embeddings unset for random, trainable "
                "embeddings: --embeddings=)",
                field="embeddings",
            )


# ---------------------------------------------------------------------- helpers
#: Fields that do not change what a run computes, or that ``config.json`` records outside
#: its ``settings`` (hyper-parameters as ``model_kwargs``; a custom dataset's labels,
#: metric and tokeniser as ``label_names``, ``metric``, ``tokenizer``): left out of
#: ``settings``.
CONTROL_FIELDS = (
    "run_dir",
    "overwrite",
    "progress",
    "threads",
    "repeats",
    "preset",
    "data_dir",
    "embeddings",
    "test_splits",
    "jit_compile",
    "distribution",
    "devices",
    "logical_cpus",
    "length_multiple",
    "labels",
    "metric",
    "tokenizer",
    "hparams",
)

#: ``{group: [field names]}`` in declaration order.
GROUPS = {}


def _settings_fields():
    return [f for f in dataclasses.fields(TrainConfig) if f.metadata.get(_GROUP)]


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _spec(model):
    if model not in MODEL_SPECS:
        raise ConfigError(
            f"model: unknown model {model!r}; known: {', '.join(sorted(MODEL_SPECS))}",
            field="model",
        )
    return MODEL_SPECS[model]


def _resolve(config):
    """Fill every field the caller did not set from the model's training defaults and its
    preset; resolve ``hparams`` to every hyper-parameter of the model."""

    spec = _spec(config.model)
    if config.dataset not in datasets.DATASETS and config.dataset != datasets.CUSTOM:
        raise ConfigError(
            f"dataset: unknown dataset {config.dataset!r}; known: "
            f"{', '.join(sorted([*datasets.DATASETS, datasets.CUSTOM]))}",
            field="dataset",
        )
    preset = config.dataset if config.preset is None else config.preset
    if preset not in spec.presets and preset not in ("none", config.dataset):
        raise ConfigError(
            f"preset: model {spec.name} has no preset {preset!r}; known: "
            f"{', '.join(sorted(spec.presets)) or '(none)'} or 'none'",
            field="preset",
        )
    layered = dict(spec.training)
    if preset != "none":
        layered.update(spec.presets.get(preset, {}))
    field_names = {f.name for f in _settings_fields()}
    hparams = spec.defaults()
    for name, value in layered.items():
        if name in spec.hparams:
            hparams[name] = value
        elif name in field_names:
            if name not in config.explicit:
                object.__setattr__(config, name, value)
        else:
            raise ConfigError(
                f"{spec.name}'s defaults set {name!r}, which is neither a "
                "setting nor one of its hyper-parameters",
                field=name,
            )
    for name, value in (config.hparams or {}).items():
        if name not in spec.hparams:
            raise ConfigError(
                f"hparams.{name}: model {spec.name} has no hyper-parameter "
                f"{name!r}; its hyper-parameters: "
                f"{', '.join(sorted(spec.hparams))}",
                field=f"hparams.{name}",
            )
        hparams[name] = value
    object.__setattr__(config, "hparams", _FrozenDict(hparams))
    # One warm-up setting: an explicit one wins over a default or preset one.
    if config.warmup_ratio and config.lr_warmup_samples:
        ratio_set = "warmup_ratio" in config.explicit
        samples_set = "lr_warmup_samples" in config.explicit
        if ratio_set and samples_set:
            raise ConfigError(
                "warmup_ratio: warmup_ratio and lr_warmup_samples are both set: give one",
                field="warmup_ratio",
            )
        if samples_set:
            object.__setattr__(config, "warmup_ratio", 0.0)
        elif ratio_set:
            object.__setattr__(config, "lr_warmup_samples", 0)
    for name in ("test_splits", "labels", "devices"):
        value = getattr(config, name)
        if isinstance(value, str):
            value = tuple(v for v in value.split(",") if v)
        object.__setattr__(config, name, tuple(value))


class _FrozenDict(dict):
    """A dict that cannot change (so a frozen config stays frozen) and hashes by content."""

    def _immutable(self, *args, **kwargs):
        raise TypeError("TrainConfig.hparams is read-only: use config.replace(hparams={...})")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _immutable

    def __hash__(self):
        return hash(tuple(sorted(self.items())))

    def __reduce__(self):
        return (dict, (dict(self),))


def _check(condition, field, message):
    if not condition:
        raise ConfigError(f"{field}: {message}", field=field)


def _validate(config):
    """Every value check, in one place: the first failure raises :class:`ConfigError`."""

    def at_least(name, low):
        value = getattr(config, name)
        _check(
            isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low,
            name,
            f"must be >= {low}, got {value!r}",
        )

    def integer(name):
        value = getattr(config, name)
        _check(
            isinstance(value, int) and not isinstance(value, bool),
            name,
            f"must be an integer, got {value!r}",
        )

    for name in (
        "epochs",
        "batch_size",
        "accumulation_steps",
        "repeats",
        "min_df",
        "eval_per_samples",
        "eval_per_samples_warmup",
        "log_per_samples",
    ):
        integer(name)
        at_least(name, 1)
    for name in (
        "max_len",
        "max_samples",
        "lr_decay_samples",
        "lr_warmup_samples",
        "group_by_length",
        "max_negatives",
        "eval_warmup_samples",
        "min_samples",
        "tolerance_samples",
        "threads",
        "logical_cpus",
    ):
        integer(name)
        at_least(name, 0)
    integer("seed")
    for name in ("lr", "min_lr"):  # 0 freezes the weights (a legitimate control run)
        value = getattr(config, name)
        _check(
            isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
            name,
            f"must be >= 0, got {value!r}",
        )
    for name in ("grad_clipping", "max_loss"):
        value = getattr(config, name)
        _check(isinstance(value, (int, float)) and value > 0, name, f"must be > 0, got {value!r}")
    for name in ("weight_decay",):
        at_least(name, 0)
    for name in ("beta1", "beta2", "lr_decay_rate", "plateau_factor"):
        value = getattr(config, name)
        _check(0 < value <= 1, name, f"must be in (0, 1], got {value!r}")
    _check(
        0 <= config.warmup_ratio < 1,
        "warmup_ratio",
        f"must be in [0, 1), got {config.warmup_ratio!r}",
    )
    _check(
        config.optimizer in OPTIMIZERS,
        "optimizer",
        f"unknown optimiser {config.optimizer!r}; known: {', '.join(sorted(OPTIMIZERS))}",
    )
    _check(
        config.lr_schedule in SCHEDULES,
        "lr_schedule",
        f"unknown schedule {config.lr_schedule!r}; known: {', '.join(sorted(SCHEDULES))}",
    )
    _check(
        config.long_pairs in LONG_PAIR_POLICIES,
        "long_pairs",
        f"must be one of {', '.join(LONG_PAIR_POLICIES)}, got {config.long_pairs!r}",
    )
    if config.length_multiple is not None:
        integer("length_multiple")
        at_least("length_multiple", 0)
    _check(
        not (config.jit_compile and config.deterministic),
        "jit_compile",
        "needs deterministic=False (--nodeterministic): Keras silently trains without XLA "
        "while TensorFlow op determinism is enabled",
    )
    _check(
        not (config.jit_compile and config.distribution != "none"),
        "jit_compile",
        f"cannot XLA-compile a {config.distribution} training step (XLA cannot read "
        "variables placed on other devices): train with --nojit_compile",
    )

    _check(
        config.mixed_precision in POLICIES,
        "mixed_precision",
        f"must be one of {', '.join(POLICIES)}, got {config.mixed_precision!r}",
    )

    _check(
        config.distribution in STRATEGIES,
        "distribution",
        f"must be one of {', '.join(STRATEGIES)}, got {config.distribution!r}",
    )
    _check(
        not config.devices or config.distribution == "mirrored",
        "devices",
        f"names the devices of distribution=mirrored, not of {config.distribution}",
    )
    _check(bool(config.eval_split), "eval_split", "must name a split")
    spec = _spec(config.model)
    for name, hparam in spec.hparams.items():
        value = config.hparams[name]
        expected = type(hparam.default)
        ok = (
            isinstance(value, expected)
            and not (expected is int and isinstance(value, bool))
            or (expected is float and isinstance(value, int) and not isinstance(value, bool))
        )
        _check(ok, f"hparams.{name}", f"must be a {expected.__name__}, got {value!r}")
        if hparam.choices is not None:
            _check(
                value in hparam.choices,
                f"hparams.{name}",
                f"must be one of {', '.join(map(str, hparam.choices))}, got {value!r}",
            )
        problem = hparam.range_error(value)
        _check(not problem, f"hparams.{name}", problem)
    if config.dataset == datasets.CUSTOM:
        _check(
            len(config.labels) >= 2,
            "labels",
            "dataset=custom needs at least two label "
            f"names (--labels=a,b,...), got {list(config.labels)}",
        )
        _check(
            len(set(config.labels)) == len(config.labels),
            "labels",
            f"label names must differ, got {list(config.labels)}",
        )
        _check(
            config.metric in CUSTOM_METRICS,
            "metric",
            f"must be one of {', '.join(CUSTOM_METRICS)}, got {config.metric!r}",
        )
        _check(
            config.metric != "f1" or len(config.labels) == 2,
            "metric",
            "f1 needs exactly two labels",
        )
        _check(
            config.tokenizer in TOKENIZERS,
            "tokenizer",
            f"unknown tokeniser {config.tokenizer!r}; known: {', '.join(sorted(TOKENIZERS))}",
        )
    else:
        for name in ("labels",):
            _check(
                not getattr(config, name),
                name,
                f"only for dataset=custom (dataset {config.dataset} has its own)",
            )


def layered_defaults(model: str, dataset: str, preset: str | None = None) -> dict:
    """The value every setting and hyper-parameter takes when none is given for ``model`` on
    ``dataset`` (``preset``: as :class:`TrainConfig`'s): the common defaults, then the model's
    training defaults, then its preset.

    Returns:
        ``{setting: value, ..., "hparams": {name: value}}`` (JSON-ready, as
        :meth:`TrainConfig.as_dict`). For ``dataset="custom"`` it has no ``labels``: a custom
        dataset's label names have no default (the defaults of every other setting do not
        depend on them).

    Raises:
        ConfigError: an unknown model, dataset or preset.
    """

    custom = dataset == datasets.CUSTOM
    # Two placeholder names pass the custom-label check; they are dropped from the result.
    config = TrainConfig(
        model=model, dataset=dataset, preset=preset, **({"labels": ("0", "1")} if custom else {})
    )
    values = config.as_dict()
    if custom:
        del values["labels"]
    values["hparams"] = dict(config.hparams)
    return values


for _f in dataclasses.fields(TrainConfig):
    if _f.metadata.get(_GROUP):
        GROUPS.setdefault(_f.metadata[_GROUP], []).append(_f.name)
