"""BERT's encoder as a forward pass over plain weights, before and after (issue 51, items 1-2:
the SavedModel's own time for BERT+MatchLSTM).

Before, every export of BERT+MatchLSTM served the Keras model (keras-hub's ``BertBackbone``:
``EinsumDense`` projections, ``Dense`` on 3-D inputs, GELU's ``Erfc`` chain as kernels of their
own); after, an ``--xla=false`` export serves ``re2_tf/serving/folded_bert.py``'s pass (every
dense layer a 2-D product with ``BiasAdd`` and its activation, query, key and value as one
product) with the model's own head on its outputs (backend ``bert_folded``), and the XLA
export still the Keras model. BERT (h_0) and BERT+MatchLSTM (the benchmark variants, random
weights) are exported by the ``--before`` git revision and by this checkout, as the default
export (XLA), ``--xla=false``, ``--xla=false --precision=bf16``, and ONNX Runtime and OpenVINO
(float32 and, where the CPU has bfloat16 units, bfloat16) converted from the ``--xla=false``
export as the serving choice converts it; timed alternately in fresh processes at batch
8 x 20 and 512 x 20 on the same batches, with their probabilities against the "before"
default export's and a ``tf.profiler`` profile of each SavedModel per shape
(``re2_lab.revisions.export_ab``). Writes ``folded_bert_ab.json`` beside this file.

    python docs/runs/roofline/folded_bert_ab.py --before=<git revision> [--rounds=3]
        [--variants="BERT (h_0)"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("bert_matchlstm", "BERT (h_0)"), ("bert_matchlstm", "BERT+MatchLSTM")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS, openvino=True, bf16=True)
