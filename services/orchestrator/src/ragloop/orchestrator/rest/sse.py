"""Server-sent events of a query as it runs: the loop's events as they happen, then how it
ended, each written by an encoder. POST /v1/query/stream's own (``QueryEvents``): every event,
then ``done`` with the body POST /v1/query would return, or ``error`` (the format:
docs/corrective-loop.md, "The event stream"); the chat completion chunks are another
(``chat_mapping.ChunkEncoder``)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import fields
from typing import Any, Protocol

from ragloop.orchestrator.application.answers import QueryResponse
from ragloop.orchestrator.loop.corrective import StageFailure
from ragloop.orchestrator.loop.events import EventSink, LoopEvent, NodeFinished
from ragloop.orchestrator.rest.errors import failure_detail, unexpected_error
from ragloop.orchestrator.rest.schemas import ErrorDetail

log = logging.getLogger(__name__)

MEDIA_TYPE = "text/event-stream"
# Proxies close a connection that stays silent too long; a comment line keeps it open while a
# model works.
KEEP_ALIVE_S = 15.0
KEEP_ALIVE = b": keep-alive\n\n"
# No caching, and no buffering by a proxy (nginx honours X-Accel-Buffering).
STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def encode(event: str | None, data: dict[str, Any]) -> bytes:
    """One event: its name (None: none, as OpenAI's streams have) and its data as one line of
    JSON (which escapes every line break)."""
    line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    name = f"event: {event}\n" if event is not None else ""
    return f"{name}data: {line}\n\n".encode()


def event_data(event: LoopEvent) -> dict[str, Any]:
    data = {f.name: getattr(event, f.name) for f in fields(event)}
    if isinstance(event, NodeFinished):
        data["duration_ms"] = round(event.duration_ms, 1)
    return data


class StreamEncoder(Protocol):
    """How a stream writes the loop's events and its end; b"" writes nothing."""

    def event(self, event: LoopEvent) -> bytes: ...

    def done(self, answer: QueryResponse) -> bytes: ...

    def failed(self, status: int, detail: ErrorDetail) -> bytes: ...


class QueryEvents:
    """POST /v1/query/stream's events."""

    def event(self, event: LoopEvent) -> bytes:
        return encode(event.kind, event_data(event))

    def done(self, answer: QueryResponse) -> bytes:
        return encode("done", answer.model_dump(mode="json"))

    def failed(self, status: int, detail: ErrorDetail) -> bytes:
        return encode("error", {"status": status, **detail.model_dump()})


async def query_events(
    run: Callable[[EventSink], Awaitable[QueryResponse]], encoder: StreamEncoder | None = None
) -> AsyncIterator[bytes]:
    """Start ``run`` with an event sink and yield its events, then how it ended, as ``encoder``
    (POST /v1/query/stream's events by default) writes them.

    The run is a task of its own; when the reader stops before the end (the client went away,
    so the server cancels the response), the task is cancelled, and with it the stage call in
    flight: a gRPC call is cancelled with the task awaiting it.
    """
    encoder = encoder or QueryEvents()
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
            if written := encoder.event(event):
                yield written
        yield _ending(task, encoder)
    finally:
        if not task.done():
            task.cancel()
            log.info("query cancelled: the client stopped reading its events")


def _ending(task: asyncio.Task[QueryResponse], encoder: StreamEncoder) -> bytes:
    try:
        answer = task.result()
    except StageFailure as exc:
        return encoder.failed(*failure_detail(exc, exc.stage, exc.trace))
    except Exception:
        log.exception("unexpected error in a streamed query")
        return encoder.failed(500, unexpected_error())
    return encoder.done(answer)
