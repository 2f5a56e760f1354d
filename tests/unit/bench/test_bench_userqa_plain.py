"""userqa's plain systems without a model: the ceiling's gold window, the one plain prompt, and
what the stuffed and ceiling answerers record."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench.gold_window import answer_groups, best_span, gold_window, window_of
from bench.plain_prompts import MAX_TOKENS, SYSTEM_PROMPT, excerpt_messages, stuffed_messages
from bench.userqa_systems import (
    CEILING,
    STUFFED,
    CeilingAnswerer,
    PlainModel,
    Retrieval,
    StuffedAnswerer,
    asks,
)
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.core.domain import Document, RetrievalResult
from ragloop.core.models import ChatMessage, ChatReply
from ragloop.orchestrator.loop.corrective import LoopPolicy

HISTORY = (("user", "What does promtool do?"), ("assistant", "It checks rules files."))
FOLLOW_UP = EvalQuestion(
    "f1", "And how do I run it?", "follow-up", True, (("promtool check rules",),), HISTORY
)
WAL = EvalQuestion(
    "y1", "Is it on?", "yes-no", True, (("yes",), ("wal", "write-ahead log")), (), ("a.md",)
)


def test_a_yes_no_questions_decision_is_not_looked_for_in_the_page() -> None:
    assert answer_groups(WAL) == (("wal", "write-ahead log"),)
    assert answer_groups(FOLLOW_UP) == FOLLOW_UP.must_include


def test_the_span_covering_most_groups_wins_and_the_earliest_of_equals() -> None:
    page = "alpha ... beta" + "." * 50 + "alpha beta gamma" + "." * 50 + "gamma"
    groups = (("ALPHA",), ("beta",), ("gamma", "delta"))
    span = best_span(page, groups, size=20)
    assert span is not None and span.groups == 3
    assert page[span.start : span.end] == "alpha beta gamma"
    early = best_span("x beta y alpha z beta", (("beta",),), size=10)
    assert early is not None and (early.groups, early.start) == (1, 2)
    assert best_span("nothing here", groups, size=20) is None


def test_an_alternative_matches_across_any_white_space_and_case() -> None:
    span = best_span("run `promtool check\n  RULES x.yml`", (("promtool check rules",),), 100)
    assert span is not None and span.groups == 1


def test_the_window_is_centred_and_cut_to_whole_lines() -> None:
    page = "".join(f"line {n:02}\n" for n in range(20))  # 8 characters a line
    start = page.index("line 10")
    window = window_of(page, start, start + 7, size=30)
    assert window == "line 09\nline 10\nline 11"
    assert window_of("short page", 0, 5, size=30) == "short page"
    assert window_of(page, 0, 0, size=20) == "line 00\nline 01"  # the page's start


def test_the_gold_window_is_taken_from_the_page_that_covers_most() -> None:
    question = EvalQuestion(
        "q", "Which flags?", "list", True, (("--one",), ("--two",)), (), ("a.md", "b.md", "gone")
    )
    pages = {"a.md": "intro\n--one only\n", "b.md": "pre\n--one and --two\npost\n"}
    assert "--two" in gold_window(question, pages, size=100)
    assert (
        gold_window(question, {"a.md": "no match\n" * 20}, size=30)
        == "no match\nno match\nno match"
    )
    with pytest.raises(ValueError, match="gold pages"):
        gold_window(question, {"other.md": "x"})


def test_the_stuffed_prompt_numbers_the_passages_after_the_history() -> None:
    messages = stuffed_messages(
        FOLLOW_UP.question, [("a.md", "first"), ("b.md", "second")], FOLLOW_UP.history
    )
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content == SYSTEM_PROMPT
    assert messages[1:3] == [ChatMessage(role, content) for role, content in HISTORY]
    assert messages[-1].content == (
        "Documentation excerpts:\n\n[1] (source: a.md)\nfirst\n\n[2] (source: b.md)\nsecond"
        "\n\nQuestion: And how do I run it?"
    )
    assert [m.role for m in stuffed_messages("Q?", [])] == ["system", "user"]


def test_the_ceiling_prompt_holds_the_excerpt() -> None:
    messages = excerpt_messages("Q?", "the window", HISTORY)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1].content == "Documentation excerpt:\n\nthe window\n\nQuestion: Q?"


def test_the_ceiling_is_asked_only_questions_with_gold_text() -> None:
    out = EvalQuestion("o", "Homebrew?", "out-of-scope", False)
    assert asks(CEILING, WAL) and not asks(CEILING, out) and not asks(CEILING, FOLLOW_UP)
    assert asks(STUFFED, out)


class FakeModel:
    name = "fake"

    def __init__(self) -> None:
        self.asked: list[tuple[list[ChatMessage], int]] = []

    async def complete(self, messages: list[ChatMessage], *, max_tokens: int = 512) -> ChatReply:
        self.asked.append((messages, max_tokens))
        return ChatReply("Run promtool check rules.", 10, 5)


class FakeRetriever:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def retrieve(self, query: str, **options: Any) -> RetrievalResult:
        self.calls.append({"query": query, **options})
        return RetrievalResult([Document("1", "passage one", "a.md")], total_found=1)


def test_stuffed_asks_the_model_once_over_the_retrieved_passages() -> None:
    loop, model, retriever = asyncio.new_event_loop(), FakeModel(), FakeRetriever()
    policy = LoopPolicy(top_k=5, similarity_threshold=0.3, collection="userqa")
    stuffed = StuffedAnswerer(loop, retrieval=Retrieval(retriever, policy), model=PlainModel(model))
    try:
        answer = stuffed.answer(FOLLOW_UP)
    finally:
        loop.close()
    assert answer.text == "Run promtool check rules."
    assert (answer.model_calls, answer.decision_path) == (1, ("retrieve", "generate"))
    assert retriever.calls[0]["query"] == FOLLOW_UP.question  # as asked, not made standalone
    assert (retriever.calls[0]["top_k"], retriever.calls[0]["similarity_threshold"]) == (5, 0.3)
    ((messages, max_tokens),) = model.asked
    assert max_tokens == MAX_TOKENS and len(messages) == 4
    assert stuffed.last_passages == ["passage one"]
    # "passage one" does not hold the answer: the funnel places the loss at retrieval.
    assert answer.reach == {"retrieved": False, "passed": False, "read": False}


def test_the_ceiling_reads_the_gold_window() -> None:
    loop, model = asyncio.new_event_loop(), FakeModel()
    pages = {"a.md": "# WAL\nThe WAL is compressed by default.\n"}
    ceiling = CeilingAnswerer(loop, model=PlainModel(model), pages=pages)
    try:
        answer = ceiling.answer(WAL)
    finally:
        loop.close()
    assert (answer.model_calls, answer.decision_path) == (1, ("generate",))
    assert ceiling.last_passages == [pages["a.md"]]
    assert answer.reach == {"retrieved": True, "passed": True, "read": True}
    assert pages["a.md"] in model.asked[0][0][-1].content
