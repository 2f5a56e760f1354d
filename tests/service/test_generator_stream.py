"""GenerateAnswerStream over a real gRPC server: with the real local model (tokens, then exactly
what GenerateAnswer returns), and with a model server on 127.0.0.1 that pauses, stalls or is down.

How the deltas relate to the answer: joined since the last delta with ``restart``, their texts
equal the final answer's text by ``plain_text`` — citation markers like "[1]" removed, white space
collapsed — because the final answer moves the checked markers to the end of each sentence.
"""

from __future__ import annotations

import json
import threading

import grpc
import pytest

from ragloop.core.answers import without_markers as plain_text
from ragloop.core.domain import Answer, AnswerDelta
from ragloop.core.errors import DependencyTimeout, InvalidInput
from ragloop.core.grpc import convert
from ragloop.generator.__main__ import build_spec
from ragloop.generator.prompts import INSTRUCTIONS_LABEL
from ragloop.generator.settings import GeneratorSettings
from ragloop.generator.stage import AnswerFormat
from ragloop.local.processes import free_port
from ragloop.orchestrator.stages.clients import RemoteGenerator
from ragloop.v1 import generator_pb2, generator_pb2_grpc
from tests.service.grpc_helpers import serving
from tests.service.test_model_stage_services import (  # noqa: F401  (a fixture)
    ON_TOPIC,
    QUESTION,
    stalling_model_server,
)
from tests.service.test_openai_provider import FakeOpenAI, openai_url  # noqa: F401  (a fixture)

REQUEST = generator_pb2.GenerateAnswerRequest(question=QUESTION, documents=[ON_TOPIC])
DOCUMENTS = [convert.document_from_proto(ON_TOPIC)]  # the same, as the orchestrator holds them


async def stream_events(
    settings: GeneratorSettings, request: generator_pb2.GenerateAnswerRequest = REQUEST
) -> list[generator_pb2.GenerateAnswerEvent]:
    async with serving(build_spec(settings)) as channel:
        stub = generator_pb2_grpc.GeneratorServiceStub(channel)
        return [event async for event in stub.GenerateAnswerStream(request, timeout=300)]


def split(
    events: list[generator_pb2.GenerateAnswerEvent],
) -> tuple[list[generator_pb2.AnswerDelta], generator_pb2.GenerateAnswerResponse]:
    """The deltas and the answer, checking that exactly one answer comes, and comes last."""
    kinds = [event.WhichOneof("event") for event in events]
    assert kinds[-1:] == ["answer"] and kinds.count("answer") == 1, kinds
    return [event.delta for event in events[:-1]], events[-1].answer


def text_since_last_restart(deltas: list[generator_pb2.AnswerDelta]) -> str:
    text = ""
    for delta in deltas:
        text = delta.text if delta.restart else text + delta.text
    return text


async def test_tokens_come_first_and_the_answer_is_what_generate_answer_returns(
    llama_url: str,
) -> None:
    settings = GeneratorSettings(llamacpp_url=llama_url)
    events = await stream_events(settings)
    async with serving(build_spec(settings)) as channel:
        unary = await generator_pb2_grpc.GeneratorServiceStub(channel).GenerateAnswer(
            REQUEST, timeout=300
        )

    deltas, answer = split(events)
    assert len(deltas) >= 2 and not any(d.restart for d in deltas)
    assert plain_text("".join(d.text for d in deltas)) == plain_text(answer.answer)
    assert answer.grounded and [c.document_id for c in answer.citations] == ["storage-0"]
    # the answer, then its support check (which the real model's answer passed)
    assert answer.usage.calls == 2 and answer.usage.completion_tokens > 0
    # The check's figure of the second request differs by a few hundredths: llama-server
    # evaluates a prompt it holds in its prefix cache along another numerical path.
    assert unary.support == pytest.approx(answer.support, abs=0.05)
    # The second request finds more of its prompt in that cache.
    assert unary.usage.cached_prompt_tokens >= answer.usage.cached_prompt_tokens
    for reply in (answer, unary):
        reply.ClearField("support")
        reply.usage.ClearField("cached_prompt_tokens")
    assert answer == unary


async def test_the_real_model_chooses_the_lead_in_a_scored_call_and_the_answer_begins_with_it(
    llama_url: str,
) -> None:
    """A yes/no question: the scored call reads the model's log-probabilities
    of the lead words, and both the stream and the unary answer begin with the chosen one."""
    request = generator_pb2.GenerateAnswerRequest(
        question="Does the retriever own the data directory in ragloop?",
        documents=[ON_TOPIC],
        answer_instructions="Begin your answer with yes or no.",
    )
    settings = GeneratorSettings(llamacpp_url=llama_url)
    deltas, answer = split(await stream_events(settings, request))

    assert answer.answer.split(maxsplit=1)[0].strip(".,:;").lower() in ("yes", "no")
    assert answer.citations, "the decision comes with the cited sentences it rests on"
    assert plain_text(text_since_last_restart(deltas)) == plain_text(answer.answer)
    assert answer.usage.calls == 2  # the scored lead, then the answer


async def test_with_no_documents_the_refusal_streams_without_a_model_call() -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # a model call would fail with UNAVAILABLE
    events = await stream_events(
        GeneratorSettings(llamacpp_url=dead),
        generator_pb2.GenerateAnswerRequest(question=QUESTION),
    )

    deltas, answer = split(events)
    assert [d.text for d in deltas] == [answer.answer]
    assert not answer.grounded and "do not contain" in answer.answer
    assert answer.usage.calls == 0


async def test_an_empty_question_is_invalid_argument() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stream_events(
            GeneratorSettings(llamacpp_url=dead),
            generator_pb2.GenerateAnswerRequest(question=" ", documents=[ON_TOPIC]),
        )
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "question" in caught.value.details()


MODEL_REPLY = json.dumps(
    {
        "answerable": True,
        "sentences": [
            {"source": 1, "text": "Only one process can open it."},
            {"source": 1, "text": "The retriever owns the data directory."},
        ],
    }
)


def openai_settings(url: str, **overrides: object) -> GeneratorSettings:
    """The generator over the fake OpenAI server, answering in the JSON sentences it replies."""
    return GeneratorSettings(
        chat_model="openai:any",
        openai_url=f"{url}/v1",
        generator_answer_format=AnswerFormat.JSON,
        **overrides,
    )


async def test_deltas_reach_the_client_while_the_model_is_still_writing(
    openai_url: str,  # noqa: F811
) -> None:
    """The model server pauses halfway through the first sentence until the test has received a
    delta over gRPC: a stream buffered anywhere on the way would never get there."""
    FakeOpenAI.reply, FakeOpenAI.hold = MODEL_REPLY, threading.Event()
    FakeOpenAI.hold_at = MODEL_REPLY.index("open it")
    events = []
    async with serving(build_spec(openai_settings(openai_url))) as channel:
        stub = generator_pb2_grpc.GeneratorServiceStub(channel)
        async for event in stub.GenerateAnswerStream(REQUEST, timeout=60):
            events.append(event)
            FakeOpenAI.hold.set()

    assert FakeOpenAI.released == [True]
    deltas, answer = split(events)
    assert deltas[0].text and "Only one process can ".startswith(deltas[0].text)
    assert text_since_last_restart(deltas) == (
        "Only one process can open it. The retriever owns the data directory."
    )
    assert answer.answer == (
        "Only one process can open it. [1] The retriever owns the data directory. [1]"
    )


async def test_a_model_that_stalls_mid_answer_ends_the_stream_with_deadline_exceeded(
    openai_url: str,  # noqa: F811
) -> None:
    FakeOpenAI.reply, FakeOpenAI.hold = MODEL_REPLY, threading.Event()  # never released
    FakeOpenAI.hold_at = MODEL_REPLY.index("open it")
    events = []
    async with serving(build_spec(openai_settings(openai_url, model_timeout_s=0.5))) as channel:
        stub = generator_pb2_grpc.GeneratorServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for event in stub.GenerateAnswerStream(REQUEST, timeout=30):
                events.append(event)

    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert "timed out" in caught.value.details()
    assert events and all(e.WhichOneof("event") == "delta" for e in events)
    assert len(FakeOpenAI.requests) == 1  # a stream is never asked for again once it began


@pytest.mark.parametrize(
    "chat_model", ["llamacpp:qwen2.5-coder-1.5b-instruct", "ollama:qwen2.5:7b-instruct"]
)
async def test_a_model_call_that_times_out_is_deadline_exceeded_and_not_retried(
    stalling_model_server: tuple[str, list[str]],  # noqa: F811
    chat_model: str,
) -> None:
    url, paths = stalling_model_server
    settings = GeneratorSettings(
        chat_model=chat_model, llamacpp_url=url, ollama_url=url, model_timeout_s=0.5
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stream_events(settings)
    assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert "timed out" in caught.value.details()
    assert len(paths) == 1


@pytest.mark.parametrize(
    "chat_model",
    ["llamacpp:qwen2.5-coder-1.5b-instruct", "openai:any", "ollama:qwen2.5:7b-instruct"],
)
async def test_a_model_server_that_is_down_is_unavailable(chat_model: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    settings = GeneratorSettings(
        chat_model=chat_model,
        llamacpp_url=dead,
        ollama_url=dead,
        openai_url=f"{dead}/v1",
        model_retry_backoff_s=0.05,
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stream_events(settings)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    assert "unreachable" in caught.value.details()


async def test_the_orchestrators_client_streams_domain_events(openai_url: str) -> None:  # noqa: F811
    FakeOpenAI.reply = MODEL_REPLY
    async with serving(build_spec(openai_settings(openai_url))) as channel:
        client = RemoteGenerator(channel, timeout_s=30)
        *deltas, answer = [e async for e in client.generate_stream(QUESTION, DOCUMENTS)]
        unary = await client.generate(QUESTION, DOCUMENTS)

    assert deltas and all(isinstance(d, AnswerDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == (
        "Only one process can open it. The retriever owns the data directory."
    )
    assert isinstance(answer, Answer) and answer == unary
    assert all(INSTRUCTIONS_LABEL not in prompt for prompt in user_prompts())


async def test_the_orchestrators_client_sends_the_instructions_for_the_answer(
    openai_url: str,  # noqa: F811
) -> None:
    FakeOpenAI.reply = MODEL_REPLY
    async with serving(build_spec(openai_settings(openai_url))) as channel:
        client = RemoteGenerator(channel, timeout_s=30)
        _ = [e async for e in client.generate_stream(QUESTION, DOCUMENTS, "Answer in French.")]
        await client.generate(QUESTION, DOCUMENTS, "Answer in French.")
        with pytest.raises(InvalidInput, match="answer_instructions is 501 characters long"):
            await client.generate(QUESTION, DOCUMENTS, "x" * 501)

    line = f"Question: {QUESTION}\n{INSTRUCTIONS_LABEL}: Answer in French.\n"
    # the answers' prompts (each answer's support check follows it); the refused call never
    # reached the model
    streamed, unary = [prompt for prompt in user_prompts() if prompt.startswith("Sources:")]
    assert line in streamed and line in unary


def user_prompts() -> list[str]:
    """The last message of every request the FakeOpenAI model server got."""
    return [body["messages"][-1]["content"] for _, _, body in FakeOpenAI.requests]


async def test_the_orchestrators_client_maps_a_failed_stream_to_a_stage_error(
    stalling_model_server: tuple[str, list[str]],  # noqa: F811
) -> None:
    url, _ = stalling_model_server
    settings = GeneratorSettings(llamacpp_url=url, model_timeout_s=0.5)
    async with serving(build_spec(settings)) as channel:
        client = RemoteGenerator(channel, timeout_s=30)
        with pytest.raises(DependencyTimeout, match=r"generator: .*timed out"):
            [e async for e in client.generate_stream(QUESTION, DOCUMENTS)]
