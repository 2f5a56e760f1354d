"""The loop's progress in words, for a chat UI's "thinking" pane: each node adds a phrase when it
starts ("Grading… ") and ends it when it finishes ("3 of 5 passed.\n"), so a stream shows motion
from its first event and reads as a short log of the work once done."""

from __future__ import annotations

from typing import Any

from ragloop.core.names import LoopNode
from ragloop.core.text import cut_at_word
from ragloop.orchestrator.loop.events import AnswerToken, LoopEvent, NodeFinished, NodeStarted

SOURCES_NAMED = 3  # a search's sources named in its line; more are counted
QUERY_CHARS = 120  # a query quoted in a line is cut to this many characters


def progress_text(event: LoopEvent) -> str:
    """The words ``event`` adds to the progress; "" for the answer's own tokens."""
    if isinstance(event, NodeStarted):
        return _started(event)
    if isinstance(event, NodeFinished):
        return _finished(event) if event.status == "ok" else "failed.\n"
    assert isinstance(event, AnswerToken)
    return ""


def _started(event: NodeStarted) -> str:
    match event.node:
        case LoopNode.CONTEXTUALIZE:
            return "Reading the conversation… "
        case LoopNode.RETRIEVE if event.round > 1:
            return f"Searching again for {_quoted(event.query)}… "
        case LoopNode.RETRIEVE:
            return "Searching… "
        case LoopNode.GRADE:
            return "Grading… "
        case LoopNode.REWRITE:
            return "Rewriting the query… "
        case LoopNode.GENERATE:
            return "Writing the answer… "
    return f"{event.node}… "


def _finished(event: NodeFinished) -> str:
    details = event.details
    match event.node:
        case LoopNode.CONTEXTUALIZE:
            return f"asking {_quoted(details.get('standalone', ''))}.\n"
        case LoopNode.RETRIEVE:
            return _found(details.get("documents", []))
        case LoopNode.GRADE:
            return f"{details.get('pass_count', 0)} of {details.get('total_count', 0)} passed.\n"
        case LoopNode.REWRITE:
            return f"{_quoted(details.get('query', ''))}.\n"
        case LoopNode.GENERATE:
            return "done.\n" if details.get("grounded") else "the passages do not hold it.\n"
    return "done.\n"


def _found(documents: list[dict[str, Any]]) -> str:
    if not documents:
        return "no passage found.\n"
    sources = list(dict.fromkeys(str(d.get("source", "")) for d in documents))
    named = ", ".join(sources[:SOURCES_NAMED])
    more = len(sources) - SOURCES_NAMED
    where = f"{named} and {more} more" if more > 0 else named
    count = len(documents)
    return f"{count} passage{'s' if count != 1 else ''} ({where}).\n"


def _quoted(text: str) -> str:
    return f"“{cut_at_word(text, QUERY_CHARS)}”"
