"""Why TensorFlow's oneDNN bfloat16 rewrite gives other labels than float32 in
``runtimes-amx.json`` (issue 51, item 1; ``docs/performance.md``, "On a CPU with AMX"):
the export at ``--before`` (the model function returns logits; the softmax runs after it)
against this checkout's (the model function returns the probabilities too, commit 5b44dfa).

For each benchmark variant and each source: the ``--xla=false`` export (random weights, as
``re2-bench``), its probabilities on the serving choice's 512 pairs
(``re2_lab.runtimes.choice_pairs``) in float32 and under the rewrite
(``Predictor(..., backend="savedmodel_noxla", precision="bf16")``), in a fresh process with
that source first on ``PYTHONPATH``. Per run: label agreement, max |dp|, how many bf16
probability rows have a tie for the first place (argmax then takes the first class), the
agreement on the rows without one, the share of probabilities that are bfloat16 numbers, and
from the rewrite's own log (``TF_CPP_VMODULE=auto_mixed_precision=2``) how many ``Softmax``
nodes it changed to bfloat16 and its "Converted ... nodes" lines. Writes
``bf16_rewrite_softmax.json`` beside this file (or ``--json_out``, a name beside it).

    python docs/runs/roofline/bf16_rewrite_softmax.py --before=5b44dfa^ [--variants="RE2 1 block"]
    python docs/runs/roofline/bf16_rewrite_softmax.py --before=<the fix>^ \
        --json_out=bf16_rewrite_softmax_fix.json
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
VARIANTS = {"RE2 1 block": "re2", "DRCN": "drcn", "FITN": "fitn", "Match-SRNN": "match_srnn"}


def child(model, variant, out):
    """In a fresh process: the export, both precisions' probabilities on the pairs."""
    import numpy as np

    import re2_tf
    from re2_lab.runtimes import choice_pairs
    from re2_tf import benchmarking
    from re2_tf.models import get_spec
    from re2_tf.serving.predictor import Predictor

    source = Path(os.environ["PYTHONPATH"]).resolve()
    if source not in Path(re2_tf.__file__).resolve().parents:
        raise SystemExit(f"re2_tf imported from {re2_tf.__file__}, not {source}")
    spec = get_spec(model)
    with tempfile.TemporaryDirectory() as tmp:
        path, _, featurizers = benchmarking.export_benchmark_model(
            spec, spec.benchmark[variant]["hparams"], Path(tmp) / "m", xla=False
        )
        pairs = choice_pairs(featurizers)
        texts1, texts2 = [a for a, _ in pairs], [b for _, b in pairs]
        found = {}
        for precision in ("f32", "bf16"):
            served = Predictor(
                path, tokenize="python", backend="savedmodel_noxla", precision=precision
            )
            found[precision] = served.probabilities(texts1, texts2)
        np.savez(out, **found)


def measure(source, model, variant):
    import numpy as np

    env = dict(os.environ, PYTHONPATH=str(source), TF_CPP_VMODULE="auto_mixed_precision=2")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "p.npz"
        done = subprocess.run(
            [sys.executable, __file__, "--child", model, variant, str(out)],
            env=env, cwd=source, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode:
            raise SystemExit(f"{variant} ({source}): child failed:\n{done.stderr[-3000:]}")
        found = np.load(out)
        p32, p16 = found["f32"].astype(np.float64), found["bf16"]
    top = np.sort(p16, -1)
    ties = top[:, -1] == top[:, -2]
    agree = p32.argmax(-1) == p16.argmax(-1)
    bits = p16.astype(np.float32).view(np.uint32)
    log = done.stderr
    return {
        "pairs": len(p32),
        "label_agreement": float(agree.mean()),
        "max_abs_dp": float(np.abs(p32 - p16).max()),
        "bf16_rows_with_a_tie_for_first": int(ties.sum()),
        "label_agreement_without_ties": float(agree[~ties].mean()) if (~ties).any() else None,
        "share_of_bf16_probabilities_that_are_bfloat16_numbers": float(
            ((bits & 0xFFFF) == 0).mean()
        ),
        "softmax_nodes_changed_to_bfloat16": len(
            re.findall(r"Changing type T of Softmax node \S+ to bfloat16", log)
        ),
        "rewrite_converted": re.findall(r"Converted \d+/\d+ nodes to bfloat16[^\n]*", log),
    }


def main():
    from re2_lab.revisions import checkout, commit
    from re2_lab.roofline import ab_record

    args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
    chosen = args["variants"].split(",") if "variants" in args else list(VARIANTS)
    after = commit(ROOT, short=True)
    before = commit(ROOT, args["before"], short=True)
    with tempfile.TemporaryDirectory() as tmp, checkout(args["before"], Path(tmp) / "b", ROOT) as b:
        record = ab_record(
            "docs/runs/roofline/bf16_rewrite_softmax.py", args, rounds=1, threads=0,
            before=before, after=after, variants={},
        )  # fmt: skip
        for variant in chosen:
            record["variants"][variant] = {}
            for name, source in ((f"before ({before})", b), (f"after ({after})", ROOT)):
                found = measure(source, VARIANTS[variant], variant)
                record["variants"][variant][name] = found
                print(variant, name, found, flush=True)
    (HERE / args.get("json_out", "bf16_rewrite_softmax.json")).write_text(
        json.dumps(record, indent=1) + "\n"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:5])
    else:
        main()
