"""Passage windows: neighbouring chunks joined back without the chunker's overlap or repeated
headings (retriever), and what the generator is given of them within its budget (orchestrator)."""

from __future__ import annotations

import pytest

from ragloop.core.domain import Document
from ragloop.orchestrator.loop.generation_context import generation_context
from ragloop.retriever.chunking import chunk_text
from ragloop.retriever.windows import join_chunks, neighbour_keys, with_windows
from tests.unit.fakes import doc


def sentences(count: int) -> list[str]:
    return [f"Sentence {n} says something{' rather longer' * (n % 3)}." for n in range(count)]


def chunk_documents(text: str, source: str = "a.md", **sizes: int) -> list[Document]:
    return [
        Document(id=f"{source}#{n}", text=chunk, source=source, chunk_index=n)
        for n, chunk in enumerate(chunk_text(text, **sizes))
    ]


@pytest.mark.parametrize(("size", "overlap"), [(120, 0), (120, 50), (200, 90), (400, 150)])
@pytest.mark.parametrize("heading", ["", "# The heading\n\n"])
def test_a_window_over_every_chunk_is_the_text_once(heading: str, size: int, overlap: int) -> None:
    said = sentences(30)
    chunks = chunk_documents(heading + " ".join(said), size=size, overlap=overlap)
    assert len(chunks) > 3
    texts = {(c.source, c.chunk_index): c.text for c in chunks}

    for windowed in with_windows(chunks, texts, radius=len(chunks)):
        for sentence in said:
            assert windowed.window.count(sentence) == 1, sentence
        assert windowed.window.count("The heading") == (1 if heading else 0)
        assert windowed.window.startswith("The heading\n" if heading else "Sentence 0 ")


def test_a_window_reaches_radius_chunks_each_side_and_stops_at_a_gap() -> None:
    chunks = chunk_documents(" ".join(sentences(40)), size=120, overlap=0)
    third = chunks[3]
    texts = {(c.source, c.chunk_index): c.text for c in chunks if c.chunk_index != 5}

    [windowed] = with_windows([third], texts, radius=2)

    assert windowed.window == " ".join(c.text for c in chunks[1:5])  # 5 is missing: stop at 4
    assert windowed.text == third.text  # grading still reads the passage alone


def test_a_passage_without_neighbours_gets_no_window() -> None:
    alone = Document(id="x", text="All there is.", source="x.md")
    assert with_windows([alone], {}, radius=1) == [alone]


def test_neighbour_keys_leave_out_the_passages_and_negative_indexes() -> None:
    found = [
        Document(id="a0", text="", source="a", chunk_index=0),
        Document(id="a1", text="", source="a", chunk_index=1),
        Document(id="b5", text="", source="b", chunk_index=5),
    ]
    assert neighbour_keys(found, 1) == {("a", 2), ("b", 4), ("b", 6)}


def test_joining_drops_only_an_overlap_at_word_boundaries() -> None:
    assert join_chunks("One two. Three four.", "Three four. Five.") == "One two. Three four. Five."
    assert join_chunks("Ends in four.", "our own start.") == "Ends in four. our own start."
    assert join_chunks("Title\nBody one.", "Title\nBody two.") == "Title\nBody one. Body two."


def windowed(doc_id: str, text: str, window: str, source: str) -> Document:
    return Document(id=doc_id, text=text, source=source, window=window)


def test_the_generator_gets_windows_while_they_fit_then_passages() -> None:
    first = windowed("a", "a" * 40, "w" * 200, "a.md")  # 10 tokens, window 50
    second = windowed("b", "b" * 40, "v" * 400, "b.md")  # window 100: over the budget left

    chosen = generation_context([first, second], budget_tokens=100)

    assert [(d.id, d.text) for d in chosen] == [("a", "w" * 200), ("b", "b" * 40)]
    assert all(d.window == "" for d in chosen)


def test_a_passage_its_neighbours_window_holds_is_not_given_twice() -> None:
    chunks = chunk_documents("# Heading\n\n" + " ".join(sentences(12)), size=200, overlap=60)
    texts = {(c.source, c.chunk_index): c.text for c in chunks}
    best_first = with_windows([chunks[1], chunks[0], chunks[2]], texts, radius=1)
    other = doc("other", source="other.md")

    chosen = generation_context([*best_first, other], budget_tokens=10_000)

    assert [d.id for d in chosen] == [chunks[1].id, "other"]


def test_a_first_window_over_the_budget_gives_way_to_its_passage() -> None:
    first = windowed("a", "a" * 40, "w" * 4000, "a.md")
    assert [d.text for d in generation_context([first], budget_tokens=100)] == ["a" * 40]
