"""The model's structured answer, before the citation check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnswerSentence:
    source: int | None  # 1-based number of the passage, as shown to the model; None: only
    # the markers in the text cite (the plain-text format)
    text: str


@dataclass(frozen=True)
class DraftAnswer:
    answerable: bool
    sentences: list[AnswerSentence]
    lead: str | None = None  # the word the answer must begin with (leads.py), when asked for


def parse_draft(data: dict[str, Any]) -> DraftAnswer:
    answerable = data["answerable"]
    if not isinstance(answerable, bool):
        raise TypeError(f"answerable must be a boolean, got {answerable!r}")
    sentences = [
        AnswerSentence(int(item["source"]), " ".join(str(item["text"]).split()))
        for item in data["sentences"]
    ]
    lead = data.get("lead")
    if lead is not None and not isinstance(lead, str):
        raise TypeError(f"lead must be a string, got {lead!r}")
    return DraftAnswer(answerable, [s for s in sentences if s.text], lead or None)
