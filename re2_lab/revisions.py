"""The lab's A/B records of serving paths (``docs/runs/roofline/``): paths of one network
exported by this checkout (:func:`paths_ab`: ``call_timeline.py``, ``eigen_threads_ab.py``,
``spin_ab.py``, ``intra_threads_ab.py``), and another revision of this repository beside the
current checkout, for the records that build one side at a git revision
(``docs/runs/roofline/spatial_gru_ab.py``, ``docs/runs/roofline/compiled_outputs_ab.py``,
``docs/runs/roofline/conv_products_ab.py``, ``docs/runs/training-profile/bilstm_ab.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["checkout", "commit", "export_ab", "export_ab_main", "paths_ab", "paths_ab_main"]

#: The shapes of :func:`export_ab`: ``(batch, length, timed batches)``.
AB_SHAPES = ((8, 20, 100), (512, 20, 5))

#: Run in the checkout being measured (its own ``re2_tf``): export a benchmark variant, XLA
#: and not, and convert the latter for ONNX Runtime and, given a further argument
#: ``openvino``, for OpenVINO too (as the serving choice converts); given ``bf16``, also
#: export it in bfloat16 without XLA (``bf16_noxla``), given ``bf16xla`` in bfloat16 with XLA
#: (``bf16_xla``). Prints ``<backend> <path>`` of each
#: converted file, one a line.
EXPORT = r"""
import sys
from pathlib import Path
from re2_tf import benchmarking
from re2_tf.models import get_spec
from re2_tf.serving import runtimes
out, model, variant = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
spec = get_spec(model)
hparams = spec.benchmark[variant]["hparams"]
benchmarking.export_benchmark_model(spec, hparams, out / "xla")
benchmarking.export_benchmark_model(spec, hparams, out / "noxla", xla=False)
if "bf16" in sys.argv[4:]:
    benchmarking.export_benchmark_model(
        spec, hparams, out / "bf16_noxla", xla=False, precision="bf16"
    )
if "bf16xla" in sys.argv[4:]:
    benchmarking.export_benchmark_model(spec, hparams, out / "bf16_xla", precision="bf16")
for backend in ["onnxruntime"] + [a for a in sys.argv[4:] if a not in ("bf16", "bf16xla")]:
    print(backend, runtimes.convert(out / "noxla", backend, out / backend))
"""


def commit(repo, revision=None, *, short=False):
    """The commit an A/B record names for one side.

    Args:
        repo: the git repository's directory.
        revision: a revision (``git rev-parse`` takes it); ``None``: the working checkout,
            its ``HEAD`` with `` + working tree`` appended when ``re2_tf`` has changes not
            committed (the side measured is then not the commit alone).
        short: the abbreviated hash (``git rev-parse --short``).

    Returns:
        str.

    Raises:
        subprocess.CalledProcessError: git failed (an unknown revision).
    """

    def git(*command):
        return subprocess.check_output(["git", *command], cwd=repo, text=True).strip()

    name = git("rev-parse", *(["--short"] if short else []), revision or "HEAD")
    if revision is None and git("status", "--porcelain", "re2_tf"):
        name += " + working tree"
    return name


@contextlib.contextmanager
def checkout(revision, where, repo):
    """Check ``revision`` of the git repository ``repo`` out into a detached worktree at
    ``where`` for the ``with`` block, and remove the worktree after it, whatever happens in
    the block.

    Args:
        revision: anything ``git worktree add`` takes (a commit, a branch, a tag).
        where: the worktree's directory (must not exist yet).
        repo: a directory inside the repository.

    Yields:
        ``Path`` of the worktree.

    Raises:
        subprocess.CalledProcessError: ``git worktree add`` failed (an unknown revision), with
        git's stderr.
    """
    where = Path(where)
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(where), revision],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    try:
        yield where
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(where)], cwd=repo, capture_output=True
        )


def _exports(source, out, model, variant, openvino=(), bf16=False, bf16_xla=False):
    """``{path name suffix: (path, OpenVINO precision or None)}`` of the exports of
    ``model``'s benchmark ``variant`` made by the checkout ``source`` (:data:`EXPORT`), with
    an ``openvino <precision>`` path per precision in ``openvino``, with ``bf16`` a
    ``bf16 xla=False`` path and with ``bf16_xla`` a ``bf16 XLA`` path."""
    proc = subprocess.run(
        [sys.executable, "-c", EXPORT, str(out), model, variant]
        + (["openvino"] if openvino else []) + (["bf16"] if bf16 else [])
        + (["bf16xla"] if bf16_xla else []),
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(source)),
        cwd=source, timeout=3600,
    )  # fmt: skip
    if proc.returncode:
        raise RuntimeError(f"{source} {variant}: {proc.stderr[-3000:]}")
    converted = dict(
        line.split(" ", 1)
        for line in proc.stdout.splitlines()
        if line.startswith(("onnxruntime ", "openvino "))
    )
    paths = {"XLA": (out / "xla", None), "xla=False": (out / "noxla", None),
             "onnxruntime": (Path(converted["onnxruntime"]), None)}  # fmt: skip
    if bf16:
        paths["bf16 xla=False"] = (out / "bf16_noxla", None)
    if bf16_xla:
        paths["bf16 XLA"] = (out / "bf16_xla", None)
    for precision in openvino:
        paths[f"openvino {precision}"] = (Path(converted["openvino"]), precision)
    return paths


def saved_model_sizes(path):
    """``{"saved_model.pb": bytes, "variables": bytes}``: the size on disk of the SavedModel
    at ``path``'s graph file and of every file under its ``variables/``."""
    path = Path(path)
    return {
        "saved_model.pb": (path / "saved_model.pb").stat().st_size,
        "variables": sum(f.stat().st_size for f in (path / "variables").rglob("*") if f.is_file()),
    }


def paired_sides(sides):
    """``{"<side> <name>": path}`` from ``{side: {name: path}}``, each name's sides next to
    each other (``before X``, ``after X``, ``before Y``, ...; a name one side lacks in its
    place), so that timing the paths in turn (:func:`re2_lab.roofline.alternate_paths`) times
    a path's two sides back to back and a slow spell of the CPU falls on both alike."""
    names = list(dict.fromkeys(name for paths in sides.values() for name in paths))
    return {
        f"{side} {name}": paths[name]
        for name in names
        for side, paths in sides.items()
        if name in paths
    }


def _measure(
    record, variant, paths, featurizers, shapes, rounds, work, *, reference,
    environments=None, requests=None, unscored=(),
):  # fmt: skip
    """One variant of an A/B into ``record``: its ``paths`` timed alternately
    (:func:`re2_lab.roofline.alternate_paths`), their probabilities against ``reference``'s
    (:func:`re2_lab.roofline.ab_agreement`, leaving out the ``unscored`` names), the
    SavedModels profiled (:func:`re2_lab.roofline.ab_profiles`); ``environments`` and
    ``requests`` as :func:`paths_ab`'s. Returns the medians (``record["variants"][variant]``)."""
    from re2_lab.roofline import ab_agreement, ab_profiles, alternate_paths

    medians, outputs = alternate_paths(
        paths, featurizers, shapes, rounds, work, outputs=True,
        environments=environments, requests=requests,
    )  # fmt: skip
    outputs = {key: p for key, p in outputs.items() if key[0] not in unscored}
    record["variants"][variant] = medians
    record["agreement"][variant] = ab_agreement(outputs, reference)
    record["profiles"][variant] = ab_profiles(
        paths, featurizers, shapes, work, environments=environments, requests=requests
    )
    return medians


def export_ab(
    script, args, variants, *, before, rounds, repo, shapes=AB_SHAPES, openvino=False,
    bf16=False, bf16_xla=False, keep=None, out=None,
):  # fmt: skip
    """A change to the library timed against the revision ``before`` it: each benchmark
    variant (random weights) exported by ``before`` (checked out with :func:`checkout`) and
    by the checkout ``repo``, each as the default export (XLA), ``--xla=false`` and ONNX
    Runtime converted from the latter (and, with ``openvino``, OpenVINO converted from it
    too, in float32 and, where the CPU has bfloat16 units, bfloat16); timed alternately in
    fresh processes on the same batches (:func:`re2_lab.roofline.alternate_paths`, 2 intra-op
    threads, median of each process's batches); every path's probabilities against the
    "before" default export's (:func:`re2_lab.roofline.ab_agreement`); each SavedModel
    profiled once per shape (:func:`re2_lab.roofline.ab_profiles`).

    Args:
        script: the record's script, relative to the repository; args: its ``--key=value``
            arguments (the record's command).
        variants: ``[(model name, benchmark variant)]``, e.g. ``[("re2", "RE2 1 block")]``.
        before: a git revision; rounds: timing rounds.
        repo: the repository's directory (the "after" side is its working tree).
        shapes: ``[(batch, length, timed batches)]``.
        openvino: add the OpenVINO paths.
        bf16: add each side's bfloat16 export without XLA (``bf16 xla=False``).
        bf16_xla: add each side's bfloat16 export with XLA (``bf16 XLA``).
        keep: the path names to time on each side (``XLA``, ``xla=False``, ``onnxruntime``,
            ``bf16 xla=False``, ``bf16 XLA``, ``openvino f32``, ``openvino bf16``); all by
            default.
            ``XLA``, the agreement's reference, is always timed.
        out: a JSON file the record is written to after each variant (a killed run keeps
            the variants it finished).

    Returns:
        The record (:func:`re2_lab.roofline.ab_record`): ``before``/``after`` commits,
        ``variants`` (``{variant: {"before XLA": [ms per round], ...}}``), ``agreement``,
        ``profiles`` and ``sizes`` (each SavedModel path's :func:`saved_model_sizes`) per
        variant.
    """
    # lazy: TensorFlow (through these) only for an A/B, not for checkout()'s callers
    from re2_lab.roofline import ab_record
    from re2_tf import benchmarking
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    precisions = (("f32", "bf16") if runtimes.cpu_has_bf16() else ("f32",)) if openvino else ()

    record = ab_record(
        script, args, rounds,
        before=commit(repo, before),
        after=commit(repo),
        variants={}, agreement={}, profiles={}, sizes={},
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with checkout(before, tmp / "before_checkout", repo) as old:
            for model, variant in variants:
                spec = get_spec(model)
                hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
                featurizers = benchmarking.synthetic_featurizers(spec, hparams, 30000)
                work = tmp / variant.replace(" ", "_")
                paths = paired_sides(
                    {
                        side: {
                            name: path
                            for name, path in _exports(
                                source,
                                work / side,
                                model,
                                variant,
                                precisions,
                                bf16,
                                bf16_xla,
                            ).items()
                            if keep is None or name in {"XLA", *keep}
                        }
                        for side, source in (("before", old), ("after", Path(repo)))
                    }
                )
                record["sizes"][variant] = {
                    name: saved_model_sizes(path)
                    for name, (path, _) in paths.items()
                    if (Path(path) / "saved_model.pb").is_file()
                }
                medians = _measure(
                    record, variant, paths, featurizers, shapes, rounds, work,
                    reference="before XLA",
                )  # fmt: skip
                if out is not None:
                    Path(out).write_text(json.dumps(record, indent=1) + "\n")
                print(f"| {variant} | " + " | ".join(
                    f"{key} {statistics.median(v):.2f} ms" for key, v in medians.items()
                ) + " |", flush=True)  # fmt: skip
    return record


def paths_ab(
    script, args, variants, paths, *, rounds, out, reference, shapes=AB_SHAPES,
    environments=None, requests=None, unscored=(), bf16=False, bf16_xla=False, **fields,
):  # fmt: skip
    """Serving paths of each benchmark variant (random weights), all exported by this
    checkout: the default export (XLA) and ``--xla=false`` (with ``bf16``, also
    ``--xla=false --precision=bf16``, as ``work / "bf16"``; with ``bf16_xla``,
    ``--precision=bf16``, as ``work / "bf16_xla"``), ONNX Runtime converted from the
    ``--xla=false`` export, and what ``paths`` makes of them; timed alternately in fresh
    processes on the same batches (:func:`re2_lab.roofline.alternate_paths`, 2 intra-op
    threads unless ``requests`` say otherwise); every path's
    probabilities against ``reference``'s (:func:`re2_lab.roofline.ab_agreement`); each
    SavedModel profiled once per shape (:func:`re2_lab.roofline.ab_profiles`). The record is
    written to ``out`` after each variant, so a killed run keeps the variants it finished.

    Args:
        script: the record's script, relative to the repository; args: its ``--key=value``
            arguments (the record's command).
        variants: ``[(model name, benchmark variant)]``, e.g. ``[("re2", "RE2 1 block")]``.
        paths: ``paths(xla, plain, onnx, work) -> {name: (path, OpenVINO precision or None)}``,
            from the default export's directory, the ``--xla=false`` one's, the ONNX model's
            file and a scratch directory for more.
        rounds: timing rounds; out: the record's JSON file; reference: the path the others
            are compared with; shapes: ``[(batch, length, timed batches)]``.
        environments: ``{name: {variable: value}}`` a path's processes get (timing and
            profile); recorded as ``environment``.
        requests: ``{name: {key: value}}`` more request keys of a path's timing processes
            (:func:`re2_lab.roofline.alternate_paths`; ``intra_op_threads`` for its profile
            too); recorded as ``request``.
        bf16: also export the bfloat16 SavedModel without XLA (``work / "bf16"``).
        bf16_xla: also export the bfloat16 SavedModel with XLA (``work / "bf16_xla"``).
        unscored: names of paths left out of the agreement (outputs that mean nothing).
        fields: more keys of the record, before ``variants``.

    Returns:
        The record (:func:`re2_lab.roofline.ab_record`), with ``variants`` (``{variant:
        {"<name>@<batch>": [ms per round]}}``), ``agreement`` and ``profiles`` per variant.
    """
    # lazy: TensorFlow (through these) only for an A/B, not for checkout()'s callers
    from re2_lab.roofline import ab_record
    from re2_tf import benchmarking
    from re2_tf.models import get_spec
    from re2_tf.serving import runtimes

    if environments:
        fields["environment"] = environments
    if requests:
        fields["request"] = requests
    record = ab_record(
        script, args, rounds, **fields, variants={}, agreement={}, profiles={}
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for model, variant in variants:
            spec = get_spec(model)
            hparams = dict(spec.defaults(), **spec.benchmark[variant]["hparams"])
            work = Path(tmp) / variant.replace(" ", "_")
            xla, _, featurizers = benchmarking.export_benchmark_model(spec, hparams, work / "xla")
            plain, _, _ = benchmarking.export_benchmark_model(
                spec, hparams, work / "noxla", xla=False
            )
            if bf16:
                benchmarking.export_benchmark_model(
                    spec, hparams, work / "bf16", xla=False, precision="bf16"
                )
            if bf16_xla:
                benchmarking.export_benchmark_model(
                    spec, hparams, work / "bf16_xla", precision="bf16"
                )
            onnx = runtimes.convert(plain, "onnxruntime", work / "ort")
            _measure(
                record, variant, paths(xla, plain, onnx, work), featurizers, shapes, rounds,
                work, reference=reference, environments=environments, requests=requests,
                unscored=unscored,
            )  # fmt: skip
            Path(out).write_text(json.dumps(record, indent=1) + "\n")
    return record


def _script_arguments(script):
    """``(script, repository, {key: value})`` of a ``docs/runs/<dir>/`` script run with
    ``--key=value`` arguments: its resolved path, the repository three levels up, and
    ``sys.argv``'s arguments."""
    script = Path(script).resolve()
    return script, script.parents[3], dict(a[2:].split("=", 1) for a in sys.argv[1:])


def paths_ab_main(script, variants, paths, **options):
    """A ``docs/runs/`` A/B script's main: :func:`paths_ab` with the script's ``--rounds=N``
    (3 by default) and ``--variants=<model>:<variant>,...`` (``variants`` by default)
    arguments, the record written beside ``script`` as ``<its stem>.json``.

    Args:
        script: the script's ``__file__``, inside the repository's ``docs/runs/``.
        variants: the default ``--variants``, e.g. ``"re2:RE2 1 block,match_srnn:Match-SRNN"``.
        paths, options: as :func:`paths_ab`'s (``reference``, ``environments``, ...).
    """
    script, repo, args = _script_arguments(script)
    chosen = [tuple(item.split(":", 1)) for item in args.get("variants", variants).split(",")]
    return paths_ab(
        str(script.relative_to(repo)), args, chosen, paths,
        rounds=int(args.get("rounds", 3)), out=script.with_suffix(".json"), **options,
    )  # fmt: skip


def export_ab_main(script, variants, **options):
    """A ``docs/runs/`` A/B script's main: :func:`export_ab` of ``variants`` with the
    script's ``--before=<revision>``, ``--rounds=N`` (3 by default),
    ``--variants=<name>,...`` (those of ``variants`` to measure; all by default) and
    ``--paths=<name>,...`` (:func:`export_ab`'s ``keep``) arguments, the record written beside
    ``script`` as ``<its stem>.json`` (or ``--json_out=<file name>``).

    Args:
        script: the script's ``__file__``, inside the repository's ``docs/runs/``.
        variants: ``[(model name, benchmark variant)]``.
        options: more keywords of :func:`export_ab` (``openvino``, ``bf16``, ``bf16_xla``).

    Raises:
        ValueError: ``--variants`` names a variant that is not in ``variants``.
    """
    script, repo, args = _script_arguments(script)
    if "variants" in args:
        known = dict((v, (m, v)) for m, v in variants)
        unknown = [v for v in args["variants"].split(",") if v not in known]
        if unknown:
            raise ValueError(f"--variants: {unknown} not among {list(known)}")
        variants = [known[v] for v in args["variants"].split(",")]
    if "paths" in args:
        options["keep"] = args["paths"].split(",")
    return export_ab(
        str(script.relative_to(repo)), args, variants,
        before=args["before"], rounds=int(args.get("rounds", 3)), repo=repo,
        out=script.with_name(args.get("json_out", script.stem + ".json")), **options,
    )  # fmt: skip
