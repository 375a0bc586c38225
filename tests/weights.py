"""Test helper: random values for every weight of a model before two paths are compared."""

import numpy as np


def randomize_weights(model, seed):
    """Give every weight (weight-norm g, biases, temperatures included) a non-trivial random
    value, so a comparison exercises each term, not just the initial g = 1, b = 0 and equal
    temperatures under which folding bugs are invisible."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        shape = tuple(w.shape)
        if w.path.endswith("kernel_g"):
            value = rng.uniform(0.5, 1.5, shape)
        elif w.path.endswith("moving_variance"):  # batch-norm variances stay positive
            value = rng.uniform(0.5, 1.5, shape)
        elif w.path.endswith("temperature"):
            value = np.asarray(rng.uniform(0.3, 1.0))
        else:
            value = rng.normal(0.0, 0.5, shape)
        w.assign(value.astype("float32"))
