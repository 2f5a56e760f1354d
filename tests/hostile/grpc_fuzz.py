"""Send generated requests to a stage's gRPC server and tally the status codes: a stage answers a
request it cannot serve with an INVALID_ARGUMENT-class code, never a server fault."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import grpc
from hypothesis import given
from hypothesis.strategies import SearchStrategy

from ragloop.core.grpc.server import MAX_MESSAGE_BYTES
from tests.hostile.recorded_run import recorded_settings

OK = grpc.StatusCode.OK
ACCEPTED = frozenset(
    {
        OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
    }
)
SERVER_FAULTS = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN})
CALL_TIMEOUT_S = 60  # a hung call fails its case as DEADLINE_EXCEEDED
# Bytes that are no request message of any method: a string field (number 1) that is not UTF-8,
# a string nested in a message field (number 2) that is not UTF-8, a corrupt wire format, and
# a field cut short.
UNDECODABLE = (
    b"\x0a\x02\xff\xfe",
    b"\x12\x04\x12\x02\xff\xfe",
    b"\xff\xff\xff\xff",
    b"\x0a\x05ab",
)


def accepted(code: grpc.StatusCode, request_bytes: int) -> bool:
    """OK or a refusal of the request; RESOURCE_EXHAUSTED only where the size limit applies."""
    oversized = code is grpc.StatusCode.RESOURCE_EXHAUSTED and request_bytes > MAX_MESSAGE_BYTES
    return code in ACCEPTED or oversized


@dataclass
class FuzzTally:
    cases: int = 0
    codes: Counter[tuple[str, str]] = field(default_factory=Counter)
    unexpected: dict[tuple[str, str], str] = field(default_factory=dict)  # first request of each

    @property
    def internal_errors(self) -> int:
        faults = {code.name for code in SERVER_FAULTS}
        return sum(n for (_, code), n in self.codes.items() if code in faults)

    def record(self, method: str, code: grpc.StatusCode, request_bytes: int, shown: str) -> None:
        self.cases += 1
        self.codes[(method, code.name)] += 1
        if not accepted(code, request_bytes):
            self.unexpected.setdefault((method, code.name), shown[:500])

    def unexpected_in(self, service: str) -> dict[tuple[str, str], str]:
        return {key: shown for key, shown in self.unexpected.items() if key[0].startswith(service)}


def status_of(invoke: Callable[[Any], object], request: Any) -> grpc.StatusCode:
    try:
        invoke(request)
    except grpc.RpcError as exc:
        return exc.code()  # type: ignore[attr-defined]
    return OK


def fuzz(
    method: str,
    requests: SearchStrategy[Any],
    invoke: Callable[[Any], object],
    examples: int,
    tally: FuzzTally,
) -> None:
    """``examples`` requests of ``requests``, derandomized, each sent with ``invoke``."""

    @recorded_settings(examples)
    @given(request=requests)
    def send(request: Any) -> None:
        code = status_of(invoke, request)
        tally.record(method, code, _size(request), repr(request))

    send()


def _size(request: Any) -> int:
    if isinstance(request, list):
        return max((part.ByteSize() for part in request), default=0)
    return int(request.ByteSize())


def send_undecodable(channel: grpc.Channel, proto_module: ModuleType, tally: FuzzTally) -> None:
    """Every ``UNDECODABLE`` payload to every method of the module's services, as raw bytes."""
    for service in proto_module.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            path = f"/{service.full_name}/{method.name}"
            call = _raw_call(channel, path, method.client_streaming, method.server_streaming)
            for payload in UNDECODABLE:
                tally.record(path, status_of(call, payload), len(payload), repr(payload))


def _raw_call(
    channel: grpc.Channel, path: str, client_streaming: bool, server_streaming: bool
) -> Callable[[bytes], object]:
    def identity(data: bytes) -> bytes:
        return data

    codec = {"request_serializer": identity, "response_deserializer": identity}
    if client_streaming:
        stream_unary = channel.stream_unary(path, **codec)
        return lambda payload: stream_unary(iter([payload]), timeout=CALL_TIMEOUT_S)
    if server_streaming:
        unary_stream = channel.unary_stream(path, **codec)
        return lambda payload: list(unary_stream(payload, timeout=CALL_TIMEOUT_S))
    unary_unary = channel.unary_unary(path, **codec)
    return lambda payload: unary_unary(payload, timeout=CALL_TIMEOUT_S)


def unary(method: Callable[..., object]) -> Callable[[Any], object]:
    return lambda request: method(request, timeout=CALL_TIMEOUT_S)


def server_streaming(method: Callable[..., Iterable[object]]) -> Callable[[Any], object]:
    return lambda request: list(method(request, timeout=CALL_TIMEOUT_S))


def client_streaming(method: Callable[..., object]) -> Callable[[list[Any]], object]:
    return lambda parts: method(iter(parts), timeout=CALL_TIMEOUT_S)
