"""extract_citations: markers, ranges, order, declared sources, quotes."""

from __future__ import annotations

from ragloop.core.domain import Citation, Document
from ragloop.generator.citations import best_quote, cited_numbers, extract_citations

DOCS = [
    Document(
        "d1",
        "Milvus is an open-source vector database. It was created by Zilliz. "
        "It supports approximate nearest neighbour search.",
        "milvus.md",
    ),
    Document(
        "d2",
        "Ollama runs language models locally. Models are pulled from a registry.",
        "ollama.md",
    ),
    Document(
        "d3",
        "The grader judges relevance. The rewriter writes a new query when grading fails.",
        "loop.md",
    ),
]


def numbers(citations: list[Citation]) -> list[int]:
    return [c.number for c in citations]


def test_single_marker() -> None:
    citations = extract_citations("Milvus is a vector database [1].", DOCS)

    assert citations == [
        Citation(1, "d1", "milvus.md", "Milvus is an open-source vector database.")
    ]


def test_adjacent_markers() -> None:
    citations = extract_citations("Both run locally [2][3].", DOCS)

    assert numbers(citations) == [2, 3]
    assert [c.document_id for c in citations] == ["d2", "d3"]
    assert [c.source for c in citations] == ["ollama.md", "loop.md"]


def test_comma_separated_marker() -> None:
    assert numbers(extract_citations("Vectors and models [1, 2].", DOCS)) == [1, 2]
    assert numbers(extract_citations("Vectors and models [3,1].", DOCS)) == [3, 1]


def test_cited_numbers_reads_every_marker_form() -> None:
    assert cited_numbers("A [1] b [2][3] c [4, 5] d [x] e [ 6 ]") == [1, 2, 3, 4, 5]
    assert cited_numbers("no markers here") == []


def test_out_of_range_numbers_are_dropped() -> None:
    citations = extract_citations("Wrong [0]. Also wrong [4]. Right [2]. Far [99].", DOCS)

    assert numbers(citations) == [2]


def test_no_markers_and_no_declared_sources_give_no_citations() -> None:
    assert extract_citations("An answer without sources.", DOCS) == []
    assert extract_citations("Cites [1].", []) == []


def test_citations_follow_order_of_first_use_without_duplicates() -> None:
    answer = "Ollama pulls models [2]. Milvus stores vectors [1]. Ollama runs locally [2]."
    citations = extract_citations(answer, DOCS)

    assert numbers(citations) == [2, 1]


def test_declared_numbers_without_markers_are_included_after_marked_ones() -> None:
    citations = extract_citations(
        "Milvus is a vector database [1].", DOCS, declared=[3, 1, 7, 0, 3]
    )

    # 1 comes from its marker (once), 3 is declared only, 7 and 0 point to no document.
    assert numbers(citations) == [1, 3]
    declared_only = citations[1]
    assert declared_only.document_id == "d3"
    assert declared_only.quote in DOCS[2].text


def test_declared_only_citation_quotes_the_sentence_closest_to_the_answer() -> None:
    citations = extract_citations(
        "The rewriter writes a new query when grading fails.", DOCS, declared=[3]
    )

    assert citations == [
        Citation(3, "d3", "loop.md", "The rewriter writes a new query when grading fails.")
    ]


def test_quote_is_the_passage_sentence_with_most_word_overlap() -> None:
    answer = "Milvus offers approximate nearest neighbour search [1]. It came from Zilliz [3]."
    citations = extract_citations(answer, DOCS)

    assert citations[0].quote == "It supports approximate nearest neighbour search."
    # The claim for [3] shares no content word with d3: the first sentence is the tie-break.
    assert citations[1].quote == "The grader judges relevance."


def test_quote_uses_every_sentence_that_cites_the_same_source() -> None:
    answer = "It supports search [1]. Zilliz created it and it was open [1]."
    citations = extract_citations(answer, DOCS)

    assert numbers(citations) == [1]
    # The first claim alone would pick the "supports ... search" sentence.
    assert best_quote(DOCS[0].text, "It supports search [1].") != citations[0].quote
    assert citations[0].quote == "It was created by Zilliz."


def test_best_quote_ignores_markers_and_falls_back_to_the_whole_passage() -> None:
    # "[1]" must not count as a word; a passage with no sentence split is quoted whole.
    assert best_quote("  just one fragment without end  ", "fragment [1]") == (
        "just one fragment without end"
    )
    assert best_quote("Alpha beta gamma. Delta epsilon zeta.", "zeta delta [2]") == (
        "Delta epsilon zeta."
    )
