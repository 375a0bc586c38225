"""re2_lab.budget against counts made by hand from the comparison's recorded train.logs
(docs/runs/compare/<task>/model-<m>/seed<k>/train.log), and against hand-written logs."""

from pathlib import Path

import pytest

from re2_lab.budget import parse_budget, read_budget

COMPARE = Path(__file__).resolve().parents[2] / "docs" / "runs" / "compare"


# Each literal below was counted by hand from the log:
#   updates      : the N of its one "Training complete after N updates." line;
#   evaluations  : `grep -c "(epoch " train.log` (every line "update U (epoch E) | dev ..."),
#                  minus the lines repeated after a "Restored training state at update S"
#                  (read with `grep -n "(epoch \|Resuming\|Restored" train.log`);
#   units        : the n of "training on n", or of "n ranking triples" for a ranking loss;
#   seen         : units * 5, the passes read off the last evaluation line "(epoch 5.00)";
#                  for a --max_samples run (match_srnn on the ranking tasks, as many triples
#                  as the others' pairs), its "training stops after N updates (P of 1000
#                  passes of K updates ...)" line: whole passes * units + the rest's updates
#                  * 128 (its --batch_size);
#   passes       : 5, or that line's P;
#   last         : the U of the last evaluation line, to tell whether the final model
#                  (update N) was evaluated.
HAND_COUNTED = [
    # task, model, seed, updates, evaluations, unit, units, seen, last, passes
    # 0 whole passes of 374 updates, 185 * 128 = 23,680 triples; evaluations at 20, 40, ...,
    # 180 and the last update, 185 (it ends the cut pass)
    ("trecqa", "match_srnn", 1, 185, 10, "triples", 47852, 23680, 185, 0.49),
    # evaluations at 20, 37, 40, 60, 74, 80, 100, 111, 120, 140, 148, 160, 180, 185 (the
    # comparison's --eval_epoch; its first run, with the WikiQA preset's --noeval_epoch, had 9)
    ("trecqa", "re2", 1, 185, 14, "pairs", 4718, 23590, 185, 5),
    # evaluations at 20, 37, 40, 60, 74, 80, 100, 111, 120, 140, 148, 160, 180, 185
    ("trecqa", "drcn", 1, 185, 14, "pairs", 4718, 23590, 185, 5),
    # two attempts, the first stopped at update 47 before any evaluation (no restore line)
    ("trecqa", "bert_matchlstm", 1, 740, 14, "pairs", 4718, 23590, 740, 5),
    # 11 whole passes of 71 updates (781) and 23 more: 11 * 8,995 + 23 * 128 = 101,889 triples;
    # evaluations at every 20 updates (40), the 11 pass ends (71, 142, ..., 781) and 804
    ("wikiqa", "match_srnn", 1, 804, 52, "triples", 8995, 101889, 804, 11.32),
    # three attempts, both resumed ones restored at update 60: no evaluation line repeated
    ("wikiqa", "drcn", 1, 800, 40, "pairs", 20360, 101800, 800, 5),
    # 25 evaluation lines: "update 924 (epoch 3.00)" is logged before and again after the
    # last attempt's "Restored training state at update 880"
    ("snli_check", "bert_matchlstm", 3, 1540, 24, "pairs", 9842, 49210, 1540, 5),
]


@pytest.mark.parametrize(
    "task, model, seed, updates, evaluations, unit, units, seen, last, passes", HAND_COUNTED
)
def test_a_recorded_runs_budget_is_its_hand_count(
    task, model, seed, updates, evaluations, unit, units, seen, last, passes
):
    budget = read_budget(COMPARE / task / f"model-{model}" / f"seed{seed}")
    assert budget.model == model
    assert budget.updates == updates
    assert budget.evaluations == evaluations
    assert len(set(budget.evaluated_updates)) == evaluations
    assert budget.evaluated_updates[-1] == last
    assert (budget.unit, budget.units, budget.seen, budget.passes) == (unit, units, seen, passes)
    assert budget.final_evaluated == (last == updates)


def test_re2_on_trecqa_evaluates_at_the_pass_ends_as_drcn_does():
    # re2's WikiQA preset turns pass-end evaluations off; the comparison turns them on: the
    # same 14 evaluations as DRCN, at every 20 updates and every pass end (37 updates a pass)
    re2 = read_budget(COMPARE / "trecqa" / "model-re2" / "seed1")
    drcn = read_budget(COMPARE / "trecqa" / "model-drcn" / "seed1")
    assert re2.evaluated_updates == drcn.evaluated_updates
    assert {37, 74, 111, 148, 185} <= set(re2.evaluated_updates)
    assert re2.updates_per_pass == 37 and re2.pass_ends_evaluated and re2.final_evaluated


def test_match_srnn_ranking_triples_carry_their_question_counts():
    budget = read_budget(COMPARE / "wikiqa" / "model-match_srnn" / "seed1")
    # the log's statistics: 2,118 questions, 1,245 without a positive, 16 without a negative
    assert budget.triple_stats["questions_used"] == 2118 - 1245 - 16 == 857
    assert budget.word_embeddings == "random"
    assert read_budget(COMPARE / "wikiqa" / "model-bert_matchlstm" / "seed1").word_embeddings == (
        "none"
    )


LOG = """\
2026-01-01 00:00:00 Starting re2 run r (seed 1); train (10) | dev (4) from d
2026-01-01 00:00:00 No embeddings file: word embeddings are random and trainable.
2026-01-01 00:00:00 #classes 2; #vocab 9; 0 pairs [...] dropped, 0 truncated; training on 10
2026-01-01 00:00:01 update 2 (epoch 0.67) | dev acc 0.5 * | best acc 0.5 at 2 | 9 pairs/s
2026-01-01 00:00:02 update 3 (epoch 1.00) | dev acc 0.5 | best acc 0.5 at 2 | 9 pairs/s
2026-01-01 00:00:03 update 4 (epoch 1.33) | dev acc 0.6 * | best acc 0.6 at 4 | 9 pairs/s
2026-01-01 00:00:09 Resuming re2 run r (seed 1); train (10) | dev (4) from d
2026-01-01 00:00:09 #classes 2; #vocab 9; 0 pairs [...] dropped, 0 truncated; training on 10
2026-01-01 00:00:09 Restored training state at update 2 from r/backup/state.npz
2026-01-01 00:00:10 update 3 (epoch 1.00) | dev acc 0.5 | best acc 0.5 at 2 | 9 pairs/s
2026-01-01 00:00:11 update 4 (epoch 1.33) | dev acc 0.6 * | best acc 0.6 at 4 | 9 pairs/s
2026-01-01 00:00:12 update 6 (epoch 2.00) | dev acc 0.6 | best acc 0.6 at 4 | 9 pairs/s
2026-01-01 00:00:13 Training complete after 6 updates.
"""


def test_a_resumed_attempt_replaces_the_evaluations_after_its_restore():
    # by hand: 10 pairs, 3 updates per pass (batch 4: 4 + 4 + 2); the second attempt restores
    # update 2, so the first attempt's evaluations at 3 and 4 were trained again and logged
    # again: the path to the final model is 2, 3, 4, 6; 2 passes = 20 pairs
    budget = parse_budget(LOG)
    assert budget.evaluated_updates == (2, 3, 4, 6)
    assert (budget.updates, budget.updates_per_pass, budget.passes, budget.seen) == (6, 3, 2, 20)
    assert budget.final_evaluated and budget.pass_ends_evaluated


def test_an_attempt_without_a_restore_starts_from_update_zero():
    # the same log with the restore line deleted: the second attempt started again from 0, so
    # only its own evaluations (3, 4, 6) are on the final model's path
    log = "\n".join(line for line in LOG.splitlines() if "Restored" not in line)
    assert parse_budget(log).evaluated_updates == (3, 4, 6)


def test_a_log_without_its_final_evaluation_or_completion_says_so():
    log = "\n".join(LOG.splitlines()[:6])  # up to "update 4 (epoch 1.33)"
    budget = parse_budget(log)
    assert budget.updates is None and budget.seen is None and not budget.final_evaluated
    with pytest.raises(ValueError, match="x.log: no 'Starting <model> run' line"):
        parse_budget(LOG.split("\n", 1)[1], source="x.log")
    with pytest.raises(ValueError, match="no 'training on <n>' line"):
        parse_budget(LOG.splitlines()[0])


STOPPED = """\
2026-01-01 00:00:00 Starting match_srnn run r (seed 1); train (20) | dev (4) from d
2026-01-01 00:00:00 #classes 2; #vocab 9; 0 pairs [...] dropped, 0 truncated; training on 20
2026-01-01 00:00:00 11 ranking triples; {'questions': 5, 'questions_used': 3}
2026-01-01 00:00:00 max_samples=40: training stops after 11 updates (3.67 of 1000 passes of 3 \
updates over 11 triples; 41 triples seen)
2026-01-01 00:00:01 update 3 (epoch 1.00) | dev map 0.5 * | best map 0.5 at 3 | 9 pairs/s
2026-01-01 00:00:02 update 6 (epoch 2.00) | dev map 0.5 | best map 0.5 at 3 | 9 pairs/s
2026-01-01 00:00:03 update 9 (epoch 3.00) | dev map 0.6 * | best map 0.6 at 9 | 9 pairs/s
2026-01-01 00:00:04 update 11 (epoch 3.67) | dev map 0.6 | best map 0.6 at 9 | 9 pairs/s
2026-01-01 00:00:05 Training complete after 11 updates.
"""


def test_a_max_samples_run_takes_its_passes_and_samples_seen_from_its_stop_line():
    # by hand: 11 triples in batches of 4 are 3 updates a pass (4 + 4 + 3); 40 samples are 3
    # passes (33) and 7 more, 2 updates: 11 updates, 3 * 11 + 2 * 4 = 41 triples seen
    budget = parse_budget(STOPPED)
    assert (budget.unit, budget.units, budget.updates) == ("triples", 11, 11)
    assert (budget.updates_per_pass, budget.passes, budget.seen) == (3, 3.67, 41)
    assert budget.pass_ends_evaluated and budget.final_evaluated
    # without the pass-end evaluation at update 9 the whole passes are not all evaluated
    log = "\n".join(line for line in STOPPED.splitlines() if "update 9 (" not in line)
    assert not parse_budget(log).pass_ends_evaluated
