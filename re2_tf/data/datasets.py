"""Dataset registry: label names, model-selection metric, tokeniser and split loading.

A prepared data directory (written by ``re2-prepare``) holds, for every dataset::

    <dir>/train.txt  <dir>/dev.txt  <dir>/test.txt     text1<TAB>text2<TAB>label

texts already tokenised (tokens separated by single spaces) and lower-cased, labels as
integer ids in the order of :attr:`DatasetSpec.label_names`. WikiQA additionally has::

    <dir>/{train,dev,test}.ids    qid<TAB>docid, one line per pair (same order as the .txt)
    <dir>/{dev,test}.ref          the corpus' WikiQA-{dev,test}-filtered.ref (TREC qrels)

The ids are the corpus' own (see :func:`re2_tf.data.readers.read_wikiqa_txt`), so scores can
be written as a ``.rank`` file and checked against ``{dev,test}.ref`` or scored in memory
with :func:`re2_tf.metrics.ranking_metrics`. The ``.ids`` files are required: questions are
never regrouped from the prepared text, which is lower-cased, so two adjacent questions that
differ only in case would merge into one.

The bundled ranking sample (``sample_ranking``, ``data/sample_ranking``; built from the
SNLI sample by :func:`re2_tf.data.prepare.prepare`, see ``data/sample_ranking/README.md``)
has the same ``.ids`` and ``.ref`` files.

TrecQA (``trecqa``) has the same ``.ids`` files (``qid`` = the corpus' ``id.txt`` value,
``docid`` = 0-based candidate index within the question; see
:func:`re2_tf.data.readers.read_trecqa_dir`) and no ``.ref``; ``dev``/``test`` are the clean
sets and ``raw_dev``/``raw_test`` (when prepared) the raw ones. Its selection metric is MAP,
MRR is watched. :func:`re2_tf.metrics.ranking_metrics` scores only questions with at least
one correct and one incorrect candidate (WikiQA's rule); every question of the clean sets
has both (65 in dev, 68 in test, checked in ``tests/test_data.py``), so on them nothing is
dropped and MAP/MRR are trec_eval's over all questions. On the raw sets the same rule drops
the questions with no correct or only correct candidates, which leaves exactly the clean
sets (same pairs, checked in ``tests/test_data.py``); raw-protocol numbers (which keep at
least the all-correct questions, as trec_eval does) are therefore not what is reported here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from re2_tf.data import readers
from re2_tf.data.readers import PairExample
from re2_tf.data.tokenization import get_tokenizer

__all__ = [
    "DatasetSpec",
    "DATASETS",
    "CUSTOM",
    "SPLITS",
    "FORMAT_TOKENIZERS",
    "get_dataset",
    "custom_dataset",
    "default_data_dir",
    "load_split",
    "ref_file",
    "load_file",
    "fingerprint",
    "FINGERPRINT_SUFFIXES",
]

SPLITS = ("train", "dev", "test")
#: The samples shipped inside the package (``data/sample`` and ``data/sample_ranking`` of the
#: repository link here), so ``--dataset=sample`` trains from an installed wheel.
BUNDLED = Path(__file__).resolve().parent / "bundled"


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """Static facts about one dataset.

    Attributes:
      name: registry key.
      label_names: class names in label-id order.
      metric: metric used for model selection (``acc``, ``mrr`` or ``map``); see
        :mod:`re2_tf.metrics`.
      tokenizer: name (in :data:`re2_tf.data.tokenization.TOKENIZERS`) of the tokeniser that
        turns the distribution's raw text into the prepared form.
      ranking: True if pairs are grouped by question and scored with MAP/MRR.
      watch_metrics: further metrics worth logging.
      raw_text: its split files hold raw text and labels by name or id, tokenised on loading
        with ``tokenizer`` (a user's own data, :func:`custom_dataset`); otherwise they are
        prepared (tokenised, label ids).
    """

    name: str
    label_names: tuple[str, ...]
    metric: str
    tokenizer: str
    ranking: bool = False
    watch_metrics: tuple[str, ...] = ()
    raw_text: bool = False

    @property
    def num_classes(self) -> int:
        return len(self.label_names)


_NLI3 = ("entailment", "neutral", "contradiction")
DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec("snli", _NLI3, "acc", "snli"),
        DatasetSpec(
            "scitail", ("entailment", "neutral"), "acc", "scitail", watch_metrics=("f1", "auc")
        ),
        DatasetSpec(
            "quora",
            ("not_duplicate", "duplicate"),
            "acc",
            "whitespace",
            watch_metrics=("f1", "auc"),
        ),
        DatasetSpec(
            "wikiqa",
            ("incorrect", "correct"),
            "mrr",
            "whitespace",
            ranking=True,
            watch_metrics=("map",),
        ),
        # TrecQA (Wang et al., 2007; castorini layout): DRCN (Kim et al., AAAI 2019)
        # reports MAP and MRR; MAP selects the model, MRR is watched. dev/test are the clean
        # sets (Rao et al., 2016), on which the WikiQA filter of ranking_metrics drops nothing.
        DatasetSpec(
            "trecqa",
            ("incorrect", "correct"),
            "map",
            "whitespace",
            ranking=True,
            watch_metrics=("mrr",),
        ),
        DatasetSpec("sample", _NLI3, "acc", "snli"),
        # Our ranking sample (data/sample_ranking, generated from the SNLI sample by
        # ``re2-prepare --dataset=sample_ranking``): each premise is a question, its
        # entailed hypotheses are the correct candidates. MRR selects, MAP is watched (as
        # for WikiQA).
        DatasetSpec(
            "sample_ranking",
            ("incorrect", "correct"),
            "mrr",
            "snli",
            ranking=True,
            watch_metrics=("map",),
        ),
    )
}

#: Name of a user's own dataset: labels, metric and tokeniser are settings
#: (:func:`custom_dataset`; ``re2_tf.TrainConfig(dataset="custom", labels=..., ...)``).
CUSTOM = "custom"


def custom_dataset(
    labels,
    metric: str = "acc",
    tokenizer: str = "whitespace",
    *,
    ranking: bool = False,
    watch_metrics=(),
) -> DatasetSpec:
    """The :class:`DatasetSpec` of a user's own data (``dataset="custom"``).

    Its files (``<data_dir>/{train,dev,test}.txt``) hold ``text1<TAB>text2<TAB>label`` per
    line with RAW text, tokenised on loading by ``tokenizer`` (lower-cased), and a label
    that is one of ``labels`` or its id (``0 .. len(labels)-1``). With ``ranking``, pairs are
    grouped by question from ``<split>.ids`` (``qid<TAB>docid`` per line) and scored with
    MAP/MRR over the questions with at least one correct (label id 1) and one wrong answer.

    Args:
        labels: label names in label-id order (at least two).
        metric: selection metric: ``acc``, ``f1`` (two labels) or ``mrr`` (ranking).
        tokenizer: a name in :data:`re2_tf.data.tokenization.TOKENIZERS`.
    """
    return DatasetSpec(
        CUSTOM,
        tuple(labels),
        metric,
        tokenizer,
        ranking=ranking,
        watch_metrics=tuple(watch_metrics),
        raw_text=True,
    )


# Tokeniser applied by :func:`load_file` to each raw format (None = text used as stored).
FORMAT_TOKENIZERS: dict[str, str | None] = {
    "processed": None,
    "snli_jsonl": "snli",
    "scitail_jsonl": "scitail",
    "scitail_tsv": "scitail",
    "quora_tsv": None,
    "wikiqa_txt": None,
    "trecqa_dir": None,
}


def get_dataset(name: str) -> DatasetSpec:
    """Returns the :class:`DatasetSpec` for ``name``. Raises ``KeyError`` if unknown."""
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}")
    return DATASETS[name]


def default_data_dir(name: str) -> Path:
    """Where dataset ``name`` is read from when no directory is given: the package's own copy
    for a bundled sample (``sample``, ``sample_ranking``), else ``data/<name>`` under the
    current directory, where ``re2-prepare`` writes by default."""
    bundled = BUNDLED / name
    return bundled if bundled.is_dir() else Path("data") / name


#: The files of a split that :func:`fingerprint` covers, in this order (each where present).
FINGERPRINT_SUFFIXES = (".txt", ".ids", ".ref")


def fingerprint(data_dir: str | os.PathLike, splits=SPLITS) -> str:
    """The identity of a prepared data directory's contents: a SHA-256 hex digest (64
    lowercase hex characters) over its split files, whatever the directory is called.

    The files are ``<split><suffix>`` for each split of ``splits`` in that order and each
    suffix of :data:`FINGERPRINT_SUFFIXES` (``.txt``, ``.ids``, ``.ref``) in that order, those
    that exist; other files (``README.md``, ``raw_dev.txt``, ``.rank``) are not covered. The
    digest is the SHA-256 of the text ``sha256sum`` prints for those files, one line
    ``<file's sha256 hex>  <file name>\\n`` each, so in the directory the shell computes it as
    ``sha256sum train.txt train.ids dev.txt dev.ids dev.ref ... | sha256sum`` (listing the
    files that exist, in the order above).

    Args:
        data_dir: a prepared directory (``re2-prepare``'s output, a learning check, a
            bundled sample's :func:`default_data_dir`).
        splits: split names in order (default :data:`SPLITS`: train, dev, test).

    Raises:
        FileNotFoundError: naming ``data_dir`` when it holds no ``<split>.txt`` of ``splits``.
    """
    directory = Path(data_dir)
    files = [
        directory / f"{split}{suffix}"
        for split in splits
        for suffix in FINGERPRINT_SUFFIXES
        if (directory / f"{split}{suffix}").is_file()
    ]
    if not any(f.suffix == ".txt" for f in files):
        names = ", ".join(f"{split}.txt" for split in splits)
        raise FileNotFoundError(f"{directory}: none of {names}; not a prepared data directory")
    listing = []
    for path in files:
        with open(path, "rb") as handle:
            listing.append(f"{hashlib.file_digest(handle, 'sha256').hexdigest()}  {path.name}\n")
    return hashlib.sha256("".join(listing).encode()).hexdigest()


def load_split(
    name: str | DatasetSpec,
    data_dir: str | os.PathLike | None = None,
    split: str = "train",
    lower: bool = True,
) -> list[PairExample]:
    """Loads ``<data_dir>/<split>.txt`` of a prepared dataset.

    Args:
      name: dataset name (see :data:`DATASETS`), or a :class:`DatasetSpec` (a custom
        dataset's, :func:`custom_dataset`: raw text tokenised on loading, labels given by
        name or id).
      data_dir: prepared directory; defaults to :func:`default_data_dir`.
      split: ``train``, ``dev`` or ``test``.
      lower: custom datasets only: lower-case the text when tokenising it.

    Returns:
      ``list[PairExample]`` in file order; for ranking datasets ``qid``/``docid`` come from
      ``<split>.ids``.

    Raises:
      FileNotFoundError: missing split file, or a ranking split without its ``.ids`` file
        (the message says how to write it). ValueError: malformed line, a label
        ``>= num_classes``, or an ``.ids`` file whose length differs from the ``.txt``.
    """
    spec = name if isinstance(name, DatasetSpec) else get_dataset(name)
    name = spec.name
    directory = Path(data_dir) if data_dir is not None else default_data_dir(name)
    path = directory / f"{split}.txt"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; run re2-prepare --dataset={name}")
    if spec.raw_text:
        examples = _read_custom(path, spec, lower)
    else:
        examples = readers.read_processed(path, num_classes=spec.num_classes)
    if spec.ranking:
        examples = _with_ids(
            examples,
            path,
            FileNotFoundError(
                f"{directory / (split + '.ids')} not found: ranking metrics need each pair's "
                f"question id, and questions cannot be regrouped from the lower-cased {path}. "
                f"Write it by preparing the corpus again: re2-prepare "
                f"--dataset={name} --input=<downloaded corpus> --output={directory}"
            ),
        )
    return examples


def _read_custom(path: Path, spec: DatasetSpec, lower: bool) -> list[PairExample]:
    """A custom dataset's ``text1<TAB>text2<TAB>label`` file, labels by name or id, text
    tokenised with ``spec.tokenizer`` (tokens joined by single spaces, as prepared files).

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count or an unknown label.
    """
    ids = {name: i for i, name in enumerate(spec.label_names)}
    tokenize = get_tokenizer(spec.tokenizer, lower=lower)
    out = []
    for lineno, line in readers._lines(path):
        fields = readers._split_tab(path, lineno, line, 3, "text1, text2, label")
        raw = fields[2].strip()
        if raw in ids:
            label = ids[raw]
        elif raw.isascii() and raw.isdigit() and int(raw) < len(ids):
            label = int(raw)
        else:
            raise readers._error(
                path,
                lineno,
                f"unknown label {raw!r}; expected one of "
                f"{list(spec.label_names)} or an id 0-{len(ids) - 1}",
            )
        out.append(
            PairExample(
                " ".join(tokenize(fields[0])), " ".join(tokenize(fields[1])), label, line=lineno
            )
        )
    return out


def _with_ids(examples: list[PairExample], path: Path, missing: Exception) -> list[PairExample]:
    """``examples`` with ``qid``/``docid`` from ``path``'s sibling ``.ids`` file.

    Raises:
      ``missing`` if there is no ``.ids`` file; ValueError for a malformed one or one whose
      length differs from ``len(examples)``.
    """
    ids_path = path.with_suffix(".ids")
    if not ids_path.exists():
        raise missing
    ids = readers.read_ids(ids_path)
    if len(ids) != len(examples):
        raise ValueError(f"{ids_path}: {len(ids)} lines but {path} has {len(examples)} pairs")
    return [dataclasses.replace(ex, qid=q, docid=d) for ex, (q, d) in zip(examples, ids)]


def ref_file(
    name: str, data_dir: str | os.PathLike | None = None, split: str = "dev"
) -> Path | None:
    """Path of ``<data_dir>/<split>.ref`` for ranking datasets if it exists, else ``None``."""
    if not get_dataset(name).ranking:
        return None
    directory = Path(data_dir) if data_dir is not None else default_data_dir(name)
    path = directory / f"{split}.ref"
    return path if path.exists() else None


def load_file(
    path: str | os.PathLike,
    fmt: str = "processed",
    spec: DatasetSpec | None = None,
    lower: bool = True,
) -> list[PairExample]:
    """Loads any supported file and returns pairs in prepared form (for ``--file`` evaluation).

    Raw formats are tokenised with their dataset's tokeniser (:data:`FORMAT_TOKENIZERS`) and
    lower-cased; tokens are joined by single spaces, so the result can be encoded with
    ``text.split()`` like a prepared split. ``processed``/``quora_tsv``/``wikiqa_txt``/
    ``trecqa_dir`` texts are kept as stored.

    Args:
      path: the file (for ``trecqa_dir``, a TrecQA split directory).
      fmt: a format name of :data:`re2_tf.data.readers.READERS`.
      spec: the dataset the pairs are scored as (a run's dataset and label names). When
        given, every label must be a class id of ``spec``; for a ranking dataset, pairs
        without question ids (every format but ``wikiqa_txt``/``trecqa_dir``) take them
        from the sibling
        ``.ids`` file (``test.txt`` -> ``test.ids``, ``qid<TAB>docid`` per line, as
        ``re2-prepare`` writes).

      lower: a custom ``spec``'s ``processed`` file: lower-case its raw text.

    A custom dataset's file (``spec`` of :func:`custom_dataset`, format ``processed``) is read
    as :func:`load_split` reads its splits: raw text tokenised, labels by name or id.

    Raises:
      KeyError: unknown format. ValueError: malformed line (``<path>:<line>: ...``), a label
      outside ``spec``'s labels (``<path>:<line>: ...``), or, for a ranking ``spec``, pairs
      without ids and no ``.ids`` file (or one of another length).
    """
    if spec is not None and spec.raw_text and fmt == "processed":
        examples = _read_custom(Path(path), spec, lower)
        if spec.ranking:
            examples = _with_ids(
                examples,
                Path(path),
                ValueError(
                    f"{os.fspath(path)}: a ranking dataset needs {Path(path).with_suffix('.ids')}"
                ),
            )
        return examples
    examples = readers.read_file(path, fmt)
    if spec is not None:
        for ex in examples:
            if ex.label is not None and not 0 <= ex.label < spec.num_classes:
                raise ValueError(
                    f"{os.fspath(path)}:{ex.line}: label {ex.label} is not one of "
                    f"{spec.name}'s labels {dict(enumerate(spec.label_names))}"
                )
        if spec.ranking and any(ex.qid is None for ex in examples):
            ids_path = Path(path).with_suffix(".ids")
            examples = _with_ids(
                examples,
                Path(path),
                ValueError(
                    f"{os.fspath(path)}: {fmt} lines carry no question ids, which MAP/MRR need: "
                    f"write {ids_path} (qid<TAB>docid per line, as re2-prepare writes) or "
                    f"score the corpus file with --format=wikiqa_txt"
                ),
            )
    tokenizer_name = FORMAT_TOKENIZERS[fmt]
    if tokenizer_name is None:
        return examples
    tokenize = get_tokenizer(tokenizer_name, lower=True)
    return [
        dataclasses.replace(
            ex, text1=" ".join(tokenize(ex.text1)), text2=" ".join(tokenize(ex.text2))
        )
        for ex in examples
    ]
