"""`ragloop eval`'s question files, scoring and figures (pure logic)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragloop.cli.errors import UsageError
from ragloop.cli.evaluation.questions import EvalQuestion, load_questions, parse_question
from ragloop.cli.evaluation.report import figures, summary, table
from ragloop.cli.evaluation.runner import EvalAnswer, EvalRecord, evaluate
from ragloop.cli.evaluation.scoring import Verdict, score
from ragloop.core.answers import NO_ANSWER

HOW = EvalQuestion("q1", "How do I reload the config?", "how-to", True, (("SIGHUP", "/-/reload"),))
YES = EvalQuestion("q2", "Is WAL compression on by default?", "yes-no", True, (("yes",), ("wal",)))
OUT = EvalQuestion("q3", "How do I import a Grafana dashboard?", "out-of-scope", False)


def test_an_answer_holding_every_group_is_right_case_and_spaces_ignored() -> None:
    assert score(HOW, "Send the process a  sighup [1].").verdict is Verdict.RIGHT
    assert score(HOW, "POST to /-/reload [2].").verdict is Verdict.RIGHT
    assert score(HOW, "Restart it.").verdict is Verdict.WRONG
    assert score(HOW, "Restart it.").unmatched == (("SIGHUP", "/-/reload"),)


def test_a_refusal_of_an_answerable_question_is_missing_and_of_an_unanswerable_one_right() -> None:
    assert score(HOW, NO_ANSWER).verdict is Verdict.MISSING
    assert score(OUT, NO_ANSWER).verdict is Verdict.RIGHT
    assert score(OUT, "Use the import button [1].").verdict is Verdict.WRONG


def test_a_yes_no_answer_must_begin_with_the_right_word() -> None:
    assert score(YES, "Yes. WAL compression is enabled by default [1].").verdict is Verdict.RIGHT
    assert score(YES, "WAL compression is on; yes [1].").verdict is Verdict.WRONG
    assert score(YES, "No, the WAL is not compressed [1].").verdict is Verdict.WRONG


def test_form_problems_are_counted() -> None:
    scored = score(
        HOW, "Yes. Send SIGHUP [1]. Send SIGHUP. Then it is reloaded while also enab [2]"
    )
    assert scored.spurious_lead
    assert scored.repeated == ("Send SIGHUP.",)
    assert scored.cut_off == ("Then it is reloaded while also enab",)
    assert not score(YES, "Yes. WAL compression is on [1].").spurious_lead
    assert score(HOW, "Send `SIGHUP` [1]. Or call /-/reload.").cut_off == ()


def _line(**fields: object) -> str:
    return json.dumps({"id": "a", "question": "Why?", "must_include": [["x"]], **fields})


def test_a_question_file_is_read_and_each_problem_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    path.write_text(_line(history=history) + "\n\n" + _line(id="b", answerable=False) + "\n")
    first, second = load_questions(path)
    assert first.history == (("user", "Hi"), ("assistant", "Hello"))
    assert not second.answerable and second.must_include == ()
    problems = {
        "{": "not valid JSON",
        _line(must_include=[]): "needs must_include",
        _line(kind="yes-no"): 'first must_include group is ["yes"] or ["no"]',
        _line(history=[{"role": "bot", "content": "x"}]): "role of user or assistant",
        _line(question=""): "question must be a non-empty string",
    }
    for text, message in problems.items():
        path.write_text(_line(id="ok") + "\n" + text + "\n")
        with pytest.raises(UsageError, match=re.escape(message)) as raised:
            load_questions(path)
        assert str(raised.value).startswith(f"{path}:2: ")
    path.write_text(_line() + "\n" + _line() + "\n")
    with pytest.raises(UsageError, match="used twice"):
        load_questions(path)
    with pytest.raises(UsageError, match="cannot read"):
        load_questions(tmp_path / "missing.jsonl")


def test_parse_question_keeps_the_shared_data_schema() -> None:
    question = parse_question(
        {
            "id": "pq-1",
            "question": "Does it?",
            "kind": "yes-no",
            "answerable": True,
            "must_include": [["no"], ["holt_winters"]],
            "gold_sources": ["docs/a.md"],
            "history": [],
        }
    )
    assert question.must_include == (("no",), ("holt_winters",))


class Scripted:
    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    def answer(self, question: EvalQuestion) -> EvalAnswer:
        if question.id not in self.answers:
            raise RuntimeError("stage down")
        return EvalAnswer(self.answers[question.id], seconds=2.0)


def test_figures_score_right_minus_wrong_by_kind() -> None:
    answers = {"q1": "Send SIGHUP [1].", "q2": "Maybe [1]."}
    records = list(evaluate([HOW, YES, OUT], Scripted(answers), failure=str))
    assert [r.scored.verdict for r in records] == [Verdict.RIGHT, Verdict.WRONG, Verdict.MISSING]
    assert records[2].error == "stage down"  # an unanswered question is never a right refusal
    overall = figures(records)
    assert (overall["right"], overall["wrong"], overall["missing"]) == (1, 1, 1)
    assert overall["score"] == 0.0 and overall["errors"] == 1 and overall["p50_s"] == 2.0
    result = summary(records)
    assert list(result["by_kind"]) == ["how-to", "yes-no", "out-of-scope"]
    assert result["by_kind"]["how-to"]["score"] == 1.0
    text = table(result)
    assert text.splitlines()[0].split()[:3] == ["kind", "n", "right"]
    assert "score +0.000 (right 0.333, wrong 0.333)" in text


def test_an_unnamed_failure_ends_the_run() -> None:
    with pytest.raises(RuntimeError):
        list(evaluate([OUT], Scripted({})))


def test_records_serialise_with_their_verdict() -> None:
    record = EvalRecord(HOW, EvalAnswer("Send SIGHUP.", 1.5), score(HOW, "Send SIGHUP."))
    row = record.as_json()
    assert row["verdict"] == "right" and row["answer"]["seconds"] == 1.5
