"""The rewriter's prompt and reply schema."""

from __future__ import annotations

import json
from typing import Any

from ragloop.core.domain import GradedDocument, Rewrite, RewriteAttempt
from ragloop.core.models import ChatMessage

PROMPT_VERSION = "rewrite-v3"
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

SYSTEM = (
    "You improve search queries for a document search engine. The passages found for the current "
    "query did not help answer the user's question. Write one new search query that is more "
    "likely to find passages that answer it: use different words, synonyms, or the technical "
    "terms such passages would contain. Do not answer the question. Never repeat a query that was "
    "already tried.\n"
    f'Reply with JSON: "rewritten_query", "reason" (a few words), "keywords" (up to {MAX_KEYWORDS} '
    "terms)."
)


def rewrite_messages(
    original: str,
    current: str,
    failed: list[GradedDocument],
    history: list[RewriteAttempt],
) -> list[ChatMessage]:
    tried = list(dict.fromkeys([original, *[a.query for a in history], current]))
    lines = [f"Question: {original}"]
    if current != original:
        lines.append(f"Current query: {current}")
    lines.append("Queries already tried:")
    lines += [f"- {q}" for q in tried]
    if failed:
        lines.append("Passages found that did not help (with the grader's reason):")
        for graded in failed[:MAX_FAILED_SHOWN]:
            excerpt = " ".join(graded.document.text.split())[:EXCERPT_CHARS]
            lines.append(f"- {excerpt!r} — {graded.grade.reasoning or 'not relevant'}")
    else:
        lines.append("No passages were found at all.")
    return [ChatMessage("system", SYSTEM), ChatMessage("user", "\n".join(lines))]


def repeated_query_messages(rewrite: Rewrite) -> list[ChatMessage]:
    """The model's reply that repeated a tried query, and the request for another one."""
    reply = {
        "rewritten_query": rewrite.query,
        "reason": rewrite.reason,
        "keywords": rewrite.keywords,
    }
    return [
        ChatMessage("assistant", json.dumps(reply)),
        ChatMessage(
            "user",
            f"The query {rewrite.query!r} was already tried. Write a different search query.",
        ),
    ]
