"""The bfloat16 SavedModel with TensorFlow's inter-op pool of one thread and of two (issue 51,
item 2: the SavedModel's remaining gap to OpenVINO bf16 at the Table 5 shape; the runtimes
record times every TensorFlow path with one inter-op thread, ``re2_tf.benchmarking.time_table5``).

TensorFlow runs the ops of a graph that do not depend on each other (RE2's two texts through
the same encoder, BERT+MatchLSTM's two MatchLSTM directions) at the same time only when its
inter-op pool has more than one thread; on a CPU of 2 cores its default is 2 intra-op and 2
inter-op threads. For each variant (the benchmark network, random weights) the script exports
the ``--xla=false`` SavedModel (float32, the agreement's reference), the
``--xla=false --precision=bf16`` one and the ``--precision=bf16`` (XLA) one, converts the
first for OpenVINO as the serving choice converts, and times:

- the bf16 SavedModel without XLA with 2 intra-op threads and 1 inter-op thread (the record's
  protocol), with 2 and 2 (TensorFlow's default here) and with 1 and 2 (two ops at a time,
  each on one thread: two threads busy at most, as in the protocol);
- the bf16 XLA SavedModel (BERT's bfloat16 pass on oneDNN, the head under XLA; RE2 compiled
  whole) with 2 and 1, and with 1 and 2;
- OpenVINO bf16 with 2 threads, as the record times it.

Then:

- **Timing.** The paths are timed alternately in fresh processes at batch 8 x 20 and
  512 x 20 on the same batches (``re2_lab.roofline.alternate_paths``).
- **Agreement.** Each path's probabilities against the float32 SavedModel's.
- **Profiles.** Every SavedModel path is profiled once per shape with its own threads
  (``re2_lab.roofline.ab_profiles``): thread-ms in kernels against the call's wall time.

Writes ``inter_threads_ab.json`` beside this file, after each variant.

    python docs/runs/roofline/inter_threads_ab.py [--rounds=3] \
        [--variants="bert_matchlstm:BERT+MatchLSTM,re2:RE2 1 block,..."]
"""

from re2_lab.revisions import paths_ab_main

REFERENCE = "savedmodel (xla=False)"
BF16 = "savedmodel bf16 export (xla=False)"
BF16_XLA = "savedmodel bf16 export (XLA)"
OPENVINO = "openvino bf16"
#: Thread settings beside the protocol's 2 intra-op threads and 1 inter-op thread.
TWO = {"intra_op_threads": 2, "inter_op_threads": 2}
ONE_TWO = {"intra_op_threads": 1, "inter_op_threads": 2}
#: ``{path name: (the export's folder, its timing request)}`` of the paths so set.
THREADS = {
    f"{BF16}, 2 inter-op threads": ("bf16", TWO),
    f"{BF16}, 1 intra-op thread, 2 inter-op threads": ("bf16", ONE_TWO),
    f"{BF16_XLA}, 1 intra-op thread, 2 inter-op threads": ("bf16_xla", ONE_TWO),
}


def paths(xla, plain, onnx, work):
    from re2_tf.serving import runtimes

    openvino = runtimes.convert(plain, "openvino", work / "openvino")
    return {
        REFERENCE: (plain, None),
        BF16: (work / "bf16", None),
        BF16_XLA: (work / "bf16_xla", None),
        **{name: (work / folder, None) for name, (folder, _) in THREADS.items()},
        OPENVINO: (openvino, "bf16"),
    }


if __name__ == "__main__":
    paths_ab_main(
        __file__,
        "bert_matchlstm:BERT+MatchLSTM,re2:RE2 1 block,bert_matchlstm:BERT (h_0),"
        "re2:RE2 3 blocks",
        paths, reference=REFERENCE, bf16=True, bf16_xla=True,
        requests={name: request for name, (_, request) in THREADS.items()},
    )  # fmt: skip
