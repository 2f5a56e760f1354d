"""compose_answer and best_quote: markers from the model's per-sentence sources, quotes."""

from __future__ import annotations

import pytest

from ragloop.core.answers import cut_off_sentences, repeated_sentences
from ragloop.core.domain import Citation, Document
from ragloop.generator.citations import best_quote, compose_answer
from ragloop.generator.draft import AnswerSentence, DraftAnswer
from ragloop.generator.leads import without_lead
from ragloop.generator.prompts import MAX_SENTENCE_CHARS

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
    checked = compose_answer(
        draft(
            (1, "Milvus is a vector database."),
            (2, "Ollama runs models locally."),
            (1, "Zilliz created it."),
        ),
        DOCS,
    )
    text, citations = checked.text, checked.citations
    assert (checked.removed_citations, checked.uncited_sentences) == ([], 0)
    assert checked.hallucination_risk == 0.0
    assert text == (
        "Milvus is a vector database. [1] Ollama runs models locally. [2] Zilliz created it. [1]"
    )
    assert [c.number for c in citations] == [1, 2]
    assert citations[0] == Citation(
        1, "d1", "milvus.md", "Milvus is an open-source vector database."
    )
    assert citations[1].quote == "Ollama runs language models locally."


def test_a_sentence_naming_no_given_passage_keeps_no_marker_and_cites_nothing() -> None:
    checked = compose_answer(draft((7, "Invented."), (0, "Also invented.")), DOCS)
    assert checked.text == "Invented. Also invented."
    assert checked.citations == []
    assert checked.removed_citations == [7, 0]
    assert (checked.uncited_sentences, checked.hallucination_risk) == (2, 1.0)


def test_a_citation_to_a_passage_that_does_not_exist_is_removed_and_reported() -> None:
    checked = compose_answer(
        draft(
            (1, "Milvus is a vector database [3]."),
            (5, "Ollama runs models locally [2]."),
            (9, "Nothing backs this [4]."),
        ),
        DOCS,
    )

    assert checked.text == (
        "Milvus is a vector database. [1] Ollama runs models locally. [2] Nothing backs this."
    )
    assert [c.number for c in checked.citations] == [1, 2]
    assert checked.removed_citations == [3, 5, 9, 4]
    assert checked.uncited_sentences == 1
    assert checked.hallucination_risk == pytest.approx(1 / 3, abs=1e-4)


def test_markers_in_the_text_add_valid_citations_once() -> None:
    checked = compose_answer(draft((1, "Both say so [2][1]."), (2, "[2]")), DOCS)

    assert checked.text == "Both say so. [1] [2]"
    assert [c.number for c in checked.citations] == [1, 2]
    assert (checked.removed_citations, checked.uncited_sentences) == ([], 0)


def test_quote_is_the_sentence_with_most_shared_words() -> None:
    assert best_quote(DOCS[0].text, "approximate neighbour search") == (
        "It supports approximate nearest neighbour search."
    )


def test_quote_of_a_passage_without_sentence_breaks_is_the_passage() -> None:
    assert best_quote("  just words  ", "anything") == "just words"


def test_quote_ties_go_to_the_first_sentence() -> None:
    assert best_quote("Alpha one. Beta two.", "unrelated claim") == "Alpha one."


def test_a_sentence_said_twice_is_said_once_citing_both_passages() -> None:
    checked = compose_answer(
        draft(
            (1, "Milvus is a vector database."),
            (2, "Ollama runs models locally."),
            (2, "milvus is a vector database!"),
        ),
        DOCS,
    )
    assert checked.text == "Milvus is a vector database. [1] [2] Ollama runs models locally. [2]"
    assert repeated_sentences(checked.text) == []


def test_the_same_words_in_another_order_are_said_once() -> None:
    checked = compose_answer(
        draft(
            (1, "Prometheus listens on port 9090 by default for its UI and API."),
            (2, "By default, Prometheus listens on port 9090 for its UI and API."),
        ),
        DOCS,
    )
    assert checked.text == (
        "Prometheus listens on port 9090 by default for its UI and API. [1] [2]"
    )


def test_repeated_sentences_counts_what_a_reader_sees_twice() -> None:
    answer = (
        "Prometheus listens on port 9090 by default. [1] By default, Prometheus listens on "
        "port 9090. [2] Prometheus listens on port 9090. [3] It is. It is. It is not on port 80."
    )
    assert repeated_sentences(answer) == [
        "By default, Prometheus listens on port 9090.",
        "Prometheus listens on port 9090.",
        "It is.",
    ]


def test_a_word_changed_is_no_repeat() -> None:
    answer = "The endpoint is enabled by default. [1] The endpoint is not enabled by default. [2]"
    assert repeated_sentences(answer) == []


def test_a_sentence_inside_a_longer_one_is_said_the_longer_way() -> None:
    checked = compose_answer(
        draft(
            (1, "Milvus supports approximate nearest neighbour search."),
            (1, "Milvus supports approximate nearest neighbour search with HNSW indexes."),
            (1, "It is."),  # too short to count as a repeat of anything
        ),
        DOCS,
    )
    assert checked.text == (
        "Milvus supports approximate nearest neighbour search with HNSW indexes. [1] It is. [1]"
    )


def test_a_sentence_cut_at_the_length_cap_ends_where_it_was_finished() -> None:
    cut = "Milvus is a vector database. It supports search " + "and more " * 60 + "enab"
    capped = cut[:MAX_SENTENCE_CHARS]
    text = compose_answer(draft((1, capped)), DOCS).text
    assert text == "Milvus is a vector database. [1]"
    words = ("word " * 100)[:MAX_SENTENCE_CHARS]
    assert compose_answer(draft((1, words)), DOCS).text.endswith("word. [1]")
    assert cut_off_sentences(compose_answer(draft((1, words)), DOCS).text) == []


def test_a_sentence_stopped_mid_clause_is_not_said() -> None:
    checked = compose_answer(
        draft(
            (1, "Milvus is a vector database."),
            (2, "If a fill modifier is used on the"),
            (2, "The query `http_requests_total{environment="),
            (1, "Requests fail with HTTP 400. The default limit (100) is"),
        ),
        DOCS,
    )
    assert checked.text == "Milvus is a vector database. [1] Requests fail with HTTP 400. [1]"
    assert cut_off_sentences(checked.text) == []


def test_code_a_path_or_a_noun_may_end_a_sentence_without_a_full_stop() -> None:
    for text in ("Use `--web.route-prefix`", "See /api/v1/targets", "It keeps data in data-agent"):
        assert compose_answer(draft((1, text)), DOCS).text == f"{text} [1]"


def test_a_sentence_cut_at_the_cap_does_not_end_mid_clause() -> None:
    ending = "of a source server, while also enab"
    start = "Configure the server to scrape the endpoint " * 20
    capped = start[: MAX_SENTENCE_CHARS - len(ending)] + ending
    text = compose_answer(draft((1, capped)), DOCS).text
    assert text.endswith("of a source server. [1]")


def test_a_list_cut_at_the_cap_after_an_opening_backtick_ends_at_its_last_item() -> None:
    items = ["The operators are:"]
    n = 0
    while len(" ".join(items)) < MAX_SENTENCE_CHARS - 40:
        items.append(f"* `f{n}(v)` (does thing {n})")
        n += 1
    capped = " ".join(items) + " * `"
    capped += "x" * (MAX_SENTENCE_CHARS - len(capped))
    text = compose_answer(draft((1, capped)), DOCS).text
    assert text.endswith(f"(does thing {n - 1}). [1]")
    assert cut_off_sentences(text) == []


def test_a_sentence_left_off_in_an_ellipsis_is_not_said() -> None:
    checked = compose_answer(
        draft(
            (1, "One setting, `RAGLOOP_MILVUS_URI`, chooses where …"),
            (1, "In ragloop the retriever owns the data directory."),
            (2, "Ollama runs models locally. It also serves..."),
        ),
        DOCS,
    )
    assert checked.text == (
        "In ragloop the retriever owns the data directory. [1] Ollama runs models locally. [2]"
    )


def test_a_sentence_stopped_inside_a_bracket_ends_before_it() -> None:
    checked = compose_answer(
        draft(
            (
                1,
                "Graphs of rare spikes are hard to read. Note that when combining `rate()` "
                "with an aggregation operator (e.g.",
            ),
            (2, "Use `rate()` first (then `sum()`). It detects resets [and gaps."),
            (1, "Only counters (floats and histograms) work."),
        ),
        DOCS,
    )
    assert checked.text == (
        "Graphs of rare spikes are hard to read. [1] Use `rate()` first (then `sum()`). [2] "
        "Only counters (floats and histograms) work. [1]"
    )
    assert cut_off_sentences(checked.text) == []


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            "Yes, Prometheus can evaluate them in parallel.",
            "Prometheus can evaluate them in parallel.",
        ),
        ("No: the WAL is compressed.", "The WAL is compressed."),
        ("Nothing is lost.", "Nothing is lost."),
        ("No data is kept.", "No data is kept."),
        ("Yes.", "Yes."),
    ],
)
def test_an_answer_to_a_question_that_asks_no_decision_loses_its_yes_or_no(
    text: str, kept: str
) -> None:
    assert without_lead(text) == kept
