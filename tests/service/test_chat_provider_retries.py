"""Both chat providers retry a refused connection with backoff, over real HTTP on 127.0.0.1: the
model server comes up only after the first attempt was refused, and the call still succeeds."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import langchain_ollama  # noqa: F401  imported up front: its import alone outlasts the delay below
import pytest

from ragloop.core.errors import DependencyUnavailable
from ragloop.core.models import ChatMessage, make_chat_model
from ragloop.core.models.retry import RetryPolicy
from ragloop.local.processes import free_port
from tests.service.test_ollama_contract import FakeOllama

REPLY = '{"relevant": true}'


class FakeOpenAI(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        payload = json.dumps(
            {
                "choices": [{"message": {"role": "assistant", "content": REPLY}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def start_later(handler: type[BaseHTTPRequestHandler], port: int, delay_s: float) -> list:
    """Serve ``handler`` on ``port`` from ``delay_s`` seconds on; returns a holder of the server."""
    holder: list[ThreadingHTTPServer] = []

    def run() -> None:
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        holder.append(server)
        server.serve_forever()

    timer = threading.Timer(delay_s, run)
    timer.daemon = True
    timer.start()
    return holder


@pytest.mark.parametrize("ref", ["llamacpp:qwen", "ollama:qwen2.5:7b-instruct"])
async def test_a_server_that_comes_up_late_is_reached_by_a_retry(ref: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    model = make_chat_model(
        ref,
        llamacpp_url=url,
        ollama_url=url,
        ollama_keep_alive_s=60,
        timeout_s=5,
        retry=RetryPolicy(retries=4, backoff_s=0.4, max_backoff_s=1.0),
    )
    holder = start_later(FakeOpenAI if ref.startswith("llamacpp") else FakeOllama, port, 0.2)
    try:
        reply = await model.complete([ChatMessage("user", "hi")], max_tokens=8)
    finally:
        await model.aclose()
        for server in holder:
            server.shutdown()
            server.server_close()
    assert json.loads(reply.text)["relevant"] is True


async def test_without_retries_a_refused_connection_is_unavailable_at_once() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    model = make_chat_model(
        "llamacpp:qwen", llamacpp_url=url, ollama_url=url, ollama_keep_alive_s=60, timeout_s=5
    )
    try:
        with pytest.raises(DependencyUnavailable, match="unreachable"):
            await model.complete([ChatMessage("user", "hi")], max_tokens=8)
    finally:
        await model.aclose()
