"""Server-sent events of OpenAI-compatible streaming: data lines as JSON, until [DONE]."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ragloop.core.models.sse import sse_json_events


async def lines(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item


async def test_data_lines_are_json_events_until_done() -> None:
    events = [
        e
        async for e in sse_json_events(
            lines(
                ": a comment",
                'data: {"n": 1}',
                "",
                "event: message",
                'data:{"n": 2}',
                "data: [DONE]",
                'data: {"n": 3}',
            )
        )
    ]
    assert events == [{"n": 1}, {"n": 2}]


async def test_a_stream_that_ends_without_done_ends_the_events() -> None:
    assert [e async for e in sse_json_events(lines('data: {"n": 1}'))] == [{"n": 1}]


@pytest.mark.parametrize("data", ["data: [1, 2]", "data: {broken"])
async def test_a_data_line_that_is_no_json_object_is_an_error(data: str) -> None:
    with pytest.raises(ValueError):
        [e async for e in sse_json_events(lines(data))]
