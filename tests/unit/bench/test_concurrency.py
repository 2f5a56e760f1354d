"""bench.concurrency's pure part: the figures of a run from its recorded timings and verdicts,
which runs are made, the seeded subset, the quality.json table and its headline figures, and the
client threads (with answerers that need no server)."""

from __future__ import annotations

import threading

import pytest

from bench.concurrency import (
    Answered,
    Setup,
    answer_all,
    chosen_questions,
    fastest,
    headline_figures,
    merged_table,
    parse_args,
    recorded,
    run_figures,
    setups,
    table_text,
)
from bench.userqa_systems import RAGLOOP, STUFFED
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.cli.evaluation.runner import EvalAnswer
from ragloop.cli.evaluation.scoring import Verdict


def answered(seconds: float, verdict: Verdict = Verdict.RIGHT, **flags: bool) -> Answered:
    return Answered(seconds, verdict, flags.get("refused", False), flags.get("failed", False))


def test_answers_per_minute_and_percentiles_come_from_the_answers_made() -> None:
    answers = [
        answered(10.0),
        answered(20.0, Verdict.WRONG),
        answered(30.0, Verdict.MISSING, refused=True),
        answered(40.0),
        answered(0.5, Verdict.MISSING, failed=True),  # an error: not made, not timed
    ]
    figures = run_figures(answers, wall_s=120.0)
    assert figures["questions"] == 5
    assert (figures["answers"], figures["errors"]) == (4, 1)
    assert figures["answers_per_min"] == 2.0  # 4 answers in 2 minutes
    assert figures["p50_s"] == 25.0
    assert figures["p95_s"] == pytest.approx(38.5)
    assert (figures["right"], figures["wrong"], figures["refused"]) == (2, 1, 1)
    assert figures["wall_s"] == 120.0


def test_a_run_without_answers_has_no_timings() -> None:
    figures = run_figures([answered(1.0, Verdict.MISSING, failed=True)], wall_s=3.0)
    assert figures["answers_per_min"] == 0.0
    assert figures["p50_s"] is None and figures["p95_s"] is None


def test_stuffed_is_measured_at_its_slots_only() -> None:
    runs = setups([RAGLOOP, STUFFED], slots=[1, 2, 4], clients=[1, 4], stuffed_slots=2)
    assert [(s.system, s.slots, s.clients) for s in runs if s.system == STUFFED] == [
        (STUFFED, 2, 1),
        (STUFFED, 2, 4),
    ]
    assert len([s for s in runs if s.system == RAGLOOP]) == 6
    assert Setup(RAGLOOP, 2, 4).key == "S=2,C=4"


def questions() -> list[EvalQuestion]:
    kinds = ("how-to", "what", "out-of-scope")
    return [EvalQuestion(f"q{n:02}", "?", kinds[n % 3], n % 3 != 2) for n in range(30)]


def test_the_subset_is_seeded_every_kind_in_turn_and_a_smaller_one_a_prefix() -> None:
    small, small_warm_up = chosen_questions(questions(), 4, seed=55)
    large, _ = chosen_questions(questions(), 12, seed=55)
    assert large[:4] == small
    assert small_warm_up == large[4]
    assert small_warm_up not in small
    assert [q.kind for q in large[:3]] == [q.kind for q in large[3:6]]  # kinds in turn
    assert len({q.kind for q in large[:3]}) == 3
    assert chosen_questions(reversed(questions()), 12, seed=55)[0] == large
    assert chosen_questions(questions(), 12, seed=56)[0] != large
    everything, none_left = chosen_questions(questions(), 30, seed=55)
    assert len(everything) == 30 and none_left is None


def test_the_table_keeps_every_system_and_the_headline_is_at_four_clients() -> None:
    table = merged_table({}, Setup(RAGLOOP, 1, 4), {"answers_per_min": 5.0})
    table = merged_table(table, Setup(STUFFED, 1, 4), {"answers_per_min": 9.0})
    table = merged_table(table, Setup(RAGLOOP, 2, 4), {"answers_per_min": 6.0})
    table = merged_table(table, Setup(RAGLOOP, 1, 1), {"answers_per_min": 4.0})
    assert set(table["S=1,C=4"]) == {RAGLOOP, STUFFED}
    assert headline_figures(table, slots=1) == {
        "concurrent4_answers_per_min_ragloop": 5.0,
        "concurrent4_answers_per_min_stuffed": 9.0,
    }
    assert headline_figures(table, slots=2) == {"concurrent4_answers_per_min_ragloop": 6.0}
    assert headline_figures(table, slots=4) == {}
    assert fastest(table, RAGLOOP, 4) == "S=2,C=4"
    assert fastest(table, STUFFED, 1) is None


def test_a_run_is_recorded_only_with_the_same_commit_and_questions() -> None:
    stamp = {"commit": "abc", "questions": 12, "seed": 55}
    table = merged_table({}, Setup(RAGLOOP, 1, 4), {"answers_per_min": 5.0} | stamp)
    assert recorded(table, Setup(RAGLOOP, 1, 4), stamp)
    assert not recorded(table, Setup(RAGLOOP, 1, 4), stamp | {"commit": "abd"})
    assert not recorded(table, Setup(RAGLOOP, 1, 4), stamp | {"questions": 2})
    assert not recorded(table, Setup(STUFFED, 1, 4), stamp)


def test_the_printed_table_has_a_line_a_run() -> None:
    figures = run_figures([answered(12.0)], wall_s=12.0)
    table = merged_table({}, Setup(RAGLOOP, 4, 1), figures)
    table = merged_table(table, Setup(RAGLOOP, 1, 4), figures)
    lines = table_text(table).splitlines()
    assert lines[0].split()[:4] == ["system", "S", "C", "answers"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["ragloop", "1", "4"],
        ["ragloop", "4", "1"],
    ]
    assert "5.0" in lines[1].split()  # answers a minute


class PairedAnswerer:
    """Answers only while another client answers too (a barrier of two), noting the thread."""

    def __init__(self, barrier: threading.Barrier, threads: set[int]) -> None:
        self.barrier = barrier
        self.threads = threads

    def answer(self, question: EvalQuestion) -> EvalAnswer:
        self.barrier.wait(timeout=10)
        self.threads.add(threading.get_ident())
        if question.id == "q03":
            raise RuntimeError("the server went away")
        return EvalAnswer("yes", 0.1)


def test_each_question_is_answered_once_by_concurrent_clients() -> None:
    barrier, threads = threading.Barrier(2), set[int]()
    asked = questions()[:6]
    clients = [PairedAnswerer(barrier, threads), PairedAnswerer(barrier, threads)]
    records, wall_s = answer_all(asked, clients)
    assert sorted(r.question.id for r in records) == [q.id for q in asked]
    assert len(threads) == 2
    assert [r.error for r in records if r.error] == ["the server went away"]
    assert wall_s > 0


def test_the_options() -> None:
    args = parse_args([])
    assert (args.slots, args.clients, args.systems) == ([1, 2, 4], [1, 4], [RAGLOOP, STUFFED])
    assert args.questions == 10
    tiny = parse_args(["--slots", "1,2", "--clients", "1,2", "--systems", "ragloop"])
    assert (tiny.slots, tiny.clients, tiny.systems) == ([1, 2], [1, 2], [RAGLOOP])
    for wrong in (["--slots", "0,2"], ["--systems", "single"], ["--questions", "0"]):
        with pytest.raises(SystemExit):
            parse_args(wrong)
