"""Prepare a benchmark for re2_tf: raw distribution -> ``<output>/{train,dev,test}.txt``.

Output lines are ``text1<TAB>text2<TAB>label``: texts tokenised as the RE2 release's
``data/prepare_*.py`` scripts do (see ``re2_tf/data/tokenization.py``), tokens joined by
single spaces, lower-cased (``--lower``), labels as ids in ``re2_tf.data.datasets`` order.
WikiQA also gets ``{train,dev,test}.ids`` (``qid<TAB>docid``) and the filtered references
``{dev,test}.ref``. TrecQA (castorini layout) gets ``train`` (``train/``), ``dev``
(``clean-dev/``), ``test`` (``clean-test/``) and, when present, ``raw_dev``/``raw_test``
(``raw-dev/``, ``raw-test/``), each with its ``.ids``. ``--dataset=sample`` cuts the
bundled SNLI sample (see ``data/sample/README.md``); ``--dataset=sample_ranking`` builds the
bundled ranking sample from it (:func:`build_sample_ranking`, ``data/sample_ranking/README.md``).

Library: :func:`prepare`. Command line (:mod:`re2_tf.cli.prepare`; see data/README.md for
downloads)::

    re2-prepare --dataset=snli    --input=snli_1.0.zip
    re2-prepare --dataset=scitail --input=SciTailV1.1.zip
    re2-prepare --dataset=quora   --input=Quora_question_pair_partition
    re2-prepare --dataset=wikiqa  --input=WikiQACorpus.zip
    re2-prepare --dataset=trecqa  --input=<dir holding train/ clean-dev/ ...>
    re2-prepare --dataset=sample  --input=<dir with SNLI re2_processed dev.txt, test.txt>
    re2-prepare --dataset=sample_ranking --input=data/sample --output=data/sample_ranking
    re2-prepare --dataset=snli --learning_check --input=data/snli --output=data/snli_check

The input is the downloaded ``.zip`` or the directory it was extracted to; files are found
by name anywhere below it (``__MACOSX`` entries are ignored).

A *learning check* (:func:`learning_check`, ``--learning_check``) is the small split the
comparison and the sweeps train on where a training set is too big for a CPU or not at hand:
train on a prepared dataset's dev file, select on the first half of its test file, score the
second half. Its input is a prepared directory (``dev.txt`` and ``test.txt``).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

from absl import logging

from re2_tf.data import readers
from re2_tf.data.datasets import get_dataset
from re2_tf.data.tokenization import get_tokenizer

__all__ = [
    "PREPARABLE",
    "PREPARATIONS",
    "Preparation",
    "RAW_FILES",
    "TRECQA_SPLITS",
    "build_sample_ranking",
    "learning_check",
    "prepare",
]

# TrecQA: output split -> castorini split directory; the raw sets are optional.
TRECQA_SPLITS = {
    "train": "train",
    "dev": "clean-dev",
    "test": "clean-test",
    "raw_dev": "raw-dev",
    "raw_test": "raw-test",
}
TRECQA_OPTIONAL = ("raw_dev", "raw_test")
RAW_FORMAT = {".jsonl": "snli_jsonl", ".txt": "scitail_jsonl", ".tsv": "scitail_tsv"}


@dataclasses.dataclass(frozen=True)
class Preparation:
    """How :func:`prepare` turns one dataset's raw distribution into its prepared splits (one
    entry of :data:`PREPARATIONS` per dataset of :data:`re2_tf.data.datasets.DATASETS`).

    Either the common path -- per split, the first raw file below the input whose path ends
    with one of ``files[split]``, read by ``read``, tokenised with the dataset's tokeniser,
    written as ``<split>.txt`` -- or a whole path of its own (``prepare``).

    Attributes:
      files: ``{split: (path ending, ...)}``, first match wins.
      read: ``read(path, ending, split) -> [PairExample]``, the raw file's pairs.
      ids: also write ``<split>.ids`` (``qid<TAB>docid``) from the pairs read.
      extras: ``{output file name: raw path ending}``, further raw files copied unchanged.
      prepare: ``prepare(input_path, output, lower, sample_train, sample_test) -> counts``,
        instead of the common path.
    """

    files: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    read: Callable | None = None
    ids: bool = False
    extras: Mapping[str, str] = dataclasses.field(default_factory=dict)
    prepare: Callable | None = None


def _find(root: Path, endings: list[str]) -> tuple[Path, str]:
    """First file below ``root`` whose path ends with one of ``endings`` (in that order)."""
    files = [p for p in root.rglob("*") if p.is_file() and "__MACOSX" not in p.parts]
    for ending in endings:
        matches = sorted(
            p for p in files if p.as_posix().endswith("/" + ending) or p.as_posix() == ending
        )
        if matches:
            return matches[0], ending
    raise FileNotFoundError(f"none of {endings} found under {root}")


def _find_trecqa_root(root: Path) -> Path:
    """The directory at or below ``root`` holding the required TrecQA split directories
    (``train/``, ``clean-dev/``, ``clean-test/``, each with ``a.toks``); the first in path
    order if several (so a castorini data root holding other corpora is also fine).

    Raises:
      FileNotFoundError: there is none (the message lists what is looked for).
    """
    required = [TRECQA_SPLITS[s] for s in TRECQA_SPLITS if s not in TRECQA_OPTIONAL]
    member = readers.TRECQA_FILES[0]
    candidates = [root] + sorted(
        p.parent.parent for p in root.rglob(member) if p.parent.name == required[0]
    )
    for base in candidates:
        if "__MACOSX" not in base.parts and all(
            (base / name / member).is_file() for name in required
        ):
            return base
    raise FileNotFoundError(
        f"no directory holding TrecQA split directories "
        f"{', '.join(n + '/' for n in required)} (each with "
        f"{', '.join(readers.TRECQA_FILES)}) under {root}"
    )


def _extract(archive: Path, wanted: list[str], into: Path) -> None:
    """Extracts the members of ``archive`` whose names end with a wanted basename."""
    basenames = {Path(w).name for w in wanted}
    with zipfile.ZipFile(archive) as z:
        for member in z.namelist():
            if Path(member).name in basenames and "__MACOSX" not in member:
                z.extract(member, into)


def _tokenized(examples, tokenizer_name: str, lower: bool):
    tokenize = get_tokenizer(tokenizer_name, lower=lower)
    return [
        dataclasses.replace(
            ex, text1=" ".join(tokenize(ex.text1)), text2=" ".join(tokenize(ex.text2))
        )
        for ex in examples
    ]


def _write_split(output: Path, dataset: str, split: str, examples) -> dict:
    """Writes ``<output>/<split>.txt``; counts and logs the pairs with an empty text.

    Such pairs are kept (evaluation data is never dropped; the models define an empty text
    as an all-padding row), but they are reported with their output line numbers.
    """
    readers.write_processed(output / f"{split}.txt", examples)
    empty = [i for i, ex in enumerate(examples, 1) if not ex.text1.split() or not ex.text2.split()]
    logging.log(
        logging.WARNING if empty else logging.INFO,
        "%s %s: %d pairs, %d with an empty text after tokenisation%s",
        dataset,
        split,
        len(examples),
        len(empty),
        f" (lines {empty[:10]})" if empty else "",
    )
    return {"pairs": len(examples), "empty_text_pairs": len(empty)}


def prepare(
    dataset: str,
    input_path: str | os.PathLike,
    output: str | os.PathLike,
    lower: bool = True,
    sample_train: int = 8000,
    sample_test: int = 2000,
) -> dict:
    """Writes the prepared splits of ``dataset`` to ``output``.

    Returns:
      ``{split: {"pairs": n, "empty_text_pairs": k}}``: pairs written, and how many of them
      have a text with no token after tokenisation (kept, and logged with their lines);
      TrecQA splits also report ``"questions"``, ``sample_ranking`` splits the counts of
      :func:`build_sample_ranking`.

    Raises:
      FileNotFoundError: a required raw file is missing. ValueError: malformed raw data.
    """
    spec = get_dataset(dataset)  # KeyError naming the known datasets
    entry = PREPARATIONS[dataset]
    input_path, output = Path(input_path), Path(output)
    output.mkdir(parents=True, exist_ok=True)
    if entry.prepare is not None:
        return entry.prepare(input_path, output, lower, sample_train, sample_test)
    with tempfile.TemporaryDirectory() as tmp:
        root = input_path
        wanted = [e for endings in entry.files.values() for e in endings]
        wanted += list(entry.extras.values())
        if input_path.is_file() and input_path.suffix == ".zip":
            _extract(input_path, wanted, Path(tmp))
            root = Path(tmp)
        counts = {}
        for split, endings in entry.files.items():
            path, ending = _find(root, list(endings))
            logging.info("%s %s <- %s", dataset, split, path)
            examples = entry.read(path, ending, split)
            if entry.ids:
                readers.write_ids(output / f"{split}.ids", examples)
            examples = _tokenized(examples, spec.tokenizer, lower)
            counts[split] = _write_split(output, dataset, split, examples)
        for name, ending in entry.extras.items():
            extra, _ = _find(root, [ending])
            shutil.copyfile(extra, output / name)
    logging.info("wrote %s to %s", counts, output)
    return counts


def learning_check(prepared, output) -> dict:
    """The learning-check split of a prepared classification dataset (SNLI, Quora, SciTail):
    ``train.txt`` = its ``dev.txt``, ``dev.txt`` = the first ``n // 2`` lines of its
    ``test.txt``, ``test.txt`` = the other ``n - n // 2``; lines copied unchanged (our
    construction, the one RE2's SNLI learning check in this project uses: 9,842 / 4,912 /
    4,912 pairs for SNLI).

    Args:
        prepared: directory with ``dev.txt`` and ``test.txt`` in the prepared format.
        output: directory to write ``{train,dev,test}.txt`` to (created).

    Returns:
        ``{split: {"pairs": n}}``.

    Raises:
        FileNotFoundError: naming the missing file. ValueError: a test file of fewer than 2
        lines (nothing to split).
    """
    prepared, output = Path(prepared), Path(output)
    lines = {}
    for name in ("dev", "test"):
        path = prepared / f"{name}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"learning check: no {path}")
        lines[name] = path.read_text(encoding="utf-8").splitlines(keepends=True)
    half = len(lines["test"]) // 2
    if half < 1:
        raise ValueError(f"learning check: {prepared / 'test.txt'} has fewer than 2 lines")
    splits = {"train": lines["dev"], "dev": lines["test"][:half], "test": lines["test"][half:]}
    output.mkdir(parents=True, exist_ok=True)
    for split, chunk in splits.items():
        (output / f"{split}.txt").write_text("".join(chunk), encoding="utf-8")
    counts = {split: {"pairs": len(chunk)} for split, chunk in splits.items()}
    logging.info("learning check of %s: %s -> %s", prepared, counts, output)
    return counts


def _prepare_trecqa(input_path: Path, output: Path, lower: bool, *_) -> dict:
    """TrecQA, castorini layout (see :func:`re2_tf.data.readers.read_trecqa_dir`).

    Writes ``<split>.txt`` and ``<split>.ids`` for each split of :data:`TRECQA_SPLITS` whose
    directory exists in the TrecQA directory found at or below ``input_path`` (a directory
    or a ``.zip``; :func:`_find_trecqa_root`); ``train``, ``dev`` (clean) and ``test``
    (clean) are required, the raw sets optional. A raw directory that exists but is
    incomplete is an error, not skipped. Texts are already
    tokenised and lower-cased; whitespace tokenisation (+ ``--lower``) leaves them unchanged.
    ``TRAIN-ALL`` is not used (the shared copy lacks it).
    """
    spec = get_dataset("trecqa")
    with tempfile.TemporaryDirectory() as tmp:
        root = input_path
        if input_path.is_file() and input_path.suffix == ".zip":
            _extract(
                input_path, list(readers.TRECQA_FILES) + ["boundary.txt", "numrels.txt"], Path(tmp)
            )
            root = Path(tmp)
        base, counts = _find_trecqa_root(root), {}
        for split, name in TRECQA_SPLITS.items():
            directory = base / name
            if split in TRECQA_OPTIONAL and not directory.is_dir():
                logging.info("trecqa %s: no %s/ in %s, skipped", split, name, base)
                continue
            logging.info("trecqa %s <- %s", split, directory)
            examples = readers.read_trecqa_dir(directory)
            readers.write_ids(output / f"{split}.ids", examples)
            examples = _tokenized(examples, spec.tokenizer, lower)
            counts[split] = _write_split(output, "trecqa", split, examples)
            counts[split]["questions"] = len({ex.qid for ex in examples})
    logging.info("wrote %s to %s", counts, output)
    return counts


def _prepare_sample(input_dir: Path, output: Path, lower: bool, n_train: int, n_test: int) -> dict:
    """train = first ``n_train`` lines of SNLI dev, dev = the rest, test = first ``n_test`` of
    test (the bundled sample is prepared already: ``lower`` is not used)."""
    dev = readers.read_processed(_find(input_dir, ["dev.txt"])[0], num_classes=3)
    test = readers.read_processed(_find(input_dir, ["test.txt"])[0], num_classes=3)
    if len(dev) <= n_train or len(test) < n_test:
        raise ValueError(
            f"need > {n_train} dev and >= {n_test} test pairs, got {len(dev)}, {len(test)}"
        )
    splits = {"train": dev[:n_train], "dev": dev[n_train:], "test": test[:n_test]}
    return {
        split: _write_split(output, "sample", split, examples) for split, examples in splits.items()
    }


def build_sample_ranking(examples) -> tuple[list, dict]:
    """A ranking split built from SNLI pairs (our construction, for the bundled ranking
    sample ``data/sample_ranking``): each premise is a question and its hypotheses are the
    candidates, the entailed ones correct.

    1. Consecutive pairs with the same premise (``text1``) form one group (SNLI lists a
       premise's hypotheses on consecutive lines).
    2. A group with no entailed hypothesis (label 0) has no correct candidate: it is
       dropped and counted (``dropped_questions``, ``dropped_pairs``).
    3. Each kept group ``i`` of the ``Q`` kept groups becomes question ``Q{i+1}``: its own
       hypotheses in file order (label 1 = correct for entailment, 0 for neutral and
       contradiction), then one distractor, the hypothesis ``i mod n_j`` of group
       ``j = (i + Q // 2) mod Q`` (``n_j`` its size), labelled 0; if that text is one of
       question ``i``'s own hypotheses, the next group is used (``j + 1``, ...). No random
       number generator is involved, so the output depends only on the input.

    Every question therefore has at least one correct and one incorrect candidate, the
    question set that :func:`re2_tf.metrics.ranking_metrics` scores.

    Args:
      examples: ``PairExample`` s with labels 0 entailment, 1 neutral, 2 contradiction (the
        SNLI sample's ``read_processed`` output).

    Returns:
      ``(pairs, counts)``: ``PairExample`` s with ``qid`` ``Q<n>``, ``docid`` ``Q<n>-<k>``
      (``k`` = 0-based candidate index) and labels 0/1; counts ``questions``,
      ``correct`` (pairs labelled 1), ``dropped_questions``, ``dropped_pairs``.

    Raises:
      ValueError: fewer than two groups with an entailed hypothesis.
    """
    groups = [list(g) for _, g in itertools.groupby(examples, key=lambda ex: ex.text1)]
    kept = [g for g in groups if any(ex.label == 0 for ex in g)]
    if len(kept) < 2:
        raise ValueError(f"need >= 2 premises with an entailed hypothesis, got {len(kept)}")
    size = len(kept)
    pairs = []
    for i, group in enumerate(kept):
        own = {ex.text2 for ex in group}
        j = (i + size // 2) % size
        while j == i or kept[j][i % len(kept[j])].text2 in own:
            j = (j + 1) % size
        candidates = [(ex.text2, int(ex.label == 0)) for ex in group]
        candidates.append((kept[j][i % len(kept[j])].text2, 0))
        qid = f"Q{i + 1}"
        pairs += [
            readers.PairExample(group[0].text1, text, label, qid=qid, docid=f"{qid}-{k}")
            for k, (text, label) in enumerate(candidates)
        ]
    counts = {
        "questions": size,
        "correct": sum(ex.label for ex in pairs),
        "dropped_questions": len(groups) - size,
        "dropped_pairs": len(examples) - sum(len(g) for g in kept),
    }
    return pairs, counts


def _prepare_sample_ranking(input_dir: Path, output: Path, *_) -> dict:
    """``data/sample_ranking`` from the SNLI sample's ``{train,dev,test}.txt`` in
    ``input_dir`` (:func:`build_sample_ranking` per split): ``<split>.txt``,
    ``<split>.ids`` and, for dev and test, ``<split>.ref`` (TREC qrels ``qid 0 docid rel``,
    every candidate judged, as WikiQA's filtered ``.ref`` files)."""
    counts = {}
    for split in ("train", "dev", "test"):
        path = input_dir / f"{split}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found (the SNLI sample, data/sample)")
        pairs, built = build_sample_ranking(readers.read_processed(path, num_classes=3))
        readers.write_ids(output / f"{split}.ids", pairs)
        counts[split] = _write_split(output, "sample_ranking", split, pairs)
        counts[split].update(built)
        logging.info(
            "sample_ranking %s: %d questions; dropped %d premises (%d pairs) without an "
            "entailed hypothesis",
            split,
            built["questions"],
            built["dropped_questions"],
            built["dropped_pairs"],
        )
        if split != "train":
            with open(output / f"{split}.ref", "w", encoding="utf-8", newline="\n") as f:
                for ex in pairs:
                    f.write(f"{ex.qid} 0 {ex.docid} {ex.label}\n")
    logging.info("wrote %s to %s", counts, output)
    return counts


def _read_snli(path, ending, split):
    examples, dropped = readers.read_snli_jsonl(path)
    logging.info("snli %s: dropped %d pairs without gold label", split, dropped)
    return examples


def _each_split(endings):
    """``{split: (ending, ...)}`` with ``{s}`` in each ending replaced by the split."""
    return {s: tuple(e.format(s=s) for e in endings) for s in ("train", "dev", "test")}


#: Every dataset's :class:`Preparation` (the raw side of :data:`re2_tf.data.datasets.DATASETS`).
PREPARATIONS = {
    "snli": Preparation(_each_split(["snli_1.0_{s}.jsonl"]), _read_snli),
    "scitail": Preparation(
        _each_split(["snli_format/scitail_1.0_{s}.txt", "tsv_format/scitail_1.0_{s}.tsv"]),
        lambda path, ending, split: readers.read_file(path, RAW_FORMAT[Path(ending).suffix]),
    ),
    "quora": Preparation(
        _each_split(["Quora_question_pair_partition/{s}.tsv", "{s}.tsv"]),
        lambda path, ending, split: readers.read_quora_tsv(path),
    ),
    "wikiqa": Preparation(
        _each_split(["WikiQA-{s}.txt"]),
        lambda path, ending, split: readers.read_wikiqa_txt(path),
        ids=True,
        extras={f"{s}.ref": f"WikiQA-{s}-filtered.ref" for s in ("dev", "test")},
    ),
    "trecqa": Preparation(prepare=_prepare_trecqa),
    "sample": Preparation(prepare=_prepare_sample),
    "sample_ranking": Preparation(prepare=_prepare_sample_ranking),
}
#: Relative path endings of the raw files, per dataset and split (first match wins), of the
#: datasets prepared by the common path.
RAW_FILES = {name: dict(entry.files) for name, entry in PREPARATIONS.items() if entry.files}
#: Datasets :func:`prepare` knows (``sample``: the bundled SNLI cut; ``sample_ranking``: the
#: ranking sample built from it).
PREPARABLE = tuple(sorted(PREPARATIONS))
