"""The RE2 authors' PyTorch port timed with the Table 5 protocol, as a latency record beside
re2_tf's (``docs/runs/latency/*.json``, same format, so ``docs/re2.md``'s generated Table 5
table shows it as one more row).

The port (github.com/alibaba-edu/simple-effective-text-matching-pytorch, Apache-2.0) is not
part of re2_tf and is not copied here: pass its checkout with ``--port_dir``. Its ``Network``
is built with Table 5's settings (hidden 150, 300-d embeddings, 30,000 words, 3 encoder layers
of kernel 3, ``linear`` alignment, ``full`` fusion, ``aug`` connection, ``full`` prediction, 3
classes; 1, 2 and 3 blocks) and random weights, in evaluation mode under ``torch.no_grad`` as
its ``Model.predict`` runs it. Each variant is timed in a fresh process of ``--torch_python``
(an interpreter with PyTorch; re2_tf's own environment has none): ``--threads`` intra-op
threads and one inter-op, 10 warm-up batches, then the median of 100 batches of 8 pairs of
length 20 (random word ids, no padding). A timed batch is what ``Model.predict`` does after
reading: the masks (``ids != 0``), the network and the softmax.

Run from the repository root, on a quiet machine (the command is written into the record):

    python docs/runs/latency/pytorch_port.py --port_dir=<checkout> \\
        --torch_python=<python with torch> --json_out=docs/runs/latency/re2-pytorch-port.json
"""

import argparse
import datetime
import json
import subprocess
import sys

from re2_lab.throughput import machine

#: Runs in the PyTorch interpreter: argv = port_dir blocks threads batches warmup.
TIMER = r"""
import json, statistics, sys, time, types
import numpy as np
import torch
port_dir, blocks, threads, batches, warmup = sys.argv[1], *map(int, sys.argv[2:])
sys.path.insert(0, port_dir)
from src.network import Network
torch.set_num_threads(threads)
torch.set_num_interop_threads(1)
torch.manual_seed(0)
args = types.SimpleNamespace(
    num_vocab=30000, embedding_dim=300, fix_embeddings=True, dropout=0.2, hidden_size=150,
    blocks=blocks, encoder="cnn", enc_layers=3, kernel_sizes=[3], alignment="linear",
    fusion="full", connection="aug", prediction="full", num_classes=3, padding=0,
)
network = Network(args).eval()
params = sum(p.numel() for n, p in network.named_parameters() if not n.startswith("embedding."))
rng = np.random.default_rng(0)
n = 2 * (batches + warmup)
ids = [torch.from_numpy(rng.integers(1, 30000, size=(8, 20))) for _ in range(n)]
times = []
with torch.no_grad():
    for i in range(batches + warmup):
        text1, text2 = ids[2 * i], ids[2 * i + 1]
        start = time.perf_counter()
        mask1, mask2 = torch.ne(text1, 0).unsqueeze(2), torch.ne(text2, 0).unsqueeze(2)
        inputs = {"text1": text1, "text2": text2, "mask1": mask1, "mask2": mask2}
        probabilities = torch.softmax(network(inputs), dim=1)
        times.append(time.perf_counter() - start)
times = times[warmup:]
print(json.dumps({
    "median_ms": 1000 * statistics.median(times), "mean_s": statistics.mean(times),
    "std_s": statistics.stdev(times), "p99_ms": 1000 * float(np.percentile(times, 99)),
    "params": params, "torch": torch.__version__.split("+")[0],
    "finite": bool(torch.isfinite(probabilities).all()),
}))
"""

PAPER = {1: 0.03, 2: 0.04, 3: 0.05}  # the paper's Table 5 (s per batch; Core i7, TF1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port_dir", required=True)
    parser.add_argument("--torch_python", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--json_out", required=True)
    flags = parser.parse_args()
    rows = []
    for blocks in (1, 2, 3):
        out = subprocess.run(
            [flags.torch_python, "-c", TIMER, flags.port_dir, str(blocks), str(flags.threads),
             str(flags.batches), str(flags.warmup)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        row = json.loads(out.strip().splitlines()[-1])
        assert row.pop("finite"), "the port's probabilities are not finite"
        torch_version = row.pop("torch")
        name = "block" if blocks == 1 else "blocks"
        row.update(
            model=f"RE2 {blocks} {name} (authors' PyTorch port, torch {torch_version}, fp32)",
            paper=PAPER[blocks],
        )
        rows.append(row)
        print(f"{row['model']}: {row['median_ms']:.1f} ms, {row['params']:,} parameters")
    record = {
        "command": "python docs/runs/latency/pytorch_port.py --port_dir=<checkout> "
        f"--torch_python=<python with torch> --threads={flags.threads} "
        f"--json_out={flags.json_out}",
        "settings": {
            "batch": 8,
            "length": 20,
            "batches": flags.batches,
            "warmup": flags.warmup,
            "vocab_size": 30000,
            "intra_op_threads": flags.threads,
            "inter_op_threads": 1,
        },  # fmt: skip
        **machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "rows": rows,
    }
    with open(flags.json_out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
