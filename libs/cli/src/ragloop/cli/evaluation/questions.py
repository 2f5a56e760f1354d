"""A question file: one JSON object a line, each a question with what a right answer must hold
(the schema in docs/evaluation.md). Every problem is reported with its line number."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloop.cli.errors import UsageError

YES_NO_KIND = "yes-no"
OUT_OF_SCOPE_KIND = "out-of-scope"
ROLES = ("user", "assistant")


@dataclass(frozen=True)
class EvalQuestion:
    """One question; ``must_include`` groups of alternatives, each group matched by any one of
    its alternatives (case and runs of white space ignored). An unanswerable question is right
    when refused."""

    id: str
    question: str
    kind: str = ""
    answerable: bool = True
    must_include: tuple[tuple[str, ...], ...] = ()
    history: tuple[tuple[str, str], ...] = ()  # (role, content), oldest first
    gold_sources: tuple[str, ...] = field(default=(), compare=False)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _groups(value: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list):
        raise ValueError("must_include must be a list of lists of strings")
    groups = []
    for group in value:
        if not isinstance(group, list) or not group:
            raise ValueError("each must_include group must be a non-empty list of strings")
        groups.append(
            tuple(_text(alternative, "a must_include alternative") for alternative in group)
        )
    return tuple(groups)


def _history(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise ValueError("history must be a list of {role, content} objects")
    turns = []
    for turn in value:
        if not isinstance(turn, dict) or turn.get("role") not in ROLES:
            raise ValueError(f"each history turn needs a role of {' or '.join(ROLES)}")
        turns.append((turn["role"], _text(turn.get("content"), "a history turn's content")))
    return tuple(turns)


def parse_question(data: Any) -> EvalQuestion:
    """One line's object as a question; ValueError saying what is wrong with it."""
    if not isinstance(data, dict):
        raise ValueError("each line must be a JSON object")
    question_id, question = _text(data.get("id"), "id"), _text(data.get("question"), "question")
    answerable = data.get("answerable", True)
    if not isinstance(answerable, bool):
        raise ValueError("answerable must be true or false")
    kind = data.get("kind", "")
    if not isinstance(kind, str):
        raise ValueError("kind must be a string")
    groups = _groups(data.get("must_include", []))
    if answerable and not groups:
        raise ValueError("an answerable question needs must_include: what a right answer holds")
    if kind == YES_NO_KIND and (not groups or groups[0] not in (("yes",), ("no",))):
        raise ValueError('a yes-no question\'s first must_include group is ["yes"] or ["no"]')
    sources = data.get("gold_sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise ValueError("gold_sources must be a list of strings")
    return EvalQuestion(
        id=question_id,
        question=question,
        kind=kind,
        answerable=answerable,
        must_include=groups if answerable else (),
        history=_history(data.get("history", [])),
        gold_sources=tuple(sources),
    )


def load_questions(path: Path) -> list[EvalQuestion]:
    """The questions of a question file; UsageError naming the line of the first problem."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    questions: list[EvalQuestion] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            question = parse_question(json.loads(line))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        except ValueError as exc:
            raise UsageError(f"{path}:{number}: {exc}") from None
        if question.id in seen:
            raise UsageError(f"{path}:{number}: the id {question.id!r} is used twice")
        seen.add(question.id)
        questions.append(question)
    if not questions:
        raise UsageError(f"{path} holds no questions")
    return questions
