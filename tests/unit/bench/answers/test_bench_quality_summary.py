"""bench.quality's figures, from hand-made runs: accuracy per system and half, refusals,
PubMedQA decisions, citation validity, cost; ragloop against single-shot on the questions every
system answered; which questions the runs are of; and the tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.answers.items import SQUAD2, QualityItem
from bench.answers.report import render
from bench.answers.runs import QualityRun
from bench.answers.summary import common_questions, quality_figures, split_description
from bench.comparison.workload import PUBMEDQA
from bench.quality import grader_figures
from ragloop.core.answers import NO_ANSWER
from tests.unit.bench.answers.test_bench_quality_runs import quality_run, round_info


def squad_item(n: int, answerable: bool) -> QualityItem:
    return QualityItem(
        SQUAD2,
        f"s{n}",
        f"Question {n}?",
        frozenset({f"T#{n}"}),
        answers=(f"gold {n}",) if answerable else (),
        answerable=answerable,
        split="report",
        seed=13,
    )


A1, A2, A3 = (squad_item(n, True) for n in (1, 2, 3))
U1, U2 = (squad_item(n, False) for n in (4, 5))
P1 = QualityItem(PUBMEDQA, "p1", "Does it?", frozenset({"p1"}), "yes", split="report", seed=13)
P2 = replace(P1, id="p2", decision="no")
MISSED = (round_info(1, ("c1",), ("c2",)),)  # round 1 passed a passage, not the gold-bearing one
FOUND_LATER = (*MISSED, round_info(2, ("c2",), ("c2",)))


def runs_of_four_systems() -> list[QualityRun]:
    return [
        # ragloop: A1 right after a rewrite (round 1 had missed), A2 right, A3 refused, U1 and U2
        # refused, P1 right, P2 undecided.
        quality_run("ragloop", A1, "It is gold 1 [1].", rewrites=1, rounds=FOUND_LATER),
        quality_run("ragloop", A2, "Gold 2 [2].", citations=(1, 1), rounds=MISSED),
        quality_run("ragloop", A3, NO_ANSWER, citations=(0, 0), rewrites=3, rounds=MISSED),
        quality_run("ragloop", U1, NO_ANSWER, citations=(0, 0)),
        quality_run("ragloop", U2, NO_ANSWER, citations=(0, 0)),
        quality_run("ragloop", P1, "Yes [1].", seconds=30.0),
        quality_run("ragloop", P2, "The trial was small [1].", seconds=50.0),
        # single-shot: A1 wrong, A2 right, A3 right (ragloop's loss), U1 refused, U2 answered.
        quality_run("single", A1, "Gold 9 [1].", rounds=MISSED),
        quality_run("single", A2, "gold 2 [1]", rounds=MISSED),
        quality_run("single", A3, "Gold 3 [1].", rounds=MISSED),
        quality_run("single", U1, "I don't know."),
        quality_run("single", U2, "The Normans, in 911 [1]."),
        quality_run("single", P1, "No [1]."),
        quality_run("single", P2, "No [1]."),
        # plain RAG answered everything but P2, which failed.
        *(quality_run("plain", i, "Gold 1 and gold 2 [1].") for i in (A1, A2, A3, U1, U2, P1)),
        quality_run("plain", P2, None, error="ReadTimeout"),
        # the baseline: no citations; right on A1 and U1 only; no PubMedQA runs at all.
        quality_run("baseline", A1, "gold 1", citations=None, rewrites=1, calls=17),
        quality_run("baseline", A2, "I do not know.", citations=None, calls=17),
        quality_run("baseline", A3, "gold 9", citations=None, calls=17),
        quality_run("baseline", U1, "The context does not say.", citations=None, calls=17),
        quality_run("baseline", U2, "In 1100.", citations=None, calls=17),
    ]


def test_accuracy_per_system_and_half() -> None:
    f = quality_figures(runs_of_four_systems())

    assert f["squad2_answerable_accuracy_ragloop"] == pytest.approx(2 / 3, abs=1e-4)
    assert f["squad2_unanswerable_accuracy_ragloop"] == 1.0
    assert f["squad2_unanswerable_refusal_ragloop"] == 1.0
    assert f["squad2_accuracy_ragloop"] == 0.8
    assert f["squad2_false_refusal_ragloop"] == pytest.approx(1 / 3, abs=1e-4)
    assert (f["squad2_accuracy_single"], f["squad2_false_refusal_single"]) == (0.6, 0.0)
    # plain's one answer holds gold 1 and gold 2, never refuses.
    assert f["squad2_answerable_accuracy_plain"] == pytest.approx(2 / 3, abs=1e-4)
    assert f["squad2_unanswerable_accuracy_plain"] == 0.0
    assert f["squad2_accuracy_baseline"] == 0.4
    assert f["squad2_false_refusal_baseline"] == pytest.approx(1 / 3, abs=1e-4)


def test_pubmedqa_citations_and_cost() -> None:
    f = quality_figures(runs_of_four_systems())

    assert (f["pubmedqa_decision_accuracy_ragloop"], f["pubmedqa_decided_share_ragloop"]) == (
        0.5,
        0.5,
    )
    assert f["pubmedqa_decision_accuracy_single"] == 0.5
    assert f["pubmedqa_decision_accuracy_plain"] == 0.0  # its one answered question: no decision
    assert f["pubmedqa_decision_accuracy_baseline"] is None
    assert (f["runs_plain"], f["failed_plain"]) == (7, 1)
    # ragloop's answers cited 4 given passages (none in its refusals) and 1 number of none.
    assert f["citation_validity_ragloop"] == pytest.approx(4 / 5)
    assert f["citation_validity_plain"] == 1.0
    assert f["citation_validity_baseline"] is None
    assert f["rewrite_share_ragloop"] == pytest.approx(2 / 7, abs=1e-4)
    assert f["rewrite_share_baseline"] == 0.2
    assert f["model_calls_per_query_baseline"] == 17.0
    assert f["prompt_tokens_per_query_ragloop"] == 800.0  # the server's count
    assert f["system_prompt_tokens_per_query_ragloop"] == 1000.0
    assert f["p50_latency_s_ragloop"] == 10.0


def test_only_questions_every_present_system_answered_are_paired() -> None:
    runs = runs_of_four_systems()

    common = common_questions(runs)

    # SQuAD: all four answered all five; PubMedQA: plain failed P2 (the baseline ran none).
    assert common == {(SQUAD2, i.id) for i in (A1, A2, A3, U1, U2)} | {(PUBMEDQA, "p1")}


def test_ragloop_against_single_shot() -> None:
    f = quality_figures(runs_of_four_systems())

    # Over the 6 common questions: ragloop wins A1, U2 and P1; loses A3.
    assert f["loop_vs_single_questions"] == 6
    assert (f["loop_vs_single_wins"], f["loop_vs_single_losses"]) == (3, 1)
    assert f["loop_vs_single_p"] == 0.625  # 2 × (1 + 4) / 16
    assert f["loop_worse_share"] == pytest.approx(1 / 6, abs=1e-4)
    assert f["rewrites_turned_right"] == 1  # A1
    # U2 and P1 were won without a rewrite: single-shot's rounds, answered otherwise.
    assert f["loop_vs_single_wins_unrewritten"] == 2
    assert f["loop_vs_single_losses_unrewritten"] == 0  # A3 was lost after rewrites
    # A1, A2, A3 missed the gold passage in round 1: A1 and A2 right, A1's found in round 2.
    assert f["loop_recovery_questions"] == 3
    assert f["loop_recovery_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert f["loop_recovery_evidence_share"] == pytest.approx(1 / 3, abs=1e-4)


def test_without_single_shot_there_are_no_paired_figures() -> None:
    runs = [r for r in runs_of_four_systems() if r.system != "single"]

    f = quality_figures(runs)

    assert f["loop_vs_single_questions"] == 0
    assert f["loop_vs_single_wins"] is None and f["loop_vs_single_p"] is None
    assert f["squad2_accuracy_single"] is None and f["runs_single"] == 0


def test_the_split_and_counts_say_which_questions_were_run() -> None:
    runs = runs_of_four_systems()
    f = quality_figures(runs)

    assert (f["squad2_answerable_questions"], f["squad2_unanswerable_questions"]) == (3, 2)
    assert f["pubmedqa_questions"] == 2
    assert (f["common_questions_squad2"], f["common_questions_pubmedqa"]) == (5, 1)
    assert f["split"] == (
        "report: squad2 articles 5-12, 3 answerable + 2 unanswerable (seed 13); "
        "pubmedqa official test split, 2 (seed 13)"
    )
    dev = [quality_run("ragloop", replace(A1, split="dev", seed=7), "gold 1")]
    assert split_description(dev) == (
        "dev: squad2 articles 1-4, 1 answerable + 0 unanswerable (seed 7)"
    )


def test_the_tables_show_each_system_and_the_paired_line() -> None:
    figures = quality_figures(runs_of_four_systems()) | {
        "date": "2026-11-26",
        "machine": "2 cores",
        "model": "qwen",
        "command": "python -m bench.quality --squad 4",
    }

    text = render(figures)

    assert "python -m bench.quality --squad 4" in text and "2026-11-26" in text
    ragloop_row = next(line for line in text.splitlines() if line.startswith("| ragloop ("))
    assert "| 0.667 | 1.000 | 0.800 | 0.333 | 0.500 | 0.500 | 0.800 |" in ragloop_row
    baseline_row = next(line for line in text.splitlines() if "LangGraph" in line)
    assert baseline_row.count("–") == 3  # no PubMedQA runs, no citations
    assert "wrong on **3**, the reverse on **1**" in text


def test_the_grader_figures_of_bench_models_are_carried_over(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    assert grader_figures(models) == {}
    models.write_text(
        '{"grader_roc_auc_squad2": 0.86, "grader_roc_auc_scifact": null, "grader_f1_scifact": 0.6}'
    )
    assert grader_figures(models) == {"grader_roc_auc_squad2": 0.86}
