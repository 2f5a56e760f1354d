"""Read the server-sent events of POST /v1/query/stream back, strictly: every block must be one
``event:`` line and one ``data:`` line of JSON, or a comment."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

KEEP_ALIVE = "keep-alive"


@dataclass(frozen=True)
class SseEvent:
    name: str  # the event's name, or KEEP_ALIVE for the comment
    data: dict[str, Any]


def parse_events(text: str) -> list[SseEvent]:
    assert text.endswith("\n\n"), f"the stream must end with a complete event: {text[-200:]!r}"
    return [parse_block(block) for block in text.removesuffix("\n\n").split("\n\n")]


def parse_block(block: str) -> SseEvent:
    if block == ": keep-alive":
        return SseEvent(KEEP_ALIVE, {})
    event_line, data_line = block.split("\n")  # exactly two lines
    assert event_line.startswith("event: "), block
    assert data_line.startswith("data: "), block
    data = json.loads(data_line.removeprefix("data: "))
    return SseEvent(event_line.removeprefix("event: "), data)


def without_keep_alives(events: list[SseEvent]) -> list[SseEvent]:
    return [e for e in events if e.name != KEEP_ALIVE]


def answer_text(events: list[SseEvent]) -> str:
    """The answer as a client builds it from the token events."""
    text = ""
    for event in events:
        if event.name == "token":
            text = event.data["text"] if event.data["restart"] else text + event.data["text"]
    return text


async def read_until(
    chunks: AsyncIterator[str], stop: Callable[[SseEvent], bool]
) -> list[SseEvent]:
    """The events of a stream read as it arrives, up to the first one ``stop`` accepts."""
    seen: list[SseEvent] = []
    buffer = ""
    async for text in chunks:
        buffer += text
        *blocks, buffer = buffer.split("\n\n")
        for block in blocks:
            seen.append(parse_block(block))
            if stop(seen[-1]):
                return seen
    raise AssertionError(f"the stream ended first: {seen}")
