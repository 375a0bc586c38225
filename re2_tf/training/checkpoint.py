"""The resumable training state written at every evaluation point.

``backup/state.npz`` holds every variable of the network (trainable weights, batch-norm
statistics, dropout seed-generator states) **except frozen embedding matrices** (pretrained
vectors that never change: the run rebuilds them from its ``embeddings.npy`` cache, so they are
not copied at every evaluation point), and every optimizer variable (iteration count, learning
rate, moments). It is written to a temporary file and renamed, so a kill leaves either the
previous state or the new one, never half a file. Keras' ``BackupAndRestore`` is not used
because it saves the whole model, frozen embedding included, each time.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import keras
import numpy as np

__all__ = ["TrainingBackup", "frozen_embedding_variables", "stable_path"]

STATE_FILE = "state.npz"


def _layers(model):
    for layer in model.layers:
        yield layer
        if isinstance(layer, keras.Model):
            yield from _layers(layer)


def frozen_embedding_variables(network):
    """Variables of non-trainable ``keras.layers.Embedding`` layers (fixed pretrained vectors)."""
    return [
        v
        for layer in _layers(network)
        if isinstance(layer, keras.layers.Embedding) and not layer.trainable
        for v in layer.weights
    ]


def stable_path(path):
    """A variable path without Keras' numbering of repeated names (``forward_lstm_4/kernel``
    -> ``forward_lstm/kernel``; an optimizer slot ``adam/forward_lstm_4_kernel_momentum`` ->
    ``adam/forward_lstm_kernel_momentum``): the same model built a second time in one process
    (a run resumed from Python) gets other numbers, not other variables."""
    return re.sub(r"_\d+(?=_|/|$)", "", path)


class TrainingBackup(keras.callbacks.Callback):
    """Save the training state at every Keras epoch end (= evaluation point) and restore it.

    Args:
        directory: the ``backup/`` directory this process writes.
        network: the trained network.
        optimizer: its (built) optimizer.
        restore_from: the ``backup/`` directory :meth:`restore` reads (default:
            ``directory``); a multi-worker run's non-chief workers write to a directory of
            their own and restore the chief's.
    """

    def __init__(self, directory, network, optimizer, restore_from=None):
        super().__init__()
        self.directory = Path(directory)
        self.network = network
        self.optimizer = optimizer
        self.restore_from = Path(restore_from) if restore_from is not None else self.directory

    @property
    def path(self):
        """The state file :meth:`restore` reads."""
        return self.restore_from / STATE_FILE

    def _variables(self):
        frozen = {id(v) for v in frozen_embedding_variables(self.network)}
        network = [v for v in self.network.variables if id(v) not in frozen]
        return network + list(self.optimizer.variables)

    def save(self):
        """Write the state now (atomically)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        variables = self._variables()
        arrays = {f"v{i}": np.asarray(v.numpy()) for i, v in enumerate(variables)}
        arrays["paths"] = np.asarray(json.dumps([v.path for v in variables]))
        tmp = self.directory / (STATE_FILE + ".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, self.directory / STATE_FILE)

    def restore(self):
        """Load the saved state into the network and optimizer; returns the restored update
        count (0 when there is no backup).

        Raises:
            ValueError: the backup holds other variables (a different model or optimizer:
                other paths, numbering aside (:func:`stable_path`), or other shapes).
        """
        if not self.path.exists():
            return 0
        variables = self._variables()
        with np.load(self.path) as saved:
            paths = json.loads(str(saved["paths"]))
            same = [stable_path(p) for p in paths] == [stable_path(v.path) for v in variables]
            if not same or any(
                saved[f"v{i}"].shape != tuple(v.shape) for i, v in enumerate(variables)
            ):
                raise ValueError(
                    f"{self.path} was written for other variables than this "
                    "model and optimizer have; use --overwrite to start again."
                )
            for i, variable in enumerate(variables):
                variable.assign(saved[f"v{i}"])
        return int(self.optimizer.iterations.numpy())

    def on_epoch_end(self, epoch, logs=None):
        self.save()
