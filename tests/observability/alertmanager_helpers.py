"""A real Alertmanager for tests (Debian's package, installed when missing) on 127.0.0.1, with
deploy/alertmanager/alertmanager.yml or a copy of it, and an HTTP server standing in for the
receiver's endpoint."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import http_ok
from tests.apt import apt_install
from tests.conftest import REPO_ROOT

ALERTMANAGER_CONFIG = REPO_ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
WAIT_S = 90


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {WAIT_S} s")
        time.sleep(0.2)


@contextmanager
def running_alertmanager(workdir: Path, config: Path = ALERTMANAGER_CONFIG) -> Iterator[str]:
    """Alertmanager on 127.0.0.1 with ``config``; clustering off (it would listen on every
    interface). Yields its URL."""
    binary = apt_install("prometheus-alertmanager", "prometheus-alertmanager")
    port = free_port()
    child = ChildProcess(
        "alertmanager",
        [
            binary,
            f"--config.file={config}",
            f"--storage.path={workdir / 'alertmanager'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ],
        workdir / "alertmanager.log",
    )
    child.start()
    url = f"http://127.0.0.1:{port}"
    try:
        child.wait_until(lambda: http_ok(f"{url}/-/ready"), timeout_s=WAIT_S)
        yield url
    finally:
        child.signal_stop()
        child.wait_stopped(15)


class WebhookReceiver:
    """What an HTTP endpoint got from Alertmanager's webhook: each POST's JSON body."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def received(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.posts)

    def alerts(self) -> list[dict[str, str]]:
        """The labels of every alert received, with its status (firing, resolved)."""
        return [
            {**alert["labels"], "status": alert["status"]}
            for post in self.received()
            for alert in post["alerts"]
        ]


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, WebhookReceiver]]:
    """An HTTP server on 127.0.0.1 that records every POST; yields its URL and the record."""
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with receiver.lock:
                receiver.posts.append(json.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass  # quiet: the test reads what was received instead

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ragloop", receiver
    finally:
        server.shutdown()
        server.server_close()
