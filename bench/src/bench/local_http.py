"""A stand-in HTTP server on 127.0.0.1 (a fake model provider or span sink) for a test or a
benchmark."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving_http(handler: type[BaseHTTPRequestHandler], port: int = 0) -> Iterator[str]:
    """``handler`` served on ``port`` (0: a free one) of 127.0.0.1, one daemon thread a request;
    its base URL. Stopped, its port closed, on the way out."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_reply(
    handler: BaseHTTPRequestHandler, status: int, payload: bytes, content_type: str
) -> None:
    """Answer the request ``handler`` serves with ``payload``, its length given."""
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    handler.send_header("content-length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
