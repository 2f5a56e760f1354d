"""The loop's progress in words: each node's phrase begun when it starts and ended when it
finishes, so that the whole reads as a log of the work."""

from __future__ import annotations

from ragloop.core.names import LoopNode
from ragloop.orchestrator.loop.events import AnswerToken, NodeFinished, NodeStarted
from ragloop.orchestrator.rest.progress_text import progress_text


def finished(node: LoopNode, round_: int = 1, **details: object) -> NodeFinished:
    return NodeFinished(node, round_, 10.0, "ok", dict(details))


def passages(*sources: str) -> list[dict[str, str]]:
    return [{"id": f"d{i}", "source": source} for i, source in enumerate(sources)]


def test_a_corrective_run_reads_as_a_log_of_its_work() -> None:
    events = [
        NodeStarted(LoopNode.CONTEXTUALIZE, 0, "and then?"),
        finished(LoopNode.CONTEXTUALIZE, 0, standalone="What happens when too few pass?"),
        NodeStarted(LoopNode.RETRIEVE, 1, "What happens when too few pass?"),
        finished(LoopNode.RETRIEVE, documents=passages("a.md", "a.md", "b.md", "c.md", "d.md")),
        NodeStarted(LoopNode.GRADE, 1, "q"),
        finished(LoopNode.GRADE, pass_count=1, total_count=5),
        NodeStarted(LoopNode.REWRITE, 1, "q"),
        finished(LoopNode.REWRITE, query="pass rate below the threshold"),
        NodeStarted(LoopNode.RETRIEVE, 2, "pass rate below the threshold"),
        finished(LoopNode.RETRIEVE, 2, documents=passages("a.md")),
        NodeStarted(LoopNode.GRADE, 2, "q"),
        NodeFinished(LoopNode.GRADE, 2, 10.0, "error"),
        NodeStarted(LoopNode.GENERATE, 2, "q"),
        AnswerToken("The loop rewrites"),
        finished(LoopNode.GENERATE, 2, grounded=True),
    ]
    assert "".join(progress_text(event) for event in events) == (
        "Reading the conversation… asking “What happens when too few pass?”.\n"
        "Searching… 5 passages (a.md, b.md, c.md and 1 more).\n"
        "Grading… 1 of 5 passed.\n"
        "Rewriting the query… “pass rate below the threshold”.\n"
        "Searching again for “pass rate below the threshold”… 1 passage (a.md).\n"
        "Grading… failed.\n"
        "Writing the answer… done.\n"
    )


def test_a_search_that_finds_nothing_and_an_answer_refused_say_so() -> None:
    assert progress_text(finished(LoopNode.RETRIEVE, documents=[])) == "no passage found.\n"
    assert progress_text(finished(LoopNode.GENERATE, grounded=False)) == (
        "the passages do not hold it.\n"
    )


def test_a_long_query_is_cut_at_a_word() -> None:
    words = progress_text(NodeStarted(LoopNode.RETRIEVE, 3, "word " * 60))
    assert words.startswith("Searching again for “word word") and words.endswith("…”… ")
    assert len(words) < 160
