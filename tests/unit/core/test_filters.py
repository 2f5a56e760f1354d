"""Metadata filters: validation, and compilation into Milvus expressions with every value a
literal — including values and keys written to break out of the expression."""

from __future__ import annotations

import pytest

from ragloop.core.errors import InvalidInput
from ragloop.core.filters import Condition, parse_filters
from ragloop.retriever.expressions import all_of, metadata_condition, string_literal


def compiled(filters: dict) -> str:
    return all_of(*(metadata_condition(c) for c in parse_filters(filters)))


def test_no_filters_is_no_condition() -> None:
    assert parse_filters(None) == [] and parse_filters({}) == []
    assert compiled({}) == ""


def test_equality_in_and_ranges_compile_to_one_conjunction() -> None:
    assert parse_filters({"lang": "en", "year": {"gte": 2020, "lt": 2025}}) == [
        Condition("lang", "eq", "en"),
        Condition("year", "gte", 2020),
        Condition("year", "lt", 2025),
    ]
    assert compiled({"lang": "en", "tag": {"in": ["a", "b"]}, "draft": False}) == (
        '(metadata["lang"] == "en") and '
        '((metadata["tag"] == "a" or metadata["tag"] == "b")) and '
        '(metadata["draft"] == false)'
    )
    assert compiled({"score": {"gt": 0.5}}) == 'metadata["score"] > 0.5'
    assert compiled({"published": {"gte": "2024-01-01"}}) == 'metadata["published"] >= "2024-01-01"'


def test_whole_doubles_become_integers() -> None:
    # protobuf Struct and JSON carry 2020 as 2020.0
    assert parse_filters({"year": 2020.0}) == [Condition("year", "eq", 2020)]
    assert parse_filters({"year": {"in": [2020.0, 2021.5]}}) == [
        Condition("year", "in", (2020, 2021.5))
    ]


def test_an_injection_attempt_in_a_value_stays_a_literal() -> None:
    expression = compiled({"lang": 'x" or source != "'})
    assert expression == 'metadata["lang"] == "x\\" or source != \\""'
    assert string_literal('a\\"b') == '"a\\\\\\"b"'


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"a) or (1==1": "x"}, "filter key 'a) or (1==1' is invalid"),
        ({'lang"]': "x"}, "is invalid"),
        ({"1abc": "x"}, "is invalid"),
        ({"a" * 65: "x"}, "is invalid"),
        ({"lang": None}, "not null"),
        ({"lang": ["en"]}, "not list"),
        ({"lang": {"like": "e%"}}, "unknown operator 'like'"),
        ({"lang": {}}, "has no operator"),
        ({"tag": {"in": []}}, "non-empty list"),
        ({"tag": {"in": "ab"}}, "non-empty list"),
        ({"tag": {"in": [["nested"]]}}, "not list"),
        ({"year": {"gte": True}}, "not a boolean"),
        ({"year": float("nan")}, "finite"),
        ({"lang": "e\nn"}, "control characters"),
        ({"tag": {"in": list(range(101))}}, "at most 100"),
        ("lang=en", "must be an object"),
    ],
)
def test_invalid_filters_are_refused_with_a_reason(filters, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_filters(filters)
    assert message in str(caught.value)
