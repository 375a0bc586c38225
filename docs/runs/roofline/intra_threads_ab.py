"""The bfloat16 SavedModel and OpenVINO bf16 with one intra-op thread and with two (issue 51,
item 2: where the SavedModel's remaining gap to OpenVINO bf16 at the Table 5 shape lies; the
runtimes record times every path with 2 intra-op threads).

For each variant (the benchmark network, random weights) the script exports the
``--xla=false`` SavedModel (float32, the agreement's reference) and the
``--xla=false --precision=bf16`` one, converts the former for OpenVINO as the serving choice
converts, and times the bf16 SavedModel and OpenVINO bf16 each with 2 intra-op threads and
with 1 (1 inter-op thread throughout).

- **Timing.** The paths are timed alternately in fresh processes at batch 8 x 20 and
  512 x 20 on the same batches (``re2_lab.roofline.alternate_paths``).
- **Agreement.** Each path's probabilities against the float32 SavedModel's.
- **Profiles.** Every SavedModel path is profiled once per shape with its own thread count
  (``re2_lab.roofline.ab_profiles``): thread-ms in kernels against the call's wall time.

Writes ``intra_threads_ab.json`` beside this file.

    python docs/runs/roofline/intra_threads_ab.py [--rounds=3] \
        [--variants="re2:RE2 1 block,re2:RE2 2 blocks,re2:RE2 3 blocks"]
"""

from re2_lab.revisions import paths_ab_main

REFERENCE = "savedmodel (xla=False)"
BF16 = "savedmodel bf16 export (xla=False)"
OPENVINO = "openvino bf16"
#: A path timed (and profiled) with one intra-op thread: its name.
ONE = "{}, 1 thread"


def paths(xla, plain, onnx, work):
    from re2_tf.serving import runtimes

    openvino = runtimes.convert(plain, "openvino", work / "openvino")
    bf16 = work / "bf16"
    return {
        REFERENCE: (plain, None),
        BF16: (bf16, None),
        ONE.format(BF16): (bf16, None),
        OPENVINO: (openvino, "bf16"),
        ONE.format(OPENVINO): (openvino, "bf16"),
    }


if __name__ == "__main__":
    paths_ab_main(
        __file__, "re2:RE2 1 block,re2:RE2 2 blocks,re2:RE2 3 blocks", paths,
        reference=REFERENCE, bf16=True,
        requests={ONE.format(name): {"intra_op_threads": 1} for name in (BF16, OPENVINO)},
    )  # fmt: skip
