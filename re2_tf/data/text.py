"""In-graph (``tf.strings``) versions of the tokenisers in ``re2_tf.data.tokenization``.

Each function maps a ``tf.string [batch]`` tensor to a ``tf.RaggedTensor`` of tokens
``[batch, (tokens)]`` using only TensorFlow string ops (RE2 regular-expression syntax: no
look-around, no back-references in patterns), so they can live inside a SavedModel.

``whitespace``
    Exact counterpart of ``str.split()`` (and of ``Vocab.encode``'s lower-casing when
    ``lower``): runs of Unicode whitespace -- including the separators Python's ``split``
    knows (``\\x1c-\\x1f``, ``\\x85``, ``\\p{Z}``) -- separate tokens; lower-casing is
    ``tf.strings.lower(encoding='utf-8')`` (Unicode simple case mapping; Python's
    ``str.lower`` differs only on a handful of special-cased characters such as ``'İ'``).
``snli``
    Approximation of NLTK ``NLTKWordTokenizer`` + untrained Punkt + removal of
    single-character punctuation tokens: quotes become `````/``''``; clitics (``'s 'm 'd 'll
    're 've n't``) are split off; punctuation characters ``, ; : ? ! ( ) [ ] { } < > @ # $ %
    & * + = | ~ ^`` and a sentence-ending ``.`` become separate (and are then dropped as
    single-character punctuation); ``...`` and ``--`` are kept as tokens. Agreement with the
    Python tokeniser is measured in ``tests/test_export.py`` and reported in the README.
``scitail``
    Approximation of the release's ``prepare_scitail.py`` (NLTK ``TweetTokenizer`` +
    regex rules): ``- . # " /`` become spaces, other punctuation (except ``'``) becomes a
    separate token, apostrophes not starting a clitic become spaces, clitics are split off.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["IN_GRAPH_TOKENIZERS", "tokenize"]

# Python's str.split() separators: ASCII whitespace, \x1c-\x1f, \x85 and Unicode Z* / spaces.
_WHITESPACE = r"[\s\x{1c}-\x{1f}\x{85}\p{Z}]+"


def _split(text):
    text = tf.strings.regex_replace(text, _WHITESPACE, " ")
    return tf.strings.split(tf.strings.strip(text), sep=" ")


def _lower(text, lower):
    return tf.strings.lower(text, encoding="utf-8") if lower else text


def whitespace_tokenize(text, lower=True):
    """``tf.string [batch]`` -> ragged tokens; ``str.split()`` (after ``str.lower()``)."""
    return _split(_lower(text, lower))


_SNLI_RULES = (
    # starting quotes: `"`/`''` at the start or after space/bracket -> ``, other `"` -> ''.
    (r'^"', " `` "),
    (r"""([\s(\[{<])("|'')""", r"\1 `` "),
    (r'"', " '' "),
    (r"''", " '' "),
    (r"``", " `` "),
    # an opening single quote before a word (clitics are still attached at this point).
    (r"(\s)'(s|m|d|ll|re|ve)(\s)", "\\1\x01\\2\\3"),
    (r"(^|\s)'(\w)", r"\1' \2"),
    ("\x01", "'"),
    # ellipsis-like runs of periods and double dash are tokens of their own.
    (r"(\.\.+)", r" \1 "),
    (r"--", " -- "),
    # a period before whitespace or the end of the text ends a sentence (Punkt), except after
    # the abbreviations of re2_tf.data.tokenization when more text follows.
    (r"([^\s.])\.(\s|$)", r"\1 . \2"),
    (r"""([^.\s])\.([\])}>"']*)\s*$""", r"\1 . \2 "),
    (
        r"(?i)(^|\s)(mr|mrs|ms|dr|st|ft|mt|rt|jr|sr|vs|etc|no|e\.g|i\.e|a\.m|p\.m|u\.s|u\.k|jan|feb"
        r"|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec) \. (\s*\S)",
        r"\1\2. \3",
    ),
    # punctuation that NLTK always separates.
    (r"([;@#$%&?!\[\](){}<>*+=|~^])", r" \1 "),
    # comma / colon not followed by a digit.
    (r"([:,])([^\d])", r" \1 \2"),
    (r"([:,])$", r" \1 "),
    # clitics.
    (r"(?i)([^' ])('s|'m|'d|') ", r"\1 \2 "),
    (r"(?i)([^' ])('ll|'re|'ve|n't) ", r"\1 \2 "),
    (r"(?i)\b(can)(not)\b", r"\1 \2"),
    (r"(?i)\b(gon|wan)(na)\b", r"\1 \2"),
    (r"(?i)\b(got)(ta)\b", r"\1 \2"),
)
# Tokens made of one ASCII punctuation character (string.punctuation) are dropped.
_SNLI_PUNCT = r"""^[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]$"""


def snli_tokenize(text, lower=True):
    """``tf.string [batch]`` -> ragged tokens approximating ``tokenization.snli_tokenize``."""
    text = tf.strings.regex_replace(text, _WHITESPACE, " ")
    text = tf.strings.join([" ", text, " "])  # NLTK pads the text with spaces too
    for pattern, rewrite in _SNLI_RULES:
        text = tf.strings.regex_replace(text, pattern, rewrite)
    tokens = _split(_lower(text, lower))
    keep = tf.logical_not(tf.strings.regex_full_match(tokens, _SNLI_PUNCT))
    return tf.ragged.boolean_mask(tokens, keep)


_HTML_ENTITIES = (
    ("&quot;", '"'),
    ("&amp;", "&"),
    ("&lt;", "<"),
    ("&gt;", ">"),
    ("&#39;", "'"),
    ("&apos;", "'"),
    ("&nbsp;", " "),
)


def scitail_tokenize(text, lower=True):
    """``tf.string [batch]`` -> ragged tokens approximating ``tokenization.scitail_tokenize``."""
    for entity, char in _HTML_ENTITIES:  # TweetTokenizer
        text = tf.strings.regex_replace(text, entity, char)
    text = tf.strings.regex_replace(text, _WHITESPACE, " ")
    text = tf.strings.regex_replace(text, r'[-.#"/]', " ")  # release rule 1
    text = tf.strings.regex_replace(text, r"([^\w\s'])", r" \1 ")  # TweetTokenizer: punct
    text = tf.strings.join([" ", text, " "])
    # TweetTokenizer: a word of >= 3 letters is cut before a digit ("epsilon4" -> epsilon 4).
    text = tf.strings.regex_replace(text, r"(\s\pL{3,})(\d)", r"\1 \2")
    # Release rule 2: an apostrophe not starting a clitic followed by space/end -> space.
    text = tf.strings.regex_replace(text, r"'(s|m|ve|t|re|d|ll) ", "\x01\\1 ")
    text = tf.strings.regex_replace(text, r"'", " ")
    text = tf.strings.regex_replace(text, "\x01", "'")
    # TweetTokenizer keeps a word-initial/final apostrophe as its own token: "dogs' " etc.
    text = tf.strings.regex_replace(text, r"(\S)('s|'m|'ve|'re|'d|'ll)", r"\1 \2")
    text = tf.strings.regex_replace(text, r"(\S)n't", r"\1 n't")
    return _split(_lower(text, lower))


IN_GRAPH_TOKENIZERS = {
    "whitespace": whitespace_tokenize,
    "snli": snli_tokenize,
    "scitail": scitail_tokenize,
}

#: Tokenisers whose in-graph version reproduces the Python one exactly (up to the Unicode
#: lower-casing corner cases documented above); the others are approximations, and
#: ``re2-predict`` (the Predictor) then tokenises in Python.
EXACT = frozenset({"whitespace"})


def tokenize(name, text, lower=True):
    """Tokenise ``text`` (``tf.string [batch]``) in-graph with the named tokeniser.

    Raises:
        KeyError: unknown tokeniser name.
    """
    if name not in IN_GRAPH_TOKENIZERS:
        raise KeyError(f"no in-graph tokeniser {name!r}; known: {sorted(IN_GRAPH_TOKENIZERS)}")
    return IN_GRAPH_TOKENIZERS[name](text, lower=lower)
