"""Ask a chat model for JSON that fits a schema, and survive replies that do not parse."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ragloop.core.domain import ModelUsage
from ragloop.core.models.chat import ChatMessage, ChatModel

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
    usage = ModelUsage(model=model.name)
    conversation = list(messages)
    error = ""
    for _ in range(attempts):
        reply = await model.complete(conversation, json_schema=schema, max_tokens=max_tokens)
        usage = usage + ModelUsage(
            model=model.name,
            calls=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
        )
        try:
            data = json.loads(reply.text)
            if not isinstance(data, dict):
                raise TypeError("expected a JSON object")
            return StructuredReply(parse(data), usage)
        except (ValueError, KeyError, TypeError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.warning(
                "unparseable model reply", extra={"error": error, "reply": reply.text[:200]}
            )
            conversation = [
                *messages,
                ChatMessage("assistant", reply.text),
                ChatMessage("user", REPAIR_PROMPT.format(error=error)),
            ]
    return StructuredReply(None, usage, error)
