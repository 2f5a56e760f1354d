"""A real Milvus 2.3.5 standalone server (PyPI ``milvus``, no Docker) for the session, on
127.0.0.1 only (see ``ragloop.local.milvus_server``): the dense-only path of an old server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pymilvus import MilvusClient

from ragloop.local.milvus_server import isolation_problem, running_milvus_235


@pytest.fixture(scope="session")
def milvus_235_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The session's Milvus 2.3.5 (fresh data directory); its http URI."""
    problem = isolation_problem()
    if problem is not None:
        pytest.skip(
            "Milvus 2.3.5 listens on every interface; it runs here only in a private network "
            f"namespace, which this machine refuses: {problem}"
        )
    with running_milvus_235(tmp_path_factory.mktemp("milvus-2.3.5")) as uri:
        yield uri


@pytest.fixture
def milvus_235_uri(milvus_235_server: str) -> Iterator[str]:
    """Milvus 2.3.5 with no collections; emptied after the test."""
    yield milvus_235_server
    drop_all_collections(milvus_235_server)


def drop_all_collections(uri: str) -> None:
    client = MilvusClient(uri=uri)
    try:
        for name in client.list_collections():
            client.drop_collection(name)
    finally:
        client.close()
