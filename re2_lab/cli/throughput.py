r"""Training throughput of every model under each ``--distribution`` on this machine, and the
ring all-reduce scaling model (a thin layer over :mod:`re2_lab.throughput`, which
describes the measurement and the model).

    python -m re2_lab.cli.throughput --data_dir=<SNLI learning-check dir> \
        --out=docs/runs/throughput --precisions=none,bf16

Measures what ``<out>/throughput.jsonl`` does not hold yet (one line per model, mode and
precision, appended as each finishes: a stopped command resumes), then writes and prints
``<out>/throughput.md``: the measured table (pairs/s, scaling efficiency) and the predicted
one (1-32 workers over 10 and 100 Gbit/s, CPU hosts like this one and one-GPU hosts), with
the CPU, its measured matmul rate and the commands. ``--measure=false`` only rewrites the
tables from the records.
"""

from __future__ import annotations

import json
from pathlib import Path

from absl import flags

from re2_tf.cli.common import run_command

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    from re2_lab.throughput import MODES
    from re2_tf.models.spec import model_names

    flags.DEFINE_list(
        "models",
        list(model_names()),
        "Models to measure (default: every registered one).",
        flag_values=flag_values,
    )
    flags.DEFINE_list(
        "modes", list(MODES), f"Modes to measure: {list(MODES)}.", flag_values=flag_values
    )
    flags.DEFINE_list(
        "precisions",
        ["none"],
        "--mixed_precision values to measure (other than none: in one process only).",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "data_dir",
        None,
        "Prepared SNLI learning-check directory (train.txt = the SNLI dev file).",
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "out", "docs/runs/throughput", "Directory of the records.", flag_values=flag_values
    )
    flags.DEFINE_integer("warmup", 3, "Updates not timed.", flag_values=flag_values)
    flags.DEFINE_integer("updates", 10, "Updates timed.", flag_values=flag_values)
    flags.DEFINE_bool(
        "measure",
        True,
        "Measure what is missing (else only write the tables).",
        flag_values=flag_values,
    )


def report(out, cpu_flops):
    """The Markdown report of ``<out>``'s records (written to ``<out>/throughput.md``)."""
    from re2_lab import throughput

    records = throughput.load_records(out)
    cpus = sorted(
        {
            f"{r['cpu']} ({r['cpu_count']} cores"
            + (f"; {', '.join(r['cpu_features'])}" if r.get("cpu_features") else "")
            + ")"
            for r in records
        }
    )
    text = "\n".join(
        [
            "# Training throughput",
            "",
            f"Measured on {', '.join(cpus)}; TensorFlow "
            f"{', '.join(sorted({r['tensorflow'] for r in records}))}; "
            f"{', '.join(sorted({r['date'][:10] for r in records}))}. Float32 matmul rate of "
            f"this CPU (2048 x 2048, TensorFlow's default threads): {cpu_flops / 1e9:.1f} GFLOP/s.",
            "",
            "## Measured (pairs/s; efficiency = pairs/s of n replicas / (n x 1 process))",
            "",
            throughput.efficiency_table(records),
            "",
            "## Predicted for n hosts (pairs/s (efficiency)), ring all-reduce",
            "",
            throughput.scaling_table(records, cpu_flops),
            "",
            "## Two workers: the prediction beside the loopback measurement",
            "",
            throughput.loopback_table(records),
            "",
        ]
    )
    (Path(out) / "throughput.md").write_text(text)
    return text


def main(argv):
    """Measure what is missing, then write and print the report."""
    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    from re2_lab import throughput

    out = Path(FLAGS.out)
    if FLAGS.measure:
        if not FLAGS.data_dir:
            raise flags.Error("--data_dir: needed to measure (or --measure=false)")
        throughput.measure(
            FLAGS.models,
            FLAGS.data_dir,
            out,
            modes=FLAGS.modes,
            precisions=FLAGS.precisions,
            warmup=FLAGS.warmup,
            updates=FLAGS.updates,
        )
    machine = out / "machine.json"
    if FLAGS.measure or not machine.exists():
        machine.parent.mkdir(parents=True, exist_ok=True)
        machine.write_text(
            json.dumps(
                {
                    "cpu": throughput.cpu_name(),
                    "cpu_features": throughput.cpu_features(),
                    "matmul_flops": throughput.matmul_flops(),
                },
                indent=1,
            )
            + "\n"
        )
    print(report(out, json.loads(machine.read_text())["matmul_flops"]))


def run(argv=None):
    """Entry point (``python -m re2_lab.cli.throughput``)."""
    run_command(main, define_flags, program="re2-throughput", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
