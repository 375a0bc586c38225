r"""``re2-bench``: CPU latency of exported models with the protocol of RE2's Table 5 (a thin
layer over :func:`re2_tf.benchmarking.run_benchmark` and
:func:`re2_tf.benchmarking.time_export`; the protocol is described there).

    re2-bench --intra_op_threads=2 --inter_op_threads=1          # Table 5: RE2 1/2/3 blocks
    re2-bench --model=re2 --variants="RE2 3 blocks" --xla=false
    re2-bench --format=tflite --precision=int8
    re2-bench --backend=onnxruntime                  # through ONNX Runtime (or openvino, tflite)
    re2-bench --saved_model=exports/snli --signature=serving_ids \
        --input_spec='{"text1": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 1000},
                       "text2": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 1000}}'
    python -m re2_tf.benchmark ...                                 # the same

Prints one Markdown row per timed export (and the model's component timings unless
``--components=false``); ``--json_out`` also writes a record of the measurement as JSON
(:func:`re2_tf.benchmarking.benchmark_record`: the rows, the settings, the command line, the
CPU and the date, and the component timings as printed), from which the README's latency
tables are generated (:mod:`re2_lab.doc_tables`). An unknown model or variant, a malformed
``--input_spec`` or a missing ``--saved_model`` ends the command with one line
``re2-bench: error: <message>``, exit status 1.

``--backend=openvino|onnxruntime`` times the ``serving_ids`` signature of each variant's
``--xla=false`` export converted by :mod:`re2_tf.serving.runtimes` (or of ``--saved_model``),
on the same inputs as the other backends (for a packed-pair model, pairs of sample words packed
in Python); ``--backend=tflite`` is ``--format=tflite``. They need the optional extras
(``pip install -e '.[openvino]'`` / ``'.[onnx]'``); a model a converter cannot convert ends the
command with the ops it named.

``--saved_model`` without ``--backend`` times what that export serves a batch of ``--batch``
pairs through when nothing is told (:func:`re2_tf.serving.predictor.default_routes`: the
route ``re2-export --serving=auto`` recorded, as ``re2-predict`` and ``Matcher.from_export``
follow it; the SavedModel for an export without one), and prints it; a TensorFlow route is
timed on the TensorFlow threads the export's choice measured it on
(:func:`re2_tf.serving.predictor.recorded_tf_threads`) unless ``--intra_op_threads`` or
``--inter_op_threads`` is given. Without
``--input_spec``, an re2_tf export is fed :func:`re2_tf.benchmarking.table5_inputs` of its
own featurisers through ``serving_ids``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import tensorflow as tf
from absl import flags

from re2_tf.benchmarking import (
    benchmark_record,
    ids_spec,
    markdown_table,
    run_benchmark,
    table5_inputs,
    time_export,
)
from re2_tf.cli.common import run_command, write_record
from re2_tf.models import get_spec
from re2_tf.models.spec import model_names
from re2_tf.serving import runtimes
from re2_tf.serving.files import EXPORT_CONFIG_FILE, TFLITE_FILE
from re2_tf.serving.predictor import (
    TENSORFLOW_BACKENDS,
    default_routes,
    export_featurizers,
    recorded_tf_threads,
    route,
)
from re2_tf.serving.runtimes import MissingPackageError

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""

    flags.DEFINE_enum(
        "model",
        "re2",
        list(model_names()),
        "Registered model whose benchmark variants are timed.",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "variants",
        [],
        "Benchmark variants of the model's spec to time (default: "
        "all; RE2: 'RE2 1 block', 'RE2 2 blocks', 'RE2 3 blocks').",
        flag_values=flag_values,
    )
    flags.DEFINE_integer("batch", 8, "Pairs per timed batch.", flag_values=flag_values)
    flags.DEFINE_integer("length", 20, "Tokens per text.", flag_values=flag_values)
    flags.DEFINE_integer("batches", 100, "Timed batches.", flag_values=flag_values)
    flags.DEFINE_integer(
        "warmup", 10, "Untimed batches after the first call.", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "vocab_size", 30000, "Vocabulary size of the random models.", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "throughput_batch", 512, "Batch size for throughput (0 = skip).", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "format", "savedmodel", ["savedmodel", "tflite"], "Export format.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "precision", "fp32", ["fp32", "bf16", "int8"], "Export precision.", flag_values=flag_values
    )
    flags.DEFINE_enum(
        "backend",
        None,
        list(runtimes.BACKENDS),
        "Runtime timed (default: --format's; with --saved_model, what the export serves a "
        "batch of --batch pairs through, as re2-predict does: its serving choice); "
        "openvino/onnxruntime convert the --xla=false export's serving_ids "
        "(re2_tf.serving.runtimes); savedmodel_noxla: the --xla=false SavedModel (with "
        "--saved_model: the one an XLA export's serving choice kept); savedmodel_bf16: the "
        "--xla=false --precision=bf16 SavedModel (likewise); savedmodel_bf16_xla: the "
        "--precision=bf16 XLA export an export's serving choice kept.",
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "xla", True, "Export with jit_compile (SavedModel only).", flag_values=flag_values
    )
    flags.DEFINE_bool(
        "plain_export",
        False,
        "Also time each variant exported with Keras' "
        "own model.export (the baseline without re2_tf's export).",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "intra_op_threads", 0, "Intra-op threads (0 = default).", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "inter_op_threads", 0, "Inter-op threads (0 = default).", flag_values=flag_values
    )
    flags.DEFINE_string(
        "saved_model",
        None,
        "Time this export instead of the Table 5 models.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "signature",
        "serving_ids",
        "Signature to time (with --saved_model).",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "input_spec",
        None,
        "JSON input spec (with --saved_model); default: "
        "int32 ids [batch, length] for text1/text2 below --vocab_size.",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "json_out", None, "Also write the rows as JSON here.", flag_values=flag_values
    )
    flags.DEFINE_bool(
        "components",
        True,
        "Also print the model's component timings "
        "(its spec's component_benchmarks; Match-SRNN: wavefront vs "
        "cell-by-cell spatial GRU), in this process.",
        flag_values=flag_values,
    )


def main(argv):
    """Time the model's variants (or ``--saved_model``) and print the table."""

    try:
        return _main(argv)
    except MissingPackageError as error:  # an optional runtime to install: one line
        raise OSError(str(error)) from error


def _main(argv):
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    threads = dict(intra_op_threads=FLAGS.intra_op_threads, inter_op_threads=FLAGS.inter_op_threads)
    if FLAGS.intra_op_threads or FLAGS.inter_op_threads:  # this process too (components)
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.intra_op_threads)
        tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads)
    fmt = "tflite" if FLAGS.backend == "tflite" else FLAGS.format
    converted = FLAGS.backend in ("openvino", "onnxruntime")
    if FLAGS.saved_model:
        export = Path(FLAGS.saved_model)
        if not export.exists():
            raise FileNotFoundError(f"--saved_model: no such export {FLAGS.saved_model}")
        config_file = export / "assets" / EXPORT_CONFIG_FILE
        config = json.loads(config_file.read_text()) if config_file.exists() else None
        backend = FLAGS.backend
        precision = runtimes.served_precision(backend) if backend else "f32"
        if backend is None and config is not None:
            routes, note = default_routes(export, config)
            served = route(routes, FLAGS.batch)
            backend, precision = served["backend"], served["precision"]
            recorded, threads_note = recorded_tf_threads(config)
            told = FLAGS.intra_op_threads or FLAGS.inter_op_threads
            on = ""
            if recorded and backend in TENSORFLOW_BACKENDS and not told:
                threads = dict(intra_op_threads=recorded[0], inter_op_threads=recorded[1])
                on = f" on TensorFlow threads {recorded[0]} + {recorded[1]}"
            notes = "; ".join(n for n in (note, threads_note) if n)
            print(
                f"re2-bench: timing {export} through {backend} {precision}{on}, what it serves "
                f"a batch of {FLAGS.batch} pairs through" + (f" ({notes})" if notes else "")
            )
        with tempfile.TemporaryDirectory() as tmp:  # the inputs file, if any
            options, draw = {}, {}
            if FLAGS.input_spec:
                spec = json.loads(FLAGS.input_spec)
            elif config is not None and FLAGS.signature == runtimes.SIGNATURE:
                featurizers = export_featurizers(export, config)
                request = table5_inputs(featurizers, FLAGS.batch, FLAGS.length).request(
                    ids=True, inputs_file=Path(tmp) / "inputs.npz"
                )
                spec, options = request["input_spec"], request["options"]
                draw = dict(seed=request["seed"], length_spread=request["length_spread"])
            else:
                spec = ids_spec(FLAGS.batch, FLAGS.length, FLAGS.vocab_size)
            target = export
            if backend in runtimes.CONVERTED:
                target = runtimes.convert(export, backend)
                if backend in ("openvino", "savedmodel_noxla"):
                    options["precision"] = precision
            elif backend == "tflite":
                target = export / TFLITE_FILE
                if not target.exists():
                    raise FileNotFoundError(
                        f"{export} has no {TFLITE_FILE}: export with --format=tflite"
                    )
            result = time_export(
                target,
                FLAGS.signature,
                spec,
                batches=FLAGS.batches,
                warmup=FLAGS.warmup,
                throughput_batch=0 if "inputs_file" in options else FLAGS.throughput_batch,
                options=options or None,
                **draw,
                **threads,
            )
        result.update(runtime=backend or "savedmodel", precision=precision)
        result.update(model=FLAGS.saved_model, params=None)  # unknown for an arbitrary export
        rows, table = (
            [result],
            markdown_table([result], FLAGS.batch, FLAGS.length, FLAGS.throughput_batch),
        )
    else:
        rows, table = run_benchmark(
            FLAGS.model,
            FLAGS.variants,
            batch=FLAGS.batch,
            length=FLAGS.length,
            batches=FLAGS.batches,
            warmup=FLAGS.warmup,
            vocab_size=FLAGS.vocab_size,
            fmt=fmt,
            # a kept SavedModel's backend times the export it would keep
            precision=runtimes.KEPT.get(FLAGS.backend, {}).get("precision", FLAGS.precision),
            xla=FLAGS.xla and not converted and FLAGS.backend not in runtimes.KEPT,
            runtime=FLAGS.backend if converted else None,
            throughput_batch=FLAGS.throughput_batch,
            plain=FLAGS.plain_export,
            **threads,
        )
        for r in rows:
            print(f"{r['model']}: {r['params']:,} parameters outside the embedding")
    print(table)
    components = {}
    if FLAGS.components and not FLAGS.saved_model:
        for title, component in get_spec(FLAGS.model).component_benchmarks.items():
            timings = component(batch=FLAGS.batch, batches=FLAGS.batches, warmup=FLAGS.warmup)
            components[title] = str(timings)
            print(f"\n{title}\n{timings}")
    if FLAGS.json_out:
        record = benchmark_record(rows, argv=sys.argv[1:], settings=_settings())
        record["components"] = components
        write_record(FLAGS.json_out, record)


def _settings():
    names = (
        "model", "variants", "batch", "length", "batches", "warmup", "vocab_size",
        "throughput_batch", "format", "backend", "precision", "xla", "plain_export",
        "intra_op_threads", "inter_op_threads", "saved_model", "signature",
    )  # fmt: skip
    return {name: FLAGS[name].value for name in names}


def run(argv=None):
    """Console-script entry point (``re2-bench``)."""
    run_command(main, define_flags, program="re2-bench", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
