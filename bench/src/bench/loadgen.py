"""A bounded load on the REST API: a few clients, each sending one query after another until
stopped, recording how every request ended. A request that gets no answer within its budget
plus a grace period counts as hung. Used by ``bench/reliability.py`` and the fault tests."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

GRACE_S = 15.0  # beyond the query's budget, before a request counts as hung
PAUSE_AFTER_ERROR_S = 0.1  # a client backs off a little after an error, as real clients do
NO_CONNECTION = -1  # the status of a request refused a connection, or whose connection dropped


@dataclass(frozen=True)
class Ended:
    started: float  # time.monotonic()
    ended: float
    status: int  # the HTTP status; 0: no answer in time (hung); NO_CONNECTION
    stage: str = ""
    code: str = ""
    message: str = ""

    @property
    def hung(self) -> bool:
        return self.status == 0

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    def in_flight_at(self, moment: float) -> bool:
        return self.started < moment < self.ended


def query(client: httpx.Client, body: dict[str, Any]) -> Ended:
    """One POST /v1/query; how it ended."""
    started = time.monotonic()
    try:
        response = client.post("/v1/query", json=body)
    except httpx.TimeoutException:
        return Ended(started, time.monotonic(), 0, message="no answer in time")
    except httpx.TransportError as exc:  # the server is not there (a fault test killed it)
        return Ended(started, time.monotonic(), NO_CONNECTION, message=repr(exc))
    ended = time.monotonic()
    if response.status_code == 200:
        return Ended(started, ended, 200)
    error = response.json().get("error", {})
    return Ended(
        started,
        ended,
        response.status_code,
        error.get("stage") or "",
        error.get("code", ""),
        error.get("message", ""),
    )


class Load:
    """``with Load(url, bodies, clients=n) as load:`` runs until the block ends; every client
    finishes the request it is sending. ``bodies`` are sent in turn, all clients sharing one
    rotation; each must hold ``time_budget_s``."""

    def __init__(
        self, base_url: str, bodies: Sequence[dict[str, Any]], *, clients: int = 2
    ) -> None:
        self.base_url = base_url
        self.timeout_s = max(float(body["time_budget_s"]) for body in bodies) + GRACE_S
        self.results: list[Ended] = []
        self._bodies: Iterator[dict[str, Any]] = itertools.cycle(bodies)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, daemon=True) for _ in range(clients)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.timeout_s + 5)

    def _client(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=self.timeout_s) as client:
            while not self._stop.is_set():
                with self._lock:
                    body = next(self._bodies)
                ended = query(client, body)
                with self._lock:
                    self.results.append(ended)
                if ended.status != 200:
                    self._stop.wait(PAUSE_AFTER_ERROR_S)

    def ended(self, accept: Callable[[Ended], bool] = lambda e: True) -> list[Ended]:
        with self._lock:
            return [e for e in self.results if accept(e)]

    def wait_for(
        self, accept: Callable[[Ended], bool], *, count: int = 1, timeout_s: float
    ) -> bool:
        """Wait until ``count`` requests ended as ``accept`` says; False after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.ended(accept)) >= count:
                return True
            time.sleep(0.05)
        return False
