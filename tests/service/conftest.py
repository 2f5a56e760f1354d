"""Milvus for the retriever's service tests: embedded Milvus Lite (a path) and a real Milvus
server process (Milvus Lite's TCP server on 127.0.0.1), so every retriever test runs against both
ways of reaching Milvus."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import accepts_connections
from tests.service.milvus_servers import drop_all_collections, milvus_235_server, milvus_235_uri

__all__ = ["milvus_235_server", "milvus_235_uri"]  # fixtures of a Milvus 2.3.5 server


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``milvus-lite server`` on a loopback port for the session; its http URI."""
    port = free_port()
    data = tmp_path_factory.mktemp("milvus-server")
    child = ChildProcess(
        "milvus-lite-server",
        [
            sys.executable,
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(data / "db"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        data / "server.log",
    )
    child.start()
    try:
        child.wait_until(lambda: accepts_connections("127.0.0.1", port), timeout_s=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.signal_stop()
        child.wait_stopped(10)


@pytest.fixture(params=["lite", "server"])
def milvus_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A Milvus with no collections: a fresh Lite directory, or the session's server emptied
    after the test."""
    if request.param == "lite":
        yield str(tmp_path / "milvus.db")
        return
    uri: str = request.getfixturevalue("milvus_server")
    yield uri
    drop_all_collections(uri)
