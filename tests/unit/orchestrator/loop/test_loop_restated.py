"""A rewrite that restates the question (a two-hop question's described thing named from the
passages found, decision 0022): the rounds after it grade and answer the restated question, from
its own passages, and every step says so in the trace and the events."""

from __future__ import annotations

from ragloop.core.domain import (
    Answer,
    Citation,
    Document,
    Grade,
    GradingResult,
    Rewrite,
)
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, Outcome
from ragloop.orchestrator.loop.events import NodeFinished
from tests.unit.fakes import EventRecorder, ScriptedRetriever, ScriptedRewriter, doc

QUESTION = "Where did the duke who won at Hastings ride?"
RESTATED = "Where did William ride?"
REFUSAL = "The sources do not contain the answer to this question."


class QuestionGrader:
    """Passes the ids listed for the question asked; fails every other passage."""

    def __init__(self, passing: dict[str, set[str]]) -> None:
        self.passing = passing
        self.questions: list[str] = []

    async def grade(self, question: str, documents: list[Document]) -> GradingResult:
        self.questions.append(question)
        ids = self.passing.get(question, set())
        return GradingResult(
            [Grade(d.id, d.id in ids, 0.9 if d.id in ids else 0.1, "") for d in documents]
        )


class AnswersOnly:
    """Answers ``question`` citing every passage; refuses any other question."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.calls: list[tuple[str, list[str]]] = []

    async def generate(
        self, question: str, documents: list[Document], instructions: str = ""
    ) -> Answer:
        self.calls.append((question, [d.id for d in documents]))
        if question != self.question:
            return Answer(REFUSAL, [], grounded=False)
        citations = [Citation(n, d.id, d.source, d.text) for n, d in enumerate(documents, 1)]
        return Answer("Abernethy.", citations, True, answer_match=0.9)


def restating(question: str = RESTATED) -> Rewrite:
    return Rewrite(question, 'named "the duke who won at Hastings" as "William"', question=question)


def policy(**changes: object) -> LoopPolicy:
    defaults: dict[str, object] = {
        "grade_pass_threshold": 0.5,
        "max_rewrite_attempts": 2,
        "fill_generation_context": False,
        "answer_min_confidence": 0.6,
    }
    return LoopPolicy(**(defaults | changes))  # type: ignore[arg-type]


async def test_the_restated_question_is_graded_and_answered_from_its_own_passages() -> None:
    retriever = ScriptedRetriever(
        {QUESTION: [doc("bridge"), doc("noise")], RESTATED: [doc("ride"), doc("bridge")]}
    )
    grader = QuestionGrader({QUESTION: {"bridge"}, RESTATED: {"ride"}})
    generator = AnswersOnly(RESTATED)
    recorder = EventRecorder()

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter([restating()]), generator)
    ).run(QUESTION, policy(), on_event=recorder)

    assert result.trace.decision_path == [
        "retrieve", "grade", "generate", "rewrite", "retrieve", "grade", "generate",
    ]  # fmt: skip
    assert grader.questions == [QUESTION, RESTATED]
    # The original question's passed passage was judged for another question: it stays out.
    assert generator.calls == [(QUESTION, ["bridge"]), (RESTATED, ["ride"])]
    assert result.answer.grounded and result.outcome is Outcome.PASSED
    assert (result.original_query, result.final_query) == (QUESTION, RESTATED)
    finished = [e for e in recorder.events if isinstance(e, NodeFinished)]
    assert finished[3].details["question"] == RESTATED  # the rewrite
    assert finished[-1].details["question"] == RESTATED  # the answer
    rewrite_summary = result.trace.node_executions[3].details
    assert rewrite_summary["question"] == RESTATED and rewrite_summary["trigger"] == "unanswered"


async def test_the_same_passages_may_answer_the_restated_question() -> None:
    # Decision 0020 keeps a refusal when nothing new reaches the generator; a restated question
    # is another question, and the passage that passed for it is asked again.
    retriever = ScriptedRetriever({QUESTION: [doc("both")], RESTATED: [doc("both")]})
    grader = QuestionGrader({QUESTION: {"both"}, RESTATED: {"both"}})
    generator = AnswersOnly(RESTATED)

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter([restating()]), generator)
    ).run(QUESTION, policy())

    assert generator.calls == [(QUESTION, ["both"]), (RESTATED, ["both"])]
    assert result.answer.text == "Abernethy."


async def test_a_restated_question_nothing_passes_for_leaves_the_refusal() -> None:
    retriever = ScriptedRetriever({QUESTION: [doc("bridge")], RESTATED: [doc("bridge")]})
    grader = QuestionGrader({QUESTION: {"bridge"}})
    generator = AnswersOnly(RESTATED)

    result = await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter([restating()]), generator)
    ).run(QUESTION, policy(max_rewrite_attempts=1))

    assert len(generator.calls) == 1  # no answer without a passage that passed for it
    assert not result.answer.grounded and result.answer.text == REFUSAL


async def test_a_requested_decision_keeps_the_question_as_asked() -> None:
    question = "Did the duke who won at Hastings ride to Abernethy?"
    retriever = ScriptedRetriever({question: [doc("bridge")], RESTATED: [doc("ride")]})
    grader = QuestionGrader({question: {"bridge", "ride"}})
    generator = AnswersOnly("never")

    await CorrectiveLoop(
        LoopStages(retriever, grader, ScriptedRewriter([restating()]), generator)
    ).run(question, policy(max_rewrite_attempts=1, answer_instructions="Begin with yes or no."))

    assert grader.questions == [question, question]  # searched with the rewrite, graded as asked
    assert [asked for asked, _ in generator.calls] == [question, question]
