"""A round that passed but did not answer: the loop rewrites toward what its passages miss, keeps
what passed, and answers again; every such decision is visible in the trace and the events."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import replace

import pytest

from ragloop.core.answers import NO_ANSWER
from ragloop.core.domain import Answer, AnswerDelta, Citation, Document
from ragloop.core.leads import Decision
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, Outcome
from ragloop.orchestrator.loop.events import AnswerToken, NodeFinished
from tests.unit.fakes import DictGrader, EventRecorder, ScriptedRetriever, ScriptedRewriter, doc

QUESTION = "Who founded the company that built the engine, and when?"
PASS = (True, 0.9)
FAIL = (False, 0.1)
REFUSAL = NO_ANSWER


class AnswersWhenGiven:
    """Cites every passage once it was given ``needed``; refuses (ungrounded) before."""

    def __init__(self, needed: str) -> None:
        self.needed = needed
        self.calls: list[list[str]] = []

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        self.calls.append([d.id for d in documents])
        if all(d.id != self.needed for d in documents):
            return Answer(REFUSAL, [], grounded=False)
        citations = [Citation(n, d.id, d.source, d.text) for n, d in enumerate(documents, 1)]
        return Answer("answered from " + " ".join(d.id for d in documents), citations, True)

    async def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncGenerator[AnswerDelta | Answer, None]:
        answer = await self.generate(question, documents, instructions)
        yield AnswerDelta(answer.text)
        yield answer


def policy(**changes: object) -> LoopPolicy:
    defaults: dict[str, object] = {
        "grade_pass_threshold": 0.2,
        "max_rewrite_attempts": 3,
        "max_generation_documents": 5,
        "fill_generation_context": False,  # what passed reaches the generator, unless a test fills
    }
    return LoopPolicy(**(defaults | changes))  # type: ignore[arg-type]


def stages(generator: AnswersWhenGiven) -> tuple[ScriptedRetriever, ScriptedRewriter]:
    retriever = ScriptedRetriever(
        {QUESTION: [doc("engine"), doc("noise")], "founder of the engine maker": [doc("founder")]}
    )
    return retriever, ScriptedRewriter(["founder of the engine maker"])


async def test_a_passed_round_that_cannot_answer_is_rewritten_and_answered_again() -> None:
    generator = AnswersWhenGiven("founder")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL, "founder": PASS})
    recorder = EventRecorder()

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(), on_event=recorder
    )

    assert result.trace.decision_path == [
        "retrieve", "grade", "generate", "rewrite", "retrieve", "grade", "generate",
    ]  # fmt: skip
    assert result.answer.grounded and result.outcome is Outcome.PASSED
    # What passed in round 1 is kept beside what round 2 found.
    assert sorted(generator.calls[-1]) == ["engine", "founder"]
    # The rewriter saw the passage that passed but did not answer, first.
    [call] = rewriter.calls
    assert [g.document.id for g in call.failed] == ["engine", "noise"]
    assert call.failed[0].grade.relevant is True
    rewrite_events = [
        e for e in recorder.events if isinstance(e, NodeFinished) and e.node == "rewrite"
    ]
    assert [e.details["trigger"] for e in rewrite_events] == ["unanswered"]
    [rewrite] = [n for n in result.trace.node_executions if n.node == "rewrite"]
    assert rewrite.details["trigger"] == "unanswered"
    # The second answer replaces the first one's streamed text.
    tokens = [e for e in recorder.events if isinstance(e, AnswerToken)]
    assert tokens[0].text == REFUSAL and not tokens[0].restart
    assert tokens[-1].text.startswith("answered from") and tokens[-1].restart


async def test_single_shot_never_rewrites_an_unanswered_round() -> None:
    generator = AnswersWhenGiven("founder")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(max_rewrite_attempts=0)
    )

    assert result.trace.decision_path == ["retrieve", "grade", "generate"]
    assert result.answer.text == REFUSAL and rewriter.calls == []


async def test_a_rewrite_that_finds_nothing_new_leaves_the_answer_as_it_was() -> None:
    generator = AnswersWhenGiven("founder")
    retriever = ScriptedRetriever(
        {QUESTION: [doc("engine"), doc("noise")], "engine maker": [doc("engine")]}
    )
    grader = DictGrader({"engine": PASS, "noise": FAIL})

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter(["engine maker"]), generator)
    ).run(QUESTION, policy())

    assert result.trace.decision_path == [
        "retrieve", "grade", "generate", "rewrite", "retrieve", "grade",
    ]  # fmt: skip
    assert len(generator.calls) == 1 and result.answer.text == REFUSAL


async def test_a_rewrite_whose_new_passages_all_failed_leaves_the_refusal() -> None:
    # "founder" is new, but only as a filled passage: the grader did not pass it, so a second
    # answer would come from the same evidence as the refused one (decision 0020).
    generator = AnswersWhenGiven("founder")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL, "founder": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(fill_generation_context=True, max_rewrite_attempts=1)
    )

    assert result.trace.decision_path == [
        "retrieve", "grade", "generate", "rewrite", "retrieve", "grade",
    ]  # fmt: skip
    assert generator.calls == [["engine", "noise"]] and result.answer.text == REFUSAL


class MatchedAnswers(AnswersWhenGiven):
    """``AnswersWhenGiven`` whose answers carry the generator's answer-match figure."""

    def __init__(self, needed: str, match: float | None) -> None:
        super().__init__(needed)
        self.match = match

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        answer = await super().generate(question, documents, instructions)
        return replace(answer, answer_match=self.match) if answer.grounded else answer


async def test_an_answer_after_a_refusal_under_the_match_bar_leaves_the_refusal() -> None:
    # Round 2 passed a new passage and the generator answered from it, but its answer-match
    # figure is under the loop's bar for answers after a refusal (decision 0021).
    generator = MatchedAnswers("founder", match=0.25)
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL, "founder": PASS})
    recorder = EventRecorder()

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(max_rewrite_attempts=1, answer_match_after_refusal=0.3),
        on_event=recorder,
    )  # fmt: skip

    assert len(generator.calls) == 2
    assert result.answer.text == REFUSAL and not result.answer.grounded
    assert result.answer.citations == [] and result.answer.answer_match == 0.25
    [_, second] = [n for n in result.trace.node_executions if n.node == "generate"]
    assert second.details["grounded"] is False and second.details["answer_match"] == 0.25
    assert second.details["answer_match_after_refusal"] == 0.3
    # The new answer's streamed text is taken back by the refusal.
    tokens = [e for e in recorder.events if isinstance(e, AnswerToken)]
    assert tokens[-2].text.startswith("answered from")
    assert tokens[-1].text == REFUSAL and tokens[-1].restart


@pytest.mark.parametrize("match", [0.3, 0.9, None])
async def test_an_answer_after_a_refusal_at_the_bar_or_unchecked_stands(
    match: float | None,
) -> None:
    generator = MatchedAnswers("founder", match=match)
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL, "founder": PASS})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(max_rewrite_attempts=1, answer_match_after_refusal=0.3)
    )

    assert result.answer.grounded and result.answer.text.startswith("answered from")
    assert result.answer.answer_match == match


async def test_a_first_answer_is_held_only_to_the_generators_own_bar() -> None:
    generator = MatchedAnswers("engine", match=0.25)
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(answer_match_after_refusal=0.3)
    )

    assert result.answer.grounded and rewriter.calls == []
    [first] = [n for n in result.trace.node_executions if n.node == "generate"]
    assert "answer_match_after_refusal" not in first.details


async def test_an_answer_the_generator_could_cite_is_never_rewritten() -> None:
    generator = AnswersWhenGiven("engine")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": PASS, "noise": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy()
    )

    assert result.trace.decision_path == ["retrieve", "grade", "generate"]
    assert result.answer.grounded and rewriter.calls == []


async def test_unanswered_rewrites_count_against_the_same_attempts() -> None:
    generator = AnswersWhenGiven("never-found")
    retriever = ScriptedRetriever(
        {QUESTION: [doc("engine")], "q2": [doc("second")], "q3": [doc("third")]}
    )
    grader = DictGrader({"engine": PASS, "second": PASS, "third": PASS})

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter(["q2", "q3"]), generator)
    ).run(QUESTION, policy(max_rewrite_attempts=2))

    assert len(result.trace.rewrite_history) == 2 and len(generator.calls) == 3
    assert sorted(generator.calls[-1]) == ["engine", "second", "third"]
    assert result.answer.text == REFUSAL


async def test_below_the_answer_floor_the_round_is_unanswered_and_rewritten() -> None:
    generator = AnswersWhenGiven("engine")
    retriever, rewriter = stages(generator)
    # "engine" passed, but the grader was only 55% sure it holds the answer; "founder" is sure.
    grader = DictGrader({"engine": (True, 0.55), "noise": FAIL, "founder": (True, 0.95)})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(answer_min_confidence=0.6)
    )

    # Round 1's generate node refused without a passage (and so without a model call).
    assert generator.calls == [["founder", "engine"]]  # the floor's refusal is the loop's own
    assert result.trace.decision_path[:4] == ["retrieve", "grade", "generate", "rewrite"]
    first = next(n for n in result.trace.node_executions if n.node == "generate")
    assert first.details["documents"] == 0 and first.details["best_confidence"] == 0.55
    assert result.answer.grounded


async def test_single_shot_below_the_floor_refuses_honestly() -> None:
    generator = AnswersWhenGiven("engine")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": (True, 0.55), "noise": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(answer_min_confidence=0.6, max_rewrite_attempts=0)
    )

    assert generator.calls == [] and result.answer.text == REFUSAL
    assert result.generation_documents == []  # the generator was given nothing


DECIDE = "Begin your answer with yes, no or maybe."


async def test_a_decision_asked_for_is_weighed_from_passages_below_the_floor() -> None:
    generator = AnswersWhenGiven("engine")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": (True, 0.55), "noise": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(answer_min_confidence=0.6, answer_instructions=DECIDE)
    )

    assert generator.calls == [["engine"]] and result.answer.grounded
    assert result.generation_documents[0].id == "engine"


async def test_a_decision_asked_for_is_weighed_from_the_most_similar_when_none_passed() -> None:
    generator = AnswersWhenGiven("engine")
    retriever = ScriptedRetriever(
        {
            QUESTION: [doc("noise", score=0.4), doc("engine", score=0.8)],
            "q2": [doc("far", score=0.1)],
        }
    )
    grader = DictGrader({"engine": FAIL, "noise": FAIL, "far": FAIL})

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter(["q2"]), generator)
    ).run(QUESTION, policy(max_rewrite_attempts=1, answer_instructions=DECIDE))

    assert result.outcome is Outcome.MAX_ATTEMPTS
    assert generator.calls == [["engine", "noise", "far"]]
    assert result.answer.grounded


@pytest.mark.parametrize(
    "question",
    ["Which was founded first, Arden or Bexley?", "Was Arden founded before Bexley?"],
)
async def test_a_question_that_asks_a_decision_is_weighed_when_none_passed(question: str) -> None:
    # Each passage holds one town's date: neither answers the comparison alone.
    generator = AnswersWhenGiven("arden")
    retriever = ScriptedRetriever(
        {question: [doc("bexley", score=0.6), doc("arden", score=0.7)], "q2": []}
    )
    grader = DictGrader({"arden": FAIL, "bexley": FAIL})

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter(["q2"]), generator)
    ).run(question, policy(max_rewrite_attempts=1, answer_min_confidence=0.6))

    assert generator.calls == [["arden", "bexley"]]
    assert result.answer.grounded


async def test_without_a_decision_nothing_passed_is_refused_without_the_generator() -> None:
    generator = AnswersWhenGiven("engine")
    retriever, rewriter = stages(generator)
    grader = DictGrader({"engine": FAIL, "noise": FAIL, "founder": FAIL})

    result = await CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)).run(
        QUESTION, policy(max_rewrite_attempts=1, answer_instructions="Answer in French.")
    )

    assert generator.calls == [] and result.answer.text == REFUSAL


async def test_a_filled_context_gives_the_generator_the_failed_passages_after_the_passed() -> None:
    generator = AnswersWhenGiven("bridge")
    retriever = ScriptedRetriever(
        {
            QUESTION: [
                doc("noise", score=0.3),
                doc("engine", score=0.5),
                doc("bridge", score=0.7),
                doc("far", score=0.1),
            ]
        }
    )
    grader = DictGrader({"engine": PASS, "bridge": FAIL, "noise": FAIL, "far": FAIL})

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter([]), generator)
    ).run(QUESTION, policy(fill_generation_context=True, max_generation_documents=3))

    # The passed passage first, then the failed ones most similar first, up to the limit.
    assert generator.calls == [["engine", "bridge", "noise"]]
    assert result.answer.grounded and result.trace.decision_path[-1] == "generate"


async def test_without_the_fill_only_passed_passages_reach_the_generator() -> None:
    generator = AnswersWhenGiven("bridge")
    retriever = ScriptedRetriever({QUESTION: [doc("engine", score=0.5), doc("bridge")]})
    grader = DictGrader({"engine": PASS, "bridge": FAIL})

    await CorrectiveLoop(LoopStages(retriever, grader, ScriptedRewriter([]), generator)).run(
        QUESTION, policy(max_rewrite_attempts=0)
    )

    assert generator.calls == [["engine"]]


async def test_nothing_passed_is_still_refused_with_a_filled_context() -> None:
    generator = AnswersWhenGiven("engine")
    retriever = ScriptedRetriever({QUESTION: [doc("engine"), doc("noise")]})
    grader = DictGrader({"engine": FAIL, "noise": FAIL})

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter([]), generator)
    ).run(QUESTION, policy(max_rewrite_attempts=0, fill_generation_context=True))

    assert generator.calls == [] and result.answer.text == REFUSAL
