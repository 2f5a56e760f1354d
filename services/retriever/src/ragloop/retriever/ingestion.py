"""Batches of chunks on their way to Milvus: embedded together, written one batch at a time while
the next one is chunked and embedded, and cleaned up when anything fails. No gRPC, no Milvus."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ragloop.core.errors import RagloopError
from ragloop.retriever.store import ChunkRow

log = logging.getLogger(__name__)

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
Write = Callable[[list[ChunkRow], dict[str, int]], Awaitable[None]]
Remove = Callable[[list[str]], Awaitable[None]]


@dataclass(frozen=True)
class PendingChunk:
    source: str
    index: int
    text: str
    metadata: dict[str, Any]


@dataclass
class Batch:
    chunks: list[PendingChunk] = field(default_factory=list)
    # Sources whose last chunk is in this batch or an earlier one: name → number of chunks.
    finished: dict[str, int] = field(default_factory=dict)

    def sources(self) -> list[str]:
        return list(dict.fromkeys([*(c.source for c in self.chunks), *self.finished]))


def naming(sources: Iterable[str], error: RagloopError) -> RagloopError:
    """``error`` again (same type), its message naming the sources whose ingestion failed."""
    names = list(dict.fromkeys(sources))
    shown = ", ".join(repr(name) for name in names[:3])
    if len(names) > 3:
        shown += f" and {len(names) - 3} more"
    noun = "source" if len(names) == 1 else "sources"
    return type(error)(f"ingesting {noun} {shown} failed: {error}")


class BatchWriter:
    """Collects chunks of one or more sources into batches of ``batch_chunks``; embeds each full
    batch (``embed_batch`` texts per call), then writes it while the caller goes on reading.

    At most two batches are in memory: one being written, one being filled or embedded. Sources
    with chunks written but not yet finished (their last chunk written and older extra chunks
    dropped) are "open"; :meth:`abort` deletes every chunk of each open source.
    """

    def __init__(
        self,
        *,
        embed: Embed,
        write: Write,
        remove: Remove,
        batch_chunks: int,
        embed_batch: int,
        log_extra: dict[str, Any] | None = None,
    ) -> None:
        self._embed = embed
        self._write = write
        self._remove = remove
        self._batch_chunks = batch_chunks
        self._embed_batch = embed_batch
        self._batch = Batch()
        self._writing: asyncio.Task[None] | None = None
        self._open: dict[str, None] = {}  # insertion-ordered set
        self._log_extra = log_extra or {}

    def holds(self, source: str) -> bool:
        """Whether the batch being filled has chunks of ``source`` or finishes it."""
        return source in self._batch.finished or any(c.source == source for c in self._batch.chunks)

    async def add(self, chunk: PendingChunk) -> None:
        self._batch.chunks.append(chunk)
        if len(self._batch.chunks) >= self._batch_chunks:
            await self.flush()

    def finish(self, source: str, chunk_count: int) -> None:
        """All ``chunk_count`` chunks of ``source`` have been added."""
        self._batch.finished[source] = chunk_count

    async def flush(self) -> None:
        """Embed the batch being filled and start writing it (after the previous write)."""
        batch, self._batch = self._batch, Batch()
        if not batch.chunks and not batch.finished:
            return
        texts = [chunk.text for chunk in batch.chunks]
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(texts), self._embed_batch):
                vectors += await self._embed(texts[start : start + self._embed_batch])
        except RagloopError as exc:
            raise naming(batch.sources(), exc) from exc
        await self._wait_for_write()
        rows = [
            ChunkRow(c.source, c.index, c.text, c.metadata, vector)
            for c, vector in zip(batch.chunks, vectors, strict=True)
        ]
        self._open.update(dict.fromkeys(row.source for row in rows))
        self._writing = asyncio.create_task(self._write_batch(rows, batch))

    async def _write_batch(self, rows: list[ChunkRow], batch: Batch) -> None:
        try:
            await self._write(rows, batch.finished)
        except RagloopError as exc:
            raise naming(batch.sources(), exc) from exc
        for source, count in batch.finished.items():
            self._open.pop(source, None)
            log.info("ingested", extra={**self._log_extra, "source": source, "chunks": count})

    async def _wait_for_write(self) -> None:
        writing, self._writing = self._writing, None
        if writing is not None:
            await writing

    async def close(self) -> None:
        """Write what is left and wait until everything is written."""
        await self.flush()
        await self._wait_for_write()

    async def abort(self) -> None:
        """After a failure: let a write under way end, then delete every open source. When that
        fails too (Milvus is down), the failure being handled, which names the sources, stays
        the error; re-ingesting a source replaces whatever chunks of it were left."""
        with contextlib.suppress(BaseException):  # the failure being handled is on its way
            await self._wait_for_write()
        if self._open:
            sources = list(self._open)
            self._open.clear()
            extra = {**self._log_extra, "sources": sources}
            try:
                await self._remove(sources)
            except RagloopError as exc:
                extra["error"] = str(exc)
                log.warning("partly written sources not removed", extra=extra)
                return
            log.warning("partly written sources removed", extra=extra)
