"""The corrective loop over fake stages: every branch, asserted on its observable behaviour."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

import pytest

from ragloop.core.answers import NO_ANSWER
from ragloop.core.domain import (
    Answer,
    AnswerDelta,
    Document,
    Grade,
    GradingResult,
    ModelUsage,
    RetrievalResult,
    RewriteAttempt,
    Turn,
)
from ragloop.core.errors import (
    ConfigurationError,
    DependencyTimeout,
    DependencyUnavailable,
    InvalidInput,
    NotFound,
)
from ragloop.core.leads import Decision
from ragloop.core.stages import Generator, Grader, LoopStages, Retriever, Rewriter
from ragloop.core.text import CHARS_PER_TOKEN
from ragloop.generator.stage import AnswerFormat, ModelGenerator
from ragloop.orchestrator.application.answers import build_query_response
from ragloop.orchestrator.application.policy import resolve_policy
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop.corrective import (
    CorrectiveLoop,
    LoopPolicy,
    LoopResult,
    Outcome,
    Round,
    StageFailure,
)
from ragloop.orchestrator.loop.generation_context import best_passed_documents, generation_context
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.unit.fakes import (
    UNCHECKED,
    DictGrader,
    EchoGenerator,
    EventRecorder,
    RaisingGrader,
    RaisingRetriever,
    RetrieveCall,
    ScriptedChatModel,
    ScriptedRetriever,
    ScriptedRewriter,
    StreamingEchoGenerator,
    WrongCountGrader,
    doc,
    partial_pass_policy,
)

PASS = (True, 0.9)
FAIL = (False, 0.2)
# One rewrite, then the answer: the path most of these tests expect.
ONE_REWRITE_PATH = ["retrieve", "grade", "rewrite", "retrieve", "grade", "generate"]


def make_loop(
    retriever: Retriever,
    grader: Grader,
    rewriter: Rewriter | None = None,
    generator: Generator | None = None,
) -> CorrectiveLoop:
    return CorrectiveLoop(
        LoopStages(
            retriever, grader, rewriter or ScriptedRewriter([]), generator or EchoGenerator()
        )
    )


def nodes(result: LoopResult) -> list[tuple[str, int, str]]:
    return [(n.node, n.round, n.status) for n in result.trace.node_executions]


# --- pass at once --------------------------------------------------------------------------------


async def test_passes_at_once_and_generates_from_passed_documents_only() -> None:
    retriever = ScriptedRetriever({"what is x": [doc("a"), doc("b"), doc("c")]})
    grader = DictGrader({"a": PASS, "b": (True, 0.7), "c": FAIL})  # 2/3 >= 0.6
    rewriter = ScriptedRewriter([])
    generator = EchoGenerator()
    policy = partial_pass_policy(
        top_k=4,
        similarity_threshold=0.42,
        collection="kb",
        retrieval_mode="sparse",
        filters={"lang": "en"},
        tenant="acme",
    )

    result = await make_loop(retriever, grader, rewriter, generator).run("  what is x  ", policy)

    assert result.outcome is Outcome.PASSED
    assert result.original_query == "what is x"
    assert result.final_query == "what is x"
    assert result.trace.decision_path == ["retrieve", "grade", "generate"]
    assert result.trace.rewrite_history == []
    assert rewriter.calls == []
    assert generator.document_ids == ["a", "b"]
    assert generator.calls[0].question == "what is x"
    assert [d.id for d in result.generation_documents] == ["a", "b"]
    assert result.answer.text == "a b"
    assert nodes(result) == [("retrieve", 1, "ok"), ("grade", 1, "ok"), ("generate", 1, "ok")]
    # The policy reaches the retriever; the grader judges against the question.
    (call,) = retriever.calls
    assert call == RetrieveCall("what is x", 4, 0.42, "kb", "sparse", {"lang": "en"}, "acme")
    assert [c.question for c in grader.calls] == ["what is x"]
    assert len(result.trace.rounds) == 1
    assert result.final_round.pass_count == 2
    assert result.final_round.pass_rate == pytest.approx(2 / 3)
    assert result.total_duration_ms >= 0


# --- rewrite then pass ----------------------------------------------------------------------------


async def test_rewrite_then_pass() -> None:
    retriever = ScriptedRetriever(
        {
            "original question": [doc("a"), doc("b"), doc("c")],  # 1/3 passes
            "better query": [doc("d"), doc("e")],  # 2/2 pass
        }
    )
    grader = DictGrader({"a": PASS, "b": FAIL, "c": FAIL, "d": PASS, "e": (True, 0.6)})
    rewriter = ScriptedRewriter(["better query"])
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, rewriter, generator).run(
        "original question", partial_pass_policy(max_generation_documents=5)
    )

    assert result.outcome is Outcome.PASSED
    assert result.trace.decision_path == ONE_REWRITE_PATH
    assert result.final_query == "better query"
    assert result.original_query == "original question"
    assert result.trace.rewrite_history == [
        RewriteAttempt("better query", "reason for better query")
    ]
    # The retriever searches with the rewritten query, the grader always judges the original.
    assert retriever.queries == ["original question", "better query"]
    assert [c.question for c in grader.calls] == ["original question", "original question"]
    assert [c.document_ids for c in grader.calls] == [["a", "b", "c"], ["d", "e"]]
    # The rewriter sees only the failed documents, with their grades, and the (empty) history.
    (call,) = rewriter.calls
    assert call.original_query == "original question"
    assert call.current_query == "original question"
    assert [g.document.id for g in call.failed] == ["b", "c"]
    assert all(not g.grade.relevant for g in call.failed)
    assert call.history == []
    # What passed in any round reaches the generator, most confident first (a in round 1).
    assert generator.document_ids == ["a", "d", "e"]
    assert generator.calls[0].question == "original question"
    assert nodes(result) == [
        ("retrieve", 1, "ok"),
        ("grade", 1, "ok"),
        ("rewrite", 1, "ok"),
        ("retrieve", 2, "ok"),
        ("grade", 2, "ok"),
        ("generate", 2, "ok"),
    ]
    assert [r.query for r in result.trace.rounds] == ["original question", "better query"]


async def test_rewriter_receives_the_history_and_current_query_of_later_rounds() -> None:
    retriever = ScriptedRetriever(
        {"q1": [doc("a")], "q2": [doc("b")], "q3": [doc("c")]},
    )
    grader = DictGrader({"a": FAIL, "b": FAIL, "c": PASS})
    rewriter = ScriptedRewriter(["q2", "q3"])

    result = await make_loop(retriever, grader, rewriter).run("q1", partial_pass_policy())

    assert result.outcome is Outcome.PASSED
    assert result.final_query == "q3"
    assert [a.query for a in result.trace.rewrite_history] == ["q2", "q3"]
    first, second = rewriter.calls
    assert (first.current_query, first.history) == ("q1", [])
    assert second.original_query == "q1"
    assert second.current_query == "q2"
    assert second.history == [RewriteAttempt("q2", "reason for q2")]
    assert [g.document.id for g in second.failed] == ["b"]
    assert [c.question for c in grader.calls] == ["q1", "q1", "q1"]
    assert retriever.queries == ["q1", "q2", "q3"]


class StreamRecordingGenerator(StreamingEchoGenerator):
    """A StreamingEchoGenerator that records when it is streamed."""

    def __init__(self) -> None:
        super().__init__()
        self.streamed = 0

    async def generate_stream(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> AsyncGenerator[AnswerDelta | Answer, None]:
        self.streamed += 1
        async for piece in super().generate_stream(question, documents, instructions):
            yield piece


@pytest.mark.parametrize("streamed", [False, True])
async def test_answer_instructions_go_to_the_generator_and_to_no_other_stage(
    streamed: bool,
) -> None:
    instructions = "Answer in French."
    retriever = ScriptedRetriever({"q1": [doc("a")], "q2": [doc("b")]})
    grader = DictGrader({"a": FAIL, "b": PASS})
    rewriter = ScriptedRewriter(["q2"])
    generator = StreamRecordingGenerator()
    loop = make_loop(retriever, grader, rewriter, generator)

    result = await loop.run(
        "q1",
        partial_pass_policy(answer_instructions=instructions),
        on_event=EventRecorder() if streamed else None,
    )

    assert result.outcome is Outcome.PASSED
    assert generator.streamed == int(streamed)
    (call,) = generator.calls
    assert (call.question, call.instructions) == ("q1", instructions)
    # Retrieval, grading and rewriting see the question (and the rewrite) only.
    assert retriever.queries == ["q1", "q2"]
    assert [c.question for c in grader.calls] == ["q1", "q1"]
    ((original, current),) = [(c.original_query, c.current_query) for c in rewriter.calls]
    assert (original, current) == ("q1", "q1")


async def test_without_answer_instructions_the_generator_gets_none() -> None:
    generator = EchoGenerator()
    loop = make_loop(ScriptedRetriever({"q": [doc("a")]}), DictGrader({"a": PASS}), None, generator)

    await loop.run("q", partial_pass_policy())

    assert generator.calls[0].instructions == ""


@pytest.mark.parametrize(
    ("question", "instructions", "decision"),
    [
        ("Can you explain how grading works?", "", Decision()),  # a request asks for no decision
        ("Is compaction on by default?", "", Decision(("yes", "no"), yes_no=True)),
        ("Which came first, the Pico Act or the county?", "", None),  # named: checked below
        ("q", "Begin your answer with yes, no or maybe.", Decision(("yes", "no", "maybe"))),
    ],
)
async def test_the_loop_reads_the_questions_decision_once_and_tells_the_generator(
    question: str, instructions: str, decision: Decision | None
) -> None:
    generator = EchoGenerator()
    retriever = ScriptedRetriever({question: [doc("a")]})
    loop = make_loop(retriever, DictGrader({"a": PASS}), None, generator)

    await loop.run(question, partial_pass_policy(answer_instructions=instructions))

    (call,) = generator.calls
    if decision is None:
        assert call.decision == Decision(("the Pico Act", "the county"), named=True)
    else:
        assert call.decision == decision


async def test_a_follow_ups_decision_is_read_from_the_standalone_question() -> None:
    generator = EchoGenerator()
    standalone = "Is WAL compression on by default?"
    rewriter = ScriptedRewriter([], standalone=standalone)
    retriever = ScriptedRetriever({standalone: [doc("a")]})
    loop = make_loop(retriever, DictGrader({"a": PASS}), rewriter, generator)
    history = [Turn("user", "Tell me about the WAL."), Turn("assistant", "It is a log.")]

    await loop.run("And is it compressed?", partial_pass_policy(), history=history)

    assert generator.calls[0].decision == Decision(("yes", "no"), yes_no=True)


# --- max attempts ---------------------------------------------------------------------------------


async def test_max_attempts_falls_back_to_best_passed_documents_of_any_round() -> None:
    retriever = ScriptedRetriever(
        {
            "q": [doc("a"), doc("b"), doc("c")],  # 1/3
            "q2": [doc("a"), doc("e"), doc("b"), doc("c")],  # 2/4, "a" again
            "q3": [doc("f"), doc("g"), doc("b"), doc("c"), doc("h")],  # 2/5
        }
    )
    grader = DictGrader(
        {"a": (True, 0.6), "e": (True, 0.95), "f": (True, 0.8), "g": (True, 0.7), "b": FAIL}
    )
    rewriter = ScriptedRewriter(["q2", "q3"])
    generator = EchoGenerator()
    policy = partial_pass_policy(top_k=3, max_rewrite_attempts=2, max_generation_documents=5)

    result = await make_loop(retriever, grader, rewriter, generator).run("q", policy)

    assert result.outcome is Outcome.MAX_ATTEMPTS
    assert result.trace.decision_path == [
        "retrieve",
        "grade",
        "rewrite",
        "retrieve",
        "grade",
        "rewrite",
        "retrieve",
        "grade",
        "generate",
    ]
    assert len(rewriter.calls) == 2
    assert len(result.trace.rewrite_history) == 2
    assert result.final_query == "q3"
    # Deduplicated (a passed twice), most confident first, capped at top_k (a is dropped).
    assert generator.document_ids == ["e", "f", "g"]
    assert [n[2] for n in nodes(result)] == ["ok"] * 9


async def test_max_attempts_zero_never_rewrites() -> None:
    retriever = ScriptedRetriever({"q": [doc("a"), doc("b"), doc("c")]})
    grader = DictGrader({"a": (True, 0.5), "b": FAIL, "c": FAIL})
    rewriter = ScriptedRewriter(["never used"])
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, rewriter, generator).run(
        "q", partial_pass_policy(max_rewrite_attempts=0)
    )

    assert result.outcome is Outcome.MAX_ATTEMPTS
    assert rewriter.calls == []
    assert result.trace.decision_path == ["retrieve", "grade", "generate"]
    assert result.trace.rewrite_history == []
    assert generator.document_ids == ["a"]


async def test_max_attempts_with_nothing_ever_passed_refuses_without_the_generator() -> None:
    retriever = ScriptedRetriever({"q": [doc("a")], "q2": [doc("b"), doc("c")]})
    grader = DictGrader({})  # everything fails
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, ScriptedRewriter(["q2"]), generator).run(
        "q", partial_pass_policy(max_rewrite_attempts=1)
    )

    assert result.outcome is Outcome.MAX_ATTEMPTS
    assert generator.calls == []  # the refusal is the loop's own
    assert result.answer.text == NO_ANSWER
    assert result.generation_documents == []
    assert result.answer.grounded is False
    assert result.trace.decision_path == ONE_REWRITE_PATH


def test_best_passed_documents_keeps_highest_confidence_per_id_and_breaks_ties_by_score() -> None:
    a, b, c, d = doc("a", score=0.1), doc("b", score=0.2), doc("c", score=0.9), doc("d")
    rounds = [
        Round(
            1,
            "q",
            RetrievalResult([a, b, d], 3),
            GradingResult(
                [Grade("a", True, 0.9, ""), Grade("b", True, 0.7, ""), Grade("d", False, 1.0, "")]
            ),
        ),
        Round(
            2,
            "q2",
            RetrievalResult([a, c], 2),
            # "a" again, less confident this time: the earlier, better verdict counts.
            GradingResult([Grade("a", True, 0.4, ""), Grade("c", True, 0.7, "")]),
        ),
    ]

    # a (0.9) first; b and c tie on confidence, c has the higher score; d failed.
    assert [x.id for x in best_passed_documents(rounds, 10)] == ["a", "c", "b"]
    assert [x.id for x in best_passed_documents(rounds, 2)] == ["a", "c"]
    assert best_passed_documents(rounds, 0) == []
    assert best_passed_documents([], 5) == []


# --- circular rewrite -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rewrites", "expected_retrievals", "expected_final"),
    [
        # Equal to the original once case and punctuation are ignored.
        (["  WHAT is X?! "], ["What is x"], "What is x"),
        # Equal to an earlier rewrite.
        (["x meaning", "X-meaning."], ["What is x", "x meaning"], "x meaning"),
    ],
    ids=["repeats-original", "repeats-earlier-rewrite"],
)
async def test_circular_rewrite_stops_the_loop(
    rewrites: list[str], expected_retrievals: list[str], expected_final: str
) -> None:
    retriever = ScriptedRetriever({"What is x": [doc("a"), doc("b")], "x meaning": [doc("c")]})
    grader = DictGrader({"a": (True, 0.5)})  # 1/2 < 0.6, c fails
    rewriter = ScriptedRewriter(rewrites)
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, rewriter, generator).run(
        "What is x", partial_pass_policy()
    )

    assert result.outcome is Outcome.CIRCULAR_REWRITE
    assert retriever.queries == expected_retrievals  # no retrieval for the repeated query
    assert len(rewriter.calls) == len(rewrites)
    assert result.final_query == expected_final
    # The circular rewrite is not recorded as an attempt.
    assert [a.query for a in result.trace.rewrite_history] == expected_retrievals[1:]
    assert result.trace.decision_path[-2:] == ["rewrite", "generate"]
    assert result.trace.decision_path.count("retrieve") == len(expected_retrievals)
    assert generator.document_ids == ["a"]  # best passed so far


# --- a rewrite that finds nothing new -------------------------------------------------------------


async def test_a_rewrite_that_finds_only_passages_seen_before_ends_the_loop() -> None:
    # The paraphrase finds the same passages in another order: a second rewrite would start from
    # the same failed passages, so the loop answers instead.
    retriever = ScriptedRetriever({"What is x": [doc("a"), doc("b")], "x?": [doc("b"), doc("a")]})
    grader = DictGrader({"a": (True, 0.5)})  # 1/2 < 0.6
    rewriter = ScriptedRewriter(["x?", "never asked"])
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, rewriter, generator).run(
        "What is x", partial_pass_policy()
    )

    assert result.outcome is Outcome.NO_NEW_DOCUMENTS
    assert retriever.queries == ["What is x", "x?"]
    assert len(rewriter.calls) == 1
    assert result.final_query == "x?"
    assert [a.query for a in result.trace.rewrite_history] == ["x?"]
    assert result.trace.decision_path == ONE_REWRITE_PATH
    assert generator.document_ids == ["a"]


@pytest.mark.parametrize(
    ("second_round", "relaxation"),
    [
        (["a", "c"], ()),  # one new passage is enough to go on
        ([], ()),  # nothing found is not "nothing new": the next rewrite may do better
        (["a", "b"], (0.5, 0.5, 0.2)),  # round 3 searches under a lower similarity threshold
    ],
    ids=["one-new-passage", "nothing-found", "threshold-relaxes-next-round"],
)
async def test_the_loop_goes_on_when_the_next_round_can_find_more(
    second_round: list[str], relaxation: tuple[float, ...]
) -> None:
    retriever = ScriptedRetriever(
        {"q": [doc("a"), doc("b")], "q2": [doc(i) for i in second_round], "q3": [doc("d")]}
    )
    grader = DictGrader({"d": PASS})
    rewriter = ScriptedRewriter(["q2", "q3"])
    policy = partial_pass_policy(similarity_relaxation=relaxation)

    result = await make_loop(retriever, grader, rewriter, EchoGenerator()).run("q", policy)

    assert result.outcome is Outcome.PASSED
    assert retriever.queries == ["q", "q2", "q3"]


# --- zero documents -------------------------------------------------------------------------------


async def test_zero_documents_skips_the_grader_and_rewrites() -> None:
    retriever = ScriptedRetriever({"q": [], "q2": [doc("a")]})
    grader = DictGrader({"a": PASS})
    rewriter = ScriptedRewriter(["q2"])
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, rewriter, generator).run("q", partial_pass_policy())

    assert result.outcome is Outcome.PASSED
    assert [c.document_ids for c in grader.calls] == [["a"]]  # never called with no documents
    first_round = result.trace.rounds[0]
    assert first_round.pass_rate == 0.0
    assert first_round.grading.grades == []
    assert result.trace.decision_path == ONE_REWRITE_PATH
    assert rewriter.calls[0].failed == []
    assert generator.document_ids == ["a"]
    grade_node = result.trace.node_executions[1]
    assert (grade_node.node, grade_node.status) == ("grade", "ok")
    no_model_call = {
        "model_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_prompt_tokens": 0,
    }
    assert grade_node.details == {"documents": 0, "passed": 0, "usage": no_model_call}


async def test_zero_documents_pass_when_threshold_is_zero() -> None:
    retriever = ScriptedRetriever({})
    grader = DictGrader({})
    rewriter = ScriptedRewriter(["unused"])
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, rewriter, generator).run(
        "q", partial_pass_policy(grade_pass_threshold=0.0)
    )

    assert result.outcome is Outcome.PASSED
    assert grader.calls == []
    assert rewriter.calls == []
    assert generator.calls == []
    assert result.answer.text == NO_ANSWER
    assert result.trace.decision_path == ["retrieve", "grade", "generate"]


# --- stage errors ---------------------------------------------------------------------------------


async def test_retriever_unavailable_is_a_stage_failure_with_trace() -> None:
    generator = EchoGenerator()
    loop = make_loop(
        RaisingRetriever(DependencyUnavailable("milvus down")), DictGrader({}), None, generator
    )

    with pytest.raises(StageFailure) as caught:
        await loop.run("q", partial_pass_policy())

    failure = caught.value
    assert (failure.node, failure.kind) == ("retrieve", "unavailable")
    assert failure.message == "milvus down"
    assert isinstance(failure.__cause__, DependencyUnavailable)
    assert failure.trace.decision_path == ["retrieve"]
    (execution,) = failure.trace.node_executions
    assert (execution.node, execution.round, execution.status) == ("retrieve", 1, "error")
    assert execution.details == {"error": "milvus down"}
    assert generator.calls == []


@pytest.mark.parametrize(
    ("error", "kind", "message"),
    [
        (DependencyTimeout("model slow"), "timeout", "model slow"),
        (DependencyUnavailable("model down"), "unavailable", "model down"),
        (NotFound("no collection"), "not_found", "no collection"),
        (ConfigurationError("no BM25 field"), "precondition", "no BM25 field"),
        (InvalidInput("bad doc"), "invalid", "bad doc"),
        (RuntimeError("boom"), "internal", "RuntimeError: boom"),
    ],
)
async def test_grader_errors_are_classified(error: Exception, kind: str, message: str) -> None:
    generator = EchoGenerator()
    loop = make_loop(ScriptedRetriever({"q": [doc("a")]}), RaisingGrader(error), None, generator)

    with pytest.raises(StageFailure) as caught:
        await loop.run("q", partial_pass_policy())

    failure = caught.value
    assert (failure.node, failure.kind, failure.message) == ("grade", kind, message)
    assert failure.trace.decision_path == ["retrieve", "grade"]
    assert [(n.node, n.status) for n in failure.trace.node_executions] == [
        ("retrieve", "ok"),
        ("grade", "error"),
    ]
    assert generator.calls == []


async def test_generic_retriever_error_is_internal() -> None:
    loop = make_loop(RaisingRetriever(RuntimeError("boom")), DictGrader({}))

    with pytest.raises(StageFailure) as caught:
        await loop.run("q", partial_pass_policy())

    assert (caught.value.node, caught.value.kind) == ("retrieve", "internal")
    assert "RuntimeError" in caught.value.message
    assert "boom" in caught.value.message


async def test_grader_returning_wrong_number_of_grades_is_internal() -> None:
    generator = EchoGenerator()
    loop = make_loop(
        ScriptedRetriever({"q": [doc("a"), doc("b")]}), WrongCountGrader(), None, generator
    )

    with pytest.raises(StageFailure) as caught:
        await loop.run("q", partial_pass_policy())

    failure = caught.value
    assert (failure.node, failure.kind) == ("grade", "internal")
    assert "1 grades for 2 documents" in failure.message
    assert failure.trace.decision_path == ["retrieve", "grade"]
    assert failure.trace.rounds == []
    assert generator.calls == []


async def test_rewriter_error_fails_the_rewrite_stage() -> None:
    class BrokenRewriter:
        async def rewrite(self, *args: object) -> None:
            raise DependencyTimeout("rewriter slow")

    loop = make_loop(ScriptedRetriever({"q": [doc("a")]}), DictGrader({}), BrokenRewriter())

    with pytest.raises(StageFailure) as caught:
        await loop.run("q", partial_pass_policy())

    assert (caught.value.node, caught.value.kind) == ("rewrite", "timeout")
    assert caught.value.trace.decision_path == ["retrieve", "grade", "rewrite"]
    assert len(caught.value.trace.rounds) == 1


# --- loop and real generator stage -------------------------------------------------------------


async def test_many_passed_passages_do_not_exceed_the_generators_limit() -> None:
    documents = [doc(f"d{n}") for n in range(25)]
    model = ScriptedChatModel(
        [json.dumps({"answerable": True, "sentences": [{"source": 1, "text": "d0 says so."}]})]
    )
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": documents}),
            DictGrader({d.id: PASS for d in documents}),
            ScriptedRewriter([]),
            ModelGenerator(model, **UNCHECKED, max_documents=20, answer_format=AnswerFormat.JSON),
        )
    )

    result = await loop.run("q", partial_pass_policy(top_k=25))

    assert result.outcome is Outcome.PASSED
    assert 1 <= len(result.generation_documents) <= 20
    assert result.answer.grounded is True


# --- input, usage -------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   \n\t"])
async def test_empty_query_is_invalid_input(query: str) -> None:
    retriever = ScriptedRetriever({})
    events = EventRecorder()

    with pytest.raises(InvalidInput):
        await make_loop(retriever, DictGrader({})).run(
            query, partial_pass_policy(), on_event=events
        )

    assert retriever.calls == []
    assert events.events == []


async def test_model_usage_of_every_stage_call_is_summed() -> None:
    retriever = ScriptedRetriever({"q": [doc("a")], "q2": [doc("b")]})
    grader = DictGrader({"b": PASS}, usage=ModelUsage("m", 1, 10, 2))
    rewriter = ScriptedRewriter(["q2"], usage=ModelUsage("m", 1, 5, 1))
    generator = EchoGenerator(usage=ModelUsage("m", 1, 20, 4))

    result = await make_loop(retriever, grader, rewriter, generator).run("q", partial_pass_policy())

    # Two gradings, one rewrite, one generation.
    assert result.trace.usage == ModelUsage("m", 4, 45, 9)
    # Each node's own cost is in its execution record.
    assert [(n.node, n.details.get("usage", {}).get("prompt_tokens")) for n in
            result.trace.node_executions] == [
        ("retrieve", None), ("grade", 10), ("rewrite", 5), ("retrieve", None), ("grade", 10),
        ("generate", 20),
    ]  # fmt: skip


# --- REST response --------------------------------------------------------------------------------


async def test_build_query_response_after_a_rewrite() -> None:
    retriever = ScriptedRetriever(
        {"q": [doc("a")], "q2": [doc("b", "B text.", score=0.87654), doc("c")]},
        total_found={"q2": 7},
    )
    grader = DictGrader({"b": (True, 0.12345), "c": (True, 0.8)})
    loop = make_loop(
        retriever,
        grader,
        ScriptedRewriter(["q2"], usage=ModelUsage("m", 1, 5, 1)),
        EchoGenerator(usage=ModelUsage("m", 1, 20, 4)),
    )

    result = await loop.run("q", partial_pass_policy())
    body = build_query_response(result).model_dump()

    assert body["answer"] == "c b"  # passed passages reach the generator most confident first
    assert body["grounded"] is True
    assert [c["document_id"] for c in body["citations"]] == ["c", "b"]
    assert body["query"] == {
        "original": "q",
        "standalone": "q",
        "final": "q2",
        "was_rewritten": True,
        "rewrite_count": 1,
    }
    assert body["rewrite_history"] == [{"query": "q2", "reason": "reason for q2"}]
    retrieval = body["retrieval"]
    assert retrieval["total_documents"] == 7
    assert retrieval["filtered_documents"] == 2
    assert [d["id"] for d in retrieval["documents"]] == ["b", "c"]
    assert retrieval["documents"][0]["score"] == 0.8765
    grader_result = body["grader_result"]
    assert grader_result["pass_rate"] == 1.0
    assert grader_result["pass_count"] == 2
    assert grader_result["total_count"] == 2
    assert grader_result["should_rewrite"] is False
    assert grader_result["grades"][0]["confidence"] == 0.123
    workflow = body["workflow"]
    assert workflow["outcome"] == "passed"
    assert workflow["decision_path"] == ONE_REWRITE_PATH
    assert [n["node"] for n in workflow["node_executions"]] == workflow["decision_path"]
    assert all(n["status"] == "ok" for n in workflow["node_executions"])
    assert workflow["usage"] == {
        "model_calls": 2,
        "prompt_tokens": 25,
        "completion_tokens": 5,
        "cached_prompt_tokens": 0,
    }


async def test_build_query_response_without_a_rewrite_reports_should_rewrite() -> None:
    retriever = ScriptedRetriever({"q": [doc("a"), doc("b"), doc("c")]})
    loop = make_loop(retriever, DictGrader({"a": PASS}))

    result = await loop.run("q", partial_pass_policy(max_rewrite_attempts=0))
    body = build_query_response(result).model_dump()

    assert body["query"]["was_rewritten"] is False
    assert body["query"]["rewrite_count"] == 0
    assert body["query"]["final"] == "q"
    assert body["rewrite_history"] == []
    assert body["grader_result"]["pass_rate"] == 0.3333
    assert body["grader_result"]["pass_count"] == 1
    assert body["grader_result"]["should_rewrite"] is True
    assert body["workflow"]["outcome"] == "max_attempts"
    assert body["retrieval"]["total_documents"] == body["retrieval"]["filtered_documents"] == 3


@pytest.mark.parametrize("server", [False, True], ids=["loop-default", "server-default"])
async def test_by_default_the_generator_gets_the_passed_passages_that_fit_its_budget(
    server: bool,
) -> None:
    # The loop's own default and the server's (which requests get) are the same.
    request = QueryRequest(query="q")
    policy = resolve_policy(request, OrchestratorSettings()) if server else LoopPolicy()
    quarter = "w" * (policy.generation_context_tokens * CHARS_PER_TOKEN // 4)  # a 1/4 budget
    retriever = ScriptedRetriever(
        {
            "q": [
                doc("a", quarter, score=0.9),
                doc("b", quarter, score=0.8),
                doc("c", quarter, score=0.7),
                doc("d", quarter + quarter, score=0.6),
                doc("e", quarter),
            ]
        }
    )
    grader = DictGrader({"a": (True, 0.7), "b": PASS, "c": PASS, "d": (True, 0.8), "e": FAIL})
    generator = EchoGenerator()

    result = await make_loop(retriever, grader, generator=generator).run("q", policy)

    assert result.outcome is Outcome.PASSED
    # Most confident first, then best scored, while they fit: b, c (1/2), d (full); a would not.
    assert generator.document_ids == ["b", "c", "d"]


def test_one_long_passage_is_given_whatever_its_length() -> None:
    long = doc("long", "w" * 100_000)
    assert generation_context([long, doc("short")], 100) == [long]
