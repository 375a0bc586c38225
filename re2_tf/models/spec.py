"""Model specifications: what the shared training / evaluation / export / benchmark path needs
to know about an architecture, registered once per architecture.

Each model module (``re2_tf/models/<name>.py``) defines one :class:`ModelSpec` and registers it
with :func:`register`. The scripts look the spec up by ``--model`` and never branch on the
model's name: every difference between architectures lives in its spec.

A spec holds

- ``build``: ``build(num_classes, vocab_sizes, embeddings, **hparams) -> keras.Model``, where
  ``vocab_sizes`` maps featuriser kinds (``word_ids``, ``char_ids``, ...) to vocabulary sizes
  and ``embeddings`` is a float32 ``[vocab_sizes["word_ids"], dim]`` matrix of pretrained word
  vectors or ``None``;
- ``hparams``: the architecture's hyper-parameters (:class:`HParam`: its default -- the
  paper's where it states one -- help text, choices), which become command-line flags of
  ``re2-train`` (:mod:`re2_tf.cli.train`)
  under their own names (``--blocks=3``), defined only for the selected ``--model``;
- ``presets``: per-dataset settings (``{dataset: {flag: value}}``) that replace flag defaults
  when ``--dataset`` names that dataset (``--preset=none`` switches them off). They may set
  hyper-parameters and any common training flag (batch size, learning rate, max_len, ...);
- ``training``: the architecture's own defaults for the common training flags (its optimiser
  and schedule recipe, batch size, ...), applied before the preset;
- ``features``: the input featurisers it consumes (kinds of :mod:`re2_tf.data.features`), with
  their options;
- ``task_loss``: the *name* of its task loss (or of the hyper-parameter that picks it). The
  spec only names it: training resolves and validates the name
  (:func:`re2_tf.training.losses.resolve_task_loss`), and the network's output kind
  (``logits`` ``[batch, num_classes]`` or ``score`` ``[batch]``) is that loss's
  (:func:`re2_tf.training.losses.output_kind`). This module imports nothing from
  :mod:`re2_tf.training`;
- ``export_backend``: the name of the serving backend in :mod:`re2_tf.serving.backends`;
- ``benchmark``: named hyper-parameter sets timed by ``re2-bench --model=<name>``
  (RE2: Table 5's 1/2/3-block models);
- ``analysis``: what ``re2-analyze`` (:mod:`re2_tf.analysis`) reads from the trained graph:
  which named layers, called with which option, append which attention / alignment maps
  (:class:`Analysis`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "ANALYSIS_KINDS",
    "Analysis",
    "AnalysisLayer",
    "AnalysisOutput",
    "HParam",
    "ModelSpec",
    "MODEL_SPECS",
    "WORD_EMBEDDING_WEIGHTS",
    "check_embeddings",
    "check_hparam",
    "count_parameters",
    "model_names",
    "register",
    "registered",
    "get_spec",
    "unregister",
]

#: Paths of the weights that :func:`count_parameters` leaves out: the word embedding of the
#: word-based models (``Embedding`` layer ``embedding``) and BERT's word-piece (token)
#: embedding (keras-hub's ``token_embedding``).
WORD_EMBEDDING_WEIGHTS = ("embedding/embeddings", "token_embedding/embeddings")


def count_parameters(model, include_embedding=False):
    """Number of trainable scalars in ``model`` (int), the word embedding left out by default.

    This is the RE2 paper's "Params" column (Table 1: 2.8M on SNLI, embeddings excluded),
    applied to every architecture: the excluded weight is the trainable word embedding
    matrix (:data:`WORD_EMBEDDING_WEIGHTS`): RE2, DRCN, FITN and Match-SRNN's word
    embedding (when trainable), BERT's word-piece embedding (``30522 x 384`` for MiniLM-L6).
    Everything else counts: character embeddings (DRCN, FITN), BERT's position and segment
    embeddings and their layer norm, weight-norm ``g`` vectors, biases and alignment
    temperatures. A frozen embedding (``--embeddings`` with fixed vectors) is not trainable
    and never counted.
    """
    total = 0
    for weight in model.trainable_weights:
        if not include_embedding and weight.path in WORD_EMBEDDING_WEIGHTS:
            continue
        total += int(math.prod(weight.shape))
    return total


def check_embeddings(embeddings, vocab_size):
    """Pretrained word vectors as float32 ``[vocab_size, dim]`` (the builders' ``embeddings``).

    Raises:
        ValueError: ``embeddings must have shape [vocab_size=N, dim], got ...``.
    """

    embeddings = np.asarray(embeddings, dtype="float32")
    if embeddings.ndim != 2 or embeddings.shape[0] != vocab_size:
        raise ValueError(
            f"embeddings must have shape [vocab_size={vocab_size}, dim], got {embeddings.shape}"
        )
    return embeddings


@dataclasses.dataclass(frozen=True)
class HParam:
    """One hyper-parameter: its default, help text, allowed values and numeric range.

    The flag type follows the default's Python type (``bool``, ``int``, ``float``, ``str``).

    Attributes:
        default: the value a run takes when nothing sets it.
        help: the flag's help text.
        choices: for strings, the allowed values (``None``: any).
        low, high: for numbers, the inclusive bounds (``None``: unbounded on that side).
        high_open: the upper bound is excluded (``[low, high)``: a drop rate in ``[0, 1)``).

    Raises:
        ValueError: (at declaration) a default outside ``choices`` or the range.
    """

    default: Any
    help: str
    choices: tuple | None = None
    low: float | None = None
    high: float | None = None
    high_open: bool = False

    def __post_init__(self):
        if self.choices is not None and self.default not in self.choices:
            raise ValueError(f"default {self.default!r} not in {self.choices}")
        if (self.low is not None or self.high is not None) and (
            isinstance(self.default, bool) or not isinstance(self.default, (int, float))
        ):
            raise ValueError(f"a range needs a numeric default, got {self.default!r}")
        if self.high_open and self.high is None:
            raise ValueError("high_open needs a high bound")
        problem = self.range_error(self.default)
        if problem:
            raise ValueError(f"default {problem}")

    def range_text(self) -> str:
        """The range as text: ``[1, 5]``, ``[0, 1)``, ``>= 1``, ``<= 9``; ``""`` for none."""
        if self.low is not None and self.high is not None:
            return f"[{self.low}, {self.high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f">= {self.low}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high}"
        return ""

    def range_error(self, value) -> str:
        """``""`` when ``value`` is in range (or there is no range), else what is wrong:
        ``"must be an integer in [1, 5], got 9"`` (``"must be in [0, 1), ..."`` for floats)."""
        if self.low is None and self.high is None:
            return ""
        integer = isinstance(self.default, int)
        try:
            number = float(value)
            inside = (
                not isinstance(value, bool)
                and (not integer or isinstance(value, numbers.Integral))
                and (self.low is None or number >= self.low)
                and (
                    self.high is None
                    or (number < self.high if self.high_open else number <= self.high)
                )
            )
        except (TypeError, ValueError):
            inside = False
        if inside:
            return ""
        kind = "an integer " if integer else ""
        bounds = self.range_text()
        where = f"in {bounds}" if bounds.startswith("[") else bounds
        return f"must be {kind}{where}, got {value!r}"


def check_hparam(hparams: Mapping[str, HParam], name: str, value) -> None:
    """Check ``value`` of hyper-parameter ``name`` against its declaration in ``hparams``
    (choices and range): the builders' check for direct Python callers (training checks the
    same declarations earlier, in :class:`re2_tf.TrainConfig`).

    Raises:
        ValueError: ``"<name> must be one of (...), got ..."`` or
            ``"<name> must be an integer in [1, 5], got 9"``.
    """
    hparam = hparams[name]
    if hparam.choices is not None and value not in hparam.choices:
        raise ValueError(f"{name} must be one of {hparam.choices}, got {value!r}")
    problem = hparam.range_error(value)
    if problem:
        raise ValueError(f"{name} {problem}")


#: What an :class:`AnalysisOutput` holds per pair (``rows``, ``cols``: the lengths of its two
#: token axes; ``units``: a layer's width), and what :func:`re2_tf.analysis.attention_maps`
#: makes of it:
#:
#: - ``attention``: float ``[rows, cols]`` weights summing to 1 over ``normalized_axis``
#:   (an alignment / attention map), returned as is;
#: - ``positions``: int ``[units]``, per feature the position along ``axes[0]`` of a max
#:   pooling's maximum, returned with the rate of each position ``[rows]`` (count / units);
#: - ``states``: float ``[rows, cols, units]`` hidden states, returned with the map of one
#:   chosen unit ``[rows, cols]``;
#: - ``gates``: float ``[rows, cols, 4, units]`` softmaxed gates (input, left, top,
#:   diagonal) of a spatial RNN, returned with the path traced back through the largest
#:   gates of the chosen unit, int ``[steps, 2]``.
ANALYSIS_KINDS = ("attention", "positions", "states", "gates")


@dataclasses.dataclass(frozen=True)
class AnalysisOutput:
    """One output a layer appends to its usual outputs when called with the analysis option.

    Attributes:
        name: the map's name; ``{n}`` is replaced by the layer name's ``n`` group (the
            block, layer or round number, as the model numbers it).
        kind: one of :data:`ANALYSIS_KINDS`.
        axes: the token axes of the map's first dimensions (``text1``, ``text2``, or a
            name the spec's :attr:`Analysis.tokens` gives).
        call: which call of a shared layer appends it (0 = the first in the graph; the
            pooling layers are called on text1 first, then on text2).
        normalized_axis: ``attention`` only: the axis (0 rows, 1 columns) the weights sum to 1
            over.
        mean: ``attention`` only: the name of a map averaging every output with the same
            ``mean`` (DRCN: the co-attention averaged over layers).
        overlay: ``gates`` only: the ``states`` map the traced path is drawn on.
        description: what it is, with the paper's equation (plot titles, JSON).
    """

    name: str
    kind: str
    axes: tuple = ("text1", "text2")
    call: int = 0
    normalized_axis: int | None = None
    mean: str | None = None
    overlay: str | None = None
    description: str = ""

    def __post_init__(self):
        if self.kind not in ANALYSIS_KINDS:
            raise ValueError(f"kind must be one of {ANALYSIS_KINDS}, got {self.kind!r}")
        if (self.kind == "attention") != (self.normalized_axis is not None):
            raise ValueError("normalized_axis is given for (and only for) attention maps")


@dataclasses.dataclass(frozen=True)
class AnalysisLayer:
    """Layers of the trained graph whose maps an analysis reads.

    Attributes:
        layer: a regular expression matched against whole layer names (``re.fullmatch``);
            a group ``(?P<n>...)`` numbers the outputs' names.
        options: the call keyword arguments that make the layer append its maps (e.g.
            ``{"return_attention_scores": True}``); its usual outputs come first, unchanged.
        outputs: :class:`AnalysisOutput` s, in the order the layer appends them (per call).
    """

    layer: str
    options: Mapping[str, Any]
    outputs: tuple


@dataclasses.dataclass(frozen=True)
class Analysis:
    """What :func:`re2_tf.analysis.attention_maps` reads from a model (``ModelSpec.analysis``).

    Attributes:
        layers: :class:`AnalysisLayer` s.
        tokens: ``tokens(featurizers, features, tokens1, tokens2) -> {axis: [str]}``, the
            labels of the token axes from the featurised pair (``features``: ``{input name:
            array [1, ...]}``); ``None``: ``{"text1": tokens1, "text2": tokens2}``.
    """

    layers: tuple
    tokens: Callable | None = None


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Everything the shared path needs to train, evaluate, export and benchmark a model.

    Attributes:
        name: registry key and ``--model`` value.
        build: ``build(num_classes, vocab_sizes, embeddings, **hparams) -> keras.Model``.
        hparams: ``{name: HParam}``; names must not clash with the common training flags.
        features: ``{featuriser kind: options}`` (options may name hyper-parameters as
            ``"hparam:<name>"`` to take their value from the resolved hyper-parameters).
        presets: ``{dataset: {flag: value}}``.
        training: defaults of common training flags for this model.
        task_loss: a task loss's name (a key of :data:`re2_tf.training.losses.TASK_LOSSES`,
            checked when training resolves it), or ``"hparam:<name>"`` when a hyper-parameter
            chooses it (Match-SRNN: classification, ranking or regression); see
            :meth:`task_loss_name`.
        export_backend: name in :data:`re2_tf.serving.backends.BACKENDS`.
        benchmark: ``{row label: hparams}`` timed by ``re2-bench``.
        component_benchmarks: ``{title: fn}``: further timings ``re2-bench`` prints
            for this model, ``fn(batch=..., batches=..., warmup=...) -> Markdown table``
            (Match-SRNN: the wavefront spatial GRU against a cell-by-cell scan).
        reference: paper (and release) the model follows.
        analysis: :class:`Analysis`, the maps ``re2-analyze`` reads (``None``: none).
        tiny: ``{hparam: value}``, the smallest widths that still build the architecture:
            the settings of the tests' quick builds and two-update runs (the rest are the
            defaults).

    Raises:
        ValueError: a ``tiny`` setting that names no hyper-parameter or is out of range.
    """

    name: str
    build: Callable
    hparams: Mapping[str, HParam]
    features: Mapping[str, Mapping[str, Any]]
    presets: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    training: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    task_loss: str = "softmax_cross_entropy"
    export_backend: str = "keras"
    benchmark: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    component_benchmarks: Mapping[str, Callable[..., str]] = dataclasses.field(default_factory=dict)
    reference: str = ""
    analysis: Analysis | None = None
    tiny: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name, value in self.tiny.items():
            if name not in self.hparams:
                raise ValueError(f"{self.name}: tiny setting {name!r} is no hyper-parameter")
            check_hparam(self.hparams, name, value)

    def defaults(self) -> dict:
        """``{hparam: default}``."""
        return {name: h.default for name, h in self.hparams.items()}

    def task_loss_name(self, hparams: Mapping[str, Any] | None = None) -> str:
        """The name of the task loss this model trains with under ``hparams`` (missing ones
        take their defaults): ``task_loss``, or the hyper-parameter's value when ``task_loss``
        is ``"hparam:<name>"``.

        The name is not checked here: :func:`re2_tf.training.losses.resolve_task_loss` turns
        it into a loss and rejects unknown names.
        """
        name = self.task_loss
        if name.startswith("hparam:"):
            name = dict(self.defaults(), **(hparams or {}))[name.split(":", 1)[1]]
        return name

    def feature_options(self, hparams: Mapping[str, Any]) -> dict:
        """``features`` with ``"hparam:<name>"`` values (at any depth of the options)
        resolved from ``hparams``."""

        def resolve(value):
            if isinstance(value, Mapping):
                return {k: resolve(v) for k, v in value.items()}
            if isinstance(value, str) and value.startswith("hparam:"):
                return hparams[value.split(":", 1)[1]]
            return value

        return {kind: resolve(options) for kind, options in self.features.items()}


MODEL_SPECS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add ``spec`` to :data:`MODEL_SPECS` (once per name)."""
    if spec.name in MODEL_SPECS and MODEL_SPECS[spec.name] is not spec:
        raise ValueError(f"model {spec.name!r} is registered twice")
    MODEL_SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> ModelSpec:
    """Remove model ``name`` from :data:`MODEL_SPECS` and return its spec.

    Raises:
        KeyError: no model ``name`` is registered.
    """
    return MODEL_SPECS.pop(name)


@contextlib.contextmanager
def registered(spec: ModelSpec):
    """``with registered(spec):`` -- ``spec`` is a registered model inside the block only
    (a model defined for a test or an experiment)."""
    # lazy: re2_tf.models (the registry package) imports this module first
    import re2_tf.models  # noqa: F401  (registers every model first, so they keep their order)

    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name)


def model_names() -> tuple:
    """Names of the registered models, in registration order (the order of
    :mod:`re2_tf.models`' imports, then models registered later): every list of models
    (``re2-bench``'s, ``python -m re2_lab.cli.compare``'s, the throughput command's) is this one."""
    # lazy: re2_tf.models (the registry package) imports this module first
    import re2_tf.models  # noqa: F401  (registers every model)

    return tuple(MODEL_SPECS)


def get_spec(name: str) -> ModelSpec:
    """The registered spec ``name``. Raises ``KeyError`` naming the known models."""
    # lazy: re2_tf.models (the registry package) imports this module first
    import re2_tf.models  # noqa: F401  (registers every model)

    if name not in MODEL_SPECS:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODEL_SPECS)}")
    return MODEL_SPECS[name]
