"""Word vocabulary as in the RE2 release (``src/utils/vocab.py``, ``src/interface.py``).

Ids: ``<PAD>`` = 0, ``<UNK>`` = 1, then the kept words. A word of the training texts is kept
if its (lower-cased) count is ``>= min_df`` **or** it has a pretrained vector. Order of kept
words (deterministic, independent of input order): count descending, ties broken by the word
in ascending code-point order. (The release sorts by count only, so its ties follow first
appearance; ids differ but the set of words is the same.)

File format (:meth:`Vocab.save`/:meth:`Vocab.load`): UTF-8, one token per line, line ``i``
(0-based) holds id ``i`` -- so the first two lines are ``<PAD>`` and ``<UNK>``. Tokens never
contain whitespace (they come from ``str.split``), so lines are unambiguous.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterable, Mapping, Sequence

from absl import logging

__all__ = ["PAD", "UNK", "PAD_ID", "UNK_ID", "Vocab"]

PAD, UNK = "<PAD>", "<UNK>"
PAD_ID, UNK_ID = 0, 1


class Vocab:
    """Token <-> id mapping with ``<PAD>`` = 0 and ``<UNK>`` = 1.

    Args:
      tokens: the words for ids 2, 3, ... (without the two special symbols).
      lower: if True, :meth:`index`/:meth:`encode` lower-case their input first.

    Raises:
      ValueError: duplicate tokens, a special symbol among ``tokens``, or a token that is
        empty or contains whitespace.
    """

    def __init__(self, tokens: Iterable[str], lower: bool = True):
        self.lower = lower
        self._itos = [PAD, UNK]
        self._stoi = {PAD: PAD_ID, UNK: UNK_ID}
        for token in tokens:
            if not token or token.split() != [token]:
                raise ValueError(f"invalid vocabulary token {token!r}")
            if token in self._stoi:
                raise ValueError(f"duplicate vocabulary token {token!r}")
            self._stoi[token] = len(self._itos)
            self._itos.append(token)

    @classmethod
    def build(
        cls,
        tokens: Iterable[str],
        min_df: int = 5,
        pretrained_words: Iterable[str] | None = None,
        lower: bool = True,
    ) -> Vocab:
        """Builds the vocabulary from the training split's tokens (release rule).

        Args:
          tokens: every token occurrence of the training texts (both sides), e.g.
            ``(t for ex in train for s in (ex.text1, ex.text2) for t in s.split())``, or a
            ``{token: count}`` mapping (e.g. a ``collections.Counter``).
          min_df: minimum count for a word without a pretrained vector (release default 5).
          pretrained_words: words that have a pretrained vector (e.g.
            :func:`re2_tf.data.embeddings.load_glove_words`), already lower-cased if ``lower``.
          lower: lower-case tokens before counting (release default ``lower_case: true``).

        Returns:
          A :class:`Vocab`; kept words ordered by count descending, then word ascending.
        """
        if isinstance(tokens, Mapping):  # already counted
            counter = collections.Counter()
            for token, count in tokens.items():
                counter[token.lower() if lower else token] += count
        else:
            counter = (
                collections.Counter(t.lower() for t in tokens)
                if lower
                else collections.Counter(tokens)
            )
        for special in (PAD, UNK):
            counter.pop(special, None)
        pretrained = frozenset(pretrained_words or ())
        kept = [w for w, c in counter.items() if c >= min_df or w in pretrained]
        kept.sort(key=lambda w: (-counter[w], w))
        vocab = cls(kept, lower=lower)
        total = sum(counter.values())
        oov = total - sum(counter[w] for w in kept)
        logging.info(
            "vocab: %d of %d distinct words kept (min_df=%d, %d with vectors); "
            "OOV occurrences %d/%d",
            len(kept),
            len(counter),
            min_df,
            sum(w in pretrained for w in kept),
            oov,
            total,
        )
        return vocab

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: str) -> bool:
        return token in self._stoi

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocab) and self._itos == other._itos and self.lower == other.lower

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order, including ``<PAD>`` and ``<UNK>`` (a copy)."""
        return list(self._itos)

    def index(self, token: str) -> int:
        """Id of ``token`` (lower-cased first if ``self.lower``); ``UNK_ID`` if unknown."""
        if self.lower:
            token = token.lower()
        return self._stoi.get(token, UNK_ID)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Maps tokens to ids (``list[int]``, same length); unknown tokens -> 1 (``<UNK>``)."""
        get = self._stoi.get
        if self.lower:
            return [get(t.lower(), UNK_ID) for t in tokens]
        return [get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Maps ids back to tokens. Raises ``IndexError`` for an id outside ``[0, len)``."""
        return [self._itos[i] for i in ids]

    def save(self, path: str | os.PathLike) -> None:
        """Writes one token per line (id order, specials first), UTF-8."""
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(t + "\n" for t in self._itos))

    @classmethod
    def load(cls, path: str | os.PathLike, lower: bool = True) -> Vocab:
        """Reads a file written by :meth:`save`.

        Raises:
          ValueError: ``<path>: ...`` if the first two lines are not ``<PAD>``/``<UNK>``, or
            ``<path>:<line>: ...`` for an empty/duplicate token.
        """
        with open(path, encoding="utf-8", newline="\n") as f:
            lines = [line.rstrip("\n") for line in f]
        if lines[:2] != [PAD, UNK]:
            raise ValueError(f"{os.fspath(path)}: vocabulary must start with {PAD}, {UNK}")
        for lineno, token in enumerate(lines[2:], 3):
            if not token or token.split() != [token] or token in (PAD, UNK):
                raise ValueError(f"{os.fspath(path)}:{lineno}: invalid token {token!r}")
        try:
            return cls(lines[2:], lower=lower)
        except ValueError as e:
            raise ValueError(f"{os.fspath(path)}: {e}") from None
