"""XLA compiles BERT+MatchLSTM's export once per length bucket, not once per packed length:
the float32 export (the whole model compiled) and the bf16 one (its head compiled).

A tiny BERT+MatchLSTM (random 2-layer backbone, whole-word tokens: one piece per word) is
exported with the default length buckets and served in a fresh process that logs every XLA
compilation (``TF_CPP_VMODULE=device_compiler=1``: one ``Compilation of XLA executable`` line
each). ``serving_ids`` is fed batches of 8 whose longest packed pair is every length from 1 to
60 pieces (rows of random lengths up to it, random segment split); ``serving_default`` raw
texts of several word counts. The expected counts are the buckets those lengths fall in,
worked out by hand from the bucket list. An export whose model takes widths from its input
*values* (the segment split before ``width="input"``) compiles once per distinct mask: 60.
"""

import os
import subprocess
import sys
import textwrap

import keras
import pytest

pytest.importorskip("keras_hub")
pytestmark = pytest.mark.slow  # a fresh TensorFlow process per signature, 12 XLA compilations

from re2_tf.data.features import PackedPair, WholeWordTokenizer  # noqa: E402
from re2_tf.layers import PairSegmentSplit  # noqa: E402
from re2_tf.layers.bert_backbone import BertBackbone  # noqa: E402
from re2_tf.models import build_bert_matchlstm  # noqa: E402
from re2_tf.serving.export import DEFAULT_LENGTH_BUCKETS, export_model  # noqa: E402

WORDS = [f"w{i}" for i in range(40)]
PAIR_LENGTH = 64  # pieces per packed pair; the buckets up to it: 8 12 16 20 24 32 40 48 64
# Longest packed pair 1..60 -> buckets 8 (1-8), 12 (9-12), 16, 20, 24, 32 (25-32),
# 40 (33-40), 48 (41-48), 64 (49-60): nine, by hand from DEFAULT_LENGTH_BUCKETS.
IDS_BUCKETS = 9
# Raw texts of (words in text1, words in text2) -> packed length n1 + n2 + 3:
# 10 + 11 + 3 = 24, 9 + 9 + 3 = 21, 8 + 9 + 3 = 20 -> buckets 24, 24, 20;
# 12 + 13 + 3 = 28, 11 + 13 + 3 = 27 -> bucket 32. Three buckets.
TEXT_WORDS = [(10, 11), (9, 9), (8, 9), (12, 13), (11, 13)]
TEXT_BUCKETS = 3

SERVE = textwrap.dedent(
    """
    import sys
    import numpy as np
    import tensorflow as tf

    loaded = tf.saved_model.load(sys.argv[1])
    rng = np.random.default_rng(0)
    words = sys.argv[3].split(",")
    if sys.argv[2] == "ids":
        fn = loaded.signatures["serving_ids"]
        for n in range(1, 61):
            # 8 rows of random lengths 1..n, one of them n: [CLS] a [SEP] b [SEP] shapes
            lengths = rng.integers(1, n + 1, 8)
            lengths[rng.integers(8)] = n
            ids = np.zeros((8, n), "int32")
            segments = np.zeros((8, n), "int32")
            mask = np.zeros((8, n), "int32")
            for row, length in enumerate(lengths):
                ids[row, :length] = rng.integers(4, 4 + len(words), length)
                segments[row, rng.integers(0, length + 1) : length] = 1
                mask[row, :length] = 1
            fn(token_ids=ids, segment_ids=segments, padding_mask=mask)
    else:
        fn = loaded.signatures["serving_default"]
        for n1, n2 in [tuple(map(int, p.split("+"))) for p in sys.argv[2].split(";")]:
            text1 = [" ".join(rng.choice(words, n1)) for _ in range(8)]
            text2 = [" ".join(rng.choice(words, n2)) for _ in range(8)]
            fn(text1=tf.constant(text1), text2=tf.constant(text2))
    """
)


@pytest.fixture(scope="module", params=[("fp32", "keras"), ("bf16", "bert_folded")])
def export_dir(request, tmp_path_factory):
    """``(model, export directory)``: a tiny BERT+MatchLSTM exported with XLA and the default
    length buckets, in float32 (XLA compiles the whole model) or in bf16 through the
    ``bert_folded`` backend (XLA compiles the head only, BERT runs uncompiled)."""
    precision, backend = request.param
    featurizer = PackedPair(WholeWordTokenizer(), max_length=PAIR_LENGTH)
    featurizer.fit(WORDS)
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(
        vocabulary_size=featurizer.vocab_size,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=PAIR_LENGTH,
        dropout=0.0,
        hidden_activation="gelu",
    )
    model = build_bert_matchlstm(3, backbone=backbone, head="matchlstm", match_units=3)
    directory = tmp_path_factory.mktemp("bert_buckets") / "export"
    export_model(
        model,
        directory,
        featurizers=[featurizer],
        label_names=["a", "b", "c"],
        max_length=PAIR_LENGTH,
        length_buckets=DEFAULT_LENGTH_BUCKETS,
        precision=precision,
        backend=backend,
    )
    return model, directory


def _compilations(export_dir, what):
    """XLA compilations logged by a fresh process serving ``what`` from the export."""
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="0",
        TF_CPP_VMODULE="device_compiler=1",
        CUDA_VISIBLE_DEVICES="",
    )
    done = subprocess.run(
        [sys.executable, "-c", SERVE, str(export_dir), what, ",".join(WORDS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr.count("Compilation of XLA executable")


def test_serving_ids_compiles_once_per_length_bucket(export_dir):
    assert _compilations(export_dir[1], "ids") == IDS_BUCKETS


def test_raw_text_compiles_once_per_length_bucket(export_dir):
    what = ";".join(f"{n1}+{n2}" for n1, n2 in TEXT_WORDS)
    assert _compilations(export_dir[1], what) == TEXT_BUCKETS


def test_the_export_leaves_the_model_splitting_by_batch(export_dir):
    splits = [layer for layer in export_dir[0].layers if isinstance(layer, PairSegmentSplit)]
    assert [layer.width for layer in splits] == ["batch"]
