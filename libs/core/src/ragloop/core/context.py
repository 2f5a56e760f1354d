"""Per-request context carried across awaits: the request id that ties log lines and stage calls
together, and the deadline by which a stage call must be answered."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

request_id: ContextVar[str] = ContextVar("ragloop_request_id", default="")
# A time.monotonic() value; None: no deadline beyond each client's own timeout.
deadline: ContextVar[float | None] = ContextVar("ragloop_deadline", default=None)

REQUEST_ID_HEADER = "x-request-id"
# What a request id from outside may look like: short and harmless in a log line or a header.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")


def accepted_request_id(offered: str | None) -> str:
    """``offered`` (an X-Request-ID from a client or a caller) if it is a valid request id,
    else a new one."""
    if offered and _VALID_REQUEST_ID.fullmatch(offered):
        return offered
    return uuid.uuid4().hex


@contextmanager
def request_id_set(value: str) -> Iterator[None]:
    token = request_id.set(value)
    try:
        yield
    finally:
        request_id.reset(token)


@contextmanager
def deadline_at(monotonic_deadline: float) -> Iterator[None]:
    """Calls made inside must be answered by ``monotonic_deadline`` (a time.monotonic() value)."""
    token = deadline.set(monotonic_deadline)
    try:
        yield
    finally:
        deadline.reset(token)


def time_left(cap_s: float) -> float:
    """Seconds until the current deadline, at most ``cap_s``; ``cap_s`` when there is none."""
    current = deadline.get()
    if current is None:
        return cap_s
    return min(cap_s, current - time.monotonic())
