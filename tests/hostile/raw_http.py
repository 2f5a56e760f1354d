"""HTTP/1.1 by hand over a socket to 127.0.0.1, for what httpx will not send: a Content-Length
that the body never reaches, or a chunked body that goes on after the server has answered."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

TIMEOUT_S = 30


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send_raw(url: str, head: str, body: Iterable[bytes] = ()) -> RawResponse:
    """Send ``head`` (the request line and headers, without the blank line) and the pieces of
    ``body``, stopping early if the server has closed; then read the whole response."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT_S) as sock:
        sock.sendall(f"{head}\r\nHost: {parts.netloc}\r\n\r\n".encode())
        try:
            for piece in body:
                sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed without reading the rest: what is tested
        return _read_response(sock)


def _read_response(sock: socket.socket) -> RawResponse:
    data = b""
    while b"\r\n\r\n" not in data:
        data += _recv(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += _recv(sock)
    return RawResponse(int(status_line.split()[1]), headers, body[:length])


def _recv(sock: socket.socket) -> bytes:
    piece = sock.recv(65536)
    if not piece:
        raise ConnectionError("the server closed the connection before answering")
    return piece


def chunked(pieces: Iterable[bytes]) -> Iterable[bytes]:
    """``pieces`` in HTTP/1.1 chunked transfer coding, with the final empty chunk."""
    for piece in pieces:
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"
