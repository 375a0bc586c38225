"""The default export with XLA's multi-threaded Eigen mode off
(``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``: its convolutions run on the calling
thread) against the default and ONNX Runtime (issue 51, item 1: whether the executable's
time in no thunk's event, ``call_timeline.json``, is work XLA's convolution thunks hand to
Eigen's threads).

For each variant (the benchmark network, random weights) the script exports the default
SavedModel (XLA) and the ``--xla=false`` one, and converts the latter for ONNX Runtime, as
the serving choice converts. The same default SavedModel is timed twice: as it is, and
in processes whose environment adds :data:`FLAGS`.

- **Timing.** The paths are timed alternately in fresh processes at batch 8 x 20 and
  512 x 20 on the same batches (``re2_lab.roofline.alternate_paths``, 2 intra-op threads).
- **Agreement.** Each path's probabilities against the default's.
- **Profiles.** Both SavedModel paths are profiled once per shape, each call split into
  phases (``re2_lab.roofline.ab_profiles``, ``re2_lab/profile_worker.py``'s ``call_phases``).

Writes ``eigen_threads_ab.json`` beside this file.

    python docs/runs/roofline/eigen_threads_ab.py [--rounds=3] \
        [--variants="re2:RE2 1 block,re2:RE2 3 blocks,match_srnn:Match-SRNN,drcn:DRCN"]
"""

from re2_lab.revisions import paths_ab_main

REFERENCE = "savedmodel (XLA)"
SINGLE = "savedmodel (XLA), Eigen on the calling thread"
#: The environment of :data:`SINGLE`'s processes.
FLAGS = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}


def paths(xla, plain, onnx, work):
    return {REFERENCE: (xla, None), SINGLE: (xla, None), "onnxruntime": (onnx, None)}


if __name__ == "__main__":
    paths_ab_main(
        __file__, "re2:RE2 1 block,re2:RE2 3 blocks,match_srnn:Match-SRNN,drcn:DRCN", paths,
        reference=REFERENCE, environments={SINGLE: FLAGS},
    )  # fmt: skip
