"""POST /v1/query/stream's server-sent events: the loop's events as they happen, then ``done``
with the body POST /v1/query would return, or ``error``. The format: docs/corrective-loop.md
("The event stream")."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import fields
from typing import Any

from ragloop.orchestrator.loop.corrective import LoopResult, StageFailure
from ragloop.orchestrator.loop.events import EventSink, LoopEvent, NodeFinished
from ragloop.orchestrator.rest.errors import failure_detail, unexpected_error
from ragloop.orchestrator.rest.response import query_response_body

log = logging.getLogger(__name__)

MEDIA_TYPE = "text/event-stream"
# Proxies close a connection that stays silent too long; a comment line keeps it open while a
# model works.
KEEP_ALIVE_S = 15.0
KEEP_ALIVE = b": keep-alive\n\n"


def encode(event: str, data: dict[str, Any]) -> bytes:
    """One event: its name and its data as one line of JSON (which escapes every line break)."""
    line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event}\ndata: {line}\n\n".encode()


def event_data(event: LoopEvent) -> dict[str, Any]:
    data = {f.name: getattr(event, f.name) for f in fields(event)}
    if isinstance(event, NodeFinished):
        data["duration_ms"] = round(event.duration_ms, 1)
    return data


async def query_events(
    run: Callable[[EventSink], Awaitable[LoopResult]],
) -> AsyncIterator[bytes]:
    """Start ``run`` with an event sink and yield its events, then ``done`` or ``error``.

    The run is a task of its own; when the reader stops before the end (the client went away,
    so the server cancels the response), the task is cancelled, and with it the stage call in
    flight: a gRPC call is cancelled with the task awaiting it.
    """
    queue: asyncio.Queue[LoopEvent | None] = asyncio.Queue()

    async def sink(event: LoopEvent) -> None:
        queue.put_nowait(event)

    task = asyncio.create_task(run(sink))
    task.add_done_callback(lambda _: queue.put_nowait(None))  # None: the run ended
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), KEEP_ALIVE_S)
            except TimeoutError:
                yield KEEP_ALIVE
                continue
            if event is None:
                break
            yield encode(event.kind, event_data(event))
        yield _last_event(task)
    finally:
        if not task.done():
            task.cancel()
            log.info("query cancelled: the client stopped reading its events")


def _last_event(task: asyncio.Task[LoopResult]) -> bytes:
    try:
        result = task.result()
    except StageFailure as exc:
        status, detail = failure_detail(exc, exc.stage, exc.trace)
        return encode("error", {"status": status, **detail.model_dump()})
    except Exception:
        log.exception("unexpected error in a streamed query")
        return encode("error", {"status": 500, **unexpected_error().model_dump()})
    return encode("done", query_response_body(result))
