"""A client of ragloop's ``POST /v1/query/stream``: the run's events, ending with ``done``.

The stream is used rather than ``/v1/query`` because its events hold every round's passages and
grades, from which the passages handed to the generator are rebuilt (the JSON body shows the last
round only). Both endpoints run the same loop; the stream calls the generator's streaming RPC.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bench.comparison.evidence import Event


class RagloopError(RuntimeError):
    """The stream ended with an ``error`` event (or without ``done``)."""


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[Event]:
    """(event name, JSON data) of every event; comments (keep-alives) are skipped."""
    name, data = "message", ""
    async for line in lines:
        if not line:  # a blank line ends an event
            if data:
                yield name, json.loads(data)
            name, data = "message", ""
        elif line.startswith("event:"):
            name = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data += line.removeprefix("data:").strip()
    if data:
        yield name, json.loads(data)


async def stream_query(
    client: httpx.AsyncClient, base_url: str, body: dict[str, Any], *, timeout_s: float
) -> list[Event]:
    """Every event of one run; raises RagloopError when it ends in an error."""
    events: list[Event] = []
    async with client.stream(
        "POST", f"{base_url}/v1/query/stream", json=body, timeout=timeout_s
    ) as response:
        if response.status_code != 200:
            await response.aread()
            raise RagloopError(f"HTTP {response.status_code}: {response.text[:300]}")
        async for event in sse_events(response.aiter_lines()):
            if event[0] == "token":
                continue  # the answer's text is in done
            events.append(event)
            if event[0] == "error":
                raise RagloopError(f"{event[1].get('code')}: {event[1].get('message')}")
    if not events or events[-1][0] != "done":
        raise RagloopError("the stream ended without a done event")
    return events
