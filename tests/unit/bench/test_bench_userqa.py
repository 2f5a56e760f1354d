"""bench.userqa's arithmetic: the order questions are asked in, paired wins, the floor replay,
the systems' old names, the reading ceiling."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.refusal_replay import Bars, sweep, with_bars
from bench.userqa import (
    RunsFile,
    by_kind_in_turn,
    paired,
    parse_args,
    records_of,
    render,
    replayed_bars,
    userqa_figures,
)
from bench.userqa_systems import CEILING, RAGLOOP, SINGLE, STUFFED, UNGRADED
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.cli.evaluation.runner import EvalAnswer, EvalRecord
from ragloop.cli.evaluation.scoring import Verdict, score
from ragloop.core.answers import NO_ANSWER

PORT = EvalQuestion("q1", "What port does it use?", "what", True, (("9090",),))
WAL = EvalQuestion("q2", "Is WAL compression on by default?", "yes-no", True, (("yes",),))
OUT = EvalQuestion("q3", "How do I import a dashboard?", "out-of-scope", False)


def record(question: EvalQuestion, text: str, best: float, **checks: float) -> EvalRecord:
    figures = {"best_confidence": best} | {
        "answer_match" if name == "match" else name: value for name, value in checks.items()
    }
    answer = EvalAnswer(text, 1.0, checks=figures)
    return EvalRecord(question, answer, score(question, text))


def test_questions_are_asked_one_kind_after_another() -> None:
    how = [EvalQuestion(f"h{n}", "How?", "how-to", True, (("x",),)) for n in range(3)]
    assert [q.id for q in by_kind_in_turn([*how, PORT, OUT])] == ["h0", "q1", "q3", "h1", "h2"]


def test_the_bars_are_replayed_from_each_answers_grade_and_checks() -> None:
    right = record(PORT, "Port 9090 [1].", best=0.58)
    assert with_bars(right, Bars(floor=0.5)) is right
    refused = with_bars(right, Bars(floor=0.6))
    assert refused.answer.text == NO_ANSWER and refused.scored.verdict is Verdict.MISSING
    assert refused.answer.refused_by == "answer_floor"
    decision = record(WAL, "Yes. It is on [1].", best=0.1)  # no bar refuses a decision
    assert with_bars(decision, Bars(0.7, 0.9, 0.9)) is decision
    wrong = record(OUT, "Click import [1].", best=0.7, match=0.5, support=0.2)
    assert with_bars(wrong, Bars(support=0.3)).answer.refused_by == "support"
    assert with_bars(wrong, Bars(answer_match=0.6, support=0.3)).answer.refused_by == "answer_match"
    written_off = replace(wrong, answer=replace(wrong.answer, refused_by="writer"))
    assert with_bars(written_off, Bars(support=0.3)) is written_off  # refused already
    lines = sweep([right, decision, wrong], [0.0, 0.6], [0.0], [0.0, 0.3]).splitlines()
    assert lines[0].split() == ["floor", "match", "support", "right", "wrong", "missing", "score"]
    # Best first: support 0.3 refuses the import and keeps the port; the floor 0.6 with it
    # refuses the port too; with no bar the import is answered; the floor alone does both.
    assert [line.split()[3:] for line in lines[1:]] == [
        ["3", "0", "0", "+1.000"],
        ["2", "0", "1", "+0.667"],
        ["2", "1", "0", "+0.333"],
        ["1", "1", "1", "+0.000"],
    ]


def test_runs_are_scored_again_and_paired_by_question() -> None:
    rows = [
        {"system": "ragloop", "id": "q1", "answer": {"text": "9090 [1].", "seconds": 2.0}},
        {"system": "single", "id": "q1", "answer": {"text": NO_ANSWER, "seconds": 1.0}},
        {"system": "ragloop", "id": "q3", "answer": {"text": NO_ANSWER, "seconds": 2.0}},
        {"system": "single", "id": "q3", "answer": {"text": NO_ANSWER, "seconds": 1.0}},
        {"system": "single", "id": "gone", "answer": {"text": "x", "seconds": 1.0}},
    ]
    records = records_of(rows, {q.id: q for q in (PORT, WAL, OUT)})
    assert [r.scored.verdict for r in records["ragloop"]] == [Verdict.RIGHT, Verdict.RIGHT]
    assert paired(records["ragloop"], records["single"]) == (1, 0)


def test_the_figures_can_be_written_at_replayed_bars() -> None:
    assert replayed_bars(parse_args(["--at-floor", "0.6"])) == Bars(floor=0.6)
    assert replayed_bars(parse_args(["--at-support", "0.5"])) == Bars(support=0.5)
    assert replayed_bars(parse_args([])) is None
    with pytest.raises(SystemExit):
        parse_args(["--at-match", "1.5"])


def test_old_runs_name_ungraded_plain(tmp_path: Path) -> None:
    runs = RunsFile(tmp_path / "runs.jsonl")
    runs.append({"system": "plain", "id": "q1", "answer": {"text": "9090.", "seconds": 1.0}})
    runs.append({"system": "ragloop", "id": "q1", "answer": {"text": "9090.", "seconds": 2.0}})
    assert [row["system"] for row in runs.rows()] == [UNGRADED, RAGLOOP]
    assert set(records_of(runs.rows(), {PORT.id: PORT})) == {UNGRADED, RAGLOOP}
    assert parse_args(["--systems", "ragloop,plain", "--forget", "plain"]).systems == [
        RAGLOOP,
        UNGRADED,
    ]
    assert parse_args([]).systems == [RAGLOOP, SINGLE, UNGRADED, STUFFED, CEILING]


def made(question: EvalQuestion, text: str, calls: int = 1, error: str = "") -> EvalRecord:
    return EvalRecord(
        question, EvalAnswer(text, 1.0, model_calls=calls), score(question, text), error
    )


def test_the_figures_hold_the_reading_ceiling_calls_and_ragloop_against_stuffed() -> None:
    records = {
        RAGLOOP: [made(PORT, "9090 [1].", 8), made(WAL, NO_ANSWER, 6), made(OUT, NO_ANSWER, 4)],
        STUFFED: [made(PORT, "Port 80.", 1), made(WAL, "Yes, it is.", 1), made(OUT, "Click.", 1)],
        CEILING: [made(PORT, "9090.", 1), made(WAL, "Yes, on.", 1)],
        UNGRADED: [made(PORT, "", 0, error="timed out"), made(WAL, NO_ANSWER, 3)],
    }
    figures = userqa_figures(records)
    assert figures["userqa_reading_ceiling"] == 1.0  # of the 2 answerable questions asked
    assert figures["userqa_ragloop_of_ceiling"] == 0.5
    assert figures["userqa_calls_per_query_ragloop"] == 6.0
    assert figures["userqa_calls_per_query_ungraded"] == 3.0  # the failed answer made none
    assert figures["userqa_calls_per_query_stuffed"] == 1.0
    assert figures["userqa_questions_ceiling"] == 2 and figures["userqa_right_ceiling"] == 1.0
    # ragloop refuses what stuffed answers wrong (the out-of-scope one), misses the yes-no one
    assert (
        figures["userqa_ragloop_vs_stuffed_wins"],
        figures["userqa_ragloop_vs_stuffed_losses"],
    ) == (2, 1)
    assert "userqa_loop_wins" not in figures
    shown = render(records)
    assert "ragloop right 1 of 2 answerable = 0.50 × the reading ceiling (2 of 2)" in shown
    assert "ragloop vs stuffed (plain RAG): 2 wins, 1 losses" in shown


def read(question: EvalQuestion, prompt_tokens: int, cached: int) -> EvalRecord:
    answer = EvalAnswer("9090.", 1.0, prompt_tokens=prompt_tokens, cached_prompt_tokens=cached)
    return EvalRecord(question, answer, score(question, "9090."))


def test_the_figures_hold_the_prompt_tokens_evaluated_and_the_cached_share() -> None:
    records = {
        RAGLOOP: [read(PORT, 1000, 600), read(WAL, 600, 200)],
        STUFFED: [read(PORT, 500, 0), read(WAL, 700, 0)],
        SINGLE: [made(PORT, "9090.")],  # a run from before prompt tokens were recorded
    }
    figures = userqa_figures(records)
    assert figures["userqa_prompt_tokens_evaluated_per_query_ragloop"] == 400.0  # (400 + 400) / 2
    assert figures["userqa_cached_prompt_share_ragloop"] == 0.5  # 800 of 1,600
    assert figures["userqa_prompt_tokens_evaluated_per_query_stuffed"] == 600.0
    assert figures["userqa_cached_prompt_share_stuffed"] == 0.0
    assert figures["userqa_prompt_tokens_evaluated_per_query_single"] is None


def test_the_figures_hold_where_the_answers_were_lost() -> None:
    seen = {"retrieved": True, "passed": True, "read": True}
    answered = EvalAnswer("Port 80.", 1.0, reach=seen)
    refused = EvalAnswer(NO_ANSWER, 1.0, reach=seen, refused_by="support")
    records = {
        RAGLOOP: [
            EvalRecord(PORT, answered, score(PORT, answered.text)),
            EvalRecord(WAL, refused, score(WAL, refused.text)),
        ],
        SINGLE: [made(PORT, "9090 [1].")],  # shows no passages
    }
    figures = userqa_figures(records)
    assert figures["userqa_text_reached_ragloop"] == 1.0
    assert figures["userqa_refused_with_text_ragloop"] == 0.5  # 1 of the 2 answerable
    assert figures["userqa_funnel"]["ragloop"]["lost"]["written_wrong"] == 1
    assert figures["userqa_funnel"]["ragloop"]["refused_by"] == {"support": 1}
    assert "userqa_text_reached_single" not in figures
