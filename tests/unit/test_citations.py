"""compose_answer and best_quote: markers from the model's per-sentence sources, quotes."""

from __future__ import annotations

from ragloop.core.domain import Citation, Document
from ragloop.generator.citations import best_quote
from ragloop.generator.stage import AnswerSentence, DraftAnswer, compose_answer

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
]


def draft(*sentences: tuple[int, str]) -> DraftAnswer:
    return DraftAnswer(True, [AnswerSentence(n, t) for n, t in sentences])


def test_each_sentence_gets_its_marker_and_one_citation_per_source() -> None:
    text, citations = compose_answer(
        draft(
            (1, "Milvus is a vector database."),
            (2, "Ollama runs models locally."),
            (1, "Zilliz created it."),
        ),
        DOCS,
    )
    assert text == (
        "Milvus is a vector database. [1] Ollama runs models locally. [2] Zilliz created it. [1]"
    )
    assert [c.number for c in citations] == [1, 2]
    assert citations[0] == Citation(
        1, "d1", "milvus.md", "Milvus is an open-source vector database."
    )
    assert citations[1].quote == "Ollama runs language models locally."


def test_a_sentence_naming_no_given_passage_keeps_no_marker_and_cites_nothing() -> None:
    text, citations = compose_answer(draft((7, "Invented."), (0, "Also invented.")), DOCS)
    assert text == "Invented. Also invented."
    assert citations == []


def test_quote_is_the_sentence_with_most_shared_words() -> None:
    assert best_quote(DOCS[0].text, "approximate neighbour search") == (
        "It supports approximate nearest neighbour search."
    )


def test_quote_of_a_passage_without_sentence_breaks_is_the_passage() -> None:
    assert best_quote("  just words  ", "anything") == "just words"


def test_quote_ties_go_to_the_first_sentence() -> None:
    assert best_quote("Alpha one. Beta two.", "unrelated claim") == "Alpha one."
