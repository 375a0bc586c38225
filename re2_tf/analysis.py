"""Attention and alignment maps of a trained model, read from its own graph.

    from re2_tf.analysis import attention_maps, save_maps

    maps = attention_maps("checkpoints/sample-re2", "A man sleeps .", "A person rests .")
    maps.arrays["block0_over_text2"]          # float32 [len1, len2], RE2 Eq. 3
    maps.prediction                           # {"label": ..., "probabilities": {...}}
    save_maps(maps, "analysis/")              # analysis.json and one heat-map PNG per map

What a model exposes is its spec's :attr:`re2_tf.models.spec.ModelSpec.analysis`: named layers
of the trained graph, the call option that makes each append its maps to its usual outputs,
and what each appended output is (:class:`re2_tf.models.spec.AnalysisOutput`).
:func:`analysis_model` re-runs the trained graph (``keras.models.clone_model`` with the same
layer objects, so the same weights) calling those layers with their option, and returns a
``keras.Model`` whose outputs are the model's output and every map; nothing is recomputed
outside the layers. ``re2-analyze`` / ``python -m re2_tf.analyze``
(:mod:`re2_tf.cli.analyze`) is the command.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import textwrap
from pathlib import Path

import keras
import numpy as np

from re2_tf import runs
from re2_tf.data.pipeline import encode_examples
from re2_tf.data.readers import PairExample
from re2_tf.data.tokenization import get_tokenizer
from re2_tf.models.spec import ModelSpec, get_spec

__all__ = [
    "AttentionMaps",
    "analysis_model",
    "attention_maps",
    "max_pool_rate",
    "save_maps",
    "trace_path",
]

#: Index of each predecessor in the gates' axis of a ``gates`` output (Match-SRNN Eq. 3:
#: ``z_i, z_l, z_t, z_d``) and the step it takes back.
_PREDECESSORS = ((1, (0, -1)), (2, (-1, 0)), (3, (-1, -1)))  # left, top, diagonal


def _spec_of(model, spec):
    if isinstance(spec, ModelSpec):
        resolved = spec
    else:
        resolved = get_spec(spec if spec is not None else model.name)
    if resolved.analysis is None:
        raise ValueError(f"model {resolved.name!r} declares no analysis (its spec's 'analysis')")
    return resolved


def _with_maps_class():
    class WithMaps(keras.layers.Layer):
        """``inner`` called with ``options`` (the same layer object: the same weights)."""

        def __init__(self, inner, options):
            super().__init__(name=inner.name, dtype=inner.dtype_policy)
            self.inner, self.options = inner, dict(options)
            self.built = True

        def call(self, *args, **kwargs):
            return self.inner(*args, **{**kwargs, **self.options})

    return WithMaps


def analysis_model(model, spec=None):
    """A ``keras.Model`` over the trained graph of ``model`` that also outputs its maps.

    The graph is re-run layer by layer (``keras.models.clone_model`` with each layer object
    itself, so every weight is shared); each layer that the spec's
    :attr:`~re2_tf.models.spec.Analysis.layers` name is called with its option, and the
    outputs it appends are collected, its usual outputs passed on unchanged.

    Args:
        model: a functional ``keras.Model`` of a registered architecture (e.g.
            :func:`re2_tf.runs.load_best_model`).
        spec: a :class:`re2_tf.models.spec.ModelSpec` or a model name; ``None``: the spec
            named ``model.name`` (the builders' default names).

    Returns:
        ``keras.Model`` with ``model``'s inputs and a dict of outputs: ``"output"`` (the
        model's own output: logits ``[batch, classes]`` or a score) and one entry per map
        named by its :class:`~re2_tf.models.spec.AnalysisOutput` (``{n}`` filled in), with
        the batch axis first (``attention`` ``[batch, rows, cols]``; ``positions`` int32
        ``[batch, units]``; ``states`` ``[batch, rows, cols, units]``; ``gates``
        ``[batch, rows, cols, 4, units]``).

    Raises:
        KeyError: no spec of that name. ValueError: the spec declares no analysis, or no
        layer of ``model`` matches it.
    """

    spec = _spec_of(model, spec)
    with_maps = _with_maps_class()
    patterns = [(re.compile(entry.layer), entry) for entry in spec.analysis.layers]
    calls, found = {}, {}

    def entry_of(layer):
        return next(
            ((p.fullmatch(layer.name), e) for p, e in patterns if p.fullmatch(layer.name)), None
        )

    def clone_function(layer):
        # A matched layer is wrapped, not called with its option directly: Keras expects every
        # call of one layer object in a graph to give the same number of outputs.
        match = entry_of(layer)
        return layer if match is None else with_maps(layer, match[1].options)

    def call_function(layer, *args, **kwargs):
        if not isinstance(layer, with_maps):
            return layer(*args, **kwargs)
        names, entry = entry_of(layer.inner)
        call = calls[layer.name] = calls.get(layer.name, -1) + 1
        extra = sum(1 for o in entry.outputs if o.call == 0)
        # The option replaces the graph's own value of it (FITN passes it as False).
        kwargs = {k: v for k, v in kwargs.items() if k not in entry.options}
        result = tuple(layer(*args, **kwargs))
        number = names.groupdict().get("n") or ""
        outputs = [o for o in entry.outputs if o.call == call]
        for output, tensor in zip(outputs, result[len(result) - extra :]):
            found[output.name.format(n=number)] = tensor
        kept = result[: len(result) - extra]
        return kept[0] if len(kept) == 1 else kept

    clone = keras.models.clone_model(
        model, clone_function=clone_function, call_function=call_function
    )
    if not found:
        raise ValueError(
            f"no layer of model {model.name!r} matches the {spec.name!r} analysis "
            f"({[e.layer for e in spec.analysis.layers]})"
        )
    output = clone.output
    if isinstance(output, dict):  # a builder's return_attention model: its logits
        output = output.get("logits", next(iter(output.values())))
    return keras.Model(clone.inputs, {"output": output, **found}, name=f"{model.name}_analysis")


def trace_path(gates):
    """Back-trace a path through a spatial GRU's largest gates (Match-SRNN §6.2).

    From the last cell ``(rows - 1, cols - 1)`` step to the predecessor -- left
    ``(i, j - 1)``, top ``(i - 1, j)`` or diagonal ``(i - 1, j - 1)``, those inside the grid
    -- whose gate (its weight ``z_l``, ``z_t`` or ``z_d`` in ``h_ij``, Eq. 3) is largest, until
    ``(0, 0)``. Ties go to the first of left, top, diagonal.

    Args:
        gates: float ``[rows, cols, 4]``: per cell the gates ``z_i, z_l, z_t, z_d`` of one unit.

    Returns:
        int64 ``[steps, 2]``: the cells ``(i, j)`` (0-based) from ``(rows - 1, cols - 1)`` to
        ``(0, 0)``, each a left, top or diagonal neighbour of the one before; ``[0, 2]`` for an
        empty grid.

    Raises:
        ValueError: ``gates`` not of shape ``[rows, cols, 4]``.

    Reference: Wan et al., "Match-SRNN", IJCAI 2016, Eq. 3 and §6.2 (visualisation).
    """
    gates = np.asarray(gates)
    if gates.ndim != 3 or gates.shape[2] != 4:
        raise ValueError(f"gates must be [rows, cols, 4], got shape {gates.shape}")
    rows, cols = gates.shape[:2]
    if rows == 0 or cols == 0:
        return np.zeros((0, 2), np.int64)
    i, j = rows - 1, cols - 1
    path = [(i, j)]
    while (i, j) != (0, 0):
        options = [
            (gates[i, j, gate], (i + di, j + dj))
            for gate, (di, dj) in _PREDECESSORS
            if i + di >= 0 and j + dj >= 0
        ]
        best = max(range(len(options)), key=lambda k: (options[k][0], -k))
        i, j = options[best][1]
        path.append((i, j))
    return np.asarray(path, np.int64)


def max_pool_rate(positions, length):
    """How often each position is where a max pooling took a feature's maximum.

    Args:
        positions: int ``[units]``, per feature the position (0-based) of its maximum, -1
            for an empty text (:class:`re2_tf.layers.MaskedMaxPooling`'s
            ``return_positions``).
        length: int >= 0, the text's number of tokens.

    Returns:
        float32 ``[length]``: per position the fraction of the ``units`` features pooled from
        it (sums to 1 for a non-empty text; all 0 for an empty one).
    """
    positions = np.asarray(positions).reshape(-1)
    valid = positions[(positions >= 0) & (positions < length)]
    counts = np.bincount(valid, minlength=length)[:length]
    return (counts / max(positions.size, 1)).astype("float32")


@dataclasses.dataclass
class AttentionMaps:
    """The maps of one text pair (:func:`attention_maps`).

    Attributes:
        model: the spec's name.
        tokens: ``{axis: [str]}``, the labels of every token axis (``text1``, ``text2``, or the
            spec's own, e.g. BERT's word pieces ``pieces_a``, ``pieces_b``).
        arrays: ``{name: np.ndarray}``, cropped to the true tokens: ``attention`` maps float32
            ``[rows, cols]`` (and their ``mean``s); ``positions``: the rate float32
            ``[rows]`` under the output's name and the raw int32 positions ``[units]`` under
            ``<name>_positions``; ``states``: float32 ``[rows, cols]`` of unit ``dimension``
            under the name and all units ``[rows, cols, units]`` under ``<name>_all``;
            ``gates``: the traced path int64 ``[steps, 2]`` under the name and the unit's gates
            float32 ``[rows, cols, 4]`` under ``<name>_gates``.
        axes: ``{name: (axis, ...)}``: the token axes of each array's leading dimensions.
        kinds: ``{name: kind}`` (``attention``, ``rate``, ``states``, ``path``, ``raw``).
        descriptions: ``{name: str}``, what each map is (with the paper's equation).
        overlays: ``{states map: path name}``: a path to draw on a map.
        prediction: ``{"label": str, "probabilities": {label: float}}`` for class logits,
            ``{"score": float}`` for a one-score model.
        dimension: the unit of ``states`` / ``gates`` maps shown.
    """

    model: str
    tokens: dict
    arrays: dict
    axes: dict
    kinds: dict
    descriptions: dict
    overlays: dict
    prediction: dict
    dimension: int = 0

    def to_json(self) -> dict:
        """A JSON-serialisable dict: the prediction, the tokens and every array as nested
        lists with its kind, axes, shape and description."""
        return {
            "model": self.model,
            "prediction": self.prediction,
            "tokens": self.tokens,
            "dimension": self.dimension,
            "maps": {
                name: {
                    "kind": self.kinds[name],
                    "axes": list(self.axes[name]),
                    "shape": list(array.shape),
                    "description": self.descriptions.get(name, ""),
                    "values": array.tolist(),
                }
                for name, array in self.arrays.items()
            },
        }


def _load_run(run_dir):
    config = runs.load_config(run_dir)
    return runs.load_best_model(run_dir), runs.load_featurizers(run_dir), config


def _featurise(featurizers, tokens1, tokens2):
    """``{input name: array [1, max(len, 1), ...]}``: the pair encoded as the data pipeline
    encodes it; an empty text becomes one padding position (an all-padding row)."""

    encoded = encode_examples(
        [PairExample(" ".join(tokens1), " ".join(tokens2), None)], list(featurizers)
    )
    features = {}
    for name, arrays in encoded.features.items():
        spec = encoded.specs[name]
        array = np.asarray(arrays[0], dtype=spec.dtype)
        if array.shape[0] == 0:
            array = np.full((1,) + tuple(spec.inner_shape), spec.pad_value, dtype=spec.dtype)
        features[name] = array[None]
    return features


def _prediction(output, label_names):
    output = np.asarray(output, dtype="float64").reshape(-1)
    if output.size == 1:
        return {"score": float(output[0])}
    probabilities = np.exp(output - output.max())
    probabilities /= probabilities.sum()
    names = list(label_names) if label_names else [str(k) for k in range(output.size)]
    if len(names) != output.size:
        raise ValueError(f"{len(names)} label names for {output.size} logits")
    return {
        "label": names[int(np.argmax(output))],
        "probabilities": {n: float(p) for n, p in zip(names, probabilities)},
    }


def attention_maps(
    model,
    text1,
    text2,
    *,
    featurizers=None,
    spec=None,
    label_names=None,
    tokenizer=None,
    dimension=0,
):
    """Every attention / alignment map of a model on one text pair, and its prediction.

    Which maps a model gives is its spec's ``analysis``: RE2 the normalised ``e_ij`` of
    Eq. 3 per block, both directions; DRCN the co-attention of Eq. 5 per layer (both
    directions), their averages over layers and the per-word rate of max-pooled positions;
    FITN the memory-based attention (Eq. 8-9) per round, both directions; Match-SRNN the
    spatial GRU's ``h_ij`` (Eq. 3) of unit ``dimension`` and the path traced back through its
    largest gates (§6.2); BERT+MatchLSTM the MatchLSTM attention (Eq. 1) of each direction
    over word pieces.

    Args:
        model: a run directory (``str`` or ``os.PathLike``: its best checkpoint, featurisers,
            tokeniser and label names are used) or a loaded functional ``keras.Model``.
        text1, text2: ``str``, the raw texts (tokenised by the run's tokeniser, or by
            ``tokenizer``); an empty text is allowed (its maps have 0 rows or columns and no
            NaN).
        featurizers: for a ``keras.Model``: the run's featurisers
            (:func:`re2_tf.runs.load_featurizers`); required then.
        spec: the model's :class:`~re2_tf.models.spec.ModelSpec` or name; default the run's
            model, or ``model.name``.
        label_names: class names in logit order (default the run's; else ``"0"``, ``"1"``...).
        tokenizer: ``str -> list[str]``; default the run's tokeniser, else whitespace.
        dimension: int, the unit of ``states`` and ``gates`` maps (Match-SRNN's hidden
            dimension).

    Returns:
        :class:`AttentionMaps`: NumPy arrays cropped to the true tokens (shapes there).

    Raises:
        FileNotFoundError: not a run directory, or no best checkpoint.
        ValueError: a ``keras.Model`` without ``featurizers``, a spec without analysis,
            ``dimension`` outside the layer's units, non-``str`` texts.
        KeyError: an unknown model name.
    """

    if not isinstance(text1, str) or not isinstance(text2, str):
        raise ValueError("text1 and text2 must be str")
    if isinstance(model, (str, os.PathLike)):
        model, run_featurizers, config = _load_run(model)
        featurizers = featurizers if featurizers is not None else run_featurizers
        spec = spec if spec is not None else config.model
        label_names = label_names if label_names is not None else config.label_names
        if tokenizer is None:
            tokenizer = get_tokenizer(config.tokenizer, lower=config.lower)
    if featurizers is None:
        raise ValueError("a keras.Model needs featurizers=<its run's featurisers>")
    tokenizer = tokenizer or get_tokenizer("whitespace")
    spec = _spec_of(model, spec)
    tokens1, tokens2 = list(tokenizer(text1)), list(tokenizer(text2))
    features = _featurise(featurizers, tokens1, tokens2)
    if spec.analysis.tokens is not None:
        tokens = spec.analysis.tokens(featurizers, features, tokens1, tokens2)
    else:
        tokens = {"text1": tokens1, "text2": tokens2}
    network = analysis_model(model, spec)
    inputs = (
        {name: features[name] for name in network.input}
        if isinstance(network.input, dict)
        else [features[t.name] for t in network.inputs]
    )
    raw = {k: np.asarray(v)[0] for k, v in network(inputs, training=False).items()}

    result = AttentionMaps(
        model=spec.name,
        tokens=tokens,
        arrays={},
        axes={},
        kinds={},
        descriptions={},
        overlays={},
        prediction=_prediction(raw["output"], label_names),
        dimension=int(dimension),
    )
    means = {}

    def add(name, array, axes, kind, description=""):
        result.arrays[name] = array
        result.axes[name] = tuple(axes)
        result.kinds[name] = kind
        result.descriptions[name] = description

    for entry in spec.analysis.layers:
        for output in entry.outputs:
            for name in sorted(raw):
                if not _is_instance(output.name, name):
                    continue
                crop = tuple(slice(0, len(tokens[axis])) for axis in output.axes)
                array = raw[name]
                if output.kind == "attention":
                    array = array[crop].astype("float32")
                    add(name, array, output.axes, "attention", output.description)
                    if output.mean:
                        means.setdefault(output.mean, (output, []))[1].append(array)
                elif output.kind == "positions":
                    rate = max_pool_rate(array, len(tokens[output.axes[0]]))
                    add(name, rate, output.axes, "rate", output.description)
                    add(f"{name}_positions", array.astype("int32"), (), "raw")
                else:
                    units = array.shape[-1]
                    if not 0 <= int(dimension) < units:
                        raise ValueError(f"dimension must be in [0, {units}), got {dimension}")
                    array = array[crop][..., int(dimension)].astype("float32")
                    if output.kind == "states":
                        add(name, array, output.axes, "states", output.description)
                        add(f"{name}_all", raw[name][crop].astype("float32"), output.axes, "raw")
                    else:
                        add(name, trace_path(array), (), "path", output.description)
                        add(f"{name}_gates", array, output.axes, "raw")
                        if output.overlay:
                            result.overlays[output.overlay.format(n=_number(output.name, name))] = (
                                name
                            )
    for mean, (output, arrays) in means.items():
        add(
            mean,
            np.mean(arrays, axis=0).astype("float32"),
            output.axes,
            "attention",
            f"mean over {len(arrays)} of: {output.description}",
        )
    return result


def _template(name):
    return re.compile(re.escape(name).replace(re.escape("{n}"), r"(?P<n>\d*)"))


def _is_instance(template, name):
    return _template(template).fullmatch(name) is not None


def _number(template, name):
    match = _template(template).fullmatch(name)
    return (match.groupdict().get("n") or "") if match else ""


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def save_maps(maps, out_dir, plots=True):
    """Write ``analysis.json`` (:meth:`AttentionMaps.to_json`) and a heat-map PNG per map.

    Each ``attention``, ``rate`` and ``states`` map gets ``<out_dir>/<name>.png`` with the
    tokens on its axes (rows: the first axis, columns: the second), a traced path drawn on
    the map it belongs to. A map with an empty axis (an empty text) gets no PNG.

    Args:
        maps: :class:`AttentionMaps`.
        out_dir: directory (created with its parents).
        plots: bool; False writes the JSON only.

    Returns:
        ``[Path]`` of the files written, the JSON first.

    Raises:
        ImportError: ``plots`` without matplotlib (the message names the ``plot`` extra).
        OSError: ``out_dir`` cannot be written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "analysis.json"
    json_path.write_text(json.dumps(maps.to_json(), ensure_ascii=False) + "\n", encoding="utf-8")
    written = [json_path]
    if not plots:
        return written
    try:
        import matplotlib  # lazy: matplotlib is the optional plot extra
    except ImportError as error:
        raise ImportError(
            f"heat-map PNGs need matplotlib: pip install 're2_tf[plot]' ({error})"
        ) from error

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # lazy: the plot extra

    for name, array in maps.arrays.items():
        kind = maps.kinds[name]
        if kind not in ("attention", "rate", "states") or 0 in array.shape:
            continue
        axes = maps.axes[name]
        grid = array[None, :] if kind == "rate" else array
        rows = [""] if kind == "rate" else maps.tokens[axes[0]]
        cols = maps.tokens[axes[-1]]
        figure, ax = plt.subplots(
            figsize=(max(4.0, 0.45 * len(cols) + 2.5), max(2.0, 0.45 * len(rows) + 2.0))
        )
        image = ax.imshow(grid, cmap="viridis", aspect="auto")
        figure.colorbar(image, ax=ax)
        ax.set_xticks(range(len(cols)), cols, rotation=90)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xlabel(axes[-1])
        if kind != "rate":
            ax.set_ylabel(axes[0])
        path = maps.overlays.get(name)
        if path is not None and len(maps.arrays[path]):
            cells = maps.arrays[path]
            ax.plot(cells[:, 1], cells[:, 0], color="red", marker="o", linewidth=1.5)
        title = f"{name}: {maps.descriptions.get(name, '')}"
        if kind == "states":
            title += f", unit {maps.dimension}"
        ax.set_title("\n".join(textwrap.wrap(title, 60)), fontsize=8)
        figure.tight_layout()
        png = out_dir / f"{_safe(name)}.png"
        figure.savefig(png, dpi=100)
        plt.close(figure)
        written.append(png)
    return written
