"""Input featurisers: token lists -> model inputs, in Python and in-graph, with the same values.

A model spec declares the featurisers it needs (``FEATURIZERS[kind]``). Each one turns the
tokens of one sentence pair into named arrays and has two paths that agree exactly:

* :meth:`Featurizer.python` -- NumPy arrays for ONE pair, unpadded (``[len]`` or
  ``[len, W]``; an empty text gives length-0 arrays). Used for training, evaluation and
  ``predict --tokenize=python``.
* :meth:`Featurizer.graph` -- a ``tf.Module`` (lookup tables read from the saved vocabulary
  files through ``tf.saved_model.Asset``, so it can be saved inside the raw-text SavedModel;
  the ``wordpiece`` tokenizer carries its files as assets too, see
  :mod:`re2_tf.data.wordpiece`)
  whose ``__call__(tokens1, tokens2)`` takes ``tf.RaggedTensor`` string tokens
  ``[batch, (len)]`` (e.g. from :func:`re2_tf.data.text.whitespace_tokenize`) and returns
  ``{name: dense tensor [batch, max_len_in_batch(, W)]}`` padded with
  :attr:`FeatureSpec.pad_value` (0 everywhere except a tokenizer whose ``pad_id`` is not 0),
  and, for a featuriser that cuts its input, :data:`TRUNCATED_KEY`: int32 ``[batch]``, what
  it cut per pair (the same count as its Python path's ``stats``), which the raw-text
  SavedModel adds to its ``truncated`` output.

Life cycle: build with the constructor (``WordIds.from_vocab``), :meth:`Featurizer.fit` on the
training tokens (both texts), :meth:`Featurizer.save` the vocabulary into the run directory,
store ``{"kind": f.kind, "config": f.get_config()}`` (JSON) beside it, and later
:func:`load_featurizer` (``directory, kind, config``). ``stats`` (a ``collections.Counter``)
counts what the Python path truncated, cumulatively over calls; the graph path truncates
identically but cannot count. The graph path drops empty-string tokens (what
``tf.strings.split`` makes of an empty text), as ``str.split`` yields none.

Featurisers (``FEATURIZERS``):

``word_ids`` (:class:`WordIds`)
    ``text1``, ``text2`` int32 ``[len]``: ids of a :class:`re2_tf.data.vocab.Vocab` (unknown
    -> 1, padding 0), file ``vocab.txt`` in ``Vocab.save`` format.
``char_ids`` (:class:`CharIds`)
    ``text1_chars``, ``text2_chars`` int32 ``[len, max_word_length]``: character ids for the
    char-CNN of DRCN (Kim et al., 2019, Eq. 1 ``Char-Conv``) and FITN (Qi et al., 2022,
    ``ChConv``). File ``chars.txt``.
``exact_match`` (:class:`ExactMatch`)
    ``text1_exact_match``, ``text2_exact_match`` float32 ``[len]``: DRCN's exact-match flag.
``packed_pair`` (:class:`PackedPair`)
    ``token_ids``, ``segment_ids``, ``padding_mask`` int32 ``[len]`` (side ``pair``):
    ``[CLS] a [SEP] b [SEP]`` for BERT + MatchLSTM (Shao et al., 2019, Sec. 3), from a
    sub-word tokenizer (``TOKENIZERS``): ``wordpiece``
    (:class:`re2_tf.data.wordpiece.WordPieceTokenizer`: keras-hub's ``BertTokenizer`` and
    ``MultiSegmentPacker``; optional dependencies, ``pip install -e ".[bert]"``) or the
    dependency-free stand-in ``whole_word`` (:class:`WholeWordTokenizer`, packed by
    :class:`RoundRobinPacker`, the same rule written out). A model spec declares e.g.
    ``features={"packed_pair": {"tokenizer": {"kind": "wordpiece", "config": {}},
    "max_length": 128}}`` (tokenizer config: ``source``, ``lowercase``, ``strip_accents``).

Lower-casing: Python uses ``str.lower``, the graph ``tf.strings.lower(encoding="utf-8")``.
They agree on every code point (special cases such as ``'İ'`` -> ``'i̇'`` included) except
(a) characters added in Unicode 14 or later, which TensorFlow 2.21's ICU does not know
(e.g. U+2C2F, U+A7C0, U+A7D0, U+A7D6, U+A7D8, Vithkuqi U+10570-U+105BC: Python 3.11
lower-cases them, the graph keeps them), and (b) U+0000, at which ``tf.strings.lower`` ends
the string. None occurs in the staged datasets; ``tests/test_features.py`` checks 100%
agreement on every dev file.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import tensorflow as tf

from re2_tf.data.text import whitespace_tokenize
from re2_tf.data.vocab import PAD_ID, UNK_ID, Vocab
from re2_tf.data.wordpiece import WordPieceTokenizer

#: Key of the per-pair cut count a graph featuriser may return beside its features.
TRUNCATED_KEY = "truncated"

__all__ = [
    "TRUNCATED_KEY",
    "FeatureSpec",
    "Featurizer",
    "WordIds",
    "CharIds",
    "ExactMatch",
    "PackedPair",
    "WholeWordTokenizer",
    "WordPieceTokenizer",
    "RoundRobinPacker",
    "FEATURIZERS",
    "TOKENIZERS",
    "load_featurizer",
    "round_robin_lengths",
]


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """One model input produced by a featuriser.

    Attributes:
      name: model input name, e.g. ``"text1_chars"``.
      dtype: ``"int32"`` or ``"float32"``.
      inner_shape: trailing dims per position: ``()`` or ``(max_word_length,)``.
      side: ``"text1"``, ``"text2"`` or ``"pair"``: whose length axis the input follows
        (for padding and length bucketing).
      pad_value: the value padding positions get.
    """

    name: str
    dtype: str
    inner_shape: tuple
    side: str
    pad_value: int = 0


def _lookup_table(path: str | os.PathLike):
    """Asset + ``StaticHashTable`` of a ``Vocab.save`` file (line number = id, missing -> 1).

    The table is a named one with a UUID in its shared name
    (:class:`re2_tf._compat.UniqueTextFileInitializer`): both SavedModel loaders initialise it
    (``tf.saved_model.load`` and the TF1 session loader of ``saved_model_cli run`` and
    TensorFlow Serving, which runs the SavedModel's main op), and no two tables share contents.
    """
    # lazy: _compat imports Keras; re2-predict's Python-side featurisers import none
    from re2_tf._compat import UniqueTextFileInitializer

    asset = tf.saved_model.Asset(str(path))
    table = tf.lookup.StaticHashTable(
        UniqueTextFileInitializer(
            asset,
            tf.string,
            tf.lookup.TextFileIndex.WHOLE_LINE,
            tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER,
        ),
        default_value=UNK_ID,
    )
    return asset, table


def _lookup(table, tokens: tf.RaggedTensor) -> tf.RaggedTensor:
    return tf.cast(tf.ragged.map_flat_values(table.lookup, tokens), tf.int32)


def _tokens(tokens: tf.RaggedTensor, lower: bool) -> tf.RaggedTensor:
    """Graph-path input: drops empty-string tokens (``tf.strings.split`` makes ``[""]`` of an
    empty text, ``str.split`` makes ``[]``), then lower-cases if ``lower``."""
    tokens = tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)
    return (
        tf.ragged.map_flat_values(tf.strings.lower, tokens, encoding="utf-8") if lower else tokens
    )


def _not_fitted(kind: str) -> ValueError:
    return ValueError(f"{kind}: no vocabulary; call fit() or load() first")


def _save_vocab(owner, directory) -> list[str]:
    """Write ``owner.vocab`` to ``directory / owner.FILE``; returns ``[owner.FILE]``."""
    if owner.vocab is None:
        raise _not_fitted(owner.kind)
    owner.vocab.save(Path(directory) / owner.FILE)
    return [owner.FILE]


class Featurizer(abc.ABC):
    """Base class; see the module docstring for the contract of every method.

    Attributes:
      kind: registry key in :data:`FEATURIZERS`.
      stats: ``collections.Counter`` of losses on the Python path (e.g. truncated words).
    """

    kind: str

    def __init__(self):
        self.stats = collections.Counter()

    @abc.abstractmethod
    def specs(self) -> list[FeatureSpec]:
        """The inputs this featuriser produces."""

    @classmethod
    def create(cls, options: dict, vocab: Vocab) -> Featurizer:
        """A new, unfitted featuriser from a model spec's ``options``; ``vocab`` is the run's
        word vocabulary (built with the embeddings), which only ``word_ids`` uses."""
        return cls(**options)

    def files(self) -> list[str]:
        """Names of the files :meth:`save` writes (none by default)."""
        return []

    #: Positions kept per packed pair (``side == "pair"`` features), ``None`` for featurisers
    #: without packed pairs.
    pair_max_length: int | None = None

    @property
    def vocab_size(self) -> int | None:
        """Ids this featuriser can emit (its vocabulary size; ``None`` without a vocabulary)."""
        vocab = getattr(self, "vocab", None)
        return None if vocab is None else len(vocab)

    def fit(self, tokens: Iterable[str]) -> None:  # noqa: B027  (optional hook, not abstract)
        """Builds the vocabulary from every training token (both texts); default: nothing."""

    def save(self, directory: str | os.PathLike) -> list[str]:
        """Writes the vocabulary file(s) into ``directory``; returns their names."""
        return []

    @classmethod
    def load(cls, directory: str | os.PathLike, config: dict) -> Featurizer:
        """Rebuilds a featuriser from :meth:`get_config` and the files :meth:`save` wrote."""
        return cls(**config)

    @abc.abstractmethod
    def get_config(self) -> dict:
        """JSON-serialisable settings (not the vocabulary)."""

    @abc.abstractmethod
    def python(self, tokens1: list[str], tokens2: list[str]) -> dict[str, np.ndarray]:
        """Features of one pair: ``{name: unpadded array [len] or [len, W]}``."""

    @abc.abstractmethod
    def graph(self, directory: str | os.PathLike) -> tf.Module:
        """In-graph module reading the vocabulary saved in ``directory``."""


# --------------------------------------------------------------------------------- word ids
class WordIds(Featurizer):
    """Word ids of a :class:`~re2_tf.data.vocab.Vocab` (RE2's input, ``src/interface.py``).

    Outputs ``text1``, ``text2``: int32 ``[len]``, unknown -> 1 (``<UNK>``), padding 0. The
    vocabulary is built elsewhere, with the embeddings (``Vocab.build``), so :meth:`fit` does
    nothing. Lower-cases when ``vocab.lower`` -- in the graph too, even if the tokeniser has
    already done so (lower-casing is idempotent).

    Args:
      vocab: the word vocabulary.
    """

    kind = "word_ids"
    FILE = "vocab.txt"

    def __init__(self, vocab: Vocab):
        super().__init__()
        self.vocab = vocab

    @classmethod
    def from_vocab(cls, vocab: Vocab) -> WordIds:
        return cls(vocab)

    @classmethod
    def create(cls, options, vocab):
        return cls(vocab)

    def files(self):
        return [self.FILE]

    def specs(self):
        return [
            FeatureSpec("text1", "int32", (), "text1"),
            FeatureSpec("text2", "int32", (), "text2"),
        ]

    def save(self, directory):
        self.vocab.save(Path(directory) / self.FILE)
        return [self.FILE]

    @classmethod
    def load(cls, directory, config):
        """Raises ``ValueError`` naming the file and line of a malformed ``vocab.txt``."""
        return cls(Vocab.load(Path(directory) / cls.FILE, lower=config["lower"]))

    def get_config(self):
        return {"lower": self.vocab.lower}

    def python(self, tokens1, tokens2):
        return {
            "text1": np.asarray(self.vocab.encode(tokens1), np.int32),
            "text2": np.asarray(self.vocab.encode(tokens2), np.int32),
        }

    def graph(self, directory):
        return _WordIdsGraph(Path(directory) / self.FILE, self.vocab.lower)


class _WordIdsGraph(tf.Module):
    def __init__(self, path, lower):
        super().__init__(name="word_ids")
        self.asset, self.table = _lookup_table(path)
        self._lower = lower

    def __call__(self, tokens1, tokens2):
        return {
            name: _lookup(self.table, _tokens(tokens, self._lower)).to_tensor(PAD_ID)
            for name, tokens in (("text1", tokens1), ("text2", tokens2))
        }


# --------------------------------------------------------------------------------- char ids
class CharIds(Featurizer):
    """Character ids per word for a char-CNN (DRCN Eq. 1; FITN Sec. 3.1).

    Characters are Unicode code points (Python iteration over ``str`` =
    ``tf.strings.unicode_split(..., "UTF-8")``). Vocabulary (``chars.txt``, ``Vocab.save``
    format, built with ``Vocab.build``): 0 = padding, 1 = unknown, then the characters seen
    at least ``min_count`` times in training, by count descending then code point.

    Neither DRCN nor FITN states a maximum word length; ``max_word_length`` defaults to 16,
    the value of DIIN's release (``char_in_word_size``; DRCN takes its exact-match flag from
    DIIN). Only 197 of the 624,799 tokens (0.03%) of the staged dev files are longer. Longer
    words keep their first ``max_word_length`` characters; ``stats["truncated_words"]`` counts
    them (of ``stats["words"]``). Case is kept by default (``lower=False``): the papers do
    not say, and character embeddings can use it.

    Outputs ``text1_chars``, ``text2_chars``: int32 ``[len, max_word_length]``, 0 after the
    end of each word.

    Args:
      max_word_length: characters kept per word (>= 1).
      min_count: minimum training count of a character to get its own id (>= 1).
      lower: lower-case words first (``str.lower`` / ``tf.strings.lower``).
      vocab: the character vocabulary (set by :meth:`fit` / :meth:`load`).

    Raises:
      ValueError: ``max_word_length`` or ``min_count`` below 1.
    """

    kind = "char_ids"
    FILE = "chars.txt"

    def __init__(
        self,
        max_word_length: int = 16,
        min_count: int = 1,
        lower: bool = False,
        vocab: Vocab | None = None,
    ):
        super().__init__()
        if max_word_length < 1 or min_count < 1:
            raise ValueError(
                f"char_ids: max_word_length ({max_word_length}) and min_count "
                f"({min_count}) must be >= 1"
            )
        self.max_word_length, self.min_count, self.lower = max_word_length, min_count, lower
        self.vocab = vocab

    def files(self):
        return [self.FILE]

    def specs(self):
        inner = (self.max_word_length,)
        return [
            FeatureSpec("text1_chars", "int32", inner, "text1"),
            FeatureSpec("text2_chars", "int32", inner, "text2"),
        ]

    def fit(self, tokens):
        chars = collections.Counter()
        for token in tokens:
            chars.update(token.lower() if self.lower else token)
        self.vocab = Vocab.build(chars, min_df=self.min_count, lower=False)

    def save(self, directory):
        return _save_vocab(self, directory)

    @classmethod
    def load(cls, directory, config):
        """Raises ``ValueError`` naming the file and line of a malformed ``chars.txt``."""
        return cls(**config, vocab=Vocab.load(Path(directory) / cls.FILE, lower=False))

    def get_config(self):
        return {
            "max_word_length": self.max_word_length,
            "min_count": self.min_count,
            "lower": self.lower,
        }

    def _encode(self, tokens):
        if self.vocab is None:
            raise _not_fitted(self.kind)
        out = np.zeros((len(tokens), self.max_word_length), np.int32)
        for i, token in enumerate(tokens):
            chars = token.lower() if self.lower else token
            self.stats["truncated_words"] += len(chars) > self.max_word_length
            chars = chars[: self.max_word_length]
            out[i, : len(chars)] = self.vocab.encode(chars)
        self.stats["words"] += len(tokens)
        return out

    def python(self, tokens1, tokens2):
        return {"text1_chars": self._encode(tokens1), "text2_chars": self._encode(tokens2)}

    def graph(self, directory):
        return _CharIdsGraph(Path(directory) / self.FILE, self.max_word_length, self.lower)


class _CharIdsGraph(tf.Module):
    def __init__(self, path, max_word_length, lower):
        super().__init__(name="char_ids")
        self.asset, self.table = _lookup_table(path)
        self._width, self._lower = max_word_length, lower

    def __call__(self, tokens1, tokens2):
        out = {}
        for name, tokens in (("text1_chars", tokens1), ("text2_chars", tokens2)):
            chars = tf.strings.unicode_split(_tokens(tokens, self._lower), "UTF-8")
            ids = _lookup(self.table, chars[:, :, : self._width])  # [batch, (len), (chars)]
            out[name] = ids.to_tensor(PAD_ID, shape=[None, None, self._width])
        return out


# ------------------------------------------------------------------------------ exact match
class ExactMatch(Featurizer):
    """DRCN's exact-match flag (Kim et al., 2019, Sec. 3.1, after Gong et al., 2018).

    ``text1_exact_match[i]`` is 1.0 if ``tokens1[i].lower()`` equals the lower-cased form of
    some token of ``tokens2`` of the same pair, else 0.0 (and symmetrically); float32
    ``[len]``. The paper says only that the flag is set "if the same word is found in the
    other sentence" (Sec. 3.1) and leaves case open; comparing lower-cased forms is this
    project's reading (case never decides whether two tokens are the same word). No
    vocabulary. Graph path: tokens of both texts are mapped to ids with ``tf.unique``, keyed by
    ``row * n_unique + id``, and looked up with
    ``tf.searchsorted`` in the other text's sorted keys (exact, ``O(n log n)``, no padding).
    """

    kind = "exact_match"

    def specs(self):
        return [
            FeatureSpec("text1_exact_match", "float32", (), "text1"),
            FeatureSpec("text2_exact_match", "float32", (), "text2"),
        ]

    def get_config(self):
        return {}

    @staticmethod
    def _flags(tokens, other):
        other = {t.lower() for t in other}
        return np.asarray([t.lower() in other for t in tokens], np.float32)

    def python(self, tokens1, tokens2):
        return {
            "text1_exact_match": self._flags(tokens1, tokens2),
            "text2_exact_match": self._flags(tokens2, tokens1),
        }

    def graph(self, directory):
        return _ExactMatchGraph()


class _ExactMatchGraph(tf.Module):
    def __init__(self):
        super().__init__(name="exact_match")

    @staticmethod
    def _flags(keys, other_keys, tokens):
        other = tf.sort(other_keys)
        found = tf.searchsorted(other, keys, side="right") > tf.searchsorted(other, keys)
        return tokens.with_values(tf.cast(found, tf.float32)).to_tensor(0.0)

    def __call__(self, tokens1, tokens2):
        tokens1, tokens2 = _tokens(tokens1, True), _tokens(tokens2, True)
        unique, ids = tf.unique(tf.concat([tokens1.values, tokens2.values], 0), tf.int64)
        n1, size = tf.size(tokens1.values), tf.size(unique, tf.int64)
        keys1 = tokens1.value_rowids() * size + ids[:n1]
        keys2 = tokens2.value_rowids() * size + ids[n1:]
        return {
            "text1_exact_match": self._flags(keys1, keys2, tokens1),
            "text2_exact_match": self._flags(keys2, keys1, tokens2),
        }


# ------------------------------------------------------------------------------ packed pair
class WholeWordTokenizer:
    """The simplest real tokenizer for the :class:`PackedPair` seam: one id per whole word.

    The sub-word tokenizer protocol (also :class:`~re2_tf.data.wordpiece.WordPieceTokenizer`):
    ``kind``; ``cls_id``, ``sep_id``, ``pad_id`` (ints; after :meth:`fit` / :meth:`load`);
    ``vocab`` (sized, ``None`` before fit/load); ``encode(text: str) -> list[int]``;
    ``graph_encoder(directory) -> tf.Module`` whose ``__call__(text: tf.string [batch])``
    returns int ``tf.RaggedTensor [batch, (n)]`` equal to ``encode``; ``packer(max_length)``
    (see :class:`RoundRobinPacker`); ``fit(tokens)`` (no-op for a pretrained vocabulary);
    ``files()``; ``save(directory) -> list[str]``; ``load(directory, config)`` (classmethod);
    ``get_config() -> dict``.

    Here: ``str.split`` (in-graph :func:`~re2_tf.data.text.whitespace_tokenize`), then a
    :class:`Vocab` lookup. Ids: ``<PAD>`` 0, ``<UNK>`` 1, ``<CLS>`` 2, ``<SEP>`` 3, then the
    training words seen ``min_count`` times; file ``whole_word_vocab.txt`` (``Vocab`` format).
    Packed by :class:`RoundRobinPacker` (no keras-hub needed).

    Args:
      min_count: minimum training count of a word (>= 1).
      lower: lower-case text first.
      vocab: the vocabulary (set by :meth:`fit` / :meth:`load`).

    Raises:
      ValueError: ``min_count < 1``.
    """

    kind = "whole_word"
    FILE = "whole_word_vocab.txt"
    SPECIALS = ("<CLS>", "<SEP>")
    pad_id, cls_id, sep_id = PAD_ID, 2, 3

    def __init__(self, min_count: int = 1, lower: bool = True, vocab: Vocab | None = None):
        if min_count < 1:
            raise ValueError(f"whole_word: min_count must be >= 1, got {min_count}")
        self.min_count, self.lower, self.vocab = min_count, lower, vocab

    def files(self):
        return [self.FILE]

    def fit(self, tokens):
        words = Vocab.build(tokens, min_df=self.min_count, lower=self.lower).tokens[2:]
        self.vocab = Vocab(
            [*self.SPECIALS, *(w for w in words if w not in self.SPECIALS)], lower=self.lower
        )

    def save(self, directory):
        return _save_vocab(self, directory)

    @classmethod
    def load(cls, directory, config):
        vocab = Vocab.load(Path(directory) / cls.FILE, lower=config["lower"])
        if vocab.tokens[2:4] != list(cls.SPECIALS):
            raise ValueError(
                f"{Path(directory) / cls.FILE}:3: lines 3-4 must be {', '.join(cls.SPECIALS)}"
            )
        return cls(**config, vocab=vocab)

    def get_config(self):
        return {"min_count": self.min_count, "lower": self.lower}

    def encode(self, text: str) -> list[int]:
        if self.vocab is None:
            raise _not_fitted(self.kind)
        return self.vocab.encode(text.split())

    def graph_encoder(self, directory):
        return _WholeWordGraph(Path(directory) / self.FILE, self.lower)

    def packer(self, max_length: int) -> RoundRobinPacker:
        return RoundRobinPacker(max_length, self.cls_id, self.sep_id, self.pad_id)


class _WholeWordGraph(tf.Module):
    def __init__(self, path, lower):
        super().__init__(name="whole_word")
        self.asset, self.table = _lookup_table(path)
        self._lower = lower

    def __call__(self, text):
        return _lookup(self.table, _tokens(whitespace_tokenize(text, lower=False), self._lower))


TOKENIZERS = {
    WholeWordTokenizer.kind: WholeWordTokenizer,
    WordPieceTokenizer.kind: WordPieceTokenizer,
}


def round_robin_lengths(len_a, len_b, budget: int):
    """Lengths kept of two segments under ``budget`` tokens, by round robin.

    keras-hub ``MultiSegmentPacker(truncate="round_robin")`` (= tf-text
    ``RoundRobinTrimmer``): the budget is handed out one token at a time, alternately to
    segment a then b, skipping a segment that has no token left. So a keeps
    ``min(len_a, max(ceil(budget / 2), budget - len_b))`` and b the rest (at most
    ``len_b``). ``len_a``, ``len_b``: Python ints, or int tensors ``[batch]`` (graph path).
    """
    minimum, maximum = (tf.minimum, tf.maximum) if tf.is_tensor(len_a) else (min, max)
    keep_a = minimum(len_a, maximum(budget - len_b, (budget + 1) // 2))
    return keep_a, minimum(len_b, budget - keep_a)


class RoundRobinPacker:
    """``[CLS] a [SEP] b [SEP]`` cut by :func:`round_robin_lengths`, without keras-hub.

    The rule of keras-hub's ``MultiSegmentPacker(truncate="round_robin")``
    (:class:`~re2_tf.data.wordpiece.KerasHubPacker`), written out so that the
    dependency-free :class:`WholeWordTokenizer` needs no keras-hub; ``tests/test_wordpiece.py``
    checks the two against each other.

    Packer protocol: ``python(a, b)`` -- two ``list[int]`` -> ``(token_ids, segment_ids)``,
    int sequences of length ``min(len(a) + len(b) + 3, max_length)``; ``graph(a, b)`` --
    two int32 ``tf.RaggedTensor [batch, (n)]`` -> int32 ``[batch, W]`` tensors (``W`` at
    least every row's packed length) padded with ``pad_id`` / 0. ``segment_ids``: 0 for
    ``[CLS] a [SEP]``, 1 for ``b [SEP]``.
    """

    def __init__(self, max_length: int, cls_id: int, sep_id: int, pad_id: int):
        self.max_length, self._ids = int(max_length), (cls_id, sep_id, pad_id)

    def python(self, a, b):
        cls_id, sep_id, _ = self._ids
        keep_a, keep_b = round_robin_lengths(len(a), len(b), self.max_length - 3)
        return (
            [cls_id, *a[:keep_a], sep_id, *b[:keep_b], sep_id],
            [0] * (keep_a + 2) + [1] * (keep_b + 1),
        )

    def graph(self, a, b):
        cls_id, sep_id, pad_id = self._ids
        keep_a, keep_b = round_robin_lengths(a.row_lengths(), b.row_lengths(), self.max_length - 3)
        a = tf.RaggedTensor.from_tensor(a.to_tensor(), lengths=keep_a)  # keep row prefixes
        b = tf.RaggedTensor.from_tensor(b.to_tensor(), lengths=keep_b)
        column = tf.ones([a.nrows(), 1], tf.int32)  # one special token per row
        token_ids = tf.concat([column * cls_id, a, column * sep_id, b, column * sep_id], axis=1)
        segment_ids = tf.concat(
            [0 * column, tf.zeros_like(a), 0 * column, tf.ones_like(b), column], axis=1
        )
        return token_ids.to_tensor(pad_id), segment_ids.to_tensor(0)


def _tokenizer_class(kind):
    if kind not in TOKENIZERS:
        raise KeyError(f"unknown tokenizer {kind!r}; known: {sorted(TOKENIZERS)}")
    return TOKENIZERS[kind]


class PackedPair(Featurizer):
    """``[CLS] a [SEP] b [SEP]`` for BERT + MatchLSTM (Shao et al., 2019, Sec. 3).

    Each text is its tokens joined by single spaces, encoded by ``tokenizer`` (protocol in
    :class:`WholeWordTokenizer`) and packed by ``tokenizer.packer(max_length)``: keras-hub's
    ``MultiSegmentPacker`` for ``wordpiece``, :class:`RoundRobinPacker` for ``whole_word``
    -- the same rule: if ``len(a) + len(b) + 3 > max_length``, a and b are cut by
    :func:`round_robin_lengths`. ``stats["truncated_pairs"]`` (of ``stats["pairs"]``) and
    ``stats["truncated_tokens"]`` count the cuts. Default ``max_length`` 128: our choice,
    BERT's usual fine-tuning length (the paper states no length); the model's own default is
    its spec's ``max_length`` hyper-parameter.

    Outputs (side ``pair``, int32 ``[len]``): ``token_ids`` (padding ``tokenizer.pad_id``),
    ``segment_ids`` 0 for ``[CLS] a [SEP]`` and 1 for ``b [SEP]`` (BERT's rule, and
    keras-hub's: a ``[SEP]`` belongs to the segment it closes), ``padding_mask`` 1 on
    tokens, 0 on padding. The graph path pads to the longest packed pair of the batch.

    Args:
      tokenizer: a sub-word tokenizer object.
      max_length: packed length limit including the 3 special tokens (>= 3).

    Raises:
      ValueError: ``max_length < 3``.
    """

    kind = "packed_pair"

    def __init__(self, tokenizer, max_length: int = 128):
        super().__init__()
        if max_length < 3:
            raise ValueError(f"packed_pair: max_length must be >= 3, got {max_length}")
        self.tokenizer, self.max_length = tokenizer, max_length
        self._packer = None

    @property
    def pair_max_length(self):
        """Word pieces kept per packed pair, the 3 special tokens included."""
        return self.max_length

    @property
    def packer(self):
        """``tokenizer.packer(max_length)``, made on first use (it needs the special ids)."""
        if self._packer is None:
            self._packer = self.tokenizer.packer(self.max_length)
        return self._packer

    def specs(self):
        return [
            FeatureSpec("token_ids", "int32", (), "pair", self.tokenizer.pad_id),
            FeatureSpec("segment_ids", "int32", (), "pair"),
            FeatureSpec("padding_mask", "int32", (), "pair"),
        ]

    @classmethod
    def create(cls, options, vocab):
        """``options``: ``{"tokenizer": {"kind", "config"}, "max_length"}`` (``config``
        defaults to ``{}``, ``max_length`` to 128). Raises ``KeyError`` for an unknown
        tokenizer kind."""
        spec = options["tokenizer"]
        return cls(
            _tokenizer_class(spec["kind"])(**spec.get("config", {})), options.get("max_length", 128)
        )

    def files(self):
        return self.tokenizer.files()

    @property
    def vocab_size(self):
        vocab = self.tokenizer.vocab
        return None if vocab is None else len(vocab)

    def fit(self, tokens):
        self.tokenizer.fit(tokens)

    def save(self, directory):
        return self.tokenizer.save(directory)

    @classmethod
    def load(cls, directory, config):
        """Raises ``KeyError`` for a tokenizer kind not in :data:`TOKENIZERS`."""
        spec = config["tokenizer"]
        return cls(
            _tokenizer_class(spec["kind"]).load(directory, spec.get("config", {})),
            config.get("max_length", 128),
        )

    def get_config(self):
        return {
            "max_length": self.max_length,
            "tokenizer": {"kind": self.tokenizer.kind, "config": self.tokenizer.get_config()},
        }

    def python(self, tokens1, tokens2):
        a = self.tokenizer.encode(" ".join(tokens1))
        b = self.tokenizer.encode(" ".join(tokens2))
        token_ids, segment_ids = self.packer.python(a, b)
        cut = len(a) + len(b) + 3 - len(token_ids)
        self.stats.update(pairs=1, truncated_pairs=int(cut > 0), truncated_tokens=int(cut))
        return {
            "token_ids": np.asarray(token_ids, np.int32),
            "segment_ids": np.asarray(segment_ids, np.int32),
            "padding_mask": np.ones(len(token_ids), np.int32),
        }

    def graph(self, directory):
        return _PackedPairGraph(
            self.tokenizer.graph_encoder(directory), self.packer, self.max_length
        )


class _PackedPairGraph(tf.Module):
    def __init__(self, encoder, packer, max_length):
        super().__init__(name="packed_pair")
        self.encoder, self._packer, self._max_length = encoder, packer, max_length

    def __call__(self, tokens1, tokens2):
        a, b = (
            tf.cast(self.encoder(tf.strings.reduce_join(t, axis=1, separator=" ")), tf.int32)
            for t in (tokens1, tokens2)
        )
        token_ids, segment_ids = self._packer.graph(a, b)
        full = a.row_lengths() + b.row_lengths() + 3
        lengths = tf.minimum(full, self._max_length)
        width = tf.reduce_max(tf.concat([lengths, tf.zeros([1], lengths.dtype)], 0))
        return {
            "token_ids": token_ids[:, :width],
            "segment_ids": segment_ids[:, :width],
            "padding_mask": tf.sequence_mask(lengths, width, tf.int32),
            TRUNCATED_KEY: tf.cast(full - lengths, tf.int32),
        }  # pieces cut by packing


FEATURIZERS = {f.kind: f for f in (WordIds, CharIds, ExactMatch, PackedPair)}


def load_featurizer(directory: str | os.PathLike, kind: str, config: dict) -> Featurizer:
    """``FEATURIZERS[kind].load(directory, config)``.

    Raises:
      KeyError: unknown ``kind`` (the message lists the known ones).
      ValueError / OSError: a missing or malformed vocabulary file (named, with its line).
    """
    if kind not in FEATURIZERS:
        raise KeyError(f"unknown featurizer {kind!r}; known: {sorted(FEATURIZERS)}")
    return FEATURIZERS[kind].load(directory, config)
