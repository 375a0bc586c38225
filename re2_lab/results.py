"""Results of finished runs gathered from wherever they were written, for a summary over seeds
(``python -m re2_lab.cli.summarize``; the table itself is :func:`re2_tf.runs.summarize_results`)."""

from __future__ import annotations

__all__ = ["collect"]


def collect(paths):
    """The results of every run under ``paths``, in order.

    Args:
        paths: each a run directory (its ``results.json``), the directory of a ``--repeats``
            run (every ``seed<k>/results.json`` under it), or a file in ``results.json``
            format (:func:`re2_tf.runs.load_results`).

    Returns:
        list of result dicts (``seed``, metrics, ...).

    Raises:
        FileNotFoundError, ValueError: from :func:`re2_tf.runs.load_results`; ValueError
            also when two results carry the same seed (one run would count twice).
    """
    from re2_tf import runs

    results, seen = [], {}
    for path in paths:
        for result in runs.load_results(path):
            seed = result.get("seed")
            if seed is not None and seed in seen:
                raise ValueError(
                    f"seed {seed} appears twice ({seen[seed]} and {path}): each "
                    "seed must be one run"
                )
            seen[seed] = path
            results.append(result)
    return results
