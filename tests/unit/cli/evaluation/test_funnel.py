"""Where an answer was lost: the reach of its text through the passages each step saw, the
place of the loss, and the figures and table lines the report makes of them."""

from __future__ import annotations

import pytest

from ragloop.cli.evaluation.funnel import Evidence, Loss, loss, reach
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.cli.evaluation.report import summary, table
from ragloop.cli.evaluation.runner import EvalAnswer, EvalRecord
from ragloop.cli.evaluation.scoring import score
from ragloop.core.answers import NO_ANSWER

HOW = EvalQuestion(
    "q1", "How do I keep data longer?", "how-to", True, (("retention.time",), ("15d", "15 days"))
)
YES = EvalQuestion("q2", "Is WAL compression on?", "yes-no", True, (("yes",), ("compression",)))
ONLY_YES = EvalQuestion("q3", "Is it on?", "yes-no", True, (("yes",),))
OUT = EvalQuestion("q4", "How do I import a Grafana dashboard?", "out-of-scope", False)

HOLDS = "Set --storage.tsdb.Retention.Time\n to  15 days [2]."
ELSEWHERE = "Prometheus scrapes targets."


def test_a_step_reaches_the_text_when_its_passages_hold_every_group() -> None:
    evidence = Evidence(
        retrieved=(ELSEWHERE, HOLDS), passed=("retention.time is a flag", "keep 15d"), read=()
    )
    # Case and runs of white space ignored, markers removed; any one alternative matches a group;
    # groups may be in different passages; nothing read holds nothing.
    assert reach(HOW, evidence) == {"retrieved": True, "passed": True, "read": False}
    assert reach(HOW, Evidence(retrieved=("retention.time only",)))["retrieved"] is False


def test_a_match_never_spans_two_passages() -> None:
    assert reach(HOW, Evidence(retrieved=("retention.time 15", "days")))["retrieved"] is False


def test_a_yes_no_questions_lead_is_not_looked_for_in_the_passages() -> None:
    found = reach(YES, Evidence(retrieved=("WAL compression is enabled by default.",)))
    assert found["retrieved"] is True
    assert reach(ONLY_YES, Evidence(retrieved=(HOLDS,))) == dict.fromkeys(
        ("retrieved", "passed", "read")
    )


def test_reach_is_unknown_without_passages_or_for_an_unanswerable_question() -> None:
    assert reach(HOW, Evidence()) == {"retrieved": None, "passed": None, "read": None}
    assert reach(HOW, Evidence(retrieved=(HOLDS,))) == {
        "retrieved": True,
        "passed": None,
        "read": None,
    }
    assert set(reach(OUT, Evidence.ungraded([NO_ANSWER])).values()) == {None}


def test_an_ungraded_system_hands_the_writer_every_passage() -> None:
    assert reach(HOW, Evidence.ungraded([ELSEWHERE, HOLDS])) == dict.fromkeys(
        ("retrieved", "passed", "read"), True
    )


# How far an answer's text went: nowhere, retrieved only, passed but not read, all the way.
NOWHERE = {"retrieved": False, "passed": False, "read": False}
RETRIEVED = {"retrieved": True, "passed": False, "read": False}
PASSED = {"retrieved": True, "passed": True, "read": False}
ALL_IN = {"retrieved": True, "passed": True, "read": True}
RIGHT = "Set --storage.tsdb.retention.time to 15d [1]."
WRONG = "Set --storage.tsdb.retention.time [1]."


@pytest.mark.parametrize(
    ("flags", "answer", "refused_by", "place"),
    [
        (NOWHERE, NO_ANSWER, "nothing_passed", Loss.NOT_RETRIEVED),
        (RETRIEVED, WRONG, "", Loss.NOT_PASSED),
        (PASSED, NO_ANSWER, "answer_floor", Loss.REFUSED_BEFORE_WRITING),
        (PASSED, WRONG, "", Loss.NOT_READ),
        # A server that does not say who refused: where the passages went is all there is.
        (PASSED, NO_ANSWER, "unknown", Loss.NOT_READ),
        (ALL_IN, NO_ANSWER, "support", Loss.REFUSED_AFTER_WRITING),
        (ALL_IN, WRONG, "", Loss.WRITTEN_WRONG),
        (ALL_IN, RIGHT, "", Loss.RIGHT),
        (NOWHERE, RIGHT, "", Loss.RIGHT),  # a right answer lost nothing, wherever its text was
        # Unknown steps lose nothing.
        ({}, NO_ANSWER, "out_of_time", Loss.REFUSED_BEFORE_WRITING),
        ({}, NO_ANSWER, "writer", Loss.REFUSED_AFTER_WRITING),
        ({}, WRONG, "", Loss.WRITTEN_WRONG),
    ],
)
def test_the_loss_is_the_first_step_that_lost_the_answer(
    flags: dict[str, bool | None], answer: str, refused_by: str, place: Loss
) -> None:
    assert loss(HOW, score(HOW, answer), flags, refused_by) is place


def test_an_unanswerable_question_has_no_loss() -> None:
    assert loss(OUT, score(OUT, "Use the import button."), ALL_IN, "") is None


def _record(
    question: EvalQuestion,
    text: str,
    flags: dict[str, bool | None],
    refused_by: str = "",
    error: str = "",
) -> EvalRecord:
    answer = EvalAnswer(text, 1.0, reach=flags, refused_by=refused_by)
    return EvalRecord(question, answer, score(question, text), error)


def test_the_report_sums_the_funnel_over_answerable_questions() -> None:
    records = [
        _record(HOW, RIGHT, ALL_IN),
        _record(HOW, NO_ANSWER, PASSED, "answer_floor"),
        _record(HOW, NO_ANSWER, ALL_IN, "support"),
        _record(HOW, WRONG, NOWHERE),
        _record(YES, "Yes. Compression is on [1].", ALL_IN),
        _record(YES, NO_ANSWER, RETRIEVED),
        _record(YES, "", {}, error="HTTP 503"),
        _record(OUT, NO_ANSWER, {}, "nothing_passed"),
    ]
    result = summary(records)
    funnel = result["all"]["funnel"]
    assert funnel["answerable"] == 7
    assert (funnel["retrieved"], funnel["passed"], funnel["read"]) == (5, 4, 3)
    assert (funnel["answered"], funnel["right"]) == (3, 2)
    assert funnel["lost"] == {
        "not_retrieved": 1,
        "not_passed": 1,
        "refused_before_writing": 1,
        "not_read": 0,
        "refused_after_writing": 1,
        "written_wrong": 0,
        "error": 1,
        "right": 2,
    }
    # The out-of-scope refusal is no loss; a refusal whose check is not known says so.
    assert funnel["refused_by"] == {"answer_floor": 1, "support": 1, "unknown": 1}
    assert funnel["refused_with_text"] == 2
    assert result["by_kind"]["yes-no"]["funnel"]["lost"]["error"] == 1
    assert result["by_kind"]["out-of-scope"]["funnel"]["answerable"] == 0

    lines = table(result).splitlines()
    lost = lines.index(next(line for line in lines if line.startswith("where answers were lost")))
    assert lines[lost].split()[-3:] == ["all", "how-to", "yes-no"]  # no out-of-scope column
    assert lines[lost + 1].split() == ["not_retrieved", "1", "1", "0"]
    assert lines[lost + 8].split() == ["right", "2", "1", "1"]
    assert lines[lost + 9] == "refused by: answer_floor 1, support 1, unknown 1"
    assert lines[lost + 10] == (
        "answer's text retrieved: 5, passed: 4, reached the writer: 3 of 7 answerable; "
        "refused with the text passed: 2"
    )


def test_without_passages_the_reach_is_shown_unknown() -> None:
    text = table(summary([_record(HOW, NO_ANSWER, {}, "writer")]))
    assert "refused by: writer 1" in text
    assert "answer's text retrieved: -, passed: -, reached the writer: - of 1 answerable" in text


def test_only_unanswerable_questions_make_no_loss_table() -> None:
    assert "where answers were lost" not in table(summary([_record(OUT, NO_ANSWER, {})]))


def test_records_keep_their_loss_and_old_answers_load_without_the_new_fields() -> None:
    record = _record(HOW, NO_ANSWER, ALL_IN, "support")
    row = record.as_json()
    assert row["loss"] == "refused_after_writing"
    assert row["answer"]["reach"] == ALL_IN and row["answer"]["refused_by"] == "support"
    old = EvalAnswer(**{"text": WRONG, "seconds": 2.0, "decision_path": ()})
    assert old.reach == {} and old.refused_by == ""
    assert EvalRecord(HOW, old, score(HOW, WRONG)).loss is Loss.WRITTEN_WRONG
