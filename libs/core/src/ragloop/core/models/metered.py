"""A chat model that records its calls in the model-call metrics of the stage that makes them
and, when tracing is on, as spans (OpenTelemetry's GenAI conventions: ``gen_ai.operation.name``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, …).

A stage wraps its model once, where it is built (``MeteredChatModel(model, stage="grader")``), and
its logic stays free of metrics and traces: every call's latency and tokens, or its failure, is
recorded here; ``structured.py`` counts the replies that do not parse.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import AbstractContextManager, aclosing
from typing import Any

from opentelemetry.trace import Span

from ragloop.core import tracing
from ragloop.core.metrics import (
    count_model_failure,
    count_parse_failure,
    init_model_series,
    observe_model_call,
)
from ragloop.core.models.chat import TOP_LOGPROBS, ChatMessage, ChatModel, ChatReply, TokenReply


class MeteredChatModel:
    """``model`` as called by ``stage`` (one of the catalog's STAGES), with its calls measured.

    A call that returns (or a stream that delivers its final ``ChatReply``) is a successful call:
    its time from start to reply and its tokens are observed. A call that raises is a failure,
    by reason. A cancelled call, or a stream its reader closed early, is neither. Creating one
    creates the stage's model series at zero, so a fresh stage exports them before its first call.
    """

    def __init__(self, model: ChatModel, *, stage: str) -> None:
        init_model_series(stage, model.name)  # refuses a stage outside the closed set
        self._model = model
        self.stage = stage
        self._span_name, self._span_attributes = tracing.model_call("chat", model.name)
        self._span_attributes["ragloop.stage"] = stage

    @property
    def name(self) -> str:
        return self._model.name

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> ChatReply:
        with self._span(max_tokens, json_schema) as span:
            started = time.perf_counter()
            try:
                reply = await self._model.complete(
                    messages, json_schema=json_schema, max_tokens=max_tokens
                )
            except Exception as exc:
                count_model_failure(self.stage, self.name, exc)
                raise
            self._observe(reply, started, span)
        return reply

    async def stream(
        self,
        messages: list[ChatMessage],
        *,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int = 512,
    ) -> AsyncGenerator[str | ChatReply, None]:
        with self._span(max_tokens, json_schema) as span:
            started = time.perf_counter()
            pieces = self._model.stream(messages, json_schema=json_schema, max_tokens=max_tokens)
            try:
                async with aclosing(pieces):
                    async for item in pieces:
                        if isinstance(item, ChatReply):
                            self._observe(item, started, span)
                        yield item
            except Exception as exc:  # GeneratorExit (closed early) and cancellation pass by
                count_model_failure(self.stage, self.name, exc)
                raise

    async def next_token(
        self, messages: list[ChatMessage], *, top_logprobs: int = TOP_LOGPROBS
    ) -> TokenReply:
        with self._span(1, None) as span:
            started = time.perf_counter()
            try:
                reply = await self._model.next_token(messages, top_logprobs=top_logprobs)
            except Exception as exc:
                count_model_failure(self.stage, self.name, exc)
                raise
            self._observe(reply, started, span)
        return reply

    def count_parse_failure(self) -> None:
        """A reply of this model that was not the requested JSON (``structured.py`` calls this)."""
        count_parse_failure(self.stage, self.name)

    async def aclose(self) -> None:
        await self._model.aclose()

    def _span(
        self, max_tokens: int, json_schema: dict[str, Any] | None
    ) -> AbstractContextManager[Span]:
        """The span of one call (a no-op while tracing is off)."""
        return tracing.call_span(
            self._span_name,
            {
                **self._span_attributes,
                "gen_ai.request.max_tokens": max_tokens,
                "gen_ai.output.type": "text" if json_schema is None else "json",
            },
        )

    def _observe(self, reply: ChatReply | TokenReply, started: float, span: Span) -> None:
        observe_model_call(
            self.stage,
            self.name,
            time.perf_counter() - started,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cached_prompt_tokens=reply.cached_prompt_tokens,
        )
        span.set_attribute("gen_ai.usage.input_tokens", reply.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", reply.completion_tokens)
