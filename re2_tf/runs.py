"""The layout of a training run directory, shared by training, evaluation and export.

A run directory ``checkpoints/<name>/`` holds:

=====================  ======================================================================
``flags.txt``          the absl flags the run was started with (a flagfile: rerun with
                       ``--flagfile=<run>/flags.txt``)
``config.json``        every resolved setting that changes results: model name and
                       hyper-parameters, features, dataset, label names, tokeniser, metric,
                       data and vectors files (path, size, mtime), training settings, seed
``vocab.txt``          the word vocabulary, one token per line, line number = token id (only
                       models that take word ids; not BERT+MatchLSTM)
``embeddings.npy``     cached embedding matrix (only with ``--embeddings``)
``vocab_cache.json``   the settings the vocabulary / embedding cache was built with (with
                       ``vocab.txt``)
``chars.txt`` ...      other featurisers' vocabularies (see ``re2_tf.data.features``)
``best.keras``         the best checkpoint by the dataset's metric (a full Keras model)
``backup/``            training state at the last evaluation point (weights but not a frozen
                       embedding matrix, optimizer state, routine state), for resuming
``train.log``          the run's log; each attempt's first lines name its data and its CPU
                       (model, vector units, cores, intra-op threads)
``tensorboard/``       TensorBoard summaries
``results.json``       final metrics of the best checkpoint, and ``data``: the dataset and
                       its fingerprint (:func:`data_identity`)
=====================  ======================================================================

``--repeats=N`` trains seeds under ``<run_dir>/seed<k>/`` and writes, in ``<run_dir>``,
``results.md`` and a ``results.json`` holding the mean ± std over the seeds
(:func:`summarize_results`); ``python -m re2_lab.cli.summarize`` computes the same table from any
set of finished runs or their ``results.json`` files.
"""

import dataclasses
import json
import math
import os
from pathlib import Path

import keras

import re2_tf.models  # noqa: F401  (registers the custom Keras objects load_best_model reads)
from re2_tf.data import datasets
from re2_tf.data import features as features_lib
from re2_tf.data.embeddings import (
    VOCAB_FILE,  # the cache's own name
    load_cache,
    save_cache,
)
from re2_tf.data.vocab import Vocab

RUN_FLAGFILE = "flags.txt"
CONFIG_FILE = "config.json"
BEST_MODEL_FILE = "best.keras"
BACKUP_DIR = "backup"
LOG_FILE = "train.log"
TENSORBOARD_DIR = "tensorboard"
RESULTS_FILE = "results.json"
STATE_FILE = "state.json"  # the training routine's state, its time count included
#: How a resumed attempt's log line starts (one per resumption in ``train.log``).
RESTORED_MESSAGE = "Restored training state at update"


@dataclasses.dataclass
class RunConfig:
    """What a run directory records about its model and data.

    Attributes:
        model: architecture name, a key of ``re2_tf.models.MODEL_SPECS``.
        model_kwargs: keyword arguments of the model builder (without the embedding matrix).
        dataset: dataset name in ``re2_tf.data.datasets.DATASETS``.
        label_names: class names in label-id order.
        tokenizer: tokeniser name in ``re2_tf.data.tokenization.TOKENIZERS`` used for raw text.
        lower: whether text is lower-cased before the vocabulary lookup.
        metric: the dataset's model-selection metric (``acc``, ``mrr``, ...).
        features: ``{featuriser kind: options}`` the model consumes.
        output: the model's output kind (``logits`` or ``score``).
        settings: every other resolved training flag that changes results (vocabulary,
            max_len policy, batch size, optimiser, schedule, evaluation, stopping, seed).
        data: ``{split: {"path", "size", "mtime"}}`` of the training and selection files,
            and ``"fingerprint"``: the data directory's content digest (:func:`data_splits`,
            :func:`re2_tf.data.datasets.fingerprint`; absent in a run started before runs
            recorded it).
        embeddings: ``{"path", "size", "mtime"}`` of the vectors file, or ``None``.
    """

    model: str
    model_kwargs: dict
    dataset: str
    label_names: list
    tokenizer: str = "whitespace"
    lower: bool = True
    metric: str = "acc"
    features: dict = dataclasses.field(default_factory=lambda: {"word_ids": {}})
    output: str = "logits"
    settings: dict = dataclasses.field(default_factory=dict)
    data: dict = dataclasses.field(default_factory=dict)
    embeddings: dict | None = None


def config_difference(saved, current, prefix=""):
    """The first field where two configs (or nested dicts) differ, as
    ``"settings.lr: saved 0.001, now 0.002"``; ``""`` when they are equal."""
    if dataclasses.is_dataclass(saved):
        saved, current = dataclasses.asdict(saved), dataclasses.asdict(current)
    if isinstance(saved, dict) and isinstance(current, dict):
        for key in sorted(set(saved) | set(current), key=str):
            name = f"{prefix}{key}"
            if key not in saved or key not in current:
                return (
                    f"{name}: saved {saved.get(key, '(absent)')!r}, "
                    f"now {current.get(key, '(absent)')!r}"
                )
            found = config_difference(saved[key], current[key], name + ".")
            if found:
                return found
        return ""
    # JSON turns tuples into lists: compare in JSON form.
    if json.loads(json.dumps(saved)) != json.loads(json.dumps(current)):
        return f"{prefix.rstrip('.')}: saved {saved!r}, now {current!r}"
    return ""


def save_config(run_dir, config):
    """Write ``config`` to ``<run_dir>/config.json``."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    tmp = Path(run_dir) / (CONFIG_FILE + ".tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, Path(run_dir) / CONFIG_FILE)


def load_config(run_dir):
    """Read ``<run_dir>/config.json``.

    Raises:
        FileNotFoundError: with a message naming the run directory if there is no config.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a re2_tf run directory (no {CONFIG_FILE}).")
    return RunConfig(**json.loads(path.read_text()))


def dataset_spec(config):
    """The :class:`re2_tf.data.datasets.DatasetSpec` a run was trained on, from its
    :class:`RunConfig`: a registered dataset with the run's label names, or a custom one
    rebuilt from the recorded labels, metric and tokeniser."""
    if config.dataset == datasets.CUSTOM:
        ranking = config.metric in ("mrr", "map")
        watch = {"acc": (), "f1": ("acc", "auc"), "mrr": ("map",)}.get(config.metric, ())
        return datasets.custom_dataset(
            config.label_names,
            config.metric,
            config.tokenizer,
            ranking=ranking,
            watch_metrics=watch,
        )
    return dataclasses.replace(
        datasets.get_dataset(config.dataset), label_names=tuple(config.label_names)
    )


def load_best_model(run_dir):
    """Load ``<run_dir>/best.keras``: a plain ``keras.saving.load_model`` (importing re2_tf
    registers every custom layer and model class with Keras).

    Raises:
        FileNotFoundError: if the run has not saved a best checkpoint yet.
    """

    path = Path(run_dir) / BEST_MODEL_FILE
    if not path.exists():
        raise FileNotFoundError(f"No best checkpoint in {run_dir} (expected {path}).")
    return keras.saving.load_model(path)


def load_vocab(run_dir):
    """Read ``<run_dir>/vocab.txt`` as a :class:`re2_tf.data.vocab.Vocab`."""

    config = load_config(run_dir)
    return Vocab.load(Path(run_dir) / VOCAB_FILE, lower=config.lower)


VOCAB_CACHE_FILE = "vocab_cache.json"


def save_vocab_cache(run_dir, vocab, vectors, settings):
    """Cache the word vocabulary (and embedding matrix) in ``run_dir`` with the ``settings``
    that produced them (vocabulary options, training and vectors file signatures)."""

    Path(run_dir).mkdir(parents=True, exist_ok=True)
    if vectors is None:
        vocab.save(Path(run_dir) / VOCAB_FILE)
    else:
        save_cache(run_dir, vocab, vectors)
    (Path(run_dir) / VOCAB_CACHE_FILE).write_text(
        json.dumps(settings, indent=2, sort_keys=True) + "\n"
    )


def load_vocab_cache(run_dir, settings):
    """``(vocab, vectors or None)`` cached in ``run_dir``, or ``None`` if there is no cache.

    Raises:
        ValueError: the cache was built with other settings (names the field), or the
            settings ask for vectors and the cache has none.
    """

    path = Path(run_dir) / VOCAB_CACHE_FILE
    if not path.exists():
        return None
    difference = config_difference(json.loads(path.read_text()), settings)
    if difference:
        raise ValueError(
            f"{run_dir}: the vocabulary/embedding cache was built with other "
            f"settings: {difference}. Use another --run_dir or --overwrite."
        )
    cached = load_cache(run_dir, lower=settings["lower"])
    if cached is None or (settings["embeddings"] and cached[1] is None):
        raise ValueError(
            f"{run_dir}: {VOCAB_CACHE_FILE} exists but the cached vocabulary or "
            "embedding matrix is missing. Use --overwrite to rebuild the run."
        )
    return cached


def make_featurizers(run_dir, features, vocab, train_examples):
    """The featurisers of a training run: each is created from its options (the word-id one
    wraps ``vocab``), fitted on the training tokens and saved in ``run_dir`` -- or, when
    ``run_dir`` already holds its files (a resumed run), loaded from there."""

    out = []
    for kind, options in features.items():
        cls = features_lib.FEATURIZERS[kind]
        featurizer = cls.create(options, vocab)
        if all((Path(run_dir) / name).exists() for name in featurizer.files()):
            featurizer = cls.load(run_dir, featurizer.get_config())
        else:
            featurizer.fit(
                tok
                for ex in train_examples
                for text in (ex.text1, ex.text2)
                for tok in text.split()
            )
            featurizer.save(run_dir)
        out.append(featurizer)
    return out


def load_featurizers(run_dir):
    """The featurisers saved in a run directory (for evaluation, export and prediction)."""

    config = load_config(run_dir)
    # Only the word-id featuriser reads the word vocabulary; runs of models without word ids
    # (BERT+MatchLSTM) have none.
    vocab = load_vocab(run_dir) if "word_ids" in config.features else None
    out = []
    for kind, options in config.features.items():
        cls = features_lib.FEATURIZERS[kind]
        out.append(cls.load(run_dir, cls.create(options, vocab).get_config()))
    return out


def summarize_results(all_results):
    """Mean ± sample standard deviation over seeds of every float metric of every split.

    Args:
        all_results: list of per-run results dicts as a run's ``results.json`` holds them
            (``{"seed": int, "best_step": int, "splits": {split: {metric: value}}}``).
            Integer values (``questions``: how many questions MAP/MRR averaged over) are
            counts, not metrics, and are left out. A split or metric missing from some runs
            is summarised over the runs that have it, and the ``runs`` column says how many.

    Returns:
        ``(table, summary)``: a Markdown table (``| split | metric | mean ± std | runs |``,
        four decimals; ``—`` for the spread of a single run) and ``{"<split>/<metric>":
        {"mean", "std", "values", "seeds"}}``, where ``std`` is the sample standard
        deviation (``ddof=1``, as "mean ± std over 3 seeds" is usually meant) or ``None``
        for one run, and ``values`` / ``seeds`` are in input order.

    Raises:
        ValueError: when ``all_results`` is empty or a result has no ``splits``.
    """
    if not all_results:
        raise ValueError("No results to summarise.")
    order = {}  # (split, metric) in first-seen order
    for result in all_results:
        if "splits" not in result:
            raise ValueError(f"Not a run's results (no 'splits'): {sorted(result)}")
        for split, metrics in result["splits"].items():
            order.update(
                ((split, metric), None)
                for metric, value in metrics.items()
                if not isinstance(value, int)
            )
    lines = ["| split | metric | mean ± std | runs |", "|---|---|---|---|"]
    summary = {}
    for split, metric in order:
        runs_with = [r for r in all_results if metric in r["splits"].get(split, {})]
        values = [float(r["splits"][split][metric]) for r in runs_with]
        mean = math.fsum(values) / len(values)
        std = (
            math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
            if len(values) > 1
            else None
        )
        summary[f"{split}/{metric}"] = {
            "mean": mean,
            "std": std,
            "values": values,
            "seeds": [r.get("seed") for r in runs_with],
        }
        spread = "—" if std is None else f"{std:.4f}"
        lines.append(f"| {split} | {metric} | {mean:.4f} ± {spread} | {len(values)} |")
    return "\n".join(lines), summary


def load_results(path):
    """The per-run results under ``path``: a run directory (its ``results.json``), the
    parent directory of a ``--repeats`` run (each ``seed<k>/results.json``, in seed order),
    or a ``results.json``-format file. Returns a list of results dicts.

    Raises:
        FileNotFoundError: naming ``path`` when it holds no finished run's results.
        ValueError: naming the file when it is not valid JSON or not a run's results.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(
            path.glob("seed*/" + RESULTS_FILE), key=lambda f: (len(f.parent.name), f.parent.name)
        )
        if not files and (path / RESULTS_FILE).exists():
            files = [path / RESULTS_FILE]
        if not files:
            raise FileNotFoundError(
                f"{path}: no {RESULTS_FILE} (not a finished run) and no seed*/{RESULTS_FILE}"
            )
    elif path.exists():
        files = [path]
    else:
        raise FileNotFoundError(f"{path}: no such file or directory")
    results = []
    for file in files:
        try:
            result = json.loads(file.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{file}: not valid JSON ({err})") from None
        if not isinstance(result, dict) or "splits" not in result:
            raise ValueError(
                f"{file}: not one run's results (no 'splits'; a --repeats "
                "summary? give its directory instead)"
            )
        results.append(result)
    return results


def data_splits(config):
    """The splits a run's data fingerprint covers: train, dev, test, then its selection
    split and test splits when they are others (``config``: a
    :class:`~re2_tf.config.TrainConfig`); tuple of str."""
    return tuple(dict.fromkeys((*datasets.SPLITS, config.eval_split, *config.test_splits)))


def data_identity(config):
    """``{"dataset": name, "fingerprint": sha256 hex}``: what data a run of ``config`` (a
    :class:`~re2_tf.config.TrainConfig`) trains and is scored on, independent of where its
    directory is; ``results.json`` records it as ``"data"``. The fingerprint is
    :func:`re2_tf.data.datasets.fingerprint` of ``config.resolved_data_dir`` over
    :func:`data_splits`.

    Raises:
        FileNotFoundError: the data directory holds none of those splits' files.
    """
    return {
        "dataset": config.dataset,
        "fingerprint": datasets.fingerprint(config.resolved_data_dir, data_splits(config)),
    }


def run_data_dir(run_dir):
    """The prepared data directory a run was trained on (the folder of the training file its
    ``config.json`` records), or ``None`` when it records none."""
    train = load_config(run_dir).data.get("train")
    return str(Path(train["path"]).parent) if train else None


def _is_split_name(split_file):
    return isinstance(split_file, str) and not any(c in split_file for c in "./" + os.sep)


def load_examples(run_dir, split_file, *, fmt="processed", data_dir=None):
    """The run's dataset spec (with the run's label names) and the labelled pairs to score.

    Args:
        run_dir: a run directory (``config.json``).
        split_file: a split name of the run's prepared data (``"dev"``, ``"test"``,
            ``"raw_test"``: a ``str`` without ``.`` or ``/``), read from ``data_dir``, else
            the run's own ``--data_dir``, else ``data/<dataset>``; or a file path (a
            ``str`` with ``.`` or ``/``, or any ``os.PathLike``) in format ``fmt``.
        fmt: format of a file (``re2_tf.data.datasets.FORMAT_TOKENIZERS``); a ranking
            dataset's file without question ids (any format but ``wikiqa_txt``) takes them
            from its sibling ``.ids`` file.
        data_dir: prepared data directory for a split name.

    Returns:
        ``(spec, examples)``: ``re2_tf.data.datasets.DatasetSpec`` and ``PairExample`` list.

    Raises:
        FileNotFoundError: no run directory, data file or ``.ids`` file. ValueError: a
            malformed line or a label that is not one of the run's (message
            ``<file>:<line>: ...``), or an unknown ``fmt``.
    """
    config = load_config(run_dir)
    return examples_for(
        dataset_spec(config),
        split_file,
        fmt=fmt,
        data_dir=data_dir,
        lower=config.lower,
        run_dir=run_dir,
    )


def examples_for(spec, split_file, *, fmt="processed", data_dir=None, lower=True, run_dir=None):
    """``(spec, examples)``: the labelled pairs of a split or file scored as dataset ``spec``
    (see :func:`load_examples`; ``run_dir``, when given, supplies the default ``data_dir``,
    ``lower`` lower-cases a custom dataset's raw text)."""
    if _is_split_name(split_file):
        data_dir = (
            data_dir
            or (run_data_dir(run_dir) if run_dir is not None else None)
            or datasets.default_data_dir(spec.name)
        )
        return spec, datasets.load_split(spec, data_dir, split_file, lower=lower)
    if fmt not in datasets.FORMAT_TOKENIZERS:
        raise ValueError(f"unknown format {fmt!r}; known: {sorted(datasets.FORMAT_TOKENIZERS)}")
    return spec, datasets.load_file(os.fspath(split_file), fmt, spec, lower=lower)
