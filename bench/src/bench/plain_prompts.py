"""The one free-text prompt of the plain systems userqa measures ragloop against: ``stuffed`` (the
retriever's passages in one prompt, plain RAG as a user builds it in an afternoon) and
``ceiling`` (the gold text around the expected answer). One prompt for both, so that the two
differ only by what the model reads: the ceiling's gap to stuffed is retrieval's part, and
ragloop's gap to the ceiling is what reading right text does not explain.

No JSON, no citations, no refusal asked for: the reply's text is the answer as is.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragloop.core.models import ChatMessage

SYSTEM_PROMPT = (
    "Answer the question from the documentation excerpt. Be concise and specific: name the "
    "functions, settings or commands to use."
)
MAX_TOKENS = 384


def _asked(user: str, question: str, history: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    """The system message, the conversation so far as chat turns (a follow-up relies on it),
    then ``user``, which ends with the question."""
    turns = [ChatMessage(role, content) for role, content in history]
    return [
        ChatMessage("system", SYSTEM_PROMPT),
        *turns,
        ChatMessage("user", f"{user}\n\nQuestion: {question}"),
    ]


def stuffed_messages(
    question: str,
    passages: Sequence[tuple[str, str]],
    history: Sequence[tuple[str, str]] = (),
) -> list[ChatMessage]:
    """The prompt over retrieved ``passages`` (source, text), numbered in the retriever's
    order."""
    numbered = [
        f"[{number}] (source: {source})\n{text}"
        for number, (source, text) in enumerate(passages, start=1)
    ]
    excerpts = "\n\n".join(numbered) or "(none)"
    return _asked(f"Documentation excerpts:\n\n{excerpts}", question, history)


def excerpt_messages(
    question: str, excerpt: str, history: Sequence[tuple[str, str]] = ()
) -> list[ChatMessage]:
    """The prompt over one excerpt (the ceiling's gold window)."""
    return _asked(f"Documentation excerpt:\n\n{excerpt}", question, history)
