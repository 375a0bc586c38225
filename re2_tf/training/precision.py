"""Mixed-precision training: Keras dtype policies, float32 outputs and dynamic loss scaling.

``--mixed_precision`` (:attr:`re2_tf.TrainConfig.mixed_precision`) picks one of
:data:`POLICIES`:

======  ===================  =========================================================
name    Keras policy         what changes
======  ===================  =========================================================
none    ``float32``          nothing (the papers' and the releases' precision)
bf16    ``mixed_bfloat16``   layers compute in bfloat16; no loss scaling (bfloat16 has
                             float32's exponent range)
fp16    ``mixed_float16``    layers compute in float16; the loss is scaled by Keras'
                             ``LossScaleOptimizer`` (dynamic scale from 2^15, halved at
                             every overflow, doubled after 2,000 finite updates)
======  ===================  =========================================================

In both mixed policies the weights (Keras variables) stay float32: each layer casts them
and its inputs to the 16-bit compute dtype, and the optimiser updates float32 weights with
float32 gradients. What keeps float32 where precision needs it (our choice; no paper
trains in 16 bits):

- the network's outputs (:func:`float32_outputs`): the task losses, the metrics, a
  ``.keras`` file and every export see float32 logits or scores;
- weight normalisation: ``g * v / ||v||`` is computed from the float32 weights and only the
  effective kernel is cast (:class:`re2_tf.layers.weight_norm.WeightNormDense`);
- every attention softmax and its mask (:func:`re2_tf.layers.masking.masked_softmax`);
- the scans: Match-SRNN's spatial GRU and the MatchLSTM recurrence are float32 layers (their
  inputs are cast up, their outputs are float32);
- Keras' own float32 islands (batch-norm statistics, layer norm, softmax activations).

Under ``fp16`` an update whose scaled gradient overflows is skipped by the
``LossScaleOptimizer`` (which halves the scale); the training step still counts it as an
update (``optimizer.iterations`` advances, weights and slots do not change), so update
``n`` is always batch ``n`` of the seeded stream and a resumed run stays aligned. Such a
skip is logged as ``overflow`` 1.0 and does not stop the run; a loss that is itself not
finite does, as in float32.
"""

from __future__ import annotations

import contextlib

import keras

__all__ = ["POLICIES", "dtype_policy", "float32_outputs", "loss_scaled", "uses_loss_scaling"]

#: ``--mixed_precision`` name -> Keras dtype policy name.
POLICIES = {"none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}

#: Name of the float32 cast layer :func:`float32_outputs` appends to each output.
OUTPUT_LAYER = "float32_output"


@contextlib.contextmanager
def dtype_policy(mixed_precision):
    """Within the ``with`` body, layers created without a ``dtype`` get the Keras policy of
    ``mixed_precision`` (a :data:`POLICIES` name); the previous global policy is restored
    afterwards (even on an error).

    Raises:
        ValueError: an unknown name.
    """
    if mixed_precision not in POLICIES:
        raise ValueError(
            f"mixed_precision must be one of {', '.join(POLICIES)}, got {mixed_precision!r}"
        )
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(POLICIES[mixed_precision])
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def float32_outputs(network):
    """``network`` itself when its outputs are float32; else the same functional graph with
    every floating output cast to float32 by a float32 ``Activation("linear")`` layer
    (:data:`OUTPUT_LAYER`, ``_1``, ... for several outputs).

    The layers (and their names and weights) are the network's own: the result is one
    functional model over the same inputs, so weight paths, checkpoints and serving backends
    that find layers by name see the same network.

    Args:
        network: a functional ``keras.Model``.

    Returns:
        ``keras.Model`` whose outputs are float32 (same name, inputs and output structure).
    """
    outputs = network.output
    flat = keras.tree.flatten(outputs)

    def is_16_bit(tensor):
        return keras.backend.standardize_dtype(tensor.dtype) in ("float16", "bfloat16")

    if not any(is_16_bit(t) for t in flat):
        return network
    names = iter([OUTPUT_LAYER] + [f"{OUTPUT_LAYER}_{i}" for i in range(1, len(flat))])

    def cast(tensor):
        if not is_16_bit(tensor):
            return tensor
        return keras.layers.Activation("linear", dtype="float32", name=next(names))(tensor)

    return keras.Model(network.input, keras.tree.map_structure(cast, outputs), name=network.name)


def loss_scaled(optimizer, mixed_precision):
    """``optimizer`` wrapped in ``keras.optimizers.LossScaleOptimizer`` (named
    ``loss_scale``, Keras' default dynamic scale) for ``fp16``; ``optimizer`` itself
    otherwise. Its ``learning_rate`` and ``iterations`` are the wrapped optimiser's."""
    if mixed_precision != "fp16":
        return optimizer
    return keras.optimizers.LossScaleOptimizer(optimizer, name="loss_scale")


def uses_loss_scaling(optimizer):
    """Whether ``optimizer`` scales the loss dynamically (a ``LossScaleOptimizer``)."""
    return isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
