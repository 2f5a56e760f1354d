"""The rewrite after a round that passed but did not answer: the passages found are shown as
relevant yet incomplete, and the new query is asked to aim at what they miss."""

from __future__ import annotations

from ragloop.core.domain import Grade, GradedDocument
from ragloop.rewriter.prompts import rewrite_messages
from tests.unit.fakes import doc


def graded(doc_id: str, text: str, relevant: bool) -> GradedDocument:
    return GradedDocument(doc(doc_id, text), Grade(doc_id, relevant, 0.9 if relevant else 0.1, ""))


def test_passed_passages_are_shown_as_found_but_incomplete() -> None:
    documents = [
        graded("a", "The engine was built by Acme Motors.", True),
        graded("b", "Steam engines use coal.", False),
    ]
    user = rewrite_messages("Who founded the maker of the engine?", "q", documents, [])[1].content

    found = user.index("relevant but do not answer the whole question")
    assert found < user.index("Acme Motors") < user.index("Search for the information")
    assert user.index("did not help") < user.index("Steam engines use coal")
    assert "No passages were found" not in user


def test_without_passed_passages_the_prompt_is_as_before() -> None:
    user = rewrite_messages("q?", "q?", [graded("b", "Off topic.", False)], [])[1].content
    assert "relevant but do not answer" not in user and "Off topic." in user
    assert "No passages were found at all." in rewrite_messages("q?", "q?", [], [])[1].content
