"""Retrieval modes, fusion, chunk ids and the checks that guard them (no Milvus needed)."""

from __future__ import annotations

import pytest
from pymilvus import RRFRanker, WeightedRanker

from ragloop.core.errors import InvalidInput
from ragloop.core.grpc import convert
from ragloop.core.validation import json_data, tenant_id, unicode_text
from ragloop.retriever.schema import ServerFeatures, supports_bm25
from ragloop.retriever.search import Fusion, checked_mode, cosines
from ragloop.retriever.store import chunk_id
from ragloop.v1 import retriever_pb2


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("milvus_lite-3.2.2", True),
        ("v2.5.4", True),
        ("v2.6.0", True),
        ("v2.4.15", False),
        ("2.3.5", False),
        ("unknown", True),
    ],
)
def test_bm25_needs_milvus_2_5(version: str, expected: bool) -> None:
    assert supports_bm25(version) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("v2.3.5-lite", False),
        ("v2.3.10", False),
        ("v2.3.11", True),
        ("v2.4", True),
        ("milvus_lite-3.2.2", True),
        ("unknown", True),
    ],
)
def test_upserts_respect_partition_keys_from_milvus_2_3_11(version: str, expected: bool) -> None:
    assert ServerFeatures.of(version).partition_key is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [("milvus_lite-3.2.2", True), ("v2.3.5-lite", True), ("v2.5.4", False), ("unknown", False)],
)
def test_only_milvus_lite_needs_its_writes_sealed(version: str, expected: bool) -> None:
    assert ServerFeatures.of(version).lite is expected


def test_modes_round_trip_through_the_proto_enum() -> None:
    for mode in ("", "dense", "sparse", "hybrid"):
        assert convert.mode_from_proto(convert.mode_to_proto(mode)) == mode
    assert convert.mode_to_proto("") == retriever_pb2.RETRIEVAL_MODE_UNSPECIFIED
    with pytest.raises(InvalidInput):
        convert.mode_to_proto("bm25")
    with pytest.raises(InvalidInput):
        convert.mode_from_proto(42)
    with pytest.raises(InvalidInput, match="unknown"):
        checked_mode("keyword")


def test_fusion_makes_the_configured_ranker() -> None:
    assert isinstance(Fusion().make_ranker(), RRFRanker)
    assert isinstance(Fusion(ranker="weighted").make_ranker(), WeightedRanker)


def test_cosines() -> None:
    assert cosines([1, 0], [[2, 0], [0, 3], [1, 1], [0, 0]]) == pytest.approx(
        [1.0, 0.0, 2**-0.5, 0.0]
    )
    assert cosines([0, 0], [[1, 1]]) == [0.0]
    assert cosines([1, 0], []) == []


def test_chunk_ids_separate_tenants_and_keep_old_ids_for_the_default_tenant() -> None:
    # sha256("kb\x1fa.md\x1f0")[:32]: the id scheme before tenants, so old chunks are replaced
    assert chunk_id("kb", "a.md", 0) == "0c51462360807bee5df9c36c48f09fc5"
    assert chunk_id("kb", "a.md", 0) == chunk_id("kb", "a.md", 0, "")
    assert chunk_id("kb", "a.md", 0, "t1") != chunk_id("kb", "a.md", 0)
    assert chunk_id("kb", "a.md", 0, "t1") != chunk_id("kb", "a.md", 0, "t2")
    assert len(chunk_id("kb", "a.md", 0, "t1")) == 32


@pytest.mark.parametrize("bad", ["-x", "a b", "a/b", "x" * 129, "é", 'a"'])
def test_tenant_ids_are_validated(bad: str) -> None:
    with pytest.raises(InvalidInput, match="tenant"):
        tenant_id(bad)
    assert tenant_id("") == "" and tenant_id("acme-eu:1@x.y") == "acme-eu:1@x.y"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("half \ud800 a pair", "text is not valid Unicode text: character 5 is a lone surrogate"),
        ({"k\udfff": 1}, "text key is not valid Unicode text"),
        ({"a": [1, {"b": "\ud800"}]}, "text.a.b is not valid Unicode text"),
        ({"a": float("nan")}, "text.a: numbers must be finite, not nan"),
        ([float("-inf")], "text: numbers must be finite, not -inf"),
    ],
)
def test_json_data_refuses_what_json_and_utf_8_cannot_carry(value: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        json_data(value, "text")


def test_json_data_keeps_what_they_can() -> None:
    value = {"lang": "en", "year": 2024, "tags": ["a", "😀"], "x": {"y": None, "z": 1.5}}
    assert json_data(value, "metadata") is value
    assert unicode_text("Crème brûlée", "query") == "Crème brûlée"


def test_a_struct_with_a_non_finite_number_is_invalid_input_not_an_error() -> None:
    assert convert.dict_from_struct(convert.struct_from_dict({"a": 1.5})) == {"a": 1.5}
    for number in (float("nan"), float("inf")):
        struct = convert.struct_from_dict({"a": {"b": number}})
        with pytest.raises(InvalidInput, match="filters holds a number that is not finite"):
            convert.dict_from_struct(struct, "filters")
