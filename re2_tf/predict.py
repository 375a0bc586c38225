r"""Predict labels for text pairs with an exported model (``re2_tf.export``).

Usage::

    python -m re2_tf.predict --export_dir=exports/snli --input=pairs.tsv > predictions.jsonl
    echo '{"text1": "A man sleeps.", "text2": "A person rests."}' | \
        python -m re2_tf.predict --export_dir=exports/snli --input=-

Input (``--input``, a file or ``-`` for stdin, UTF-8; ``--input_format=auto`` picks JSON
lines when the first non-empty line starts with ``{``):

- TSV: ``text1<TAB>text2[<TAB>anything...]`` per line (extra columns, e.g. a gold label,
  are ignored);
- JSON lines: objects with string fields ``text1`` and ``text2`` (other fields are copied
  to the output).

Output: one JSON object per input pair, in input order, on stdout (or ``--output``)::

    {"label": "entailment", "probabilities": {"entailment": 0.91, ...}}

Tokenisation (``--tokenize``): ``graph`` feeds raw text to the ``serving_default``
signature; ``python`` tokenises with the exact Python tokeniser of the run
(``re2_tf.data.tokenization``) and the exported vocabulary, then calls ``serving_ids``;
``auto`` (default) uses ``graph`` when the in-graph tokeniser is exact (``whitespace``) and
``python`` otherwise (``snli``, ``scitail``: the in-graph versions are approximations, see
``re2_tf/serving/README.md``). TFLite exports always use ``python``.

Bad input: a line without a tab, invalid JSON or missing/non-string fields stop the run
with ``<input>:<line>: <reason>`` (exit status 1) before anything is predicted. Empty or
all-unknown texts get a defined prediction (an empty text is read as ``<UNK>``); texts
longer than the export's ``max_length`` tokens are truncated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from absl import app, flags

__all__ = ["read_pairs", "Predictor"]


class InputError(ValueError):
    """A malformed input line (message ``<source>:<line>: <reason>``)."""


def read_pairs(lines, source="<stdin>", fmt="auto"):
    """Parse TSV or JSON-lines text pairs.

    Args:
        lines: iterable of ``str`` lines.
        source: name used in error messages.
        fmt: ``auto``, ``tsv`` or ``jsonl``.

    Returns:
        list of dicts with ``text1``, ``text2`` (and, for JSON lines, the other fields).
        Blank lines (no tab) are skipped; ``"\\t"`` is a pair of two empty texts.

    Raises:
        InputError: ``<source>:<line>: ...`` for a malformed line.
    """
    pairs = []
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip() and "\t" not in line:
            continue  # a blank line; a line with a tab is a pair, even of two empty texts
        if fmt == "auto":
            fmt = "jsonl" if line.lstrip().startswith("{") else "tsv"
        if fmt == "jsonl":
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{source}:{lineno}: invalid JSON ({e.msg})") from None
            if not isinstance(record, dict) or not all(
                    isinstance(record.get(k), str) for k in ("text1", "text2")):
                raise InputError(f"{source}:{lineno}: expected an object with string fields "
                                 "'text1' and 'text2'")
            pairs.append(record)
        else:
            fields = line.split("\t")
            if len(fields) < 2:
                raise InputError(f"{source}:{lineno}: expected text1<TAB>text2, found no tab")
            pairs.append({"text1": fields[0], "text2": fields[1]})
    return pairs


class Predictor:
    """Load an export and predict pairs.

    Args:
        export_dir: a directory written by ``re2_tf.export`` (SavedModel or TFLite).
        tokenize: ``auto``, ``graph`` or ``python`` (see module docstring).
        batch_size: pairs per model call.

    Raises:
        FileNotFoundError: not an export directory. ValueError: ``graph`` with TFLite.
    """

    def __init__(self, export_dir, tokenize="auto", batch_size=64):
        import tensorflow as tf

        from re2_tf.export import EXPORT_CONFIG_FILE, TFLITE_FILE

        self.export_dir = Path(export_dir)
        config_path = self.export_dir / "assets" / EXPORT_CONFIG_FILE
        if not config_path.exists():
            raise FileNotFoundError(f"{export_dir} is not a re2_tf export (no {config_path})")
        self.config = json.loads(config_path.read_text())
        self.label_names = self.config["label_names"]
        self.batch_size = int(batch_size)
        tflite = (self.export_dir / TFLITE_FILE).exists()
        if tokenize == "auto":
            tokenize = "graph" if self.config["in_graph_tokenizer_exact"] and not tflite \
                else "python"
        if tokenize == "graph" and tflite:
            raise ValueError("TFLite exports take ids: use --tokenize=python")
        self.tokenize = tokenize
        if tflite:
            try:
                from ai_edge_litert.interpreter import Interpreter
            except ImportError:
                Interpreter = tf.lite.Interpreter
            runner = Interpreter(model_path=str(self.export_dir / TFLITE_FILE)) \
                .get_signature_runner("serving_ids")
            self._ids_fn = lambda a, b: runner(text1=a, text2=b)["probabilities"]
        else:
            loaded = tf.saved_model.load(str(self.export_dir))
            self._loaded = loaded
            text_fn, ids_fn = loaded.signatures["serving_default"], loaded.signatures["serving_ids"]
            self._text_fn = lambda a, b: text_fn(text1=tf.constant(a, tf.string),
                                                 text2=tf.constant(b, tf.string))["probabilities"].numpy()
            self._ids_fn = lambda a, b: ids_fn(text1=tf.constant(a), text2=tf.constant(b))[
                "probabilities"].numpy()
        if tokenize == "python":
            from re2_tf.data.tokenization import get_tokenizer
            from re2_tf.data.vocab import Vocab

            self._tokenizer = get_tokenizer(self.config["python_tokenizer"],
                                            lower=self.config["lower"])
            self._vocab = Vocab.load(self.export_dir / "assets" / "vocab.txt",
                                     lower=self.config["lower"])

    def _ids(self, texts):
        max_length = self.config["max_length"]
        rows = [self._vocab.encode(self._tokenizer(t))[:max_length] for t in texts]
        ids = np.zeros((len(rows), max(1, max(map(len, rows)))), np.int32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
        return ids

    def probabilities(self, texts1, texts2):
        """float32 ``[n, num_classes]`` for ``n`` pairs of raw texts."""
        if len(texts1) != len(texts2):
            raise ValueError(f"{len(texts1)} text1 but {len(texts2)} text2")
        out = []
        for start in range(0, len(texts1), self.batch_size):
            a, b = texts1[start:start + self.batch_size], texts2[start:start + self.batch_size]
            if self.tokenize == "graph":
                out.append(self._text_fn(a, b))
            else:
                out.append(np.asarray(self._ids_fn(self._ids(a), self._ids(b))))
        if not out:
            return np.zeros((0, len(self.label_names)), np.float32)
        return np.concatenate(out)

    def predict(self, pairs):
        """Yield one output dict per pair (``label``, ``probabilities``, extra JSON fields)."""
        probs = self.probabilities([p["text1"] for p in pairs], [p["text2"] for p in pairs])
        for pair, row in zip(pairs, probs):
            extra = {k: v for k, v in pair.items() if k not in ("text1", "text2")}
            yield {**extra, "label": self.label_names[int(np.argmax(row))],
                   "probabilities": {n: round(float(p), 6) for n, p in zip(self.label_names, row)}}


FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_string("export_dir", None, "Directory written by re2_tf.export.")
    flags.DEFINE_string("input", "-", "TSV or JSON-lines file of pairs; '-' = stdin.")
    flags.DEFINE_enum("input_format", "auto", ["auto", "tsv", "jsonl"], "Input format.")
    flags.DEFINE_string("output", "-", "Output JSON-lines file; '-' = stdout.")
    flags.DEFINE_enum("tokenize", "auto", ["auto", "graph", "python"],
                      "Where text is tokenised (see module docstring).")
    flags.DEFINE_integer("batch_size", 64, "Pairs per model call.")
    flags.mark_flag_as_required("export_dir")


def main(argv):
    del argv
    source = "<stdin>" if FLAGS.input == "-" else FLAGS.input
    try:
        if FLAGS.input == "-":
            pairs = read_pairs(sys.stdin, source, FLAGS.input_format)
        else:
            with open(FLAGS.input, encoding="utf-8") as f:
                pairs = read_pairs(f, source, FLAGS.input_format)
        predictor = Predictor(FLAGS.export_dir, FLAGS.tokenize, FLAGS.batch_size)
    except (InputError, FileNotFoundError, ValueError, UnicodeDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    out = sys.stdout if FLAGS.output == "-" else open(FLAGS.output, "w", encoding="utf-8")
    try:
        for record in predictor.predict(pairs):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
