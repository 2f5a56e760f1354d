"""Milvus for the retriever's service tests: embedded Milvus Lite (a path) and a real Milvus
server process (Milvus Lite's TCP server on 127.0.0.1), so every retriever test runs against both
ways of reaching Milvus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloop.local.milvus_lite_server import serving_milvus_lite
from tests.service.milvus_servers import drop_all_collections, milvus_235_server, milvus_235_uri

__all__ = ["milvus_235_server", "milvus_235_uri"]  # fixtures of a Milvus 2.3.5 server


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``milvus-lite server`` on a loopback port for the session; its http URI."""
    data = tmp_path_factory.mktemp("milvus-server")
    with serving_milvus_lite(data / "db", data / "server.log", timeout_s=30) as uri:
        yield uri


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
