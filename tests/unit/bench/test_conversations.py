"""Follow-up questions: the loop's contextualize node, the rewriter's standalone prompt and
stage over a scripted model, the history's limits at the edge, and the benchmark's items."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from bench.conversations import kept_referent, load_items
from ragloop.core.domain import ModelUsage, Turn
from ragloop.core.errors import InvalidInput
from ragloop.core.names import LoopNode
from ragloop.core.stages import LoopStages
from ragloop.core.validation import (
    MAX_HISTORY_CHARS,
    MAX_HISTORY_TURN_CHARS,
    MAX_HISTORY_TURNS,
    history_turns,
)
from ragloop.orchestrator.application.answers import build_query_response
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop.corrective import CorrectiveLoop
from ragloop.orchestrator.loop.events import NodeFinished, NodeStarted
from ragloop.orchestrator.rpc.messages import query_request_from_proto
from ragloop.rewriter.prompts import (
    HISTORY_TURNS_SHOWN,
    REFERENT_SCHEMA,
    STANDALONE_EXAMPLES,
    STANDALONE_SCHEMA,
    TURN_CHARS_SHOWN,
    standalone_messages,
)
from ragloop.rewriter.stage import ModelRewriter
from ragloop.v1 import common_pb2, rag_pb2
from tests.unit.fakes import (
    DictGrader,
    EchoGenerator,
    EventRecorder,
    ScriptedChatModel,
    ScriptedRetriever,
    ScriptedRewriter,
    doc,
    partial_pass_policy,
)

HISTORY = [
    Turn("user", "Who founded Acme Robotics?"),
    Turn("assistant", "Acme Robotics was founded by Ada Byron [1]."),
]
STANDALONE = "When was Acme Robotics founded?"


def loop_of(rewriter: ScriptedRewriter, retriever: ScriptedRetriever, generator: EchoGenerator):
    grader = DictGrader({"acme": (True, 0.9)}, usage=ModelUsage("m", 1, 10, 1))
    return CorrectiveLoop(LoopStages(retriever, grader, rewriter, generator)), grader


# --- the loop ----------------------------------------------------------------------------------


async def test_a_follow_up_is_made_standalone_before_the_first_round() -> None:
    rewriter = ScriptedRewriter([], standalone=STANDALONE, usage=ModelUsage("m", 1, 30, 8))
    retriever = ScriptedRetriever({STANDALONE: [doc("acme")]})
    generator = EchoGenerator(usage=ModelUsage("m", 1, 20, 4))
    loop, grader = loop_of(rewriter, retriever, generator)
    recorder = EventRecorder()

    result = await loop.run(
        " and when was it founded? ", partial_pass_policy(), history=HISTORY, on_event=recorder
    )

    assert rewriter.standalone_calls == [(HISTORY, "and when was it founded?")]
    # Retrieval, grading and the answer all use the standalone question.
    assert [c.query for c in retriever.calls] == [STANDALONE]
    assert [c.question for c in grader.calls] == [STANDALONE]
    assert [c.question for c in generator.calls] == [STANDALONE]
    assert result.trace.decision_path == ["contextualize", "retrieve", "grade", "generate"]
    first = result.trace.node_executions[0]
    assert (first.node, first.round, first.status) == (LoopNode.CONTEXTUALIZE, 0, "ok")
    assert first.details == {
        "question": "and when was it founded?",
        "standalone": STANDALONE,
        "turns": 2,
        "usage": {
            "model_calls": 1,
            "prompt_tokens": 30,
            "completion_tokens": 8,
            "cached_prompt_tokens": 0,
        },
    }
    # Its cost is part of the answer's.
    assert result.trace.usage == ModelUsage("m", 3, 60, 13)
    started = recorder.events[0]
    assert started == NodeStarted(LoopNode.CONTEXTUALIZE, 0, "and when was it founded?")
    assert isinstance(recorder.events[1], NodeFinished)
    body = build_query_response(result).model_dump()
    assert body["query"]["original"] == "and when was it founded?"
    assert body["query"]["standalone"] == STANDALONE
    assert body["query"]["final"] == STANDALONE
    assert body["workflow"]["usage"]["model_calls"] == 3


async def test_a_question_without_history_is_not_contextualized() -> None:
    rewriter = ScriptedRewriter([])  # asked for a standalone question: the test fails
    retriever = ScriptedRetriever({"q": [doc("acme")]})
    loop, _ = loop_of(rewriter, retriever, EchoGenerator())

    result = await loop.run("q", partial_pass_policy(), history=[])

    assert rewriter.standalone_calls == []
    assert result.trace.decision_path == ["retrieve", "grade", "generate"]
    assert result.standalone_query == result.original_query == "q"


# --- the rewriter's prompt and stage -------------------------------------------------------------


def test_the_prompt_shows_the_last_turns_cut_to_their_start() -> None:
    long_answer = "Acme Robotics " + "makes robots. " * 100
    history = [Turn("user", f"old question {n}") for n in range(5)] + [
        Turn("user", "Who founded Acme Robotics?"),
        Turn("assistant", long_answer),
    ]
    messages = standalone_messages(history, "and when?")
    assert messages[0].role == "system" and "standalone_query" in messages[0].content
    # The worked examples, a user message and the assistant's JSON each.
    assert len(messages) == 1 + 2 * len(STANDALONE_EXAMPLES) + 1
    assert json.loads(messages[2].content) == {
        "standalone_query": STANDALONE_EXAMPLES[0].standalone
    }
    lines = messages[-1].content.splitlines()
    assert lines[0] == "Conversation:" and lines[-1] == "Follow-up question: and when?"
    turns = lines[1:-1]
    assert len(turns) == HISTORY_TURNS_SHOWN
    assert turns[0] == "User: old question 1"  # the oldest turns are left out
    assert turns[-1].startswith("Assistant: Acme Robotics makes robots.")
    assert turns[-1].endswith(" …")
    assert len(turns[-1]) <= len("Assistant: ") + TURN_CHARS_SHOWN + 2


async def test_the_rewriter_returns_the_standalone_question_and_its_cost() -> None:
    model = ScriptedChatModel([json.dumps({"standalone_query": f"  {STANDALONE} "})])

    result = await ModelRewriter(model).standalone(HISTORY, " and when was it founded? ")

    assert result.query == STANDALONE
    assert result.usage == ModelUsage("fake:chat", 1, 10, 3)
    (call,) = model.calls
    assert call.json_schema == STANDALONE_SCHEMA
    assert "Follow-up question: and when was it founded?" in call.messages[-1].content


async def test_a_reply_that_repeats_the_follow_up_is_followed_by_naming_its_referent() -> None:
    model = ScriptedChatModel(
        [
            json.dumps({"standalone_query": "What does it default to?"}),
            json.dumps(
                {"refers_to": "retention.time", "standalone_query": "What does it default to?"}
            ),
        ]
    )

    result = await ModelRewriter(model).standalone(HISTORY, "And what does it default to?")

    assert result.query == "About retention.time: what does it default to?"
    assert result.usage.calls == 2
    assert [call.json_schema for call in model.calls] == [STANDALONE_SCHEMA, REFERENT_SCHEMA]
    assert "Follow-up question: And what does it default to?" in model.calls[1].messages[-1].content


async def test_a_reply_that_rewrote_the_follow_up_is_the_standalone_question() -> None:
    model = ScriptedChatModel([json.dumps({"standalone_query": STANDALONE})])

    result = await ModelRewriter(model).standalone(HISTORY, "And when was it founded?")

    assert result.query == STANDALONE and result.usage.calls == 1


async def test_an_unusable_referent_reply_keeps_the_first_reply() -> None:
    model = ScriptedChatModel(
        [json.dumps({"standalone_query": "and when was it founded"}), "not json", "{}"]
    )

    result = await ModelRewriter(model).standalone(HISTORY, "And when was it founded?")

    assert result.query == "and when was it founded"
    assert result.usage.calls == 3  # the referent reply was asked to be repaired once


@pytest.mark.parametrize("second_reply", ["  ", "x " * 2001], ids=["empty", "too-long"])
async def test_an_unusable_reply_leaves_the_question_as_asked(second_reply: str) -> None:
    model = ScriptedChatModel(["not json", json.dumps({"standalone_query": second_reply})])

    result = await ModelRewriter(model).standalone(HISTORY, "and when was it founded?")

    assert result.query == "and when was it founded?"
    assert result.usage.calls == 2  # the reply was asked to be repaired once


@pytest.mark.parametrize(
    ("history", "question", "says"),
    [
        ([], "and when?", "at least one turn"),
        (HISTORY, "  ", "question must not be empty"),
        ([Turn("system", "be brief")], "and when?", "history[0].role is 'system'"),
        ([Turn("user", " ")], "and when?", "history[0].content must not be empty"),
    ],
)
async def test_the_rewriter_refuses_what_it_cannot_use(
    history: list[Turn], question: str, says: str
) -> None:
    with pytest.raises(InvalidInput, match=says.replace("[", r"\[").replace("]", r"\]")):
        await ModelRewriter(ScriptedChatModel([])).standalone(history, question)


# --- the history's limits ------------------------------------------------------------------------


def turns(count: int, chars: int = 10) -> list[tuple[str, str]]:
    return [("user" if n % 2 == 0 else "assistant", "x" * chars) for n in range(count)]


def test_history_within_the_limits_passes() -> None:
    history_turns(turns(MAX_HISTORY_TURNS, MAX_HISTORY_CHARS // MAX_HISTORY_TURNS))


@pytest.mark.parametrize(
    ("history", "says"),
    [
        (turns(MAX_HISTORY_TURNS + 1), f"51 turns; the limit is {MAX_HISTORY_TURNS}"),
        (
            turns(1, MAX_HISTORY_TURN_CHARS + 1),
            f"history[0].content is 8001 characters long; the limit is {MAX_HISTORY_TURN_CHARS}",
        ),
        (turns(6, 7000), f"42000 characters long together; the limit is {MAX_HISTORY_CHARS}"),
        ([("tool", "x")], "history[0].role is 'tool'"),
    ],
)
def test_history_beyond_a_limit_is_refused_naming_it(
    history: list[tuple[str, str]], says: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        history_turns(history)
    assert says in str(refused.value)


def test_the_rest_request_refuses_history_beyond_the_limits() -> None:
    too_long = [{"role": "user", "content": "x" * 7000} for _ in range(6)]
    with pytest.raises(ValidationError, match="the limit is 40000"):
        QueryRequest.model_validate({"query": "q", "history": too_long})
    with pytest.raises(ValidationError, match="history"):
        QueryRequest.model_validate({"query": "q", "history": [{"role": "tool", "content": "x"}]})
    request = QueryRequest.model_validate(
        {"query": "q", "history": [{"role": "user", "content": " hi "}]}
    )
    assert request.turns() == [Turn("user", "hi")]


def test_ragservice_history_becomes_the_rest_requests() -> None:
    message = rag_pb2.QueryRequest(
        query="and when?",
        history=[common_pb2.ConversationTurn(role=t.role, content=t.content) for t in HISTORY],
    )
    assert query_request_from_proto(message).turns() == HISTORY
    too_many = rag_pb2.QueryRequest(
        query="q", history=[common_pb2.ConversationTurn(role="user", content="x")] * 51
    )
    with pytest.raises(InvalidInput, match="history"):
        query_request_from_proto(too_many)


# --- the benchmark's items -----------------------------------------------------------------------


def test_the_benchmark_has_16_dev_and_28_report_follow_ups_each_lacking_its_referent() -> None:
    items = load_items()
    assert [item.split for item in items].count("dev") == 16
    assert [item.split for item in items].count("report") == 28
    assert len({item.id for item in items}) == len(items)
    for item in items:
        assert item.history and item.history[-1].role == "assistant"
        history_turns([(t.role, t.content) for t in item.history])
        assert not kept_referent(item.follow_up, item.referent), item.id


def test_a_referent_is_kept_when_any_alias_appears() -> None:
    assert kept_referent("When did Leonardo da Vinci die?", ["Leonardo", "da Vinci"])
    assert kept_referent("how long is the NILE?", ["Nile"])
    assert not kept_referent("How long is that river?", ["Nile"])
