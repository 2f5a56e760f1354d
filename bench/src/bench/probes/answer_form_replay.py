"""Replay the generator's answer-form rules on recorded userqa answers, without the model: each
answer's sentences (the text before each run of citation markers) are composed again by
``compose_answer`` as the current code would, and the answer is scored again.

    .venv/bin/python -m bench.probes.answer_form_replay bench/results/userqa-runs.jsonl

It prints each answer the rules change, with its verdict before and after, and the tally. The
replay sees the composed text, not the model's reply: a sentence the model wrote past the schema's
cap, or one said twice in a reply, was already handled by the code the run was made with.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from bench.userqa import DATA
from ragloop.cli.evaluation.questions import load_questions
from ragloop.cli.evaluation.scoring import score
from ragloop.core.answers import NO_ANSWER, is_refusal
from ragloop.core.domain import Document
from ragloop.generator.citations import compose_answer
from ragloop.generator.draft import AnswerSentence, DraftAnswer

_CITED = re.compile(r"((?:\s*\[\d+\])+)")
_NUMBER = re.compile(r"\[(\d+)\]")


def draft_of(answer: str) -> tuple[DraftAnswer, int]:
    """The answer's sentences as a draft (each the text before a run of markers, with them), and
    the highest passage number cited."""
    parts = _CITED.split(answer)
    sentences: list[AnswerSentence] = []
    highest = 0
    for text, markers in zip(parts[::2], [*parts[1::2], ""], strict=True):
        numbers = [int(n) for n in _NUMBER.findall(markers)]
        highest = max([highest, *numbers])
        if text.strip():  # the first number as the sentence's source, the others as markers
            cited = text.strip() + "".join(f" [{n}]" for n in numbers[1:])
            sentences.append(AnswerSentence(numbers[0] if numbers else None, cited))
    return DraftAnswer(True, sentences), highest


def recomposed(answer: str) -> str:
    """The answer as the current answer-form rules would write it from the same sentences."""
    if is_refusal(answer):
        return answer
    draft, highest = draft_of(answer)
    documents = [Document(f"d{n}", "", f"s{n}") for n in range(1, highest + 1)]
    return compose_answer(draft, documents).text or NO_ANSWER


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="a userqa runs file (userqa-runs.jsonl)")
    parser.add_argument("--data", default=str(DATA), help="the userqa folder")
    args = parser.parse_args()
    questions = {q.id: q for q in load_questions(Path(args.data) / "questions.jsonl")}
    tally: Counter[str] = Counter()
    for line in Path(args.runs).read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        question, before = questions.get(row["id"]), row["answer"]["text"]
        after = recomposed(before)
        if question is None or after.split() == before.split():
            continue
        change = f"{score(question, before).verdict.name} -> {score(question, after).verdict.name}"
        tally[change] += 1
        print(f"{row['system']} {row['id']} {change} | {after[-100:]}")
    print("changed answers:", dict(tally) or "none")


if __name__ == "__main__":
    main()
