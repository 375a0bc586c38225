"""Original-average mixed connection (FITN OA-mixed connection, Qi et al. 2022, Sec. 2.2.3,
Eq. 14-15) and the connection variants of its Table 3."""

import keras
from keras import ops

#: Connection variants (FITN Table 3): ``oa_mixed`` (Eq. 14-15), ``direct`` (the previous
#: round's output alone), ``dense`` (every earlier input and output concatenated, Huang et
#: al. 2017), ``residual`` (Eq. 14 with a running sum in place of Eq. 15's average).
FITN_CONNECTIONS = ("oa_mixed", "direct", "dense", "residual")


@keras.saving.register_keras_serializable(package="re2_tf")
class OAMixedConnection(keras.layers.Layer):
    """The next round's input from the embedding, the previous input and the round output.

    With ``E`` the word representation, ``O^{l-1}`` the output of round ``l - 1`` and
    ``I_H`` the hidden part carried between rounds (rounds ``l = 1 .. N``; ``I^0 = E``)::

        oa_mixed  I_H^1 = O^0,  I_H^l = (O^{l-1} + I_H^{l-1}) / 2      Eq. 15
                  I^l = [E; I_H^l]                                      Eq. 14
        residual  I_H^l = O^{l-1} + I_H^{l-1}  (I_H^1 = O^0),  I^l = [E; I_H^l]
        direct    I^l = O^{l-1}
        dense     I^l = [I^{l-1}; O^{l-1}]

    Readings chosen where the paper is brief (Table 3 names the variants without
    equations): ``residual`` is He et al.'s running sum in the place of Eq. 15's average,
    keeping Eq. 14's ``[E; .]``, which isolates what Sec. 2.2.3 argues (the sum "treats the
    information in each round equally" and lets the variance grow; the average favours
    nearer rounds); ``dense`` concatenates as DRCN and DenseNet do, so it also keeps ``E``;
    ``direct`` keeps neither.

    Args:
        connection: one of :data:`FITN_CONNECTIONS`.

    Call arguments:
        embedding: float ``[batch, len, d_e]``, ``E`` (``I^0``).
        previous_input: float ``[batch, len, *]``, ``I^{l-1}`` (read by ``dense``).
        output: float ``[batch, len, d]``, ``O^{l-1}``.
        hidden: float ``[batch, len, d]``, ``I_H^{l-1}``, or None in round 1.

    Returns:
        ``(I^l, I_H^l)``; ``I_H^l`` is what the next call takes as ``hidden`` (for ``direct``
        and ``dense`` it is ``O^{l-1}``, unused).

    Raises:
        ValueError: an unknown connection.

    Reference: Qi et al., Findings of NAACL 2022, Eq. 14-15 and Table 3.

    Example:

    ```python
    link = OAMixedConnection()
    x1, hidden1 = link(e, e, o0, None)     # round 1: [E; O^0]
    x2, hidden2 = link(e, x1, o1, hidden1)  # round 2: [E; (O^1 + O^0) / 2]
    ```
    """

    def __init__(self, connection="oa_mixed", **kwargs):
        super().__init__(**kwargs)
        if connection not in FITN_CONNECTIONS:
            raise ValueError(f"connection must be one of {FITN_CONNECTIONS}, got {connection!r}")
        self.connection = connection

    def call(self, embedding, previous_input, output, hidden=None):
        if self.connection == "direct":
            return output, output
        if self.connection == "dense":
            return ops.concatenate([previous_input, output], axis=-1), output
        if hidden is None:
            hidden = output
        elif self.connection == "oa_mixed":
            hidden = (output + hidden) / 2.0
        else:
            hidden = output + hidden
        return ops.concatenate([embedding, hidden], axis=-1), hidden

    def get_config(self):
        config = super().get_config()
        config.update(connection=self.connection)
        return config
