r"""CPU latency benchmark with the protocol of RE2's Table 5.

Table 5 (paper §3.4): a batch of 8 pairs, both texts of length 20, seconds per batch, RE2 with
1/2/3 blocks (3 encoder layers, hidden 150, 300-d embeddings); the paper reports 0.03 /
0.04 / 0.05 s on its CPU. Here every model is **exported** (``re2_tf.export``) and timed
through the exported artefact loaded in a **fresh process** (``serving/timing_worker.py``,
which never imports ``re2_tf``): first call (XLA compilation), ``--warmup`` untimed batches,
then ``--batches`` timed batches -> mean ± std s/batch, median and p99 ms, plus throughput at
batch ``--throughput_batch``.

Usage::

    # Table 5: RE2 1/2/3 blocks, random weights, vocabulary 30,000
    python -m re2_tf.benchmark --intra_op_threads=2 --inter_op_threads=1
    python -m re2_tf.benchmark --format=tflite --precision=int8

    # any exported SavedModel signature (model-agnostic)
    python -m re2_tf.benchmark --saved_model=exports/snli --signature=serving_ids \
        --input_spec='{"text1": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 1000},
                       "text2": {"dtype": "int32", "shape": [8, 20], "low": 2, "high": 1000}}'
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from absl import app, flags

WORKER = Path(__file__).resolve().parent / "serving" / "timing_worker.py"
PAPER_SECONDS = {1: 0.03, 2: 0.04, 3: 0.05}
TABLE5_MODEL = dict(embedding_dim=300, enc_layers=3, hidden_size=150)


def time_export(path, signature, input_spec, *, batches=100, warmup=10, intra_op_threads=0,
                inter_op_threads=0, throughput_batch=0, throughput_batches=5, seed=0,
                timeout=1800):
    """Time an exported model in a fresh Python subprocess.

    Args:
        path: SavedModel directory or ``.tflite`` file.
        signature: signature name.
        input_spec: ``{input name: {"dtype", "shape", "low", "high" | "words"}}`` (see
            ``serving/timing_worker.py``); the first input's ``shape[0]`` is the batch.
        batches, warmup: timed / untimed batches (after the first call).
        intra_op_threads, inter_op_threads: thread pools (0 = default; TFLite uses intra).
        throughput_batch: if > 0, also measure pairs/s at this batch size.

    Returns:
        dict with ``first_call_s``, ``mean_s``, ``std_s``, ``median_ms``, ``p99_ms``,
        ``throughput_pairs_per_s``, ``interpreter``, ``times_s``.

    Raises:
        RuntimeError: with the worker's stderr tail if it fails.
    """
    request = dict(path=os.fspath(path), signature=signature, inputs=input_spec,
                   batches=int(batches), warmup=int(warmup), intra_op_threads=intra_op_threads,
                   inter_op_threads=inter_op_threads, throughput_batch=throughput_batch,
                   throughput_batches=throughput_batches, seed=seed)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, str(WORKER), json.dumps(request)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"timing worker failed on {path}:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    times = np.asarray(result["times_s"])
    result.update(mean_s=float(times.mean()), std_s=float(times.std()),
                  median_ms=float(np.median(times) * 1e3),
                  p99_ms=float(np.percentile(times, 99) * 1e3))
    return result


def ids_spec(batch, length, vocab_size):
    """Input spec of ``serving_ids``: two int32 ``[batch, length]`` tensors of real ids."""
    one = {"dtype": "int32", "shape": [batch, length], "low": 2, "high": int(vocab_size)}
    return {"text1": dict(one), "text2": dict(one)}


def export_table5_model(blocks, export_dir, *, vocab_size=30000, num_classes=3, fmt="savedmodel",
                        precision="fp32", xla=True, seed=0):
    """Build RE2 with Table 5's settings and random weights, export it; return (path, params)."""
    import keras

    from re2_tf.export import TFLITE_FILE, export_model
    from re2_tf.models import build_re2, count_parameters

    keras.utils.set_random_seed(seed)
    model = build_re2(vocab_size, num_classes, blocks=blocks, **TABLE5_MODEL)
    tokens = ["<PAD>", "<UNK>"] + [f"w{i}" for i in range(2, vocab_size)]
    export_model(model, export_dir, vocab_tokens=tokens, label_names=[str(i) for i in
                 range(num_classes)], fmt=fmt, precision=precision, xla=xla)
    path = Path(export_dir) / TFLITE_FILE if fmt == "tflite" else Path(export_dir)
    return path, count_parameters(model)


def markdown_table(rows, batch, length, throughput_batch):
    """Rows of ``{"model", "params", **time_export result}`` -> Markdown table string."""
    lines = [
        f"| model | params (w/o emb.) | mean ± std s/batch ({batch}×{length}) | median ms | "
        f"p99 ms | first call s | pairs/s @ batch {throughput_batch} | paper s/batch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        tput = r.get("throughput_pairs_per_s")
        lines.append(
            f"| {r['model']} | {'—' if r['params'] is None else format(r['params'], ',')} | {r['mean_s']:.4f} ± {r['std_s']:.4f} | "
            f"{r['median_ms']:.1f} | {r['p99_ms']:.1f} | {r['first_call_s']:.2f} | "
            f"{'—' if not tput else f'{tput:,.0f}'} | {r.get('paper', '—')} |")
    return "\n".join(lines)


def run_table5(blocks=(1, 2, 3), *, batch=8, length=20, batches=100, warmup=10,
               vocab_size=30000, fmt="savedmodel", precision="fp32", xla=True,
               intra_op_threads=0, inter_op_threads=0, throughput_batch=512, workdir=None):
    """Export RE2 with each block count and time it; return (rows, markdown)."""
    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for n in blocks:
            path, params = export_table5_model(n, Path(tmp) / f"re2_{n}", vocab_size=vocab_size,
                                               fmt=fmt, precision=precision, xla=xla)
            result = time_export(path, "serving_ids", ids_spec(batch, length, vocab_size),
                                 batches=batches, warmup=warmup,
                                 intra_op_threads=intra_op_threads,
                                 inter_op_threads=inter_op_threads,
                                 throughput_batch=throughput_batch)
            result.update(model=f"RE2 {n} block{'s' * (n > 1)} ({fmt}, {precision}"
                          f"{', XLA' if xla and fmt == 'savedmodel' else ''})",
                          params=params, paper=PAPER_SECONDS.get(n, "—"))
            rows.append(result)
    return rows, markdown_table(rows, batch, length, throughput_batch)


FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_list("blocks", ["1", "2", "3"], "RE2 block counts (Table 5 driver).")
    flags.DEFINE_integer("batch", 8, "Pairs per timed batch.")
    flags.DEFINE_integer("length", 20, "Tokens per text.")
    flags.DEFINE_integer("batches", 100, "Timed batches.")
    flags.DEFINE_integer("warmup", 10, "Untimed batches after the first call.")
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size of the random models.")
    flags.DEFINE_integer("throughput_batch", 512, "Batch size for throughput (0 = skip).")
    flags.DEFINE_enum("format", "savedmodel", ["savedmodel", "tflite"], "Export format.")
    flags.DEFINE_enum("precision", "fp32", ["fp32", "bf16", "int8"], "Export precision.")
    flags.DEFINE_bool("xla", True, "Export with jit_compile (SavedModel only).")
    flags.DEFINE_integer("intra_op_threads", 0, "Intra-op threads (0 = default).")
    flags.DEFINE_integer("inter_op_threads", 0, "Inter-op threads (0 = default).")
    flags.DEFINE_string("saved_model", None, "Time this export instead of the Table 5 models.")
    flags.DEFINE_string("signature", "serving_ids", "Signature to time (with --saved_model).")
    flags.DEFINE_string("input_spec", None, "JSON input spec (with --saved_model); default: "
                        "int32 ids [batch, length] for text1/text2 below --vocab_size.")
    flags.DEFINE_string("json_out", None, "Also write the rows as JSON here.")


def main(argv):
    del argv
    threads = dict(intra_op_threads=FLAGS.intra_op_threads,
                   inter_op_threads=FLAGS.inter_op_threads)
    if FLAGS.saved_model:
        spec = (json.loads(FLAGS.input_spec) if FLAGS.input_spec
                else ids_spec(FLAGS.batch, FLAGS.length, FLAGS.vocab_size))
        result = time_export(FLAGS.saved_model, FLAGS.signature, spec, batches=FLAGS.batches,
                             warmup=FLAGS.warmup, throughput_batch=FLAGS.throughput_batch,
                             **threads)
        result.update(model=FLAGS.saved_model, params=None)  # unknown for an arbitrary export
        rows, table = [result], markdown_table([result], FLAGS.batch, FLAGS.length,
                                               FLAGS.throughput_batch)
    else:
        rows, table = run_table5(
            [int(b) for b in FLAGS.blocks], batch=FLAGS.batch, length=FLAGS.length,
            batches=FLAGS.batches, warmup=FLAGS.warmup, vocab_size=FLAGS.vocab_size,
            fmt=FLAGS.format, precision=FLAGS.precision, xla=FLAGS.xla,
            throughput_batch=FLAGS.throughput_batch, **threads)
        for r in rows:
            print(f"{r['model']}: {r['params']:,} parameters outside the embedding")
    print(table)
    if FLAGS.json_out:
        Path(FLAGS.json_out).write_text(json.dumps(
            [{k: v for k, v in r.items() if k != "times_s"} for r in rows], indent=2))


if __name__ == "__main__":
    define_flags()
    app.run(main)
