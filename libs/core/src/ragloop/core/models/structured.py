"""Ask a chat model for JSON that fits a schema, and survive replies that do not parse."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ragloop.core.domain import ModelUsage
from ragloop.core.models.chat import ChatMessage, ChatModel, ChatReply, call_usage
from ragloop.core.models.metered import MeteredChatModel

T = TypeVar("T")
log = logging.getLogger(__name__)

REPAIR_PROMPT = (
    "Your previous reply was not valid JSON for the required schema ({error}). "
    "Reply again with only the JSON object."
)


@dataclass(frozen=True)
class StructuredReply(Generic[T]):
    value: T | None  # None when every attempt failed to parse
    usage: ModelUsage
    error: str = ""


@dataclass(frozen=True)
class ReplyPiece:
    """A piece of the raw JSON reply of attempt ``attempt`` (0-based), as the model writes it."""

    attempt: int
    text: str


@dataclass
class ParseCounts:
    """Model replies in this process since it started, for benchmarks and scripts (the services
    count them as a metric per stage: ``count_parse_failure``)."""

    unparseable: int = 0  # replies that did not parse (each then asked to be repaired)


PARSE_COUNTS = ParseCounts()


class _RepairingParser(Generic[T]):
    """Parses one attempt's reply after the other; a failed attempt leaves the conversation that
    asks the model to repair its reply, and the error. A metered model counts each failed one."""

    def __init__(
        self, model: ChatModel, messages: list[ChatMessage], parse: Callable[[dict[str, Any]], T]
    ) -> None:
        self._model = model
        self._messages = messages
        self._parse = parse
        self.conversation = list(messages)
        self.usage = ModelUsage(model=model.name)
        self.error = ""

    def accept(self, reply: ChatReply) -> StructuredReply[T] | None:
        """The parsed reply, or None when the model must be asked again."""
        self.usage = self.usage + call_usage(self.usage.model, reply)
        try:
            data = json.loads(reply.text)
            if not isinstance(data, dict):
                raise TypeError("expected a JSON object")
            return StructuredReply(self._parse(data), self.usage)
        except (ValueError, KeyError, TypeError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            PARSE_COUNTS.unparseable += 1
            if isinstance(self._model, MeteredChatModel):
                self._model.count_parse_failure()
            log.warning(
                "unparseable model reply", extra={"error": self.error, "reply": reply.text[:200]}
            )
            self.conversation = [
                *self._messages,
                ChatMessage("assistant", reply.text),
                ChatMessage("user", REPAIR_PROMPT.format(error=self.error)),
            ]
            return None

    def failure(self) -> StructuredReply[T]:
        return StructuredReply(None, self.usage, self.error)


async def complete_structured(
    model: ChatModel,
    messages: list[ChatMessage],
    *,
    schema: dict[str, Any],
    parse: Callable[[dict[str, Any]], T],
    max_tokens: int,
    attempts: int = 2,
) -> StructuredReply[T]:
    """Call ``model`` for JSON and turn it into ``T`` with ``parse``.

    A reply that is not JSON, or that ``parse`` rejects (ValueError/KeyError/TypeError), is
    retried with a repair message; after ``attempts`` failures the value is None and ``error``
    says why. Dependency errors (model down, timeout) propagate unchanged.
    """
    parser = _RepairingParser(model, messages, parse)
    for _ in range(attempts):
        reply = await model.complete(parser.conversation, json_schema=schema, max_tokens=max_tokens)
        if (result := parser.accept(reply)) is not None:
            return result
    return parser.failure()


async def stream_structured(
    model: ChatModel,
    messages: list[ChatMessage],
    *,
    schema: dict[str, Any],
    parse: Callable[[dict[str, Any]], T],
    max_tokens: int,
    attempts: int = 2,
) -> AsyncGenerator[ReplyPiece | StructuredReply[T], None]:
    """``complete_structured`` with the model's streamed replies: the pieces of each attempt's
    raw reply as they arrive, then the ``StructuredReply`` that ``complete_structured`` returns.
    A repaired attempt streams again, from its start, under the next attempt number."""
    parser = _RepairingParser(model, messages, parse)
    for attempt in range(attempts):
        reply: ChatReply | None = None
        pieces = model.stream(parser.conversation, json_schema=schema, max_tokens=max_tokens)
        async with aclosing(pieces):
            async for item in pieces:
                if isinstance(item, ChatReply):
                    reply = item
                else:
                    yield ReplyPiece(attempt, item)
        if reply is None:
            raise RuntimeError(f"{model.name} ended its stream without a reply")
        if (result := parser.accept(reply)) is not None:
            yield result
            return
    yield parser.failure()
