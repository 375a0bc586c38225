"""The timing worker's memory figures are the serving process's own (issue 51, item 5).

On Linux ``getrusage(RUSAGE_SELF).ru_maxrss`` of a process started by another carries the
starting process's peak across ``exec``; ``VmHWM`` of ``/proc/self/status`` belongs to the new
address space. A parent that holds ~300 MiB starts a child that allocates ~50 MiB: the
child's reported peak (the worker's own function, loaded from its file) must be its own, while
``ru_maxrss`` in the same child (the reference that shows the bug) is at least the parent's.
"""

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from re2_tf import benchmarking

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="VmHWM and ru_maxrss's inheritance are Linux's"
)

PARENT_MIB, CHILD_MIB = 300, 50

# The child: load the timing worker by path (it is a script, never imported as re2_tf's),
# touch CHILD_MIB MiB, report the worker's figures and getrusage's.
CHILD = textwrap.dedent(
    f"""
    import importlib.util, json, resource, sys
    import numpy as np
    loader = importlib.util.spec_from_file_location("timing_worker", sys.argv[1])
    worker = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(worker)
    block = np.ones({CHILD_MIB} * 2**20, dtype=np.uint8)  # np.ones writes every page
    memory = worker.process_memory_mib()
    print(json.dumps({{"hwm": memory["hwm"], "rss": memory["rss"],
                      "ru_maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "touched": int(block.sum() // 2**20)}}))
    """
)

# The parent: hold PARENT_MIB MiB (touched), then start the child with subprocess (fork/vfork
# then exec, as re2_tf.benchmarking.run_worker starts the timing worker).
PARENT = textwrap.dedent(
    f"""
    import json, subprocess, sys
    import numpy as np
    block = np.ones({PARENT_MIB} * 2**20, dtype=np.uint8)
    hwm = [int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")]
    child = subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]],
                           capture_output=True, text=True, check=True)
    print(json.dumps({{"parent_hwm": hwm[0], "held": int(block.sum() // 2**20),
                      "child": json.loads(child.stdout)}}))
    """
)


def test_the_worker_reports_its_own_peak_not_its_parents():
    proc = subprocess.run(
        [sys.executable, "-c", PARENT, CHILD, str(benchmarking.WORKER)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    child = out["child"]
    assert out["held"] == PARENT_MIB and child["touched"] == CHILD_MIB
    # the parent's own peak: its 300 MiB plus an interpreter with NumPy (> 0)
    assert out["parent_hwm"] > PARENT_MIB
    # the child's peak is its own: its 50 MiB, plus an interpreter with NumPy (tens of MiB;
    # 150 is a generous ceiling), far below the parent's 300 MiB
    assert CHILD_MIB < child["hwm"] < CHILD_MIB + 150
    assert child["hwm"] < out["parent_hwm"] - 200
    assert 0 < child["rss"] <= child["hwm"]
    # the reference: getrusage in the same child reports the parent's peak (what the parent's
    # address space held when the child was started: at least the 300 MiB it touched, within
    # a page table's worth of its VmHWM) -- the number the worker used to record as the
    # serving process's memory
    assert child["ru_maxrss_mib"] >= PARENT_MIB
    assert child["ru_maxrss_mib"] > child["hwm"] + 200
    assert child["ru_maxrss_mib"] == pytest.approx(out["parent_hwm"], abs=2)


def test_without_proc_the_memory_is_unavailable_not_guessed(tmp_path):
    loader = importlib.util.spec_from_file_location("timing_worker", benchmarking.WORKER)
    worker = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(worker)
    assert worker.process_memory_mib(tmp_path / "no-such-status") == {"hwm": None, "rss": None}
    # a status file without the lines (a kernel without them): unavailable too
    (tmp_path / "status").write_text("Name:\tpython\nState:\tR (running)\n")
    assert worker.process_memory_mib(tmp_path / "status") == {"hwm": None, "rss": None}
    # the kernel's kB are KiB: 2048 kB is 2 MiB
    (tmp_path / "status").write_text("VmPeak:\t 9999 kB\nVmHWM:\t    3072 kB\nVmRSS:\t 2048 kB\n")
    assert worker.process_memory_mib(tmp_path / "status") == {"hwm": 3.0, "rss": 2.0}
