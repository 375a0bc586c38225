"""Tokenisers that turn each dataset's raw text into the release's prepared form.

Every tokeniser is a plain Python callable ``str -> list[str]`` obtained by name from
:func:`get_tokenizer`, so a later in-graph (``tf.strings``) reimplementation can be checked
against it token for token. Only NLTK tokenisers that need no downloaded data package are
used (``nltk.download`` is never called).

Registered names (:data:`TOKENIZERS`):

``whitespace``
    ``text.split()``: Quora (BiMPM partition) and WikiQA are distributed already tokenised,
    and every prepared file is split this way at training time (RE2 release,
    ``src/interface.py``).
``scitail``
    The release's ``data/prepare_scitail.py``: NLTK ``TweetTokenizer`` tokens joined by
    spaces; the characters ``- . # " /`` become spaces; an apostrophe not starting one of the
    clitics ``'s 'm 've 't 're 'd 'll`` (followed by a space or the end) becomes a space; the
    clitics ``'s 'm 've n't 're 'd 'll`` are split off; runs of spaces collapse. The release
    keeps case here (it lower-cases at training time), so ``lower`` defaults to ``False``.
    Reproduces the release's SciTail test file exactly (measured in ``tests/test_data.py``).
``snli``
    SNLI as in the release's data (Tay et al.'s preprocessing, converted by the release's
    ``prepare_snli.py``): Penn-Treebank-style word tokens (NLTK ``NLTKWordTokenizer``, the
    tokeniser inside ``nltk.word_tokenize``), lower-cased, tokens that are a single
    punctuation character (``string.punctuation``) removed. ``word_tokenize`` first splits
    sentences with the *trained* Punkt model, a data package; here an untrained
    ``PunktSentenceTokenizer`` with a fixed list of common abbreviations stands in for it
    (it only decides whether a sentence-internal ``word.`` keeps its period). Multi-character
    punctuation tokens such as ````` ``''`` ``...`` are kept, as they are in the release's
    SNLI files.

All tokenisers take a ``lower`` flag (lower-casing after tokenisation).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable

from nltk.tokenize import NLTKWordTokenizer, TweetTokenizer
from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

__all__ = [
    "TOKENIZERS",
    "get_tokenizer",
    "whitespace_tokenize",
    "scitail_tokenize",
    "snli_tokenize",
]

Tokenizer = Callable[[str], list]


def whitespace_tokenize(text: str, lower: bool = False) -> list[str]:
    """Splits on runs of whitespace (``str.split()``), optionally lower-casing.

    Source: the release splits every prepared text with ``text.split()`` (``src/interface.py``).
    """
    if lower:
        text = text.lower()
    return text.split()


# --- SciTail (release: data/prepare_scitail.py) ------------------------------------------
_tweet_tokenizer = TweetTokenizer()
_SCITAIL_RULES = [
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"[-.#\"/]", " "),  # these characters separate words
        (r"'(?!(s|m|ve|t|re|d|ll)( |$))", " "),  # stray apostrophes / quotes
        (r"'s", " 's"),
        (r"'m", " 'm"),
        (r"'ve", " 've"),  # split clitics off, in this order
        (r"n't", " n't"),
        (r"'re", " 're"),
        (r"'d", " 'd"),
        (r"'ll", " 'll"),
        (r"\s{2,}", " "),
    )
]


def scitail_tokenize(text: str, lower: bool = False) -> list[str]:
    """SciTail raw text -> tokens, as the release's ``prepare_scitail.py``.

    NLTK ``TweetTokenizer`` (default options: case kept, no handle stripping), then the
    regex rules listed in the module docstring, applied in order to the space-joined tokens.

    Example: ``"The dog's bone isn't 3.5-cm long."`` ->
    ``['The', 'dog', "'s", 'bone', 'is', "n't", '3', '5', 'cm', 'long']``.
    """
    joined = " ".join(_tweet_tokenizer.tokenize(text))
    for pattern, replacement in _SCITAIL_RULES:
        joined = pattern.sub(replacement, joined)
    if lower:
        joined = joined.lower()
    return joined.split()


# --- SNLI (release data: Tay et al.'s tokenisation, punctuation removed, lower-cased) ------
_word_tokenizer = NLTKWordTokenizer()
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st ft mt rt jr sr vs etc no e.g i.e a.m p.m u.s u.k jan feb mar apr jun "
    "jul aug sep sept oct nov dec".split()
)
_punkt_parameters = PunktParameters()
_punkt_parameters.abbrev_types = set(_ABBREVIATIONS)
_sentence_splitter = PunktSentenceTokenizer(_punkt_parameters)
_PUNCTUATION = frozenset(string.punctuation)


def snli_tokenize(text: str, lower: bool = True) -> list[str]:
    """SNLI raw sentence -> tokens in the form of the release's SNLI files.

    Sentence split (untrained Punkt + abbreviation list), NLTK ``NLTKWordTokenizer`` per
    sentence, lower-case (default), drop tokens that are one ``string.punctuation`` character.

    Example: ``'Two women, in "to-go" shirts.'`` ->
    ``['two', 'women', 'in', '``', 'to-go', "''", 'shirts']``.
    """
    tokens = [
        token
        for sentence in _sentence_splitter.tokenize(text)
        for token in _word_tokenizer.tokenize(sentence)
    ]
    if lower:
        tokens = [token.lower() for token in tokens]
    return [token for token in tokens if token and token not in _PUNCTUATION]


TOKENIZERS: dict[str, Callable[..., list[str]]] = {
    "whitespace": whitespace_tokenize,
    "scitail": scitail_tokenize,
    "snli": snli_tokenize,
}


def get_tokenizer(name: str, lower: bool | None = None) -> Tokenizer:
    """Returns the registered tokeniser ``name`` as a ``str -> list[str]`` callable.

    Args:
      name: one of :data:`TOKENIZERS` (``whitespace``, ``scitail``, ``snli``).
      lower: lower-case the tokens; ``None`` keeps the tokeniser's default (``snli``: True,
        others: False).

    Raises:
      KeyError: unknown name.
    """
    if name not in TOKENIZERS:
        raise KeyError(f"unknown tokenizer {name!r}; known: {sorted(TOKENIZERS)}")
    fn = TOKENIZERS[name]
    return fn if lower is None else functools.partial(fn, lower=lower)
