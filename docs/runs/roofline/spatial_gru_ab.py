"""Match-SRNN's spatial GRU before and after a change to the library (issue 51, item 1):
Match-SRNN and Bi-Match-SRNN (the benchmark variants, random weights) exported by the
``--before`` git revision (checked out into a temporary worktree and imported from there) and
by this checkout, each as the default export (XLA), ``--xla=false`` and ONNX Runtime
(converted from the ``--xla=false`` export, as the serving choice converts), timed
alternately in fresh processes (2 intra-op threads, median of each process's batches) at
batch 8 x 20 and 512 x 20 on the same batches
(``benchmarking.table5_inputs(..., length_spread=0)``).

Each path's probabilities on those batches are compared with the "before" default export's
(max |dp|, share of equal argmax), and each SavedModel is profiled once per shape with
``tf.profiler`` (``re2_lab.roofline.profile_export``): thread-ms per call in each op kind.
Writes ``spatial_gru_ab.json`` beside this file.

    python docs/runs/roofline/spatial_gru_ab.py --before=<git revision> [--rounds=3] \
        [--variants="Match-SRNN,Bi-Match-SRNN"]
"""

from re2_lab.revisions import export_ab_main

VARIANTS = [("match_srnn", "Match-SRNN"), ("match_srnn", "Bi-Match-SRNN")]

if __name__ == "__main__":
    export_ab_main(__file__, VARIANTS)
