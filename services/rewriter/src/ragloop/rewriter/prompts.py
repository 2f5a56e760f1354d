"""The rewriter's prompt and reply schema."""

from __future__ import annotations

from typing import Any

from ragloop.core.domain import GradedDocument, RewriteAttempt
from ragloop.core.models import ChatMessage

PROMPT_VERSION = "rewrite-v4"
# The failed passages tell the model what the query found; the first words of the best three say
# that as well as five longer excerpts did (issue 9: 3 x 120 characters took the prompt from ~480
# to ~300 tokens with the same share of rewrites that still find a relevant passage).
EXCERPT_CHARS = 120
MAX_FAILED_SHOWN = 3
# Completion tokens are what a small local model is slowest at: a rewrite with a 200-character
# reason and five keywords took 7-30 s on 2 cores (issue 9's profile). The loop uses only the
# query; the reason and keywords reach the trace, so they are kept, but short.
REASON_CHARS = 80
MAX_KEYWORDS = 3
KEYWORD_CHARS = 30

REWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rewritten_query": {"type": "string", "minLength": 3, "maxLength": 300},
        "reason": {"type": "string", "maxLength": REASON_CHARS},
        "keywords": {
            "type": "array",
            "items": {"type": "string", "maxLength": KEYWORD_CHARS},
            "maxItems": MAX_KEYWORDS,
        },
    },
    "required": ["rewritten_query", "reason", "keywords"],
    "additionalProperties": False,
}

# rewrite-v4 (issue 9): the same instructions in 76 instead of 99 tokens; this message goes with
# every rewrite call.
SYSTEM = (
    "Write one new search query for a document search engine, more likely than the queries "
    "already tried to find passages that answer the user's question: use different words, "
    "synonyms, or the technical terms such passages would contain. Do not answer the question.\n"
    f'Reply with JSON: "rewritten_query", "reason" (a few words), "keywords" (up to {MAX_KEYWORDS} '
    "terms)."
)


def tried_queries(original: str, current: str, history: list[RewriteAttempt]) -> list[str]:
    """The question and every query searched with so far, each once, in the order tried."""
    return list(dict.fromkeys([original, *[a.query for a in history], current]))


def rewrite_messages(
    original: str,
    current: str,
    failed: list[GradedDocument],
    history: list[RewriteAttempt],
) -> list[ChatMessage]:
    lines = [f"Question: {original}"]
    if current != original:
        lines.append(f"Current query: {current}")
    lines.append("Queries already tried:")
    lines += [f"- {q}" for q in tried_queries(original, current, history)]
    if failed:
        lines.append("Passages found that did not help (with the grader's reason):")
        for graded in failed[:MAX_FAILED_SHOWN]:
            excerpt = " ".join(graded.document.text.split())[:EXCERPT_CHARS]
            lines.append(f"- {excerpt!r} — {graded.grade.reasoning or 'not relevant'}")
    else:
        lines.append("No passages were found at all.")
    return [ChatMessage("system", SYSTEM), ChatMessage("user", "\n".join(lines))]


def retry_messages(original: str, tried: list[str]) -> list[ChatMessage]:
    """The request after a reply that repeated a tried query: the question and every query tried,
    not the failed passages again. rewrite-v4 (issue 9): the 1.5B model repeats a tried query in
    about half of its first replies, and rewrite-v3 answered with the whole first request, the
    repeated reply and "write a different one". Over 28 SciFact claims through the whole loop
    (2026-11-23, both versions on fresh stages): the rewriter's prompt tokens 697 -> 420 a claim,
    all prompt tokens 2,729 -> 2,362, circular rewrites 7 -> 5, evidence recall 0.51 -> 0.50 (one
    claim each way), precision 0.49 -> 0.54."""
    lines = [f"Question: {original}", "Queries already tried (each one failed):"]
    lines += [f"- {q}" for q in tried]
    lines.append("Write a search query different from all of these.")
    return [ChatMessage("system", SYSTEM), ChatMessage("user", "\n".join(lines))]
