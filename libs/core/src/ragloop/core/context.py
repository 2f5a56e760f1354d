"""Per-request context carried across awaits: the request id that ties log lines and stage calls."""

from __future__ import annotations

from contextvars import ContextVar

request_id: ContextVar[str] = ContextVar("ragloop_request_id", default="")
