"""normalize_query, split_sentences, content_words."""

from __future__ import annotations

import pytest

from ragloop.core.text import content_words, normalize_query, split_sentences


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is Milvus?", "what is milvus"),
        ("  WHAT   is\tMilvus?!  ", "what is milvus"),
        ("qwen2.5:7b-instruct", "qwen2 5 7b instruct"),
        ("", ""),
        ("?!...", ""),
    ],
)
def test_normalize_query(query: str, expected: str) -> None:
    assert normalize_query(query) == expected


def test_normalize_query_spots_repeats_but_not_different_words() -> None:
    assert normalize_query("Milvus: index types") == normalize_query("milvus index-types.")
    assert normalize_query("milvus index types") != normalize_query("milvus index type")


def test_split_sentences_on_end_punctuation() -> None:
    text = "Milvus stores vectors. Is it fast? Yes! 3 replicas run. (It scales.)"
    assert split_sentences(text) == [
        "Milvus stores vectors.",
        "Is it fast?",
        "Yes!",
        "3 replicas run.",
        "(It scales.)",
    ]


def test_split_sentences_keeps_abbreviation_like_dots_and_lowercase_starts() -> None:
    # A dot followed by a lower-case word, or with no space after it, is not a boundary.
    assert split_sentences("Use e.g. the index. version 2.5 is out.") == [
        "Use e.g. the index. version 2.5 is out."
    ]


def test_split_sentences_on_paragraphs_and_whitespace() -> None:
    text = "First line\ncontinues here\n\n  Second   paragraph without a dot\n \nThird."
    assert split_sentences(text) == [
        "First line continues here",
        "Second paragraph without a dot",
        "Third.",
    ]
    assert split_sentences("") == []
    assert split_sentences(" \n\n \t") == []


def test_content_words() -> None:
    assert content_words("The Milvus DB, an index of 384-dim vectors [1].") == {
        "the",
        "milvus",
        "index",
        "384",
        "dim",
        "vectors",
    }
    assert content_words("a an of to") == set()
    assert content_words("") == set()
