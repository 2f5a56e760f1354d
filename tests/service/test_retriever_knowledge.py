"""Deleting sources, managing collections, metadata filters and tenant isolation, over real gRPC
against real Milvus (embedded Lite and a Lite server process)."""

from __future__ import annotations

import grpc
import pytest

from ragloop.v1 import retriever_pb2
from tests.service.retriever_helpers import (
    chunk_count,
    expect_error,
    ingest,
    retrieve,
    retriever_stub,
    source,
    sources,
)

LONG = " ".join(f"Sentence {i} explains how cats groom their fur every day." for i in range(20))
BREAD = "Sourdough bread rises thanks to wild yeast in the starter."
MODES = ("dense", "sparse", "hybrid")


@pytest.fixture
async def stub(milvus_uri: str):
    async with retriever_stub(milvus_uri) as stub:
        yield stub


# --- delete ------------------------------------------------------------------------------------


async def test_delete_source_removes_all_its_chunks_and_nothing_else(stub) -> None:
    written = await ingest(stub, source("notes/cats.md", LONG), source("bread.md", BREAD))
    cat_chunks = written.sources[0].chunk_count
    assert cat_chunks > 2

    deleted = await stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="notes/cats.md"))
    assert (deleted.chunks_deleted, deleted.collection, deleted.source) == (
        cat_chunks,
        "ragloop",
        "notes/cats.md",
    )
    assert await chunk_count(stub) == 1
    for mode in MODES:
        assert "notes/cats.md" not in sources(await retrieve(stub, "cats groom fur", mode=mode))

    again = await stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="notes/cats.md"))
    assert again.chunks_deleted == 0
    await expect_error(
        stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="a.md", collection="nope")),
        grpc.StatusCode.NOT_FOUND,
        "collection 'nope' does not exist",
    )
    await expect_error(
        stub.DeleteSource(retriever_pb2.DeleteSourceRequest(source="")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "source must not be empty",
    )


# --- collections -------------------------------------------------------------------------------


async def test_create_list_describe_and_drop_collections(stub) -> None:
    created = await stub.CreateCollection(retriever_pb2.CreateCollectionRequest(collection="kb1"))
    info = created.collection
    assert (info.collection, info.exists, info.chunk_count) == ("kb1", True, 0)
    assert (info.embedding_model, info.dimension) == ("local:all-minilm-l6-v2", 384)
    assert info.full_text and info.tenants
    again = await stub.CreateCollection(retriever_pb2.CreateCollectionRequest(collection="kb1"))
    assert again.collection.exists  # idempotent for the same model

    await ingest(stub, source("bread.md", BREAD), collection="kb2")
    listed = await stub.ListCollections(retriever_pb2.ListCollectionsRequest())
    assert [(c.collection, c.chunk_count) for c in listed.collections] == [("kb1", 0), ("kb2", 1)]

    await stub.DropCollection(retriever_pb2.DropCollectionRequest(collection="kb2"))
    listed = await stub.ListCollections(retriever_pb2.ListCollectionsRequest())
    assert [c.collection for c in listed.collections] == ["kb1"]
    assert list((await retrieve(stub, "bread", collection="kb2")).documents) == []

    await expect_error(
        stub.DropCollection(retriever_pb2.DropCollectionRequest(collection="kb2")),
        grpc.StatusCode.NOT_FOUND,
        "collection 'kb2' does not exist",
    )
    await expect_error(
        stub.DropCollection(retriever_pb2.DropCollectionRequest()),
        grpc.StatusCode.INVALID_ARGUMENT,
        "collection name '' is invalid",
    )
    await expect_error(
        stub.CreateCollection(retriever_pb2.CreateCollectionRequest(collection="1bad")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "collection name '1bad' is invalid",
    )


# --- filters -----------------------------------------------------------------------------------

PAPERS = [
    ("p2019.md", "A study of cats and their sleep, published in 2019.", "en", 2019, "2019-03-01"),
    ("p2021.md", "A study of cats and their diet, published in 2021.", "en", 2021, "2021-07-15"),
    ("p2023.md", "Eine Studie über Katzen und Schlaf aus dem Jahr 2023.", "de", 2023, "2023-01-10"),
]


@pytest.fixture
async def papers(stub):
    await ingest(
        stub,
        *(
            source(name, text, lang=lang, year=year, published=day, tag=name[1:5])
            for name, text, lang, year, day in PAPERS
        ),
    )
    return stub


FILTER_CASES = [
    ({"lang": "en"}, {"p2019.md", "p2021.md"}),
    ({"year": 2021}, {"p2021.md"}),
    ({"year": {"gte": 2020}}, {"p2021.md", "p2023.md"}),
    ({"year": {"gt": 2019, "lt": 2023}}, {"p2021.md"}),
    ({"published": {"lte": "2021-12-31"}}, {"p2019.md", "p2021.md"}),
    ({"tag": {"in": ["2019", "2023"]}}, {"p2019.md", "p2023.md"}),
    ({"lang": "en", "year": {"lte": 2019}}, {"p2019.md"}),
    ({"missing_key": "x"}, set()),
]


async def test_metadata_filters_in_every_mode(papers) -> None:
    for filters, expected in FILTER_CASES:
        for mode in MODES:
            reply = await retrieve(papers, "cats study Katzen", filters=filters, mode=mode)
            assert set(sources(reply)) == expected, (filters, mode)


async def test_a_filter_injection_attempt_is_a_literal_or_refused(papers) -> None:
    literal = await retrieve(papers, "cats", filters={"lang": 'x" or source != "'})
    assert list(literal.documents) == []  # compared as a plain string: matches nothing
    await expect_error(
        retrieve(papers, "cats", filters={"a) or (1==1": "x"}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "filter key 'a) or (1==1' is invalid",
    )
    await expect_error(
        retrieve(papers, "cats", filters={"year": {"like": 2}}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "unknown operator 'like'",
    )


# --- tenants -----------------------------------------------------------------------------------


async def test_a_tenant_never_sees_another_tenants_chunks(stub) -> None:
    await ingest(stub, source("plan.md", "Acme plans to launch the rocket in May."), tenant="acme")
    await ingest(
        stub, source("plan.md", "Globex plans to launch the rocket in June."), tenant="globex"
    )
    await ingest(stub, source("public.md", "Rockets launch from the coast."))
    assert await chunk_count(stub) == 3  # the same source name in two tenants: two chunks

    for mode in MODES:
        acme = await retrieve(stub, "when does the rocket launch", mode=mode, tenant="acme")
        assert [d.text for d in acme.documents] == ["Acme plans to launch the rocket in May."]
        default = await retrieve(stub, "when does the rocket launch", mode=mode)
        assert sources(default) == ["public.md"]
        nobody = await retrieve(stub, "when does the rocket launch", mode=mode, tenant="initech")
        assert list(nobody.documents) == []

    deleted = await stub.DeleteSource(
        retriever_pb2.DeleteSourceRequest(source="plan.md", tenant="acme")
    )
    assert deleted.chunks_deleted == 1
    globex = await retrieve(stub, "rocket launch", tenant="globex")
    assert [d.text for d in globex.documents] == ["Globex plans to launch the rocket in June."]
    await expect_error(
        retrieve(stub, "rocket", tenant="bad tenant!"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "tenant 'bad tenant!' is invalid",
    )
