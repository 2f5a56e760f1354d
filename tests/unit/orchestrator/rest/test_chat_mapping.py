"""The OpenAI-compatible API's mapping, without HTTP: model names to collections, messages to the
question and answer instructions, the answer body to a chat.completion, and the loop's events
to chat.completion.chunk events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from ragloop.core.domain import ModelUsage, Turn
from ragloop.core.names import LoopNode
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.application.answers import QueryResponse, build_query_response
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy
from ragloop.orchestrator.loop.events import AnswerToken, NodeFinished, NodeStarted
from ragloop.orchestrator.rest.chat_mapping import (
    ChunkEncoder,
    Completion,
    collection_of_model,
    completion_body,
    model_list,
    query_of,
)
from ragloop.orchestrator.rest.chat_schemas import ChatCompletionRequest, RagloopOptions
from ragloop.orchestrator.rest.errors import OpenAIError
from ragloop.orchestrator.rest.schemas import ErrorDetail
from tests.unit.fakes import DictGrader, EchoGenerator, ScriptedRetriever, ScriptedRewriter, doc

COMPLETION = Completion("chatcmpl-r1", 1700000000, "ragloop/pets")
USAGE = ModelUsage(calls=2, prompt_tokens=120, completion_tokens=30, cached_prompt_tokens=80)


def chat(*messages: tuple[str, Any], **fields: Any) -> ChatCompletionRequest:
    body = {"model": "ragloop", "messages": [{"role": r, "content": c} for r, c in messages]}
    return ChatCompletionRequest.model_validate(body | fields)


def refusal(call: Any) -> OpenAIError:
    with pytest.raises(OpenAIError) as caught:
        call()
    return caught.value


async def answered() -> QueryResponse:
    """The answer body of a loop's result: one passage, passed, answered citing it."""
    loop = CorrectiveLoop(
        LoopStages(
            ScriptedRetriever({"q": [doc("a")]}),
            DictGrader({"a": (True, 0.9)}),
            ScriptedRewriter([]),
            EchoGenerator(usage=USAGE),
        )
    )
    return build_query_response(await loop.run("q", LoopPolicy()))


def events_of(stream: bytes) -> list[Any]:
    """The data of each server-sent event, decoded unless it is [DONE]."""
    blocks = stream.decode().removesuffix("\n\n").split("\n\n")
    assert all(b.startswith("data: ") and "\n" not in b for b in blocks), blocks
    data = [b.removeprefix("data: ") for b in blocks]
    return [d if d == "[DONE]" else json.loads(d) for d in data]


def test_model_names() -> None:
    assert collection_of_model("ragloop") is None
    assert collection_of_model("ragloop/pets") == "pets"
    for unknown in ("gpt-4o", "ragloop/", "ragloop/no spaces", "pets", "ragloop/a/b"):
        error = refusal(lambda m=unknown: collection_of_model(m))
        assert (error.status, error.code, error.param) == (404, "model_not_found", "model")
        assert repr(unknown) in error.message and "GET /v1/models" in error.message
    models = model_list(["pets", "docs"]).model_dump()
    assert [m["id"] for m in models["data"]] == ["ragloop", "ragloop/pets", "ragloop/docs"]
    assert models["object"] == "list" and models["data"][0]["object"] == "model"


def test_the_last_user_message_is_the_question_the_earlier_ones_its_history() -> None:
    request = chat(
        ("system", "Answer in French."),
        ("user", "What do cats eat?"),
        ("assistant", "Fish [1]."),
        ("developer", [{"type": "text", "text": "Be brief."}]),
        (
            "user",
            [{"type": "text", "text": "And how long"}, {"type": "text", "text": "do they sleep?"}],
        ),
        ragloop={"top_k": 3, "filters": {"lang": "en"}, "progress": True},
    )
    query = query_of(request, None)
    assert query.query == "And how long\ndo they sleep?"
    assert query.answer_instructions == "Answer in French.\n\nBe brief."
    assert (query.top_k, query.filters, query.collection) == (3, {"lang": "en"}, None)
    # The user and assistant messages before the question, system messages left out.
    assert query.turns() == [Turn("user", "What do cats eat?"), Turn("assistant", "Fish [1].")]
    # What the request did not set stays unset: the server's settings apply.
    assert query.model_fields_set == {"query", "answer_instructions", "top_k", "filters", "history"}


def test_a_single_question_has_no_history_and_empty_turns_are_left_out() -> None:
    assert query_of(chat(("system", "Be brief."), ("user", "q")), None).history == []
    query = query_of(chat(("user", "a?"), ("assistant", None), ("user", "b?")), None)
    assert query.turns() == [Turn("user", "a?")]


def test_the_model_chooses_the_collection_and_a_ragloop_collection_must_agree() -> None:
    assert query_of(chat(("user", "q")), "pets").collection == "pets"
    same = chat(("user", "q"), ragloop={"collection": "pets"})
    assert query_of(same, "pets").collection == "pets"
    assert query_of(same, None).collection == "pets"  # the default model: the request chooses
    error = refusal(lambda: query_of(chat(("user", "q"), ragloop={"collection": "x"}), "pets"))
    assert (error.status, error.param) == (400, "ragloop.collection")


@pytest.mark.parametrize(
    ("messages", "param", "says"),
    [
        ([("system", "Be brief.")], "messages", "no user message"),
        ([("user", "q"), ("assistant", "a")], "messages[1].role", "not a assistant message"),
        ([("user", "   ")], "messages[0].content", "has no text"),
        ([("user", None)], "messages[0].content", "has no text"),
        ([("user", "x" * 4001)], "messages", "the last user message: String should have at most"),
        ([("system", "y" * 501), ("user", "q")], "messages", "the system message"),
        (
            [("user", "q"), ("assistant", "z" * 8001), ("user", "q")],
            "messages",
            "the earlier user and assistant messages",
        ),
        ([("user", "q"), ("assistant", "a")] * 26 + [("user", "q")], "messages", "at most 50"),
    ],
)
def test_a_question_that_cannot_be_asked_is_a_400(
    messages: list[tuple[str, Any]], param: str, says: str
) -> None:
    error = refusal(lambda: query_of(chat(*messages), None))
    assert (error.status, error.code, error.param) == (400, "invalid_request", param)
    assert says in error.message


def test_instructions_are_given_once() -> None:
    request = chat(("system", "Be brief."), ("user", "q"), ragloop={"answer_instructions": "x"})
    error = refusal(lambda: query_of(request, None))
    assert (error.status, error.param) == (400, "ragloop.answer_instructions")
    alone = chat(("user", "q"), ragloop={"answer_instructions": "Be brief."})
    assert query_of(alone, None).answer_instructions == "Be brief."


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"messages": [{"role": "tool", "content": "x"}]}, "Input should be"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "'image_url'"),
        ({"messages": [{"role": "user", "content": 3}]}, "valid string"),
        ({"messages": []}, "at least 1 item"),
        ({"messages": [{"role": "user", "content": "q"}] * 257}, "at most 256 items"),
        ({"n": 2}, "n must be 1"),
        ({"temperature": 3}, "less than or equal to 2"),
        ({"ragloop": {"top_k": 0}}, "greater than or equal to 1"),
        ({"ragloop": {"topk": 3}}, "Extra inputs are not permitted"),
        ({"ragloop": {"similarity_threshold": 0.5, "similarity_thresholds": [0.5]}}, "not both"),
    ],
)
def test_invalid_fields_are_refused_by_the_schema(fields: dict[str, Any], says: str) -> None:
    body = {"model": "ragloop", "messages": [{"role": "user", "content": "q"}]} | fields
    with pytest.raises(ValidationError, match=says):
        ChatCompletionRequest.model_validate(body)


def test_fields_ragloop_does_not_use_are_accepted() -> None:
    request = chat(
        ("user", "q"),
        temperature=0.7,
        max_tokens=50,
        n=1,
        tools=[{"type": "function"}],
        user="u-1",
        seed=4,
    )
    assert query_of(request, None).query == "q"


async def test_a_result_becomes_a_chat_completion() -> None:
    result = await answered()
    body = completion_body(result, COMPLETION)
    assert {k: body[k] for k in ("id", "object", "created", "model")} == {
        "id": "chatcmpl-r1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "ragloop/pets",
    }
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "a"},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ]
    assert body["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 80},
    }
    extras = body["ragloop"]
    assert "answer" not in extras
    assert extras["citations"] == [
        {"number": 1, "document_id": "a", "source": "a.md", "quote": "Passage a."}
    ]
    assert extras["workflow"]["decision_path"] == ["retrieve", "grade", "generate"]


async def test_a_stream_is_the_role_then_the_final_answer_then_done() -> None:
    result = await answered()
    encoder = ChunkEncoder(COMPLETION, progress=False, include_usage=False, reasoning=False)
    # Without progress the loop's events, the answer's text as written among them, send nothing.
    assert encoder.event(NodeStarted(LoopNode.RETRIEVE, 1, "q")) == b""
    assert encoder.event(AnswerToken("draft", restart=False)) == b""
    chunks = events_of(encoder.opening() + encoder.done(result))
    assert chunks[-1] == "[DONE]"
    first, content, last = chunks[:-1]
    for chunk in (first, content, last):
        assert {k: chunk[k] for k in ("id", "object", "created", "model")} == {
            "id": "chatcmpl-r1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "ragloop/pets",
        }
        assert "usage" not in chunk
    assert first["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None,
         "logprobs": None}
    ]  # fmt: skip
    assert content["choices"][0]["delta"] == {"content": "a"}
    assert content["choices"][0]["finish_reason"] is None
    assert last["choices"][0] == {
        "index": 0,
        "delta": {},
        "finish_reason": "stop",
        "logprobs": None,
    }
    assert last["ragloop"] == completion_body(result, COMPLETION)["ragloop"]


async def test_progress_and_usage_chunks_when_asked() -> None:
    result = await answered()
    encoder = ChunkEncoder(COMPLETION, progress=True, include_usage=True, reasoning=False)
    started = events_of(encoder.event(NodeStarted(LoopNode.RETRIEVE, 1, "q")))
    token = events_of(encoder.event(AnswerToken("a", restart=True)))
    assert [c["choices"] for c in started + token] == [[], []]
    assert started[0]["ragloop"] == {"event": "node_started", "node": "retrieve", "round": 1,
                                     "query": "q"}  # fmt: skip
    assert token[0]["ragloop"] == {"event": "token", "text": "a", "restart": True}
    assert started[0]["usage"] is None  # as OpenAI's chunks, with include_usage
    *_, usage, done = events_of(encoder.done(result))
    assert done == "[DONE]"
    assert usage["choices"] == []
    assert usage["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 80},
    }


async def test_the_progress_is_streamed_in_words_as_reasoning_content_by_default() -> None:
    request = ChatCompletionRequest.model_validate(
        {"model": "ragloop", "messages": [{"role": "user", "content": "q?"}], "stream": True}
    )
    encoder = ChunkEncoder.asked_by(request, COMPLETION)
    started = events_of(encoder.event(NodeStarted(LoopNode.GRADE, 1, "q")))
    finished = events_of(
        encoder.event(
            NodeFinished(LoopNode.GRADE, 1, 9.0, "ok", {"pass_count": 3, "total_count": 5})
        )
    )
    assert encoder.event(AnswerToken("draft")) == b""  # the answer comes as content
    deltas = [chunk["choices"][0]["delta"] for chunk in started + finished]
    assert deltas == [{"reasoning_content": "Grading… "}, {"reasoning_content": "3 of 5 passed.\n"}]
    assert all("ragloop" not in chunk for chunk in started + finished)

    request.ragloop = RagloopOptions(reasoning=False)
    quiet = ChunkEncoder.asked_by(request, COMPLETION)
    assert quiet.event(NodeStarted(LoopNode.GRADE, 1, "q")) == b""


def test_a_failure_in_the_stream_is_an_openai_error_event() -> None:
    encoder = ChunkEncoder(COMPLETION, progress=False, include_usage=False, reasoning=False)
    detail = ErrorDetail(code="stage_unavailable", message="grader unavailable", stage="grader")
    [event] = events_of(encoder.failed(503, detail))
    assert event == {
        "error": {
            "message": "grader unavailable",
            "type": "server_error",
            "param": None,
            "code": "stage_unavailable",
        }
    }
    [invalid] = events_of(encoder.failed(422, ErrorDetail(code="invalid_input", message="m")))
    assert invalid["error"]["type"] == "invalid_request_error"
