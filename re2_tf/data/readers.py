"""Readers for the sentence-pair datasets used by RE2, in their distributed formats.

Every reader returns a list of :class:`PairExample` (one per kept line, in file order).
Texts are returned exactly as found in the file (raw, untokenised for the raw formats);
tokenisation is :mod:`re2_tf.data.tokenization`'s job and happens in ``re2-prepare``.

Formats (name -> reader, used by :func:`read_file`):

=================  ==========================================================  ===========
format             line layout                                                 labels
=================  ==========================================================  ===========
``processed``      ``text1<TAB>text2<TAB>label`` (the release's prepared form)  integer ids
``snli_jsonl``     SNLI 1.0 ``snli_1.0_*.jsonl``: ``sentence1``, ``sentence2``,  entailment 0,
                   ``gold_label`` (``-`` = no gold label: dropped, counted)     neutral 1,
                                                                                contradiction 2
``scitail_jsonl``  ``SciTailV1.1/snli_format/*.txt`` (jsonl, same fields)      entailment 0,
                                                                                neutral 1
``scitail_tsv``    ``SciTailV1.1/tsv_format/*.tsv``: ``premise<TAB>hypothesis   entails 0,
                   <TAB>label``                                                 neutral 1
``quora_tsv``      BiMPM ``Quora_question_pair_partition/*.tsv``:               0 / 1
                   ``label<TAB>q1<TAB>q2<TAB>id``
``wikiqa_txt``     ``WikiQA-*.txt``: ``question<TAB>sentence<TAB>label``       0 / 1
``trecqa_dir``     a TrecQA split *directory* in the castorini layout:          0 / 1
                   line ``i`` of ``a.toks`` (question), ``b.toks``
                   (candidate), ``sim.txt`` (label), ``id.txt`` (question id)
=================  ==========================================================  ===========

``trecqa_dir`` is the one format whose "file" is a directory (``--file=<trecqa>/clean-test
--format=trecqa_dir``); see :func:`read_trecqa_dir` for its ids and checks.

WikiQA ids: the TREC files shipped with the corpus (``WikiQA-*.ref``, ``*-filtered.ref``,
``emnlp-table/*.rank``) number questions ``1, 2, ...`` in order of first appearance in the
matching ``.txt`` (a question is a maximal run of consecutive lines with the same question
text) and candidates ``0, 1, ...`` within each question, in file order. :func:`read_wikiqa_txt`
reproduces that scheme (verified line for line against all three ``WikiQA-*.ref`` files), so
``qid``/``docid`` can be scored directly against the corpus ``.ref`` files. The rule compares
the question text exactly as distributed: applied to lower-cased text it would merge adjacent
questions that differ only in case (``What is a pm ?`` / ``What is a PM ?`` in WikiQA dev), so
prepared (lower-cased) splits carry their ids in a ``.ids`` file instead (:func:`read_ids`).

All readers raise ``ValueError("<file>:<line>: ...")`` (1-based line numbers) on malformed
lines: wrong number of fields, unknown label, invalid JSON, missing JSON fields (and, for
TrecQA, empty lines and files of different lengths).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from absl import logging

__all__ = [
    "PairExample",
    "READERS",
    "read_file",
    "read_processed",
    "read_snli_jsonl",
    "read_scitail_jsonl",
    "read_scitail_tsv",
    "read_quora_tsv",
    "read_wikiqa_txt",
    "read_trecqa_dir",
    "TRECQA_FILES",
    "read_ids",
    "write_processed",
    "write_ids",
]

SNLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}
SCITAIL_JSONL_LABELS = {"entailment": 0, "neutral": 1}
SCITAIL_TSV_LABELS = {"entails": 0, "neutral": 1}
BINARY_LABELS = {"0": 0, "1": 1}


@dataclasses.dataclass(frozen=True)
class PairExample:
    """One sentence pair.

    Attributes:
      text1: first text (premise / question), as stored in the file.
      text2: second text (hypothesis / candidate answer).
      label: integer class id (see each reader), or ``None`` for unlabelled data.
      qid: question id for ranking data (WikiQA, TrecQA), else ``None``.
      docid: candidate id within its question (WikiQA, TrecQA), else ``None``.
      pair_id: the distribution's own pair id where it has one (Quora BiMPM), else ``None``.
      line: 1-based line of the pair in the file it was read from (for error messages), or
        ``None``; not compared by ``==``.
    """

    text1: str
    text2: str
    label: int | None
    qid: str | None = None
    docid: str | None = None
    pair_id: str | None = None
    line: int | None = dataclasses.field(default=None, compare=False)


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yields ``(1-based line number, line without its trailing newline)``; skips nothing.

    Only ``\\n`` (and a trailing ``\\r``) end a line: texts may contain other Unicode line
    separators (U+2028, U+0085, ...) which ``str.splitlines`` would wrongly split on.
    """
    with open(path, encoding="utf-8", newline="\n") as f:
        for lineno, line in enumerate(f, 1):
            yield lineno, line.rstrip("\n").rstrip("\r")


def _error(path, lineno: int, message: str) -> ValueError:
    return ValueError(f"{os.fspath(path)}:{lineno}: {message}")


def _split_tab(path, lineno: int, line: str, n_fields: int, layout: str) -> list[str]:
    fields = line.split("\t")
    if len(fields) != n_fields:
        raise _error(
            path,
            lineno,
            f"expected {n_fields} tab-separated fields ({layout}), "
            f"got {len(fields)}: {line[:80]!r}",
        )
    return fields


def _label(path, lineno: int, value: str, mapping: dict[str, int]) -> int:
    if value not in mapping:
        raise _error(path, lineno, f"unknown label {value!r}; expected one of {sorted(mapping)}")
    return mapping[value]


def read_processed(
    path: str | os.PathLike, num_classes: int | None = None, with_labels: bool = True
) -> list[PairExample]:
    """Reads the release's prepared format ``text1<TAB>text2<TAB>label`` (one pair per line).

    This is the format the release's ``data/prepare_*.py`` scripts write and its
    ``src/utils/loader.py`` reads (RE2 release, Apache-2.0), and what ``re2-prepare`` writes.

    Args:
      path: file to read (UTF-8).
      num_classes: if given, labels must lie in ``[0, num_classes)``.
      with_labels: if False, lines may also have only two fields (``text1<TAB>text2``);
        such lines get ``label=None``.

    Returns:
      ``list[PairExample]`` in file order; ``label`` is the integer in the third column.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count or a label that is not a
        non-negative integer (or is ``>= num_classes``).
    """
    out = []
    for lineno, line in _lines(path):
        fields = line.split("\t")
        if not with_labels and len(fields) == 2:
            out.append(PairExample(fields[0], fields[1], None, line=lineno))
            continue
        if len(fields) != 3:
            raise _error(
                path,
                lineno,
                "expected 3 tab-separated fields (text1, text2, label), "
                f"got {len(fields)}: {line[:80]!r}",
            )
        text1, text2, raw = fields
        raw = raw.strip()
        if not (raw.isascii() and raw.isdigit()):
            raise _error(path, lineno, f"unknown label {raw!r}; expected a non-negative integer")
        label = int(raw)
        if num_classes is not None and label >= num_classes:
            raise _error(path, lineno, f"label {label} out of range for {num_classes} classes")
        out.append(PairExample(text1, text2, label, line=lineno))
    return out


def _read_nli_jsonl(
    path, mapping: dict[str, int], drop_label: str | None
) -> tuple[list[PairExample], int]:
    out, dropped = [], 0
    for lineno, line in _lines(path):
        if not line.strip():
            raise _error(path, lineno, "empty line")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise _error(path, lineno, f"invalid JSON: {e}") from None
        if not isinstance(record, dict):
            raise _error(path, lineno, "expected a JSON object")
        for key in ("sentence1", "sentence2", "gold_label"):
            if not isinstance(record.get(key), str):
                raise _error(path, lineno, f"missing or non-string field {key!r}")
        gold = record["gold_label"]
        if drop_label is not None and gold == drop_label:
            dropped += 1
            continue
        out.append(
            PairExample(
                record["sentence1"],
                record["sentence2"],
                _label(path, lineno, gold, mapping),
                pair_id=record.get("pairID"),
                line=lineno,
            )
        )
    return out, dropped


def read_snli_jsonl(path: str | os.PathLike) -> tuple[list[PairExample], int]:
    """Reads SNLI 1.0 ``snli_1.0_{train,dev,test}.jsonl`` (Bowman et al., 2015).

    Uses the raw ``sentence1``/``sentence2`` strings and ``gold_label``. Pairs whose gold
    label is ``-`` (no annotator majority) are dropped, as the release's data (Tay et al.'s
    preprocessing) did; the number dropped is returned and logged.

    Returns:
      ``(examples, num_dropped)``; labels entailment 0, neutral 1, contradiction 2;
      ``pair_id`` = SNLI's ``pairID``.

    Raises:
      ValueError: ``<path>:<line>: ...`` for invalid JSON, a missing field, or a gold label
        outside {entailment, neutral, contradiction, -}.
    """
    examples, dropped = _read_nli_jsonl(path, SNLI_LABELS, drop_label="-")
    logging.info(
        "%s: %d pairs read, %d without gold label dropped", os.fspath(path), len(examples), dropped
    )
    return examples, dropped


def read_scitail_jsonl(path: str | os.PathLike) -> list[PairExample]:
    """Reads SciTail v1.1 ``snli_format/scitail_1.0_{train,dev,test}.txt`` (Khot et al., 2018).

    JSON lines with ``sentence1``, ``sentence2`` and ``gold_label`` in {entailment, neutral};
    this is the file the release's ``prepare_scitail.py`` reads.

    Returns:
      ``list[PairExample]`` with labels entailment 0, neutral 1.

    Raises:
      ValueError: ``<path>:<line>: ...`` for invalid JSON, a missing field or another label.
    """
    return _read_nli_jsonl(path, SCITAIL_JSONL_LABELS, drop_label=None)[0]


def read_scitail_tsv(path: str | os.PathLike) -> list[PairExample]:
    """Reads SciTail v1.1 ``tsv_format/scitail_1.0_{train,dev,test}.tsv``.

    Layout ``premise<TAB>hypothesis<TAB>label`` with labels ``entails``/``neutral``.

    Returns:
      ``list[PairExample]`` with labels entails 0, neutral 1 (same ids as the jsonl reader).

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count or another label.
    """
    out = []
    for lineno, line in _lines(path):
        premise, hypothesis, label = _split_tab(path, lineno, line, 3, "premise, hypothesis, label")
        out.append(
            PairExample(
                premise, hypothesis, _label(path, lineno, label, SCITAIL_TSV_LABELS), line=lineno
            )
        )
    return out


def read_quora_tsv(path: str | os.PathLike) -> list[PairExample]:
    """Reads the BiMPM Quora partition ``Quora_question_pair_partition/{train,dev,test}.tsv``.

    Layout ``label<TAB>question1<TAB>question2<TAB>pair_id`` (Wang et al., 2017); the release's
    ``prepare_quora.py`` reorders it to ``q1<TAB>q2<TAB>label`` and drops the id.

    Returns:
      ``list[PairExample]`` with label 1 = duplicate, 0 = not duplicate; ``pair_id`` set.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count or a label other than 0/1.
    """
    out = []
    for lineno, line in _lines(path):
        label, q1, q2, pair_id = _split_tab(path, lineno, line, 4, "label, q1, q2, id")
        out.append(
            PairExample(
                q1, q2, _label(path, lineno, label, BINARY_LABELS), pair_id=pair_id, line=lineno
            )
        )
    return out


def read_wikiqa_txt(path: str | os.PathLike) -> list[PairExample]:
    """Reads WikiQA ``WikiQA-{train,dev,test}.txt`` (Yang et al., 2015):
    ``question<TAB>sentence<TAB>label``.

    Assigns the ids used by the corpus' TREC files: ``qid`` = 1-based index of the question
    (maximal run of consecutive lines with identical question text), ``docid`` = 0-based
    index of the candidate within its question. Both are strings.

    Returns:
      ``list[PairExample]`` with label 1 = correct answer, 0 = incorrect.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a wrong field count or a label other than 0/1.
    """
    out = []
    previous, qid, docid = None, 0, 0
    for lineno, line in _lines(path):
        question, sentence, label = _split_tab(path, lineno, line, 3, "question, sentence, label")
        if question != previous:
            previous, qid, docid = question, qid + 1, 0
        out.append(
            PairExample(
                question,
                sentence,
                _label(path, lineno, label, BINARY_LABELS),
                qid=str(qid),
                docid=str(docid),
                line=lineno,
            )
        )
        docid += 1
    return out


#: Per-pair files of a castorini TrecQA split directory, in ``PairExample`` field order.
TRECQA_FILES = ("a.toks", "b.toks", "sim.txt", "id.txt")


def _trecqa_column(path: Path) -> list[tuple[int, str]]:
    """Non-empty lines of one TrecQA file; an empty (or blank) line is an error."""
    out = []
    for lineno, line in _lines(path):
        if not line.strip():
            raise _error(path, lineno, "empty line")
        out.append((lineno, line))
    return out


def _trecqa_integers(path: Path) -> list[tuple[int, int]]:
    """``boundary.txt`` / ``numrels.txt``: one non-negative integer per line."""
    out = []
    for lineno, line in _trecqa_column(path):
        value = line.strip()
        if not (value.isascii() and value.isdigit()):
            raise _error(path, lineno, f"expected a non-negative integer, got {line[:80]!r}")
        out.append((lineno, int(value)))
    return out


def read_trecqa_dir(path: str | os.PathLike) -> list[PairExample]:
    """Reads one TrecQA split directory in the castorini (Castor) layout.

    TrecQA is the TREC QA answer-selection data of Wang, Smith and Mitamura (EMNLP 2007);
    the ``clean-{dev,test}`` versions (questions with no correct or no incorrect candidate
    removed) are those of Rao, He and Lin (CIKM 2016). The layout is the one of castorini's
    ``data/TrecQA`` (and of ``l11x0m7/Question_Answering_Models`` ``cQA/data/TrecQA/``, the
    copy in ``shared/data/trecqa``): line ``i`` of each file describes pair ``i``::

        a.toks    question, tokenised and lower-cased (tokens separated by single spaces)
        b.toks    candidate answer sentence, tokenised and lower-cased
        sim.txt   1 = correct answer, 0 = incorrect
        id.txt    question id (e.g. ``32.1``); a question is a run of consecutive lines
        boundary.txt  (optional) first line of each question (0-based), then the line count
        numrels.txt   (optional) number of correct candidates of each question

    Texts are returned as stored. ``qid`` is the ``id.txt`` value (whitespace-stripped);
    ``docid`` is the 0-based index of the candidate within its question (file order), so
    ``(qid, docid)`` is unique. ``boundary.txt`` and ``numrels.txt`` are not needed, but when
    present they must agree with ``id.txt`` / ``sim.txt`` (checked, so a misaligned copy is
    caught). ``line`` is the 1-based line number, the same in all four files.

    Returns:
      ``list[PairExample]`` in file order, label 1 = correct, 0 = incorrect.

    Raises:
      FileNotFoundError: ``path`` is not a directory or lacks one of :data:`TRECQA_FILES`.
      ValueError: ``<file>:<line>: ...`` for an empty line, a label other than 0/1, files
        with different line counts (naming the first line one of them lacks), a question id
        that reappears after another question, or a ``boundary.txt``/``numrels.txt`` that
        disagrees with the pairs.
    """
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{directory}: not a directory (a TrecQA split directory "
            f"holds {', '.join(TRECQA_FILES)})"
        )
    files = [directory / name for name in TRECQA_FILES]
    for file in files:
        if not file.is_file():
            raise FileNotFoundError(
                f"{file} not found (a TrecQA split directory holds {', '.join(TRECQA_FILES)})"
            )
    columns = [_trecqa_column(file) for file in files]
    n = max(len(column) for column in columns)
    for file, column in zip(files, columns):
        if len(column) != n:
            longest = files[[len(c) for c in columns].index(n)]
            raise _error(
                file,
                len(column) + 1,
                f"missing line: {file.name} has {len(column)} lines but {longest.name} has {n}",
            )
    out, seen = [], set()
    previous, docid = None, 0
    for (lineno, question), (_, candidate), (_, sim), (_, qid) in zip(*columns):
        label = _label(files[2], lineno, sim.strip(), BINARY_LABELS)
        qid = qid.strip()
        if qid != previous:
            if qid in seen:
                raise _error(
                    files[3],
                    lineno,
                    f"question id {qid!r} reappears after another "
                    "question (a question must be one run of consecutive lines)",
                )
            seen.add(qid)
            previous, docid = qid, 0
        out.append(PairExample(question, candidate, label, qid=qid, docid=str(docid), line=lineno))
        docid += 1
    _check_trecqa_groups(directory, out)
    return out


def _check_trecqa_groups(directory: Path, examples: list[PairExample]) -> None:
    """Checks the optional ``boundary.txt`` / ``numrels.txt`` against the pairs."""
    starts = [i for i, ex in enumerate(examples) if ex.docid == "0"]
    ends = starts[1:] + [len(examples)]
    _check_trecqa_counts(
        directory / "boundary.txt",
        starts + [len(examples)],
        "id.txt",
        "0-based first line of each question, then the pair count",
    )
    _check_trecqa_counts(
        directory / "numrels.txt",
        [sum(ex.label for ex in examples[a:b]) for a, b in zip(starts, ends)],
        "sim.txt",
        "correct candidates of each question",
    )


def _check_trecqa_counts(path, expected, source, meaning):
    """``path`` (if it exists) must hold the integers ``expected``, one per line."""
    if not path.is_file():
        return
    values = _trecqa_integers(path)
    for k, (lineno, value) in enumerate(values):
        if k >= len(expected) or value != expected[k]:
            raise _error(
                path,
                lineno,
                f"{value} disagrees with {source}: expected "
                + (f"{expected[k]}" if k < len(expected) else "no more lines")
                + f" ({meaning})",
            )
    if len(values) < len(expected):
        raise _error(
            path, len(values) + 1, f"missing line: expected {len(expected)} lines ({meaning})"
        )


def read_ids(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Reads a ``qid<TAB>docid`` file (one line per pair, as :mod:`re2_tf.data.prepare` writes).

    Raises:
      ValueError: ``<path>:<line>: ...`` if a line does not have exactly two non-empty fields.
    """
    out = []
    for lineno, line in _lines(path):
        qid, docid = _split_tab(path, lineno, line, 2, "qid, docid")
        if not qid or not docid:
            raise _error(path, lineno, "empty qid or docid")
        out.append((qid, docid))
    return out


def _check_text(text: str, what: str) -> None:
    if "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(f"{what} contains a tab or newline: {text[:80]!r}")


def write_processed(path: str | os.PathLike, examples) -> None:
    """Writes ``text1<TAB>text2<TAB>label`` lines (UTF-8, ``\\n``); see :func:`read_processed`.

    Raises:
      ValueError: if a text contains a tab/newline or a label is ``None``.
    """
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for ex in examples:
            _check_text(ex.text1, "text1")
            _check_text(ex.text2, "text2")
            if ex.label is None:
                raise ValueError("cannot write an unlabelled example in the processed format")
            f.write(f"{ex.text1}\t{ex.text2}\t{int(ex.label)}\n")


def write_ids(path: str | os.PathLike, examples) -> None:
    """Writes ``qid<TAB>docid`` per example (see :func:`read_ids`).

    Raises:
      ValueError: if an example lacks a qid or docid.
    """
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for ex in examples:
            if ex.qid is None or ex.docid is None:
                raise ValueError("example without qid/docid")
            f.write(f"{ex.qid}\t{ex.docid}\n")


READERS: dict[str, Callable[..., list[PairExample]]] = {
    "processed": read_processed,
    "snli_jsonl": lambda path: read_snli_jsonl(path)[0],
    "scitail_jsonl": read_scitail_jsonl,
    "scitail_tsv": read_scitail_tsv,
    "quora_tsv": read_quora_tsv,
    "wikiqa_txt": read_wikiqa_txt,
    "trecqa_dir": read_trecqa_dir,
}


def read_file(path: str | os.PathLike, fmt: str) -> list[PairExample]:
    """Reads ``path`` with the reader registered under ``fmt`` (see the module docstring).

    Raises:
      KeyError: unknown format name.
      ValueError: malformed line (``<path>:<line>: ...``).
    """
    if fmt not in READERS:
        raise KeyError(f"unknown format {fmt!r}; known: {sorted(READERS)}")
    return READERS[fmt](path)
