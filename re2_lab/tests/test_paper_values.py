"""docs/paper_values.csv: each paper figure the docs and tests compare with, and the line of
the paper it comes from (checked against the papers' text under ../shared/papers)."""

import csv

import pytest

from re2_lab import paper_values
from re2_tf.models import get_spec


def _lines(text):
    """The text's lines with every run of whitespace read as one space (as the file's
    ``source`` column writes them)."""
    return [" ".join(line.split()) for line in text.splitlines()]


def test_every_value_is_on_its_source_line_of_the_paper(shared_papers):
    rows = paper_values.load()
    assert rows
    for row in rows:
        paper = shared_papers / f"{row['paper']}.md"
        assert paper.is_file(), row
        lines = [
            line for line in _lines(paper.read_text(encoding="utf-8")) if row["source"] in line
        ]
        assert len(lines) == 1, (row, len(lines))


def test_each_value_is_printed_in_its_source_and_named_once():
    rows = paper_values.load()
    keys = [(r["paper"], r["table"], r["row"], r["metric"]) for r in rows]
    assert len(set(keys)) == len(keys)
    for row in rows:
        float(row["value"])  # a number
        assert row["value"] in row["source"], row
        assert row["source"] == " ".join(row["source"].split()), row


def test_a_value_missing_from_its_source_is_caught(tmp_path, shared_papers):
    """The source check fails on a planted wrong line (so it can fail)."""
    path = tmp_path / "values.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(paper_values.COLUMNS)
        writer.writerow(["bert_matchlstm_shao2019", "Table 1", "-FHS", "MRR", "72.44",
                         "-FHS 70.46 72.45"])  # fmt: skip
    (row,) = paper_values.load(path)
    text = (shared_papers / "bert_matchlstm_shao2019.md").read_text(encoding="utf-8")
    assert not [line for line in _lines(text) if row["source"] in line]


def test_value_reads_one_figure_and_refuses_an_ambiguous_one():
    assert paper_values.value("bert_matchlstm_shao2019", "Table 1", "-FHS", "WikiQA test MRR") == (
        72.44
    )
    with pytest.raises(KeyError, match="2 paper values"):
        paper_values.value("bert_matchlstm_shao2019", "Table 1", "-FHS")


def test_re2_table5_seconds_of_the_benchmark_spec_are_the_papers():
    """The RE2 spec's `paper_seconds` (the Table 5 row beside every `re2-bench` record) are
    the file's Table 5 values."""
    benchmark = get_spec("re2").benchmark
    for blocks, name in ((1, "RE2 1 block"), (2, "RE2 2 blocks"), (3, "RE2 3 blocks")):
        row = f"RE2 ({blocks} block{'s' * (blocks > 1)})"
        assert benchmark[name]["paper_seconds"] == paper_values.value(
            "re2_yang2019", "Table 5", row
        )
