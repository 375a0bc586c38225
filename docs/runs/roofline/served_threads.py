"""The serving choice on TensorFlow's thread settings (issue 51, item 2): what ``re2-export``
(``--serving=auto``, the default) records for the benchmark networks on this CPU now that it
times every TensorFlow candidate on each thread setting a serving process can have
(``re2_tf.serving.serving_choice``: intra-op + inter-op ``c + c``, TensorFlow's default;
``c + 1``, Table 5's protocol; ``c/2 + 2``) and serves on one.

For each variant (the benchmark network, random weights) the script exports what
``re2-export`` exports beside its default (the XLA SavedModel): the ``--xla=false`` twin, with
bfloat16 units the bfloat16 ones (``re2_tf.serving.run_export.twin_exports``) and the LiteRT
model, and runs the library's own rule,
``re2_tf.serving.serving_choice.choose_serving``, with the installed runtimes on 2 cores, on
the pairs the runtimes record checks agreement on (``re2_lab.runtimes.choice_pairs``). The
record is each variant's ``serving_choice`` as ``export_config.json`` would hold it.

Writes ``served_threads.json`` beside this file after each variant; a variant already there
is not measured again (``--redo`` names ones to measure again).

    python docs/runs/roofline/served_threads.py \
        [--variants="re2:RE2 1 block,bert_matchlstm:BERT+MatchLSTM,..."] [--redo=...]
"""

import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

from absl import app, flags

from re2_lab.runtimes import choice_pairs
from re2_tf import benchmarking
from re2_tf.machine import cpu_units, machine
from re2_tf.models import get_spec
from re2_tf.serving import serving_choice
from re2_tf.serving.run_export import twin_exports

RECORD = Path(__file__).with_name("served_threads.json")
VARIANTS = "re2:RE2 1 block,re2:RE2 3 blocks,bert_matchlstm:BERT+MatchLSTM,bert:BERT (h_0)"

FLAGS = flags.FLAGS
flags.DEFINE_string("variants", VARIANTS, "model:variant, comma-separated, in order.")
flags.DEFINE_string("redo", "", "Variants measured again though recorded, comma-separated.")
flags.DEFINE_integer("threads", 2, "Cores the choice times on (its tf_thread_settings').")


def measure(model, variant, work, threads):
    """The serving choice of one benchmark variant, as ``re2-export`` makes it."""
    spec = get_spec(model)
    hparams = spec.benchmark[variant]["hparams"]

    def export(name, **kwargs):
        path, _, featurizers = benchmarking.export_benchmark_model(
            spec, hparams, work / name, **kwargs
        )
        return path, featurizers

    xla, featurizers = export("xla")
    twins = {
        name: export(name, xla=xla_, precision=precision)[0]
        for name, (precision, xla_) in twin_exports(
            "fp32", True, spec.export_backend, cpu_units()["bfloat16"]
        ).items()
    }
    try:  # LiteRT: the TFLite converter reads the Keras model
        litert = export("tflite", fmt="tflite")[0]
    except ValueError as error:  # the converter's refusal: the candidate's error
        litert = error
    return serving_choice.choose_serving(
        xla,
        choice_pairs(featurizers),
        convertible=twins.get("plain"),
        bf16_export=twins.get("bf16"),
        bf16_xla_export=twins.get("bf16_xla"),
        tflite_export=litert,
        threads=threads,
        log=lambda message: print(f"{variant}: {message}", flush=True),
    )


def main(argv):
    del argv
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {"variants": {}}
    redo = {v for v in FLAGS.redo.split(",") if v}
    for item in FLAGS.variants.split(","):
        model, variant = item.split(":", 1)
        if variant in record["variants"] and variant not in redo:
            print(f"{variant}: recorded", flush=True)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            choice = measure(model, variant, Path(tmp), FLAGS.threads)
        choice["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        record["variants"][variant] = dict(choice, model=model)
        record.update(
            command="python " + " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]),
            threads=FLAGS.threads,
            **machine(),
        )
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"{variant}: {choice['reason']}", flush=True)


if __name__ == "__main__":
    app.run(main)
