"""ONNX Runtime with and without its threads spinning while they wait, beside the default
export (issue 51, item 1: how much of ONNX Runtime's lead over the default export at the
Table 5 shape is its threads' spin-wait; ``call_timeline.json`` puts the default export's
loss outside XLA's thunks).

ONNX Runtime's intra-op threads spin while waiting for work by default
(``session.intra_op.allow_spinning``), so a thread is awake when the next parallel section
starts; with ``"0"`` they sleep and are woken. For each variant (the benchmark network,
random weights) the script exports the default SavedModel (XLA) and the ``--xla=false`` one,
converts the latter for ONNX Runtime, as the serving choice converts, and times the default
export and ONNX Runtime with spinning (its default) and without it.

- **Timing.** The paths are timed alternately in fresh processes at batch 8 x 20 and
  512 x 20 on the same batches (``re2_lab.roofline.alternate_paths``, 2 intra-op threads).
- **Agreement.** Each path's probabilities against the default export's.
- **Profiles.** The default export is profiled once per shape, each call split into phases
  (``re2_lab.roofline.ab_profiles``).

Writes ``spin_ab.json`` beside this file.

    python docs/runs/roofline/spin_ab.py [--rounds=3] \
        [--variants="re2:RE2 1 block,match_srnn:Match-SRNN"]
"""

from re2_lab.revisions import paths_ab_main

REFERENCE = "savedmodel (XLA)"
SLEEPING = "onnxruntime, no spinning"
#: The timing request of :data:`SLEEPING`'s processes.
NO_SPINNING = {"onnxruntime_config": {"session.intra_op.allow_spinning": "0"}}


def paths(xla, plain, onnx, work):
    return {REFERENCE: (xla, None), "onnxruntime": (onnx, None), SLEEPING: (onnx, None)}


if __name__ == "__main__":
    paths_ab_main(
        __file__, "re2:RE2 1 block,match_srnn:Match-SRNN", paths,
        reference=REFERENCE, requests={SLEEPING: NO_SPINNING},
    )  # fmt: skip
