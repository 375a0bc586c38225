"""The default export with XLA's Eigen products and convolutions on the calling thread
(``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``) against the default and ONNX Runtime
(issue 51, item 1: the executable's time in no thunk's event, ``call_timeline.json``, holds
the work XLA's convolution and product thunks hand to Eigen's threads).

For each variant (the benchmark network, random weights) the script exports the default
SavedModel (XLA) and the ``--xla=false`` one, and converts the latter for ONNX Runtime, as
the serving choice converts. The same default SavedModel is then timed twice: as it is, and
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

import json
import sys
import tempfile
from pathlib import Path

from re2_lab.revisions import AB_SHAPES
from re2_lab.roofline import ab_agreement, ab_profiles, ab_record, alternate_paths
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:])
ROUNDS = int(ARGS.get("rounds", 3))
REFERENCE = "savedmodel (XLA)"
SINGLE = "savedmodel (XLA), Eigen on the calling thread"
#: The environment of :data:`SINGLE`'s processes.
FLAGS = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
VARIANTS = "re2:RE2 1 block,re2:RE2 3 blocks,match_srnn:Match-SRNN,drcn:DRCN"


def main():
    chosen = [tuple(item.split(":", 1)) for item in ARGS.get("variants", VARIANTS).split(",")]
    record = ab_record(
        "docs/runs/roofline/eigen_threads_ab.py", ARGS, ROUNDS,
        environment={SINGLE: FLAGS}, variants={}, agreement={}, profiles={},
    )  # fmt: skip
    out = Path(__file__).with_name("eigen_threads_ab.json")
    with tempfile.TemporaryDirectory() as tmp:
        for model, variant in chosen:
            spec = get_spec(model)
            hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
            work = Path(tmp) / variant.replace(" ", "_")
            xla, _, featurizers = benchmarking.export_benchmark_model(spec, hparams, work / "xla")
            plain, _, _ = benchmarking.export_benchmark_model(
                spec, hparams, work / "noxla", xla=False
            )
            paths = {
                REFERENCE: (xla, None),
                SINGLE: (xla, None),
                "onnxruntime": (runtimes.convert(plain, "onnxruntime", work / "ort"), None),
            }
            environments = {SINGLE: FLAGS}
            medians, outputs = alternate_paths(
                paths, featurizers, AB_SHAPES, ROUNDS, work, outputs=True,
                environments=environments,
            )  # fmt: skip
            record["variants"][variant] = medians
            record["agreement"][variant] = ab_agreement(outputs, REFERENCE)
            record["profiles"][variant] = ab_profiles(
                paths, featurizers, AB_SHAPES, work, environments=environments
            )
            out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
