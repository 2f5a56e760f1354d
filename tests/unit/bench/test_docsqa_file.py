"""bench/data/docsqa.jsonl, a newcomer's questions over ragloop's own docs/: that it loads, holds
the questions it must, and that every answer it expects is still in the pages it names (a change
to docs/ that drops one fails here); and bench.docsqa's corpus and figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.common import ROOT
from bench.docsqa import QUESTIONS, docs_corpus, docsqa_figures, parse_args
from ragloop.cli.evaluation.questions import OUT_OF_SCOPE_KIND, YES_NO_KIND, load_questions
from ragloop.cli.evaluation.runner import EvalAnswer, EvalRecord
from ragloop.cli.evaluation.scoring import comparable, holds, score
from ragloop.core.answers import NO_ANSWER

QUESTIONS_THAT_MUST_BE_ASKED = (
    "Which process owns the Milvus Lite data directory, and why?",
    "What does the grader stage do?",
    "How does ragloop decide when to rewrite a query?",
    "How do I point ragloop at an Ollama server instead of llama.cpp?",
)
# What the out-of-scope questions ask about, which no page of docs/ may mention.
ABSENT_FROM_DOCS = ("confluence", "wiki", "fine-tun", "fine tun", "finetun")

ALL_QUESTIONS = load_questions(QUESTIONS)
ANSWERABLE = [q for q in ALL_QUESTIONS if q.answerable]
PAGES = {document.source: document.text for document in docs_corpus()}


def test_the_file_holds_twenty_questions_with_the_four_asked_for() -> None:
    assert len(ALL_QUESTIONS) == 20
    asked = {q.question for q in ALL_QUESTIONS}
    assert set(QUESTIONS_THAT_MUST_BE_ASKED) <= asked


def test_the_sources_are_named_as_make_run_names_them() -> None:
    assert "docs/storage.md" in PAGES
    assert any(source.startswith("docs/decisions/") for source in PAGES)
    for source, text in PAGES.items():
        assert (ROOT / source).read_text(encoding="utf-8") == text


@pytest.mark.parametrize("question", ANSWERABLE, ids=lambda q: q.id)
def test_every_expected_answer_is_in_its_gold_pages(question) -> None:
    assert question.gold_sources, "an answerable question names the pages that answer it"
    assert set(question.gold_sources) <= set(PAGES), "gold sources are pages of docs/"
    text = comparable("\n".join(PAGES[source] for source in question.gold_sources))
    groups = question.must_include
    if question.kind == YES_NO_KIND:
        groups = groups[1:]  # the lead word is the answer's, not the page's
    missing = [group for group in groups if not holds(text, group)]
    assert not missing, f"{question.id}: not in {question.gold_sources}: {missing}"


def test_the_out_of_scope_questions_expect_a_refusal_and_docs_do_not_answer_them() -> None:
    out_of_scope = [q for q in ALL_QUESTIONS if q.kind == OUT_OF_SCOPE_KIND]
    assert len(out_of_scope) == 2
    for question in out_of_scope:
        assert not question.answerable
        assert question.must_include == ()
    every_page = comparable("\n".join(PAGES.values()))
    assert [term for term in ABSENT_FROM_DOCS if term in every_page] == []


def test_the_follow_ups_carry_their_history() -> None:
    follow_ups = [q for q in ALL_QUESTIONS if q.kind == "follow-up"]
    assert follow_ups
    assert all(q.history for q in follow_ups)


def test_the_figures_are_ragloops_shares_score_and_median() -> None:
    grader = next(q for q in ALL_QUESTIONS if q.question == QUESTIONS_THAT_MUST_BE_ASKED[1])
    answers = {
        "It judges whether each passage holds relevant information.": 4.0,  # right
        "It writes the answer.": 6.0,  # wrong
        NO_ANSWER: 8.0,  # missing
    }
    records = [
        EvalRecord(grader, EvalAnswer(text, seconds), score(grader, text))
        for text, seconds in answers.items()
    ]
    figures = docsqa_figures(records)
    assert figures["docsqa_questions"] == 3
    assert figures["docsqa_right_ragloop"] == pytest.approx(1 / 3, abs=1e-3)
    assert figures["docsqa_wrong_ragloop"] == pytest.approx(1 / 3, abs=1e-3)
    assert figures["docsqa_score_ragloop"] == 0.0
    assert figures["docsqa_p50_s_ragloop"] == 6.0


def test_the_options() -> None:
    args = parse_args(["--limit", "3", "--runs-file", "r.jsonl", "--fresh"])
    assert (args.limit, Path(args.runs_file), args.fresh, args.summarise) == (
        3,
        Path("r.jsonl"),
        True,
        False,
    )
    assert Path(parse_args([]).runs_file).name == "docsqa-runs.jsonl"
