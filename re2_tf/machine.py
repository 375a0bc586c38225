"""What a speed record says about the CPU it ran on: model name, the vector units that decide
float32, bfloat16 and int8 speed, and the core count (from ``/proc/cpuinfo`` on Linux).

Used by the training log's CPU line (:func:`re2_tf.fit`), the Table 5 benchmark and every
speed record, so that each figure names its machine.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

__all__ = [
    "VECTOR_FEATURES",
    "cpu_features",
    "cpu_name",
    "cpu_units",
    "describe_machine",
    "machine",
]


def cpu_name():
    """The CPU model from ``/proc/cpuinfo`` (``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


#: The ``/proc/cpuinfo`` flags that decide float32, bfloat16 and int8 speed (oneDNN's kernels).
VECTOR_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def cpu_features():
    """Which of :data:`VECTOR_FEATURES` the CPU has (list of str, in that order; empty where
    ``/proc/cpuinfo`` is unreadable). Two CPUs of one model name can differ here: on one
    without ``avx512_bf16`` or ``amx_bf16``, bfloat16 matmuls are emulated and slower than
    float32."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    return [f for f in VECTOR_FEATURES if f in flags]


def machine():
    """The fields every speed record carries about its CPU: ``{"cpu": cpu_name(),
    "cpu_features": cpu_features(), "cpu_count": os.cpu_count()}``."""
    return {"cpu": cpu_name(), "cpu_features": cpu_features(), "cpu_count": os.cpu_count()}


def describe_machine(record):
    """``"2 cores of AMD EPYC (avx2, avx512f), 2026-11-26"``: a speed record's CPU fields
    (:func:`machine`) and the day of its ``date``, for the tables generated from records."""
    features = ", ".join(record.get("cpu_features") or []) or "vector units unknown"
    text = f"{record.get('cpu_count') or '?'} cores of {record['cpu']} ({features})"
    return text + (f", {record['date'][:10]}" if record.get("date") else "")


def cpu_units(features=None):
    """``{"float32": True, "bfloat16": bool, "int8": bool}``: which precisions this CPU has
    matrix units for (bfloat16: ``avx512_bf16`` or ``amx_bf16``; int8: ``avx512_vnni`` or
    ``amx_int8``), from ``features`` (default: :func:`cpu_features`)."""
    features = set(cpu_features() if features is None else features)
    return {
        "float32": True,
        "bfloat16": bool(features & {"avx512_bf16", "amx_bf16"}),
        "int8": bool(features & {"avx512_vnni", "amx_int8"}),
    }
