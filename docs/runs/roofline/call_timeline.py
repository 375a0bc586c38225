"""Where one call of the default export spends its time, from Python to XLA's thunks, beside
ONNX Runtime on the same network (issue 51, item 1: the time of the default export outside
its operations at the Table 5 shape).

For each variant (the benchmark network, random weights) the script exports the default
SavedModel (XLA) and the ``--xla=false`` one, and converts the latter for ONNX Runtime, as
the serving choice converts. It also saves ``empty signature``: a SavedModel whose
``serving_ids`` takes the same inputs and returns outputs of the same names and dtypes,
computed from nothing but the inputs' shapes. That one is what any TensorFlow signature
costs to call from Python.

- **Timing.** The paths are timed alternately in fresh processes at batch 8 x 20 and
  512 x 20 on the same batches (``re2_lab.roofline.alternate_paths``, 2 intra-op threads).
- **Agreement.** Their probabilities are compared with the default export's; the empty
  signature's outputs mean nothing and are left out.
- **Profiles.** Every SavedModel is profiled once per shape (``re2_lab.roofline.ab_profiles``).
  Each profiled call's wall time is split into phases (``re2_lab/profile_worker.py``,
  ``call_phases``): Python, TensorFlow's eager dispatch, TensorFlow's executor and kernels
  before and after the XLA executable, and the executable's time in its thunks and in no
  thunk's event.

Writes ``call_timeline.json`` beside this file.

    python docs/runs/roofline/call_timeline.py [--rounds=3] \
        [--variants="re2:RE2 1 block,match_srnn:Match-SRNN"]
"""

import tensorflow as tf

from re2_lab.revisions import paths_ab_main
from re2_tf.serving import runtimes

REFERENCE = "savedmodel (XLA)"
EMPTY = "empty signature"


def empty_signature(export, out):
    """Save to ``out`` a SavedModel whose ``serving_ids`` has ``export``'s inputs and
    returns outputs of the same names, dtypes and batch from the inputs' shapes alone
    (zeros, and the string ``"label"``); returns ``out``."""
    function = tf.saved_model.load(str(export)).signatures[runtimes.SIGNATURE]
    specs = function.structured_input_signature[1]
    returned = function.structured_outputs

    class Empty(tf.Module):
        @tf.function(input_signature=[specs])
        def serve(self, features):
            batch = tf.shape(next(iter(features.values())))[:1]
            outputs = {}
            for name, spec in returned.items():
                inner = tf.constant([d or 1 for d in spec.shape[1:]], tf.int32)
                shape = tf.concat([batch, inner], 0)
                if spec.dtype == tf.string:
                    outputs[name] = tf.fill(shape, "label")
                else:
                    outputs[name] = tf.zeros(shape, spec.dtype)
            return outputs

    module = Empty()
    concrete = module.serve.get_concrete_function()

    @tf.function(input_signature=list(specs.values()))
    def serving_ids(*inputs):
        return concrete(dict(zip(specs, inputs)))

    tf.saved_model.save(module, str(out), signatures={runtimes.SIGNATURE: serving_ids})
    return out


def paths(xla, plain, onnx, work):
    return {
        REFERENCE: (xla, None),
        "savedmodel (xla=False)": (plain, None),
        "onnxruntime": (onnx, None),
        EMPTY: (empty_signature(xla, work / "empty"), None),
    }


if __name__ == "__main__":
    paths_ab_main(
        __file__, "re2:RE2 1 block,match_srnn:Match-SRNN", paths,
        reference=REFERENCE, unscored=(EMPTY,),
    )  # fmt: skip
