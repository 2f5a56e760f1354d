"""One call to a stage, whichever the stage: the channel to its replicas, the call's deadline
(the client's timeout, or less when the request's budget, ``context.deadline``, leaves less) and
request id, and the circuit breaker (``breaker.py``) the call passes. Calls fail fast when a stage
is down (no waiting for it to come up), and connecting may take at most the channel's connect
timeout, so a stage that is down is an error naming it, never a hang.

Calls that are safe to repeat (retrieve, describe, list, health) are retried with capped backoff
when the stage could not be reached, within the call's deadline; the others never are. After
repeated unreachable calls the breaker fails them at once for a cool-down instead of each waiting
for its own connection attempt. The clients of the four stages (``clients.py``) build on
``RemoteStage``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core import context
from ragloop.core.backoff import NO_RETRIES, RetryPolicy
from ragloop.core.errors import ConfigurationError, DependencyUnavailable
from ragloop.core.grpc.client_metrics import client_metrics_interceptors
from ragloop.core.grpc.errors import error_from_rpc
from ragloop.core.grpc.server import MAX_MESSAGE_BYTES
from ragloop.core.grpc.tls import RELOAD_CHECK_S, ClientTls, ClientTlsFiles, aio_channel
from ragloop.core.grpc.tracing import client_interceptors as tracing_interceptors
from ragloop.core.names import Stage
from ragloop.core.stage_registry import stage_spec
from ragloop.orchestrator.stages import balancing
from ragloop.orchestrator.stages.breaker import CircuitBreaker, Outcome, Permit, Refusal

R = TypeVar("R")
log = logging.getLogger(__name__)

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # Ping every 30 s; a stage host that vanished without closing the connection (no RST) fails
    # the calls on it 10 s after an unanswered ping instead of at their deadlines.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    # Reconnect quickly after a stage restarts: the first attempt 250 ms after a connection is
    # lost, then backing off to at most 2 s between attempts (gRPC's default: up to 2 minutes).
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]
DEFAULT_CONNECT_TIMEOUT_S = 5.0


def open_channel(
    address: str,
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    tls: ClientTls | None = None,
) -> grpc.aio.Channel:
    """A channel to a stage's replicas, each call to the next ready one (``balancing.py``):
    TLS when ``tls`` is given, else plaintext."""
    # gRPC core takes its minimum reconnect backoff as the timeout of one connection attempt
    # (default 20 s): a call to a host that never completes the handshake fails after it.
    connect = ("grpc.min_reconnect_backoff_ms", round(connect_timeout_s * 1000))
    return aio_channel(
        balancing.grpc_target(address),
        tls,
        options=[*CHANNEL_OPTIONS, connect, *balancing.channel_options(address)],
        interceptors=[*tracing_interceptors(address), *client_metrics_interceptors()],
    )


# How long, at most, the calls on a channel replaced after a renewal may still run.
RETIRE_GRACE_S = 600.0


class StageChannel:
    """The channel to a stage's replicas, opened again when its TLS files change: cert-manager
    renews a Secret's files in place, without restarting the orchestrator. The files are
    compared with those loaded when a call takes the channel, at most every ``check_s``; the
    replaced channel closes once the calls on it end (``retire_grace_s`` at most). Unusable
    files (half written) are logged and the current channel kept."""

    def __init__(
        self,
        open_with: Callable[[ClientTls | None], grpc.aio.Channel],
        tls_files: ClientTlsFiles | None = None,
        *,
        check_s: float = RELOAD_CHECK_S,
        retire_grace_s: float = RETIRE_GRACE_S,
    ) -> None:
        self._open_with = open_with
        self._files = tls_files
        self._check_s = check_s
        self._retire_grace_s = retire_grace_s
        self._loaded = tls_files.contents() if tls_files else ()
        self._current = open_with(tls_files.load() if tls_files else None)
        self._checked = time.monotonic()
        self._retiring: set[asyncio.Task[None]] = set()

    @classmethod
    def fixed(cls, channel: grpc.aio.Channel) -> StageChannel:
        """A channel given as it is (plaintext, or credentials that never change)."""
        return cls(lambda _: channel)

    def current(self) -> grpc.aio.Channel:
        if self._files is not None and time.monotonic() - self._checked >= self._check_s:
            self._checked = time.monotonic()
            self._reopen_if_renewed(self._files)
        return self._current

    def _reopen_if_renewed(self, files: ClientTlsFiles) -> None:
        try:
            now = files.contents()
            if now == self._loaded:
                return
            tls = files.load()
        except (OSError, ConfigurationError) as exc:
            log.warning("stage TLS files unusable; keeping the channel", extra={"error": str(exc)})
            return
        retired, self._current, self._loaded = self._current, self._open_with(tls), now
        log.info("stage TLS files renewed; new connections use them")
        task = asyncio.get_running_loop().create_task(retired.close(self._retire_grace_s))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def close(self) -> None:
        await self._current.close()
        await asyncio.gather(*self._retiring)


def open_stage_channel(
    address: str,
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    tls_files: ClientTlsFiles | None = None,
    check_s: float = RELOAD_CHECK_S,
    retire_grace_s: float = RETIRE_GRACE_S,
) -> StageChannel:
    """``open_channel``, opened again with the new certificates when ``tls_files`` change."""
    return StageChannel(
        lambda tls: open_channel(address, connect_timeout_s=connect_timeout_s, tls=tls),
        tls_files,
        check_s=check_s,
        retire_grace_s=retire_grace_s,
    )


def request_metadata() -> tuple[tuple[str, str], ...]:
    """The request id, passed on to every stage."""
    request_id = context.request_id.get()
    return ((context.REQUEST_ID_HEADER, request_id),) if request_id else ()


def outcome_of(exc: grpc.aio.AioRpcError) -> Outcome:
    """What a failed call says about the stage, for its circuit breaker and for retries."""
    code = exc.code()
    if code is grpc.StatusCode.UNAVAILABLE:  # not reached, or it cannot serve at all
        return Outcome.UNREACHABLE
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return Outcome.UNDECIDED
    return Outcome.REACHED  # it answered with an error of its own


def failing_fast(stage: str, refusal: Refusal) -> DependencyUnavailable:
    last = f"; last error: {refusal.last_error}" if refusal.last_error else ""
    return DependencyUnavailable(
        f"{stage}: unavailable ({refusal.failures} calls in a row could not reach it; failing "
        f"fast, next try in {refusal.retry_in_s:.1f} s{last})"
    )


class RemoteStage:
    """Common part of the stage clients: deadline, request id, retries of safe calls, circuit
    breaker, error mapping."""

    stage: ClassVar[Stage]

    def __init__(
        self,
        channel: grpc.aio.Channel | StageChannel,
        *,
        timeout_s: float,
        retry: RetryPolicy = NO_RETRIES,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.channels = (
            channel if isinstance(channel, StageChannel) else StageChannel.fixed(channel)
        )
        self.timeout_s = timeout_s
        self.retry = retry
        self.breaker = breaker
        self._stub_of: tuple[grpc.aio.Channel, Any] | None = None

    @property
    def channel(self) -> grpc.aio.Channel:
        return self.channels.current()

    @property
    def _stub(self) -> Any:
        """The stage's stub on the current channel (a new one after a renewal)."""
        channel = self.channel
        if self._stub_of is None or self._stub_of[0] is not channel:
            self._stub_of = (channel, stage_spec(self.stage).stub(channel))
        return self._stub_of[1]

    async def close(self) -> None:
        await self.channels.close()

    def _call_options(self, timeout_s: float | None = None) -> dict[str, Any]:
        return {
            "timeout": context.time_left(timeout_s or self.timeout_s),
            "metadata": request_metadata(),
            "wait_for_ready": False,
        }

    async def _call(
        self,
        method: Callable[..., Awaitable[R]],
        request: Any,
        timeout_s: float | None = None,
        *,
        idempotent: bool = False,
    ) -> R:
        """One call through the breaker; retried when ``idempotent`` and it could not reach the
        stage. A failure becomes the stage error its status code stands for, naming the stage."""

        async def attempt() -> R:
            async with self._guarded():
                return await method(request, **self._call_options(timeout_s))

        deadline = time.monotonic() + context.time_left(timeout_s or self.timeout_s)
        try:
            return await self._retrying(attempt, idempotent=idempotent, deadline=deadline)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc, self.stage) from exc

    async def _retrying(
        self, attempt: Callable[[], Awaitable[R]], *, idempotent: bool, deadline: float
    ) -> R:
        retries = self.retry.retries if idempotent else 0
        for retry in range(retries + 1):
            try:
                return await attempt()
            except grpc.aio.AioRpcError as exc:
                delay = self.retry.delay(retry)
                last = retry >= retries or outcome_of(exc) is not Outcome.UNREACHABLE
                if last or time.monotonic() + delay >= deadline:
                    raise
                log.warning(
                    "stage unreachable; retrying",
                    extra={"stage": self.stage, "retry": retry + 1, "delay_s": delay},
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _guarded(self) -> _BreakerCall:
        return _BreakerCall(self.stage, self.breaker, self.channel)

    async def check_health(self, timeout_s: float = 2.0) -> bool:
        """Whether the stage reports SERVING. Not subject to the breaker: readiness shows the
        stage as it is, and a stage coming back shows as soon as it answers."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.monotonic() + timeout_s

        async def attempt() -> Any:
            timeout = max(0.0, deadline - time.monotonic())
            return await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)

        try:
            reply = await self._retrying(attempt, idempotent=True, deadline=deadline)
        except grpc.aio.AioRpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING


class _BreakerCall:
    """``async with``: admits a call through the stage's breaker (or fails it at once) and
    reports how it ended. Without a breaker it does nothing.

    A call that failed UNAVAILABLE while the channel still has a ready replica says nothing
    about the stage: one replica died under it (round robin takes that replica out of the
    rotation) or answered that it cannot serve. Only failures with no replica ready count, so
    one bad replica among several never opens the circuit of the whole stage."""

    def __init__(
        self, stage: str, breaker: CircuitBreaker | None, channel: grpc.aio.Channel
    ) -> None:
        self.stage = stage
        self.breaker = breaker
        self.channel = channel
        self.permit: Permit | None = None
        self.reached = False  # set by streams once the stage has answered something

    async def __aenter__(self) -> _BreakerCall:
        if self.breaker is not None:
            decision = self.breaker.admit()
            if isinstance(decision, Refusal):
                raise failing_fast(self.stage, decision)
            self.permit = decision
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: Any, tb: Any) -> None:
        if self.breaker is None or self.permit is None:
            return
        if exc is None:
            self.breaker.record(self.permit, Outcome.REACHED)
        elif isinstance(exc, grpc.aio.AioRpcError):
            outcome = outcome_of(exc)
            if outcome is Outcome.UNREACHABLE and self._a_replica_is_ready():
                outcome = Outcome.UNDECIDED
            self.breaker.record(self.permit, outcome, exc.details() or exc.code().name)
        else:  # cancelled, or the caller stopped reading: the stage was there if it answered
            self.breaker.record(self.permit, Outcome.REACHED if self.reached else Outcome.UNDECIDED)

    def _a_replica_is_ready(self) -> bool:
        return self.channel.get_state() is grpc.ChannelConnectivity.READY
