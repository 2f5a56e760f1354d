"""uvicorn, draining first on SIGTERM: the orchestrator reports not ready at once (``/readyz``
503, RagService's gRPC health NOT_SERVING) and keeps answering for ``drain_s`` seconds, so that
the load balancer takes it out before it stops accepting; then uvicorn's graceful shutdown
gives in-flight requests, streamed answers included, the grace to finish. A second signal ends
the drain early."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from types import FrameType

import uvicorn

log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        *,
        drain_s: float,
        on_drain: Callable[[], Awaitable[None]],
        on_stop: Callable[[], None],
    ) -> None:
        """``on_drain``: when the drain begins; ``on_stop``: when it ends, as the server stops
        accepting."""
        super().__init__(config)
        self._drain_s = drain_s
        self._on_drain = on_drain
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining = False
        self._cut_short = asyncio.Event()
        self._drain: asyncio.Task[None] | None = None  # referenced: the loop keeps weak ones

    async def serve(self, sockets: list | None = None) -> None:  # type: ignore[type-arg]
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's signal handler (run by Python's signal machinery on the loop's thread)."""
        if self._loop is None:
            super().handle_exit(sig, frame)
            return
        if self._draining:  # a second signal: stop accepting now
            super().handle_exit(sig, frame)
            self._loop.call_soon_threadsafe(self._cut_short.set)
            return
        self._draining = True
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        assert self._loop is not None
        self._drain = self._loop.create_task(self._drained())

    async def _drained(self) -> None:
        log.info("draining", extra={"drain_s": self._drain_s})
        await self._on_drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._cut_short.wait(), timeout=self._drain_s)
        log.info("shutting down")
        self._on_stop()
        self.should_exit = True
