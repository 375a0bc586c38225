"""Test helper: the scaffolding every model's tests share -- the tiny padded pair batch, the
eager / graph / XLA / ``predict`` agreement check, a few training updates on a fixed batch,
and the ``.keras`` / ``get_config`` round trip (:func:`roundtrip.assert_round_trips`).
Export parity for every registered model is in ``tests/test_export_models.py``."""

import numpy as np
import tensorflow as tf
from roundtrip import assert_round_trips  # noqa: F401  (re-exported for the model tests)

from re2_tf.training import MatchingTrainer

#: Four pairs with padding in both texts: text1 of the third pair fills its width, text2 of
#: the last pair is empty (one padding position).
TEXT1 = np.array([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0], [9, 10, 11, 12, 13], [2, 0, 0, 0, 0]], "int32")
TEXT2 = np.array([[14, 15, 16, 0], [17, 0, 0, 0], [5, 4, 3, 2], [0, 0, 0, 0]], "int32")


def pair_batch(seed=0, char_vocab=None, width=5, exact_match=False):
    """``{"text1", "text2"}`` (:data:`TEXT1`, :data:`TEXT2`, int32 ``[4, length]``), plus,
    with ``char_vocab``, ``<side>_chars`` (int32 ``[4, length, width]``: each real word gets
    1..width random character ids in ``[1, char_vocab)``, the rest padding) and, with
    ``exact_match``, ``<side>_exact_match`` (float32 0/1 flags, 0 at padding). The draws are
    per side, characters before flags, from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    batch = {"text1": TEXT1.copy(), "text2": TEXT2.copy()}
    for side in ("text1", "text2"):
        ids = batch[side]
        if char_vocab is not None:
            chars = np.zeros(ids.shape + (width,), "int32")
            for index in zip(*np.nonzero(ids)):
                n = rng.integers(1, width + 1)  # some words fill the width, most have padding
                chars[index][:n] = rng.integers(1, char_vocab, n)
            batch[f"{side}_chars"] = chars
        if exact_match:
            batch[f"{side}_exact_match"] = (rng.random(ids.shape) < 0.5).astype("float32") * (
                ids > 0
            )
    return batch


def assert_calls_agree(model, batch, atol, xla=False, predict=True):
    """The model's inference output on ``batch`` is the same (to ``atol``) called eagerly,
    inside a ``tf.function``, with ``xla`` inside a ``jit_compile`` one, and with ``predict``
    through ``Model.predict``. Returns the eager output as NumPy."""
    eager = model(batch, training=False).numpy()
    graph = tf.function(lambda b: model(b, training=False))(batch).numpy()
    np.testing.assert_allclose(graph, eager, atol=atol)
    if xla:
        compiled = tf.function(lambda b: model(b, training=False), jit_compile=True)
        np.testing.assert_allclose(compiled(batch).numpy(), eager, atol=atol)
    if predict:
        np.testing.assert_allclose(model.predict(batch, verbose=0), eager, atol=atol)
    return eager


def train_on_fixed_batch(model, x, y, optimizer, updates, jit_compile="auto", **trainer_options):
    """``updates`` + 1 ``train_on_batch`` calls of a :class:`MatchingTrainer` (options such as
    ``task_loss``, ``grad_clipping``) compiled with ``optimizer`` and ``jit_compile``, on the
    same batch. Returns every step's logs (each logs the losses before its own update), first
    to last."""
    trainer = MatchingTrainer(model, **trainer_options)
    trainer.compile(optimizer=optimizer, jit_compile=jit_compile)
    return [trainer.train_on_batch(x, y, return_dict=True) for _ in range(updates + 1)]
