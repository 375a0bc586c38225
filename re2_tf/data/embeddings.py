"""Pretrained word vectors in GloVe text format, streamed in bounded memory.

Format: one word per line, ``word v1 v2 ... vD`` separated by single spaces (Pennington et
al., 2014). Files may be plain text, ``.gz``, or a ``.zip`` holding exactly one ``.txt``
(e.g. ``glove.840B.300d.zip``). Files are read line by line and never held in memory.

Behaviour follows the release's ``src/utils/loader.py`` (``embedding_mode='freq'``): tokens
are lower-cased when ``lower`` is set, and when lower-casing merges several tokens
(``The``/``the``) the **first occurrence in the file wins**. Rows of words without a
vector, and rows 0 (``<PAD>``) and 1 (``<UNK>``), are zero.

Lines whose word itself contains spaces (a few exist in ``glove.840B.300d.txt``, e.g.
``. . .`` or ``at&t co``) have more than ``D + 1`` fields: the word is every field but the
last ``D``. Such a word can never match a whitespace-split token, so the line is skipped (the
release skips them too), but not silently: every pass over the file logs how many were
skipped, with a few of the words. ``D`` is read from the first line, which must therefore
be an ordinary one-word line (or pass ``dim``). Lines with fewer than ``D + 1`` fields, and
lines with non-numeric values among the lines that are used, raise
``ValueError("<file>:<line>: ...")``. Unlike the release, such lines are not silently skipped.
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import io
import os
import zipfile
from collections.abc import Iterable, Iterator

import numpy as np
from absl import logging

from re2_tf.data.vocab import PAD_ID, UNK_ID, Vocab

__all__ = [
    "open_glove",
    "iter_glove",
    "load_glove_words",
    "load_vectors",
    "embedding_matrix",
    "load_embeddings",
    "save_cache",
    "load_cache",
    "vocab_and_embeddings",
]

VOCAB_FILE = "vocab.txt"
EMBEDDINGS_FILE = "embeddings.npy"


@contextlib.contextmanager
def open_glove(path: str | os.PathLike) -> Iterator[io.TextIOBase]:
    """Opens a GloVe file (plain, ``.gz``, or ``.zip`` with one ``.txt``) as UTF-8 text.

    Raises:
      ValueError: a ``.zip`` without exactly one ``.txt`` member.
    """
    path = os.fspath(path)
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
            yield f
    elif path.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            members = [n for n in archive.namelist() if n.endswith(".txt")]
            if len(members) != 1:
                raise ValueError(
                    f"{path}: expected exactly one .txt file in the zip, found {members}"
                )
            with archive.open(members[0]) as raw:
                yield io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    else:
        with open(path, encoding="utf-8", newline="\n") as f:
            yield f


def iter_glove(path: str | os.PathLike, dim: int | None = None) -> Iterator[tuple[int, str, str]]:
    """Streams ``(1-based line number, word, values_string)`` for every usable line.

    ``values_string`` is the unparsed ``"v1 v2 ... vD"`` (parse only the lines you need).
    A fastText ``.vec`` header (a first line of two integers, ``"<count> <dim>"``; FITN's
    vectors) is read as the dimension, not as a word. ``dim`` defaults to the number of fields
    of the first line minus one. Lines whose word contains spaces (more than ``dim + 1`` fields) are
    skipped and, once the file has been
    read to its end, counted in a warning log line (with up to 5 of the words); empty lines
    are skipped.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a line with fewer than ``dim + 1`` fields.
    """
    name = os.fspath(path)
    spaced, spaced_words = 0, []
    with open_glove(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n").rstrip(" ")
            if not line:
                continue
            word, _, values = line.partition(" ")
            n_values = values.count(" ") + 1 if values else 0
            if lineno == 1 and n_values == 1 and word.isdigit() and values.isdigit():
                header_dim = int(values)  # fastText .vec header "<count> <dim>"
                if dim is not None and dim != header_dim:
                    raise ValueError(f"{name}:1: header gives dim {header_dim}, expected {dim}")
                dim = header_dim
                continue
            if dim is None:
                if n_values < 1:
                    raise ValueError(f"{name}:{lineno}: no vector values")
                dim = n_values
            if n_values == dim:
                yield lineno, word, values
            elif n_values < dim:
                raise ValueError(
                    f"{name}:{lineno}: expected {dim} values after the word, got {n_values}"
                )
            else:  # the word contains spaces: it never matches a token
                spaced += 1
                if len(spaced_words) < 5:
                    spaced_words.append(line.rsplit(" ", dim)[0])
    if spaced:
        logging.warning(
            "%s: skipped %d lines whose word contains spaces (never a token), e.g. %s",
            name,
            spaced,
            spaced_words,
        )


def load_glove_words(
    path: str | os.PathLike, lower: bool = True, dim: int | None = None
) -> set[str]:
    """Returns the set of words that have a vector (lower-cased if ``lower``).

    One streaming pass; used for :meth:`re2_tf.data.vocab.Vocab.build`'s
    ``pretrained_words`` (the release's ``Vocab.load_embedding_vocab``).

    Raises:
      ValueError: see :func:`iter_glove`.
    """
    words = set()
    for _, word, _ in iter_glove(path, dim):
        words.add(word.lower() if lower else word)
    return words


def load_vectors(
    path: str | os.PathLike, words: Iterable[str], dim: int | None = None, lower: bool = True
) -> tuple[dict[str, np.ndarray], int]:
    """Streams a GloVe file once and returns the vectors of ``words`` only.

    Args:
      path: GloVe file (plain, ``.gz`` or ``.zip``).
      words: the words wanted (compared after lower-casing file words if ``lower``).
      dim: vector size; inferred from the file's first line if ``None``.
      lower: lower-case file words before matching (first occurrence wins).

    Returns:
      ``({word: float32[dim]}, dim)`` for the wanted words that have a vector.

    Raises:
      ValueError: ``<path>:<line>: ...`` for a short line or a non-numeric value in a used
        line; ``<path>: ...`` if the file has no vector lines.
    """
    wanted = set(words)
    found: dict[str, np.ndarray] = {}
    name = os.fspath(path)
    seen_any = False
    for lineno, word, values in iter_glove(path, dim):
        if not seen_any:
            dim, seen_any = values.count(" ") + 1, True
        if lower:
            word = word.lower()
        if word not in wanted or word in found:
            continue
        try:
            found[word] = np.array(values.split(" "), dtype=np.float32)
        except ValueError:
            raise ValueError(f"{name}:{lineno}: non-numeric vector value for {word!r}") from None
    if not seen_any:
        raise ValueError(f"{name}: no word vectors found")
    return found, dim


def embedding_matrix(vocab: Vocab, vectors: dict[str, np.ndarray], dim: int) -> np.ndarray:
    """float32 ``[len(vocab), dim]``: row ``i`` = vector of token ``i``; rows 0/1 and OOV zero."""
    matrix = np.zeros((len(vocab), dim), dtype=np.float32)
    hits = 0
    for i, token in enumerate(vocab.tokens):
        if i not in (PAD_ID, UNK_ID) and token in vectors:
            matrix[i] = vectors[token]
            hits += 1
    logging.info(
        "embeddings: %d/%d vocabulary words have vectors (dim %d)", hits, len(vocab) - 2, dim
    )
    return matrix


def load_embeddings(
    path: str | os.PathLike, vocab: Vocab, dim: int | None = None, lower: bool | None = None
) -> np.ndarray:
    """Builds the embedding matrix for ``vocab`` from a GloVe-format file (one pass).

    Source: the release's ``load_embeddings`` (``src/utils/loader.py``, mode ``freq``).

    Args:
      path: GloVe file (plain, ``.gz`` or ``.zip``).
      vocab: the vocabulary; row ``i`` of the result belongs to id ``i``.
      dim: vector size; inferred from the file's first line if ``None``.
      lower: lower-case file words before matching; defaults to ``vocab.lower``.

    Returns:
      ``np.ndarray`` float32 of shape ``[len(vocab), dim]``. Rows 0/1 and rows of words
      without a vector are zero; for a word occurring several times (after lower-casing)
      the first occurrence's vector is used.

    Raises:
      ValueError: see :func:`load_vectors`.
    """
    lower = vocab.lower if lower is None else lower
    vectors, dim = load_vectors(path, vocab.tokens[2:], dim, lower)
    return embedding_matrix(vocab, vectors, dim)


def save_cache(directory: str | os.PathLike, vocab: Vocab, matrix: np.ndarray) -> None:
    """Writes ``vocab.txt`` and ``embeddings.npy`` (float32 ``[len(vocab), dim]``) to ``directory``.

    Raises:
      ValueError: if the matrix does not have one row per vocabulary entry.
    """
    if matrix.ndim != 2 or matrix.shape[0] != len(vocab):
        raise ValueError(f"matrix shape {matrix.shape} does not match vocab size {len(vocab)}")
    os.makedirs(directory, exist_ok=True)
    vocab.save(os.path.join(directory, VOCAB_FILE))
    np.save(os.path.join(directory, EMBEDDINGS_FILE), matrix.astype(np.float32, copy=False))


def load_cache(
    directory: str | os.PathLike, lower: bool = True
) -> tuple[Vocab, np.ndarray | None] | None:
    """Loads what :func:`save_cache` wrote.

    Returns:
      ``(vocab, matrix)``; ``matrix`` is ``None`` if only ``vocab.txt`` exists (a run
      without pretrained vectors); ``None`` if there is no ``vocab.txt``.

    Raises:
      ValueError: matrix rows != vocabulary size, or a malformed vocabulary file.
    """
    vocab_path = os.path.join(directory, VOCAB_FILE)
    if not os.path.exists(vocab_path):
        return None
    vocab = Vocab.load(vocab_path, lower=lower)
    matrix_path = os.path.join(directory, EMBEDDINGS_FILE)
    if not os.path.exists(matrix_path):
        return vocab, None
    matrix = np.load(matrix_path)
    if matrix.ndim != 2 or matrix.shape[0] != len(vocab):
        raise ValueError(
            f"{matrix_path}: shape {matrix.shape} does not match "
            f"{vocab_path} ({len(vocab)} entries)"
        )
    return vocab, matrix.astype(np.float32, copy=False)


def vocab_and_embeddings(
    train_tokens: Iterable[str],
    *,
    embeddings_path: str | None,
    cache_dir: str | os.PathLike | None = None,
    min_df: int = 5,
    dim: int | None = None,
    lower: bool = True,
) -> tuple[Vocab, np.ndarray | None]:
    """Vocabulary + embedding matrix for a run, reusing ``cache_dir`` when it is filled.

    On a cache miss the vectors file is streamed **once**: the vectors of every (lower-cased)
    training word are kept (first occurrence wins), the vocabulary is built with the release
    rule using "has a vector" from that pass (only training words matter for it, so this
    equals :func:`load_glove_words` + :meth:`Vocab.build`), the matrix is filled, and both
    are saved to ``cache_dir``. Without ``embeddings_path`` the vocabulary uses ``min_df``
    only and the matrix is ``None``.

    Args:
      train_tokens: every token occurrence of the training split (both texts).
      embeddings_path: GloVe file or ``None``.
      cache_dir: run directory to read/write ``vocab.txt``/``embeddings.npy``; ``None`` = no cache.
      min_df, dim, lower: as in :meth:`Vocab.build` / :func:`load_embeddings`.

    Returns:
      ``(vocab, matrix)`` with ``matrix`` float32 ``[len(vocab), dim]`` or ``None``.
    """
    if cache_dir is not None:
        cached = load_cache(cache_dir, lower=lower)
        if cached is not None and (cached[1] is not None or embeddings_path is None):
            logging.info("loaded vocabulary (%d) and embeddings from %s", len(cached[0]), cache_dir)
            return cached
    counts = (
        collections.Counter(t.lower() for t in train_tokens)
        if lower
        else collections.Counter(train_tokens)
    )
    matrix = None
    if embeddings_path:
        vectors, dim = load_vectors(embeddings_path, counts.keys(), dim, lower)
        vocab = Vocab.build(counts, min_df=min_df, pretrained_words=vectors.keys(), lower=lower)
        matrix = embedding_matrix(vocab, vectors, dim)
    else:
        vocab = Vocab.build(counts, min_df=min_df, lower=lower)
    if cache_dir is not None:
        if matrix is not None:
            save_cache(cache_dir, vocab, matrix)
        else:
            os.makedirs(cache_dir, exist_ok=True)
            vocab.save(os.path.join(cache_dir, VOCAB_FILE))
    return vocab, matrix
