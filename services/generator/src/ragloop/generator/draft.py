"""The model's structured answer, before the citation check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnswerSentence:
    source: int  # 1-based number of the passage, as shown to the model
    text: str


@dataclass(frozen=True)
class DraftAnswer:
    answerable: bool
    sentences: list[AnswerSentence]


def parse_draft(data: dict[str, Any]) -> DraftAnswer:
    answerable = data["answerable"]
    if not isinstance(answerable, bool):
        raise TypeError(f"answerable must be a boolean, got {answerable!r}")
    sentences = [
        AnswerSentence(int(item["source"]), " ".join(str(item["text"]).split()))
        for item in data["sentences"]
    ]
    return DraftAnswer(answerable, [s for s in sentences if s.text])
