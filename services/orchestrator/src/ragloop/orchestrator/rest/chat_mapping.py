"""The OpenAI-compatible API in ragloop's terms, both ways, without I/O: a model name to a
collection, a chat request to a ``QueryRequest`` (the last user message is the question, the
earlier user and assistant messages its history, system messages the answer instructions), the
answer body to a ``chat.completion``, and the loop's events to ``chat.completion.chunk`` events.

A stream's content is the answer once it is final. The loop's text can restart — the support
check turns a written answer into the refusal, a repaired reply or a later round's answer
replaces it — and an OpenAI client only ever appends content, so streamed text it had shown could
not be taken back. The text as the model writes it, restarts included, reaches clients that ask
for progress, as ``token`` events.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ragloop.core.validation import COLLECTION_PATTERN
from ragloop.orchestrator.application.answers import QueryResponse
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop.events import LoopEvent
from ragloop.orchestrator.rest.chat_schemas import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatMessage,
    ChatUsage,
    Choice,
    ChunkChoice,
    Delta,
    ModelList,
    ModelOut,
    PromptTokensDetails,
    RagloopOptions,
)
from ragloop.orchestrator.rest.errors import OpenAIError
from ragloop.orchestrator.rest.progress_text import progress_text
from ragloop.orchestrator.rest.schemas import ErrorDetail
from ragloop.orchestrator.rest.sse import encode, event_data

DEFAULT_MODEL = "ragloop"  # the retriever's default collection
MODEL_PREFIX = "ragloop/"  # ragloop/<collection>
INSTRUCTION_ROLES = ("system", "developer")
CONVERSATION_ROLES = ("user", "assistant")
DONE = b"data: [DONE]\n\n"
INVALID = "invalid_request"
# Where a QueryRequest field a chat request fills from its messages came from.
FROM_MESSAGES = {
    "query": "the last user message",
    "answer_instructions": "the system message (ragloop's answer instructions)",
    "history": "the earlier user and assistant messages (the conversation's history)",
}


def collection_of_model(model: str) -> str | None:
    """The collection ``model`` names (None: the default one); OpenAIError 404 for a name that
    is not one of ragloop's models."""
    if model == DEFAULT_MODEL:
        return None
    name = model.removeprefix(MODEL_PREFIX)
    if name == model or not re.fullmatch(COLLECTION_PATTERN, name):
        raise model_not_found(model)
    return name


def model_not_found(model: str) -> OpenAIError:
    return OpenAIError(
        404,
        f"the model {model!r} does not exist: ragloop's models are {DEFAULT_MODEL!r} and "
        f"'{MODEL_PREFIX}<collection>' for each collection (GET /v1/models lists them)",
        code="model_not_found",
        param="model",
    )


def model_list(collections: Iterable[str]) -> ModelList:
    """The default model, then one per collection."""
    ids = [DEFAULT_MODEL, *(MODEL_PREFIX + name for name in collections)]
    return ModelList(data=[ModelOut(id=model) for model in ids])


def question_of(messages: list[ChatMessage]) -> tuple[str, str]:
    """The question (the text of the last message, which must be a user's) and the answer
    instructions (the text of the system messages, "" for none)."""
    last = len(messages) - 1
    if not any(m.role == "user" for m in messages):
        raise OpenAIError(
            400,
            "no user message: the last message must be the question",
            code=INVALID,
            param="messages",
        )
    if messages[last].role != "user":
        raise OpenAIError(
            400,
            f"the last message must be the user's question, not a {messages[last].role} message "
            "(ragloop does not continue an assistant's turn)",
            code=INVALID,
            param=f"messages[{last}].role",
        )
    question = messages[last].text.strip()
    if not question:
        raise OpenAIError(
            400,
            "the last user message has no text",
            code=INVALID,
            param=f"messages[{last}].content",
        )
    instructions = "\n\n".join(
        text for m in messages if m.role in INSTRUCTION_ROLES and (text := m.text.strip())
    )
    return question, instructions


def history_of(messages: list[ChatMessage]) -> list[dict[str, str]]:
    """The user and assistant messages before the last (the question), oldest first, as the
    history of ``QueryRequest``; system messages are instructions, and turns without text (an
    assistant's tool call) say nothing a follow-up could refer to."""
    return [
        {"role": m.role, "content": text}
        for m in messages[:-1]
        if m.role in CONVERSATION_ROLES and (text := m.text.strip())
    ]


def query_of(request: ChatCompletionRequest, collection: str | None) -> QueryRequest:
    """The query ``request`` asks: its question and instructions, its ``ragloop`` options and
    ``collection``, the one its model names (None: the model names none)."""
    question, instructions = question_of(request.messages)
    options = request.ragloop or RagloopOptions()
    if collection is not None and options.collection not in (None, collection):
        raise OpenAIError(
            400,
            f"the model {request.model!r} is collection {collection!r}, but ragloop.collection "
            f"is {options.collection!r}: name the collection once",
            code=INVALID,
            param="ragloop.collection",
        )
    if instructions and options.answer_instructions is not None:
        raise OpenAIError(
            400,
            "give the answer instructions once: as a system message or as "
            "ragloop.answer_instructions, not both",
            code=INVALID,
            param="ragloop.answer_instructions",
        )
    fields: dict[str, Any] = options.model_dump(
        exclude_unset=True, exclude={"progress", "reasoning"}
    )
    fields["query"] = question
    if history := history_of(request.messages):
        fields["history"] = history
    if collection is not None:
        fields["collection"] = collection
    if instructions:
        fields["answer_instructions"] = instructions
    try:
        return QueryRequest.model_validate(fields)
    except ValidationError as exc:
        raise _invalid_query(exc) from None


def _invalid_query(exc: ValidationError) -> OpenAIError:
    problem = exc.errors()[0]
    field = str(problem["loc"][0]) if problem["loc"] else ""
    if field in FROM_MESSAGES:
        where, param = FROM_MESSAGES[field], "messages"
    else:
        where = param = f"ragloop.{field}" if field else "ragloop"
    return OpenAIError(400, f"{where}: {problem['msg']}", code=INVALID, param=param)


@dataclass(frozen=True)
class Completion:
    """What every chunk of one completion repeats."""

    id: str
    created: int
    model: str

    @classmethod
    def begin(cls, model: str, request_id: str) -> Completion:
        return cls(f"chatcmpl-{request_id}", int(time.time()), model)


def usage_of(answer: QueryResponse) -> ChatUsage:
    """Every model call of the loop: grading, rewriting and the answer."""
    usage = answer.workflow.usage
    return ChatUsage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.prompt_tokens + usage.completion_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage.cached_prompt_tokens),
    )


def ragloop_extras(answer: QueryResponse) -> dict[str, Any]:
    """The body of POST /v1/query less ``answer``, which is the message's content."""
    return answer.model_dump(mode="json", exclude={"answer"})


def completion_body(answer: QueryResponse, completion: Completion) -> dict[str, Any]:
    """The ``chat.completion`` of an answer."""
    return ChatCompletion(
        id=completion.id,
        created=completion.created,
        model=completion.model,
        choices=[Choice(message=AssistantMessage(content=answer.answer))],
        usage=usage_of(answer),
        ragloop=ragloop_extras(answer),
    ).model_dump(mode="json")


class ChunkEncoder:
    """The ``chat.completion.chunk`` events of one run (a ``sse.StreamEncoder``): the role first
    (``opening``), the loop's progress in words as ``reasoning_content`` deltas and its events as
    progress chunks when asked, then the answer as one
    content delta, the last choice chunk with ``finish_reason`` and ragloop's own answer, the
    usage chunk when asked, and ``[DONE]``; or an error event in OpenAI's shape."""

    def __init__(
        self, completion: Completion, *, progress: bool, include_usage: bool, reasoning: bool
    ) -> None:
        self.completion = completion
        self.progress = progress
        self.include_usage = include_usage
        self.reasoning = reasoning

    @classmethod
    def asked_by(cls, request: ChatCompletionRequest, completion: Completion) -> ChunkEncoder:
        """The chunks ``request`` asks for: events (``ragloop.progress``), usage
        (``stream_options.include_usage``), the progress in words (``ragloop.reasoning``, on
        unless turned off)."""
        options = request.ragloop or RagloopOptions()
        return cls(
            completion,
            progress=options.progress,
            include_usage=bool(request.stream_options and request.stream_options.include_usage),
            reasoning=options.reasoning,
        )

    def opening(self) -> bytes:
        return self._chunk([ChunkChoice(delta=Delta(role="assistant", content=""))])

    def event(self, event: LoopEvent) -> bytes:
        chunks = []
        if self.reasoning and (words := progress_text(event)):
            chunks.append(self._chunk([ChunkChoice(delta=Delta(reasoning_content=words))]))
        if self.progress:
            chunks.append(self._chunk([], ragloop={"event": event.kind, **event_data(event)}))
        return b"".join(chunks)

    def done(self, answer: QueryResponse) -> bytes:
        chunks = [
            self._chunk([ChunkChoice(delta=Delta(content=answer.answer))]),
            self._chunk(
                [ChunkChoice(delta=Delta(), finish_reason="stop")], ragloop=ragloop_extras(answer)
            ),
        ]
        if self.include_usage:
            chunks.append(self._chunk([], usage=usage_of(answer)))
        return b"".join([*chunks, DONE])

    def failed(self, status: int, detail: ErrorDetail) -> bytes:
        return encode(None, OpenAIError.of(status, detail).body())

    def _chunk(
        self,
        choices: list[ChunkChoice],
        *,
        usage: ChatUsage | None = None,
        ragloop: dict[str, Any] | None = None,
    ) -> bytes:
        completion = self.completion
        body = ChatCompletionChunk(
            id=completion.id,
            created=completion.created,
            model=completion.model,
            choices=choices,
            usage=usage,
            ragloop=ragloop,
        ).model_dump(mode="json")
        for choice in body["choices"]:
            choice["delta"] = {k: v for k, v in choice["delta"].items() if v is not None}
        if ragloop is None:
            del body["ragloop"]
        if usage is None and not self.include_usage:  # with it, OpenAI's chunks carry null
            del body["usage"]
        return encode(None, body)
