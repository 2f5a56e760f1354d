"""What an answer's text is made of: an answer that only restates its question."""

from __future__ import annotations

from ragloop.core.answers import restates


def test_an_answer_that_adds_no_word_to_the_question_restates_it() -> None:
    question = "Which process owns the Milvus Lite data directory?"
    assert restates(question, "The process owns the Milvus Lite data directory. [1]")
    assert not restates(question, "The retriever owns the Milvus Lite data directory. [1]")
    assert not restates("What port does it use?", "9090 [3]")
