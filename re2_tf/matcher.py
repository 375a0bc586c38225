"""One model object for a trained matcher: :class:`Matcher`.

    import re2_tf

    matcher = re2_tf.Matcher.from_run("checkpoints/sample-re2")     # or result.matcher()
    matcher.predict([("A man sleeps.", "A person rests.")])
    # [{"label": "entailment", "probabilities": {"entailment": 0.91, ...}}]
    matcher.rank("who plays?", ["a man plays", "a cat sleeps"], top_k=1)
    # [{"corpus_id": 0, "score": 0.83}]
    matcher.evaluate("test")                                          # {"acc": ..., ...}
    matcher.export("exports/sample-re2", precision="fp32")
    served = re2_tf.Matcher.from_export("exports/sample-re2")        # same verbs

A matcher comes from a run directory (:meth:`Matcher.from_run`: the best checkpoint, its
featurisers and label names held in memory; pairs are tokenised with the run's tokeniser and
featurised as evaluation featurises them, :func:`re2_tf.data.pipeline.encode_examples`) or
from an export (:meth:`Matcher.from_export`: the SavedModel or TFLite file loaded by
:class:`re2_tf.serving.predictor.Predictor`, which is what ``re2-predict`` runs). The verbs
(:meth:`~Matcher.predict`, :meth:`~Matcher.scores`, :meth:`~Matcher.rank`,
:meth:`~Matcher.evaluate`) are implemented here once, over the raw outputs of either source;
``Predictor``'s own ``scores``/``rank``/``probabilities``/``predict`` delegate to them.
The output format of :meth:`~Matcher.rank` is sentence-transformers' ``CrossEncoder.rank``.

A run's matcher does not truncate texts (as evaluation does not); an export cuts each text to
its ``max_length`` tokens (``export_config.json``'s ``truncation``), so the two agree on pairs
within the export's limits.

At load this module imports neither Keras nor TensorFlow: a run's matcher imports them when it
is made (``re2-predict`` serves exports without importing Keras).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from re2_tf.data import datasets
from re2_tf.data.readers import PairExample
from re2_tf.data.tokenization import get_tokenizer
from re2_tf.serving.predictor import Predictor

__all__ = ["Matcher", "OUTPUT_FIELDS"]

#: Fields every prediction record has; input fields of these names are renamed (``input_...``).
OUTPUT_FIELDS = ("label", "probabilities")


def _pair_dicts(pairs):
    """``pairs`` as dicts with ``str`` ``text1`` and ``text2`` (their other fields kept).

    Raises:
        ValueError: ``pairs`` is a string or dict, or a pair is neither a 2-tuple/list nor a
            dict, or its texts are not ``str`` (names the index).
    """
    if isinstance(pairs, (str, bytes, dict)):
        raise ValueError("pairs must be a list of (text1, text2) tuples or of dicts")
    result = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, dict):
            record = dict(pair)
        elif isinstance(pair, (tuple, list)) and len(pair) == 2:
            record = {"text1": pair[0], "text2": pair[1]}
        else:
            raise ValueError(
                f"pairs[{i}]: expected a (text1, text2) pair or a dict with "
                f"'text1' and 'text2', got {pair!r:.80}"
            )
        if not all(isinstance(record.get(k), str) for k in ("text1", "text2")):
            raise ValueError(f"pairs[{i}]: text1 and text2 must both be str")
        result.append(record)
    return result


def prediction_records(label_names, pairs, probabilities, digits=None):
    """One output dict per pair: ``label`` (``str``, the most probable class),
    ``probabilities`` (``{label: float}``, rounded to ``digits`` decimals when given) and the
    pair's fields other than ``text1``/``text2``, renamed ``input_<name>`` (repeatedly, until
    free) where they collide with :data:`OUTPUT_FIELDS`.

    Args:
        label_names: class names in id order (``C`` of them).
        pairs: dicts (:func:`re2_tf.serving.predictor.read_pairs` gives them).
        probabilities: float ``[n, C]``.
        digits: ``None`` (full float32 precision) or decimals kept.
    """
    records = []
    for pair, row in zip(pairs, np.asarray(probabilities)):
        values = [float(p) if digits is None else round(float(p), digits) for p in row]
        record = {
            "label": label_names[int(np.argmax(row))],
            "probabilities": dict(zip(label_names, values)),
        }
        for key, value in pair.items():
            if key not in ("text1", "text2"):
                name = key
                while name in OUTPUT_FIELDS or (name != key and name in pair):
                    name = "input_" + name
                record[name] = value
        records.append(record)
    return records


class _RunSource:
    """A run's best checkpoint (or a given Keras model of the run) in memory, with its
    featurisers, tokeniser and label names; raw outputs computed in-process."""

    def __init__(self, run_dir, model=None, batch_size=256):
        # lazy: an export's Matcher (re2-predict) imports no Keras; a run's imports it here
        from re2_tf import runs

        self.run_dir = Path(run_dir)
        self.config = runs.load_config(run_dir)
        self.dataset = runs.dataset_spec(self.config)
        self.label_names = list(self.config.label_names)
        self.output = self.config.output
        self.lower = self.config.lower
        self.batch_size = int(batch_size)
        self.featurizers = runs.load_featurizers(run_dir)
        self.network = runs.load_best_model(run_dir) if model is None else model
        self.given_model = model is not None
        self._tokenize = get_tokenizer(self.config.tokenizer, lower=self.config.lower)

    def raw_outputs(self, examples):
        """The network's outputs for prepared ``PairExample`` s: float32 logits ``[n, C]``
        or scores ``[n]`` (:func:`re2_tf.evaluation.predict_outputs`)."""
        # lazy: an export's Matcher (re2-predict) imports no Keras; a run's imports it here
        from re2_tf.data.pipeline import encode_examples
        from re2_tf.evaluation import inference_dataset, predict_outputs

        if not examples:
            return np.zeros((0,) if self.output == "score" else (0, len(self.label_names)))
        encoded = encode_examples(examples, self.featurizers)
        return predict_outputs(self.network, inference_dataset(encoded, self.batch_size))

    def outputs(self, texts1, texts2):
        """``{"probabilities": float32 [n, C]}`` plus ``"score"`` float32 ``[n]`` for a score
        model, for ``n`` pairs of raw texts (tokenised by the run's tokeniser)."""
        # lazy: an export's Matcher (re2-predict) imports no Keras; a run's imports it here
        from re2_tf.evaluation import to_probabilities

        examples = [
            PairExample(" ".join(self._tokenize(a)), " ".join(self._tokenize(b)), None)
            for a, b in zip(texts1, texts2)
        ]
        raw = self.raw_outputs(examples)
        result = {"probabilities": to_probabilities(raw)}
        if raw.ndim == 1:
            result["score"] = raw.astype(np.float32)
        return result


class Matcher:
    """A trained sentence-pair matcher: predict, score, rank, evaluate, export.

    Build one with :meth:`from_run` or :meth:`from_export` (or
    :meth:`re2_tf.RunResult.matcher`), not with the constructor.

    Attributes:
        label_names: class names in id order (``list[str]``, ``C`` of them).
        output: the model's output kind, ``"logits"`` (classes) or ``"score"`` (one ranking
            score per pair, e.g. Match-SRNN trained with the pairwise hinge loss).
        run_dir: the run directory (``Path``), or ``None`` for an export's matcher.
        export_dir: the export directory (``Path``), or ``None`` for a run's matcher.
        network: the Keras model of a run's matcher (``None`` for an export's).
        predictor: the :class:`~re2_tf.serving.predictor.Predictor` of an export's matcher
            (``None`` for a run's).
    """

    def __init__(self, _source, *, _predictor=None):
        self._source = _source
        self.predictor = _predictor
        if _predictor is not None:
            self.label_names = list(_predictor.label_names)
            self.output = _predictor.config.get("output", "logits")
            self.run_dir, self.export_dir = None, _predictor.export_dir
            self.network = None
        else:
            self.label_names = list(_source.label_names)
            self.output = _source.output
            self.run_dir, self.export_dir = _source.run_dir, None
            self.network = _source.network

    def __repr__(self):
        where = f"run_dir={self.run_dir}" if self.run_dir else f"export_dir={self.export_dir}"
        return f"Matcher({where}, labels={self.label_names}, output={self.output!r})"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_run(cls, run_dir, *, model=None, batch_size=256) -> Matcher:
        """The matcher of a run directory (``re2-train`` / :func:`re2_tf.fit`).

        Args:
            run_dir: a run directory (``config.json``, featuriser files, ``best.keras``).
            model: a Keras model of this run to use instead of its best checkpoint
                (e.g. the network of a training callback); ``None`` = ``best.keras``.
            batch_size: pairs per model call (int >= 1).

        Raises:
            FileNotFoundError: no run directory, or no best checkpoint yet. ValueError:
                ``batch_size`` < 1.
        """
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not (Path(run_dir) / "config.json").exists():
            raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
        return cls(_RunSource(run_dir, model=model, batch_size=batch_size))

    @classmethod
    def from_export(cls, export_dir, *, tokenize="auto", batch_size=64, backend=None) -> Matcher:
        """The matcher of an export (``re2-export`` / :meth:`export`).

        Args:
            export_dir: a SavedModel or TFLite export directory.
            tokenize, batch_size, backend: as :class:`re2_tf.serving.predictor.Predictor`
                (``auto``/``graph``/``python``; pairs per call; ``savedmodel``, ``tflite``,
                ``openvino``, ``onnxruntime`` or ``None`` = what the export recorded: the
                runtime ``re2-export`` measured fastest per batch size, or its format).

        Raises:
            FileNotFoundError, ValueError, MissingOpError: as
            :class:`~re2_tf.serving.predictor.Predictor`.
        """
        return cls.from_predictor(Predictor(export_dir, tokenize, batch_size, backend))

    @classmethod
    def from_predictor(cls, predictor) -> Matcher:
        """The matcher of an already loaded :class:`~re2_tf.serving.predictor.Predictor`."""
        return cls(predictor, _predictor=predictor)

    # ------------------------------------------------------------------ raw outputs
    def _outputs(self, texts1, texts2):
        if len(texts1) != len(texts2):
            raise ValueError(f"{len(texts1)} text1 but {len(texts2)} text2")
        if self.predictor is not None:
            return self.predictor.outputs(texts1, texts2)
        return self._source.outputs(texts1, texts2)

    def _scores_of(self, outputs, column):
        probabilities = outputs["probabilities"]
        if column is not None:
            return probabilities[:, column].astype(np.float32)
        if "score" in outputs:
            return np.asarray(outputs["score"], np.float32)
        # A TFLite export of a score model serves only [1 - sigmoid(s), sigmoid(s)]:
        # s is their log-odds.
        p = np.clip(probabilities.astype(np.float64), 1e-38, None)
        return (np.log(p[:, 1]) - np.log(p[:, 0])).astype(np.float32)

    def _positive_column(self, positive):
        """The probability column :meth:`scores` reads, or ``None`` for a score model's own
        score."""
        if self.output == "score" and positive is None:
            return None
        names = self.label_names
        where = self.run_dir or self.export_dir
        if positive is None:
            if len(names) != 2:
                raise ValueError(
                    f"{where} has {len(names)} classes {names}: pass "
                    "positive=<label name> to rank by that class's probability"
                )
            return 1
        if isinstance(positive, str):
            if positive not in names:
                raise ValueError(f"positive={positive!r} is not a label of {where} ({names})")
            return names.index(positive)
        if (
            isinstance(positive, (int, np.integer))
            and not isinstance(positive, bool)
            and -len(names) <= positive < len(names)
        ):
            return int(positive) % len(names)
        raise ValueError(f"positive must be a label name or index of {names}, got {positive!r}")

    # ------------------------------------------------------------------ verbs
    def probabilities(self, pairs) -> np.ndarray:
        """Class probabilities float32 ``[n, C]`` of ``n`` pairs (as :meth:`predict`)."""
        records = _pair_dicts(pairs)
        texts1, texts2 = [p["text1"] for p in records], [p["text2"] for p in records]
        return self._outputs(texts1, texts2)["probabilities"]

    def predict(self, pairs) -> list[dict]:
        """Label and class probabilities of each pair.

        Args:
            pairs: list of ``(text1, text2)`` tuples of ``str``, or of dicts with ``str``
                ``text1`` and ``text2`` (their other fields are copied to the output).

        Returns:
            one dict per pair, in order: ``label`` (``str``: the most probable class) and
            ``probabilities`` (``{label: float}``, full float32 precision; ``re2-predict``
            writes them rounded to 6 decimals), plus a dict pair's other fields (renamed
            ``input_<name>`` where they collide with those two). A score model's
            probabilities are ``[1 - sigmoid(s), sigmoid(s)]`` of its score ``s``.

        Raises:
            ValueError: a malformed pair (names its index).
        """
        return self._records(_pair_dicts(pairs))[0]

    def _records(self, records, digits=None):
        """``(prediction records, pairs truncated)`` of pair dicts (:meth:`predict`; the
        truncation count is an export's, 0 for a run's matcher, which truncates nothing)."""
        outputs = self._outputs([p["text1"] for p in records], [p["text2"] for p in records])
        truncated = int(np.count_nonzero(outputs.get("truncated", ())))
        return (
            prediction_records(self.label_names, records, outputs["probabilities"], digits),
            truncated,
        )

    def scores(self, pairs, *, positive=None) -> np.ndarray:
        """One relevance score per pair: float32 ``[n]``, higher = better match.

        - A score model (:attr:`output` ``"score"``): the model's own score ``s`` (an
          export's ``score`` output; a TFLite export, which serves only probabilities
          ``[1 - sigmoid(s), sigmoid(s)]``, gives ``s`` back as their log-odds).
        - A classification model: the probability of the class ``positive`` (a label name
          or index); by default the second class of a two-class model (``correct``,
          ``duplicate``: the positive class of every two-class dataset of re2_tf).

        Args:
            pairs: as :meth:`predict`.
            positive: a label name or index (classification; or to score a score model by
                its class probability instead).

        Raises:
            ValueError: a classification model with more than two classes and no
                ``positive`` (e.g. SNLI: which class is a match is the caller's choice), an
                unknown ``positive``, or a malformed pair.
        """
        column = self._positive_column(positive)
        records = _pair_dicts(pairs)
        outputs = self._outputs([p["text1"] for p in records], [p["text2"] for p in records])
        return self._scores_of(outputs, column)

    def rank(
        self, query, candidates, top_k=None, *, return_documents=False, positive=None
    ) -> list[dict]:
        """Rank ``candidates`` for ``query``, best first, in the output format of
        sentence-transformers' ``CrossEncoder.rank``: each pair ``(query, candidate)`` is
        scored by :meth:`scores`.

        Args:
            query: ``str``, the first text of every pair.
            candidates: non-empty list of ``str``, the second texts.
            top_k: keep the best ``top_k`` (an int >= 1; ``None`` = all).
            return_documents: include each candidate's text under ``"text"``.
            positive: see :meth:`scores` (classification models with more than two classes).

        Returns:
            list of ``{"corpus_id": int (index into candidates), "score": float}`` (plus
            ``"text": str`` with ``return_documents``), by score descending; equal scores keep
            the candidates' order.

        Raises:
            ValueError: ``query`` or a candidate is not a ``str``, ``candidates`` is empty or
                a bare string, ``top_k`` < 1, or :meth:`scores`'s errors.
        """
        if not isinstance(query, str):
            raise ValueError(f"query must be a str, got {type(query).__name__}")
        if isinstance(candidates, (str, bytes)):
            raise ValueError("candidates must be a list of str, not one string")
        candidates = list(candidates)
        if not candidates:
            raise ValueError("candidates is empty: give at least one text to rank")
        for i, candidate in enumerate(candidates):
            if not isinstance(candidate, str):
                raise ValueError(f"candidates[{i}] must be a str, got {type(candidate).__name__}")
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1
        ):
            raise ValueError(f"top_k must be an int >= 1 or None, got {top_k!r}")
        scores = self.scores([(query, c) for c in candidates], positive=positive)
        order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))
        ranked = []
        for i in order[:top_k]:
            entry = {"corpus_id": i, "score": float(scores[i])}
            if return_documents:
                entry["text"] = candidates[i]
            ranked.append(entry)
        return ranked

    def evaluate(self, split_or_file, *, fmt="processed", data_dir=None) -> dict:
        """Every metric of the model's dataset on a split or a labelled file.

        Args:
            split_or_file: a split name of the prepared data (``"dev"``, ``"test"``,
                ``"raw_test"``: a ``str`` without ``.`` or ``/``), read from ``data_dir``,
                else the run's own ``--data_dir`` (an export: that of the run it was exported
                from, when recorded), else ``data/<dataset>``; or a file path (a ``str`` with
                ``.`` or ``/``, or any ``os.PathLike``) in format ``fmt``.
            fmt: format of a file (``re2_tf.data.datasets.FORMAT_TOKENIZERS``); a ranking
                dataset's file without question ids takes them from its sibling ``.ids``.
            data_dir: prepared data directory for a split name.

        Returns:
            ``{"acc": float, ...}``: accuracy; F1 and ROC-AUC for two classes; MAP, MRR and
            ``questions`` (int) over the filtered question set for ranking datasets
            (:func:`re2_tf.evaluation.score`, the metrics ``re2-evaluate`` prints). An
            export's matcher scores the export's outputs (its tokenisation, truncation and
            precision) with the same code; an export of a custom dataset is scored with
            classification metrics (its selection metric is not recorded in the export).

        Raises:
            FileNotFoundError: a missing data or ``.ids`` file. ValueError: a malformed line
                or a label that is not one of the model's (``<file>:<line>: ...``), or an
                unknown ``fmt``.
        """
        return self._evaluate(*self._examples(split_or_file, fmt=fmt, data_dir=data_dir))

    def _examples(self, split_or_file, fmt="processed", data_dir=None):
        """``(spec, examples)`` of :meth:`evaluate`'s split or file."""
        # lazy: an export's Matcher (re2-predict) imports no Keras; a run's imports it here
        from re2_tf.runs import examples_for

        if self.predictor is None:
            source = self._source
            return examples_for(
                source.dataset,
                split_or_file,
                fmt=fmt,
                data_dir=data_dir,
                lower=source.lower,
                run_dir=source.run_dir,
            )
        config = self.predictor.config
        recorded_run = config.get("run_dir")
        return examples_for(
            _export_dataset(config),
            split_or_file,
            fmt=fmt,
            data_dir=data_dir,
            lower=config["lower"],
            run_dir=recorded_run if recorded_run and os.path.isdir(recorded_run) else None,
        )

    def _evaluate(self, spec, examples):
        """The metrics of :meth:`evaluate` on loaded, prepared ``examples`` of dataset
        ``spec``."""
        # lazy: an export's Matcher (re2-predict) imports no Keras; a run's imports it here
        from re2_tf.evaluation import evaluate_examples, score

        if self.predictor is None:
            source = self._source
            return evaluate_examples(
                source.network, spec, examples, source.featurizers, source.batch_size
            )
        outputs = self._outputs([ex.text1 for ex in examples], [ex.text2 for ex in examples])
        if self.output == "score":
            return score(spec, examples, self._scores_of(outputs, None))
        return score(spec, examples, outputs["probabilities"], kind="probabilities")

    def export(self, export_dir, **options) -> Path:
        """Export this run's best checkpoint (:func:`re2_tf.serving.run_export.export_run`, what
        ``re2-export`` does).

        Args:
            export_dir: output directory (replaced if it exists).
            **options: :func:`~re2_tf.serving.run_export.export_run`'s and
                :func:`~re2_tf.serving.export.export_model`'s keywords: ``fmt``
                (``savedmodel``/``tflite``), ``precision`` (``fp32`` is the default here;
                ``auto``, ``bf16``, ``int8``), ``serving`` (``auto``, the default: the runtime
                :meth:`from_export` serves through, measured among TensorFlow's, LiteRT's and the
                installed runtimes' paths;
                ``savedmodel``), ``max_length``, ``length_buckets``, ``xla``, ``tokenizer``.

        Returns:
            ``Path`` of the export directory.

        Raises:
            ValueError: a matcher loaded from an export (it has no Keras model to export), a
                matcher built with another ``model`` than the run's best checkpoint, or
                options ``export_model`` rejects.
        """
        if self.run_dir is None:
            raise ValueError(
                f"{self.export_dir} is already an export: export a run's matcher "
                "(Matcher.from_run(<run_dir>).export(...))"
            )
        if self._source.given_model:
            raise ValueError(
                "this matcher holds a model given to from_run(model=...), not the run's "
                "best checkpoint: export it with re2_tf.serving.export.export_model"
            )
        # lazy: an export's Matcher (re2-predict) imports no Keras; a run's imports it here
        from re2_tf.serving.run_export import export_run

        return export_run(self.run_dir, export_dir, **options)


def _export_dataset(config):
    """The ``DatasetSpec`` an export's pairs are scored as: its registered dataset with the
    export's label names, or (a custom dataset) a classification dataset of its labels."""
    name = config.get("dataset")
    labels = tuple(config["label_names"])
    if name in datasets.DATASETS:
        return dataclasses.replace(datasets.get_dataset(name), label_names=labels)
    return datasets.custom_dataset(labels, "acc", config.get("python_tokenizer", "whitespace"))
