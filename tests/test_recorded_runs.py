"""The README's BERT+MatchLSTM tables against the run records in `docs/runs/`.

The README reports each finished run's figures by hand; `docs/runs/<experiment>/<head>/seed<k>/
results.json` is what the run wrote. These tests re-read the README's table rows and check every
figure against the records, and every "mean ± std" row against a re-computation with Python's
`statistics` module (sample standard deviation), independent of `re2-summarize` (re2_tf.results). A
transcription slip or a mean left stale after a new seed fails here.
"""

import re
import statistics
from pathlib import Path

import pytest

from re2_tf import runs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RUNS = ROOT / "docs" / "runs"
WIKIQA_HEADS = ("matchlstm", "bert", "avg")
COLUMNS = (("dev", "map"), ("dev", "mrr"), ("test", "map"), ("test", "mrr"))


def _records(experiment, head):
    """{seed: results.json contents} of `docs/runs/<experiment>/<head>/seed*/`."""
    return {r["seed"]: r for r in runs.load_results(RUNS / experiment / head)}


def _table_after(heading):
    """Rows (lists of stripped cells) of the first Markdown table after `heading` in the README."""
    text = README.read_text(encoding="utf-8")
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert rows, f"no table after {heading!r}"
    return rows[2:]  # header and |---| line


def _plain(cell):
    return cell.replace("*", "").replace(",", "").strip()


def _head_of(cell):
    found = re.match(r"`(\w+)`", _plain(cell))
    return found.group(1) if found else None


def _wikiqa_rows():
    return _table_after("**WikiQA fine-tuning, per head and seed**")


def test_every_recorded_wikiqa_seed_is_in_the_readme_with_its_figures():
    rows = _wikiqa_rows()
    for head in WIKIQA_HEADS:
        records = _records("bert_matchlstm-wikiqa", head)
        assert sorted(records) == [1, 2, 3], head
        for seed, result in records.items():
            matching = [r for r in rows if _head_of(r[0]) == head and _plain(r[1]) == str(seed)]
            assert len(matching) == 1, (head, seed)
            row = matching[0]
            assert int(_plain(row[2])) == result["best_step"], (head, seed)
            for cell, (split, metric) in zip(row[3:7], COLUMNS):
                assert _plain(cell) == f"{result['splits'][split][metric]:.4f}", (
                    head, seed, split, metric)


def test_readme_mean_and_std_rows_match_a_recomputation():
    rows = _wikiqa_rows()
    for head in WIKIQA_HEADS:
        records = _records("bert_matchlstm-wikiqa", head).values()
        matching = [r for r in rows if _head_of(r[0]) == head and "mean ± std" in r[0]]
        assert len(matching) == 1, head
        for cell, (split, metric) in zip(matching[0][3:7], COLUMNS):
            values = [r["splits"][split][metric] for r in records]
            expected = f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"
            assert _plain(cell) == expected, (head, split, metric)


def test_readme_snli_check_rows_match_the_records():
    rows = _table_after("**SNLI learning check**")
    for head in ("matchlstm", "bert"):
        (result,) = _records("bert_matchlstm-snli-check", head).values()
        (row,) = [r for r in rows if _head_of(r[0]) == head]
        assert _plain(row[1]) == f"{result['splits']['test']['acc']:.4f}"
        assert _plain(row[2]) == (
            f"{result['splits']['dev']['acc']:.4f} ({result['best_step']})")


@pytest.mark.parametrize("head", WIKIQA_HEADS)
def test_recorded_wikiqa_runs_scored_every_question(head):
    # trec_eval-style scoring keeps only questions with at least one correct answer:
    # 122 of WikiQA dev's and 237 of its test's (Yang et al., 2015).
    for result in _records("bert_matchlstm-wikiqa", head).values():
        assert result["splits"]["dev"]["questions"] == 122
        assert result["splits"]["test"]["questions"] == 237
