r"""Mean ± std over seeds from finished runs, wherever they were trained.

    python -m re2_tf.summarize checkpoints/wikiqa-re2                 # a --repeats=3 run
    python -m re2_tf.summarize runs/a/seed1 runs/b/seed2 runs/c/seed3  # runs trained apart
    python -m re2_tf.summarize docs/runs/bert_matchlstm-wikiqa/bert    # recorded results.json

Each argument is a run directory (its ``results.json``), the directory of a ``--repeats``
run (every ``seed<k>/results.json`` under it), or a file in ``results.json`` format. Prints
the same Markdown table as ``re2_tf.train --repeats`` (:func:`re2_tf.runs.summarize_results`:
sample standard deviation, ``runs`` = how many runs have that metric) and, with ``--output``,
writes the summary as JSON. Seeds trained in separate processes, sessions or machines can so
be reported together; a seed given twice is an error, since it would count one run twice.
"""

import json
import sys
from pathlib import Path

from absl import app, flags

from re2_tf import runs

FLAGS = flags.FLAGS


def define_flags():
    """The command's flags, defined only when it runs as a script: importing
    :func:`collect` must not add flags to a process that has its own (``--output``)."""
    flags.DEFINE_string("output", None, "Write the summary as JSON here.")


def collect(paths):
    """The results of every run under ``paths`` (see the module docstring), in order.

    Raises:
        FileNotFoundError, ValueError: from :func:`re2_tf.runs.load_results`; ValueError
            also when two results carry the same seed.
    """
    results, seen = [], {}
    for path in paths:
        for result in runs.load_results(path):
            seed = result.get("seed")
            if seed is not None and seed in seen:
                raise ValueError(f"seed {seed} appears twice ({seen[seed]} and {path}): each "
                                 "seed must be one run")
            seen[seed] = path
            results.append(result)
    return results


def main(argv):
    if len(argv) < 2:
        raise app.UsageError("Give run directories or results.json files.")
    try:
        results = collect(argv[1:])
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    table, summary = runs.summarize_results(results)
    seeds = ", ".join(str(r.get("seed")) for r in results)
    print(f"{len(results)} run{'s' if len(results) != 1 else ''} (seeds {seeds}):\n{table}")
    if FLAGS.output:
        Path(FLAGS.output).write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
