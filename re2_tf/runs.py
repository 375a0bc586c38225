"""The layout of a training run directory, shared by training, evaluation and export.

A run directory ``checkpoints/<name>/`` holds:

=====================  ======================================================================
``flags.txt``          the absl flags the run was started with (a flagfile: rerun with
                       ``--flagfile=<run>/flags.txt``)
``config.json``        what is needed to rebuild and serve the model: model name and builder
                       arguments, dataset, label names, tokeniser, selection metric
``vocab.txt``          the vocabulary, one token per line, line number = token id
``embeddings.npy``     cached embedding matrix (only with ``--embeddings``)
``best.keras``         the best checkpoint by the dataset's metric (a full Keras model)
``backup/``            Keras ``BackupAndRestore`` state, for resuming a killed run
``train.log``          the run's log
``tensorboard/``       TensorBoard summaries
``results.json``       final metrics of the best checkpoint
=====================  ======================================================================
"""

import dataclasses
import json
import os
from pathlib import Path

from re2_tf.data.embeddings import EMBEDDINGS_FILE, VOCAB_FILE  # the cache's own names

FLAGS_FILE = "flags.txt"
CONFIG_FILE = "config.json"
BEST_MODEL_FILE = "best.keras"
BACKUP_DIR = "backup"
LOG_FILE = "train.log"
TENSORBOARD_DIR = "tensorboard"
RESULTS_FILE = "results.json"


@dataclasses.dataclass
class RunConfig:
    """What a run directory records about its model and data.

    Attributes:
        model: architecture name, a key of ``re2_tf.models.MODELS``.
        model_kwargs: keyword arguments of the model builder (without the embedding matrix).
        dataset: dataset name in ``re2_tf.data.datasets.DATASETS``.
        label_names: class names in label-id order.
        tokenizer: tokeniser name in ``re2_tf.data.tokenization.TOKENIZERS`` used for raw text.
        lower: whether text is lower-cased before the vocabulary lookup.
        metric: the dataset's model-selection metric (``acc``, ``mrr``, ...).
    """

    model: str
    model_kwargs: dict
    dataset: str
    label_names: list
    tokenizer: str = "whitespace"
    lower: bool = True
    metric: str = "acc"


def save_config(run_dir, config):
    """Write ``config`` to ``<run_dir>/config.json``."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    tmp = Path(run_dir) / (CONFIG_FILE + ".tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, Path(run_dir) / CONFIG_FILE)


def load_config(run_dir):
    """Read ``<run_dir>/config.json``.

    Raises:
        FileNotFoundError: with a message naming the run directory if there is no config.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a re2_tf run directory (no {CONFIG_FILE}).")
    return RunConfig(**json.loads(path.read_text()))


def load_best_model(run_dir):
    """Load ``<run_dir>/best.keras`` (custom layers are registered by importing re2_tf.layers).

    Raises:
        FileNotFoundError: if the run has not saved a best checkpoint yet.
    """
    import keras

    import re2_tf.layers  # noqa: F401  (registers the custom layers)

    path = Path(run_dir) / BEST_MODEL_FILE
    if not path.exists():
        raise FileNotFoundError(f"No best checkpoint in {run_dir} (expected {path}).")
    return keras.saving.load_model(path)


def load_vocab(run_dir):
    """Read ``<run_dir>/vocab.txt`` as a :class:`re2_tf.data.vocab.Vocab`."""
    from re2_tf.data.vocab import Vocab

    config = load_config(run_dir)
    return Vocab.load(Path(run_dir) / VOCAB_FILE, lower=config.lower)
