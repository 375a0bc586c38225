"""Test helper: a model's ``.keras`` and ``get_config`` round trips give the same outputs."""

import keras
import numpy as np


def assert_round_trips(model, batch, path, atol=1e-6):
    """Save ``model`` to ``path`` (a ``.keras`` file) and reload it, and rebuild it from
    ``get_config`` with its weights; both must give ``model``'s inference outputs on ``batch``.
    Returns the reloaded model."""
    expected = model(batch, training=False).numpy()
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(batch, training=False), expected, atol=atol)
    rebuilt = keras.Model.from_config(model.get_config())
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_allclose(rebuilt(batch, training=False), expected, atol=atol)
    return loaded
