"""Whether XLA's CPU compiler runs a bfloat16 matrix product on bfloat16 units, under each
``XLA_FLAGS`` setting that hands products to another kernel library (issue 51, item 2: why
the default export, XLA-compiled, cannot reach the AMX units).

One product ``C = A B`` (``tf.matmul`` of two tensors of one dtype) per shape of
:data:`SHAPES` — a square 2048 product and RE2 1 block's largest product at each Table 5
shape, read from ``product_kernels.json`` — in float32 and in bfloat16, compiled by XLA
(``tf.function(jit_compile=True)``) in a fresh process per setting of :data:`SETTINGS`
(``product_kernels.XLA_SETTINGS`` and two more), and run without XLA as well
(``tensorflow``: oneDNN's ``_MklMatMul``, which does use the units). For each XLA setting the
record keeps the optimised HLO's product instruction (``stage="optimized_hlo"``: its opcode,
fusion kind or custom-call target, and its operands' element types, so a bfloat16 product
computed in float32 shows as ``f32`` operands) and, for every path, the median time of the
calls (at least 10, and at least 1 s of them, after 3 untimed), 2 intra-op threads; rounds
take the settings in turn. Writes ``xla_bf16_dots.json`` beside this file and prints a table.

    python docs/runs/roofline/xla_bf16_dots.py [--rounds=3]
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from product_kernels import XLA_SETTINGS  # noqa: E402

ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
ROUNDS = int(ARGS.get("rounds", 3))
#: The settings: ``XLA_FLAGS`` of each XLA path, ``None`` for TensorFlow without XLA.
SETTINGS = {
    **XLA_SETTINGS,
    "xla onednn custom call": (
        "--xla_cpu_use_onednn=true --xla_cpu_experimental_onednn_custom_call=true"
    ),
    "xla xnnpack": "--xla_cpu_use_xnnpack=true",
    "tensorflow": None,
}
DTYPES = ("float32", "bfloat16")


def shapes():
    """``{name: [m, k, n]}``: 2048 square and RE2 1 block's largest product at each batch of
    ``product_kernels.json`` (batch 1 products: its rows are the batch's positions)."""
    record = json.loads(Path(__file__).with_name("product_kernels.json").read_text())
    found = {"2048 square": [2048, 2048, 2048]}
    for batch, entry in record["batches"].items():
        largest = max(entry["products"], key=lambda p: p["shape"][0] * p["shape"][1] *
                      p["shape"][2] * p["shape"][3])  # fmt: skip
        b, m, k, n = largest["shape"]
        assert b == 1, largest
        found[f"RE2 1 block's largest at {batch} x 20"] = [m, k, n]
    return found


def product_instruction(hlo):
    """The product of an optimised HLO module's entry computation
    (:func:`re2_lab.roofline.parse_hlo`): ``{"op", "kind", "operand_types", "result_type"}``
    — a ``dot``, a ``custom-call`` (its target as ``kind``) or a ``kCustom`` fusion (its
    ``fusion_config`` kind); element types as HLO writes them (``f32``, ``bf16``)."""
    from re2_lab.roofline import parse_hlo

    module = parse_hlo(hlo)
    entry = module.computations[module.entry]
    types = {inst.name: inst.type.split("[")[0] for inst in entry}
    found = None
    for inst in entry:
        kind = None
        if inst.op == "fusion" and "kind=kCustom" in inst.text:
            kind = re.search(r'"kind":"([^"]+)"', inst.text).group(1)
        elif inst.op == "custom-call":
            kind = re.search(r'custom_call_target="([^"]+)"', inst.text).group(1)
        if inst.op == "dot" or kind is not None:
            operands = re.findall(r"%([\w.\-]+)", inst.text.split(")", 1)[0])
            found = {
                "op": inst.op, "kind": kind, "result_type": types[inst.name],
                "operand_types": [types[name] for name in operands],
            }  # fmt: skip
    if found is None:
        raise ValueError("no product in the entry computation")
    return found


def worker(setting):
    """Time every shape and dtype in this process; print ``{"<shape>|<dtype>": {"ms",
    "product"}}`` (``product`` for XLA only)."""
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    xla = SETTINGS[setting] is not None
    rng = np.random.default_rng(0)
    out = {}
    for name, (m, k, n) in shapes().items():
        for dtype in DTYPES:
            a = tf.constant(rng.standard_normal((m, k)), getattr(tf, dtype))
            b = tf.constant(rng.standard_normal((k, n)), getattr(tf, dtype))
            product = tf.function(lambda a, b: tf.matmul(a, b), jit_compile=xla)
            entry = {}
            if xla:
                hlo = product.experimental_get_compiler_ir(a, b)(stage="optimized_hlo")
                entry["product"] = product_instruction(hlo)
            for _ in range(3):
                product(a, b).numpy()
            times, started = [], time.perf_counter()
            while len(times) < 10 or time.perf_counter() - started < 1.0:
                start = time.perf_counter()
                product(a, b).numpy()
                times.append(time.perf_counter() - start)
            entry["ms"] = statistics.median(times) * 1e3
            entry["calls"] = len(times)
            out[f"{name}|{dtype}"] = entry
    print(json.dumps(out))


def main():
    from re2_lab.roofline import ab_record

    record = ab_record("docs/runs/roofline/xla_bf16_dots.py", ARGS, ROUNDS)
    record["settings"] = SETTINGS
    record["shapes"] = shapes()
    record["results"] = {name: {} for name in SETTINGS}
    for round_ in range(ROUNDS):
        for name, flags in SETTINGS.items():
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", XLA_FLAGS=flags or "")
            proc = subprocess.run(
                [sys.executable, __file__, f"--worker={name}"],
                capture_output=True, text=True, env=env, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"{name} failed:\n{proc.stderr[-2000:]}")
            for key, entry in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                cell = record["results"][name].setdefault(key, {"ms": []})
                cell["ms"].append(entry["ms"])
                if "product" in entry:
                    if cell.setdefault("product", entry["product"]) != entry["product"]:
                        raise RuntimeError(f"{name} {key}: the product changed between rounds")
            print(f"round {round_ + 1} {name} done", flush=True)
    for name, cells in record["results"].items():
        for key, cell in cells.items():
            m, k, n = record["shapes"][key.split("|")[0]]
            ms = statistics.median(cell["ms"])
            product = cell.get("product", {})
            print(
                f"| {name} | {key} | {ms:.3f} ms | {2 * m * k * n / ms / 1e6:.0f} GFLOP/s | "
                f"{product.get('op', '—')} {product.get('kind') or ''} "
                f"{product.get('operand_types', '')} |"
            )
    out = Path(__file__).with_name("xla_bf16_dots.json")
    out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    if "worker" in ARGS:
        worker(ARGS["worker"])
    else:
        main()
