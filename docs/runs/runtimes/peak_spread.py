"""How far the runtimes command's measured peaks move on one CPU (issue 51; the resume rule of
``re2_lab.runtimes.report``): the command's peak measurement repeated many times in one
process, and how often the command's best-of-three would fall within
``re2_lab.runtimes.PEAK_TOLERANCE`` of each runtimes record made on a CPU of this name and
features.

One process, TensorFlow on the command's threads (2 intra-op, 1 inter-op). Each measurement is
``re2_lab.roofline.peaks``: per precision the median of 10 timed ``2048 x 2048`` matmuls, the
command's own measurement, with the steal time the kernel counted meanwhile (``/proc/stat``:
time the hypervisor ran something else on our virtual CPUs) and the 1-minute load average
after it. The command keeps the best of ``re2_lab.runtimes.PEAK_MEASUREMENTS`` measurements
(``re2_lab.runtimes.best_peaks``); here each run of that many consecutive measurements is such
a best, and for each record the count of those bests within the tolerance of the record's
peaks in every precision (``re2_lab.runtimes.peaks_apart``) is how many of the command's
attempts would continue it.

Writes ``peak_spread.json`` beside this file.

    PYTHONPATH=. python docs/runs/runtimes/peak_spread.py [--measurements=24]
"""

import datetime
import json
import os
import sys
import time
from pathlib import Path

from re2_lab import roofline
from re2_lab import runtimes as lab_runtimes
from re2_tf.machine import cpu_units, machine

HERE = Path(__file__).resolve().parent
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
MEASUREMENTS = int(ARGS.get("measurements", 24))


def steal_ticks():
    """The kernel's steal time over all CPUs, in clock ticks (``/proc/stat``'s 8th field)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def main():
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    units = cpu_units()
    here = machine()
    measured = []
    for i in range(MEASUREMENTS):
        steal, start = steal_ticks(), time.time()
        peaks = roofline.peaks(units)
        measured.append(
            {
                "peaks": peaks,
                "seconds": round(time.time() - start, 3),
                "steal_ticks": steal_ticks() - steal,
                "loadavg": os.getloadavg()[0],
            }
        )
        said = {k: f"{v / 1e9:,.0f}" for k, v in peaks.items() if v}
        print(f"measurement {i + 1}: {said} GFLOP/s", flush=True)
    n = lab_runtimes.PEAK_MEASUREMENTS
    bests = [
        lab_runtimes.best_peaks([m["peaks"] for m in measured[i : i + n]])
        for i in range(len(measured) - n + 1)
    ]
    records = {}
    for path in sorted(HERE.glob("runtimes*.json")):
        record = json.loads(path.read_text())
        if {k: record.get(k) for k in here} != here or not record.get("peaks"):
            continue
        records[path.name] = {
            "peaks": record["peaks"],
            "within": sum(not lab_runtimes.peaks_apart(record["peaks"], b) for b in bests),
        }
    out = {
        "command": "PYTHONPATH=. python docs/runs/runtimes/peak_spread.py "
        + " ".join(sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **here,
        "threads": [2, 1],
        "tolerance": lab_runtimes.PEAK_TOLERANCE,
        "best_of": n,
        "measurements": measured,
        "bests": bests,
        "records": records,
    }
    (HERE / "peak_spread.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, r in records.items():
        print(f"{name}: {r['within']} of {len(bests)} bests of {n} within the tolerance")


if __name__ == "__main__":
    main()
