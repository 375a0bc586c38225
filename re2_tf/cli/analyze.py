r"""``re2-analyze`` (or ``python -m re2_tf.analyze``, ``python -m re2_tf.cli.analyze``): the
attention and alignment maps of a trained run on one text pair, as heat-maps and JSON.

    python -m re2_tf.analyze --run_dir=checkpoints/sample-re2 \
        --text1="A man sleeps ." --text2="A person rests ." --out=analysis/

Reads the run's best checkpoint, featurisers, tokeniser and label names, and writes to
``--out`` (created): ``analysis.json`` (the prediction, the tokens and every map as nested
lists with its kind, axes, shape and description) and, with the ``plot`` extra (matplotlib),
one heat-map PNG per map with the tokens on its axes. What each model gives is its spec's
``analysis`` (:func:`re2_tf.analysis.attention_maps`): RE2 the normalised alignment ``e_ij``
of Eq. 3 per block, both directions; DRCN the co-attention of Eq. 5 per layer, its average
over layers and the per-word rate of max-pooled positions; FITN the memory-based attention
per round; Match-SRNN the spatial GRU's ``h_ij`` of unit ``--dimension`` with the path traced
back through its largest gates (Sec. 6.2); BERT+MatchLSTM the MatchLSTM attention over word
pieces, per direction. The predicted label (or score) is printed.

An empty text is allowed (its maps have no rows or columns and get no PNG). A missing run,
checkpoint or matplotlib, or a bad flag, ends the command with one line on stderr,
``re2-analyze: error: <reason>``, exit status 1.
"""

from __future__ import annotations

import json

from absl import flags

from re2_tf.analysis import attention_maps, save_maps
from re2_tf.cli.common import run_command

__all__ = ["define_flags", "main", "run"]

FLAGS = flags.FLAGS


def define_flags(flag_values=FLAGS):
    """The command's flags (defined when it runs, never at import)."""
    flags.DEFINE_string(
        "run_dir", None, "Run directory (config.json, best.keras).", flag_values=flag_values
    )
    flags.DEFINE_string("text1", None, "First text (premise / question).", flag_values=flag_values)
    flags.DEFINE_string(
        "text2", None, "Second text (hypothesis / answer).", flag_values=flag_values
    )
    flags.DEFINE_string(
        "out", None, "Output directory for analysis.json and the PNGs.", flag_values=flag_values
    )
    flags.DEFINE_integer(
        "dimension",
        0,
        "Hidden unit shown for state and gate maps (Match-SRNN's h_ij).",
        lower_bound=0,
        flag_values=flag_values,
    )
    flags.DEFINE_bool(
        "plots", True, "Write heat-map PNGs (needs matplotlib).", flag_values=flag_values
    )
    flags.mark_flag_as_required("out", flag_values=flag_values)


def main(argv):
    """Compute the maps of ``--text1`` / ``--text2`` and write them to ``--out``."""

    if len(argv) > 1:
        raise flags.Error(f"unexpected arguments: {' '.join(argv[1:])}")
    missing = [f"--{n}" for n in ("run_dir", "text1", "text2") if FLAGS[n].value is None]
    if missing:
        raise flags.Error(f"{', '.join(missing)} required")
    maps = attention_maps(FLAGS.run_dir, FLAGS.text1, FLAGS.text2, dimension=FLAGS.dimension)
    try:
        written = save_maps(maps, FLAGS.out, plots=FLAGS.plots)
    except ImportError as error:  # an installation to complete: the user's to fix
        raise OSError(f"{error}: install the plot extra (matplotlib) or pass --noplots") from error
    print(json.dumps(maps.prediction, ensure_ascii=False))
    print(f"wrote {len(written)} files to {FLAGS.out}")
    return 0


def run(argv=None):
    """Entry point of ``python -m re2_tf.analyze``."""
    run_command(main, define_flags, program="re2-analyze", doc=__doc__, argv=argv)


if __name__ == "__main__":
    run()
