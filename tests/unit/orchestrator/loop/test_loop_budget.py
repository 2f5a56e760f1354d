"""The time budget: deadlines handed to every stage call, the slice kept for generation, and how
a query that runs out of time ends — with what passed, or saying that nothing did."""

from __future__ import annotations

import asyncio
import math

import pytest

from ragloop.core import context
from ragloop.core.domain import Answer, Document, RetrievalResult
from ragloop.core.errors import DependencyTimeout
from ragloop.core.leads import Decision
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.loop.budget import Budget
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, Outcome, StageFailure
from ragloop.orchestrator.loop.events import AnswerToken, NodeFinished
from tests.unit.fakes import (
    BlockingDictGrader,
    DictGrader,
    EchoGenerator,
    EventRecorder,
    RaisingGrader,
    ScriptedRetriever,
    ScriptedRewriter,
    StallingGenerator,
    StallingRetriever,
    doc,
    partial_pass_policy,
)

PASS = (True, 0.9)
FAIL = (False, 0.2)
NOTHING_PASSED = "No answer: the time budget ran out before any passage passed grading."


@pytest.mark.parametrize(
    ("total_s", "reserve_setting_s", "reserve_s"),
    [(300, 60, 60), (60, 60, 30), (10, 60, 5), (1, 0.2, 0.2)],
)
def test_generation_keeps_its_reserve_but_at_most_half_the_budget(
    total_s: float, reserve_setting_s: float, reserve_s: float
) -> None:
    budget = Budget.start(total_s, reserve_setting_s)

    assert budget.reserve_s == reserve_s
    assert budget.deadline == budget.started + total_s
    assert budget.rounds_deadline == pytest.approx(budget.deadline - reserve_s)


async def test_every_stage_call_runs_under_the_deadline_of_its_phase() -> None:
    """Rounds end 60 s before the 200 s budget; generation may use all of it."""
    seen: dict[str, float] = {}

    class Retriever(ScriptedRetriever):
        async def retrieve(self, query: str, **options: object) -> RetrievalResult:
            seen["retrieve"] = context.time_left(math.inf)
            return RetrievalResult([doc("a")], 1)

    class Generator(EchoGenerator):
        async def generate(
            self,
            question: str,
            documents: list[Document],
            instructions: str = "",
            *,
            decision: Decision | None = None,
        ) -> Answer:
            seen["generate"] = context.time_left(math.inf)
            return await super().generate(question, documents, instructions)

    loop = CorrectiveLoop(
        LoopStages(Retriever({}), DictGrader({"a": PASS}), ScriptedRewriter([]), Generator())
    )

    result = await loop.run("q", partial_pass_policy(time_budget_s=200, generation_reserve_s=60))

    assert result.outcome is Outcome.PASSED
    assert 0 < seen["retrieve"] <= 140
    assert 140 < seen["generate"] <= 200
    assert context.deadline.get() is None  # only during the calls


async def test_budget_spent_in_the_first_retrieval_answers_that_nothing_passed() -> None:
    retriever = StallingRetriever({}, stall_on="q")
    generator = EchoGenerator()
    events = EventRecorder()
    loop = CorrectiveLoop(LoopStages(retriever, DictGrader({}), ScriptedRewriter([]), generator))

    result = await loop.run("q", partial_pass_policy(time_budget_s=0.2), on_event=events)

    assert result.outcome is Outcome.BUDGET_EXHAUSTED
    assert result.answer.text == NOTHING_PASSED
    assert result.answer.grounded is False and result.answer.citations == []
    assert generator.calls == []  # nothing to answer from: no generation
    assert result.trace.decision_path == ["retrieve"]
    (retrieval,) = result.trace.node_executions
    assert retrieval.status == "error"
    assert retrieval.details == {
        "error": "retrieve did not finish within the request's time budget"
    }
    assert result.final_round is None
    assert retriever.stall.cancelled.is_set()  # the call was given up, not left running
    assert events.events[-1] == AnswerToken(NOTHING_PASSED)


async def test_budget_spent_mid_loop_answers_from_what_passed_so_far() -> None:
    """Round 1 passes b only (1/2); the rewritten query's retrieval outlasts the rounds' part of
    the budget; generation still gets its reserved slice and answers from b."""
    retriever = StallingRetriever({"q": [doc("a"), doc("b")]}, stall_on="q2")
    rewriter = ScriptedRewriter(["q2"])
    generator = EchoGenerator()
    events = EventRecorder()
    loop = CorrectiveLoop(
        LoopStages(retriever, DictGrader({"a": FAIL, "b": PASS}), rewriter, generator)
    )

    result = await loop.run(
        "q", partial_pass_policy(time_budget_s=1, generation_reserve_s=0.5), on_event=events
    )

    assert result.outcome is Outcome.BUDGET_EXHAUSTED
    assert result.trace.decision_path == ["retrieve", "grade", "rewrite", "retrieve", "generate"]
    assert [(n.node, n.round, n.status) for n in result.trace.node_executions] == [
        ("retrieve", 1, "ok"),
        ("grade", 1, "ok"),
        ("rewrite", 1, "ok"),
        ("retrieve", 2, "error"),
        ("generate", 2, "ok"),
    ]
    assert generator.document_ids == ["b"]
    assert result.answer.text == "b" and result.answer.grounded is True
    assert result.final_query == "q2"
    assert result.final_round is not None and result.final_round.query == "q"
    assert retriever.stall.cancelled.is_set()
    failed = [e for e in events.events if isinstance(e, NodeFinished) and e.status == "error"]
    assert [(e.node, e.round) for e in failed] == [("retrieve", 2)]


async def test_grading_that_completes_past_the_rounds_deadline_starts_no_rewrite() -> None:
    """Grading blocks the event loop (it cannot be interrupted) past the rounds' deadline."""
    rewriter = ScriptedRewriter(["q2"])
    generator = EchoGenerator()
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": [doc("a"), doc("b")]}),
            BlockingDictGrader({"a": (True, 0.5)}, block_s=0.6),  # 1/2 < 0.6: would rewrite
            rewriter,
            generator,
        )
    )

    result = await loop.run("q", partial_pass_policy(time_budget_s=1, generation_reserve_s=0.5))

    assert result.outcome is Outcome.BUDGET_EXHAUSTED
    assert rewriter.calls == []
    assert result.trace.decision_path == ["retrieve", "grade", "generate"]
    assert generator.document_ids == ["a"]


async def test_generation_that_outlasts_the_budget_is_replaced_by_an_honest_answer() -> None:
    generator = StallingGenerator()
    events = EventRecorder()
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": [doc("a", source="notes/cats.md"), doc("b")]}),
            DictGrader({"a": PASS, "b": PASS}),
            ScriptedRewriter([]),
            generator,
        )
    )

    result = await loop.run("q", partial_pass_policy(time_budget_s=0.4), on_event=events)

    assert result.outcome is Outcome.BUDGET_EXHAUSTED  # although the round passed
    assert result.answer.text == (
        "No answer: the time budget ran out before the answer was written. "
        "Passages that passed grading came from: notes/cats.md, b.md."
    )
    assert result.answer.grounded is False
    assert [(n.node, n.status) for n in result.trace.node_executions][-1] == ("generate", "error")
    assert generator.stall.cancelled.is_set()
    tokens = [e for e in events.events if isinstance(e, AnswerToken)]
    # The streamed start of the answer, then the honest answer replacing it.
    assert tokens == [AnswerToken("The answer"), AnswerToken(result.answer.text, restart=True)]


async def test_a_stage_timing_out_on_its_own_is_a_failure_not_the_budget() -> None:
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": [doc("a")]}),
            RaisingGrader(DependencyTimeout("grader: the model did not answer in 120 s")),
            ScriptedRewriter([]),
            EchoGenerator(),
        )
    )

    with pytest.raises(StageFailure) as caught:
        await loop.run("q", partial_pass_policy(time_budget_s=300))

    assert (caught.value.node, caught.value.kind) == ("grade", "timeout")
    assert caught.value.message == "grader: the model did not answer in 120 s"


async def test_a_slow_in_process_stage_is_cancelled_at_the_deadline() -> None:
    """No gRPC deadline reaches an in-process stage: the loop's own timeout stops it."""
    retriever = StallingRetriever({"q": [doc("a")]}, stall_on="q")
    loop = CorrectiveLoop(
        LoopStages(retriever, DictGrader({}), ScriptedRewriter([]), EchoGenerator())
    )

    task = asyncio.create_task(loop.run("q", partial_pass_policy(time_budget_s=0.2)))
    await asyncio.wait_for(retriever.stall.cancelled.wait(), 10)

    assert (await task).outcome is Outcome.BUDGET_EXHAUSTED
