"""PubMedQA (PQA-L) through the whole corrective loop: does the answer's yes/no/maybe match the
experts' decision, and do its citations point to passages it was given?

The 1,000 abstracts (their CONTEXTS, without the conclusion) are the corpus; each chosen
question runs retrieve → grade → (rewrite → retrieve → grade)* → generate in-process, through
``CorrectiveLoop`` with the stages the services build.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import seeded_prefix
from bench.stages import Tally
from ragloop.core.domain import Answer, Document, ModelUsage, SourceDocument
from ragloop.core.leads import Decision
from ragloop.core.stages import Generator
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, StageFailure

DECISIONS = ("yes", "no", "maybe")
# The generator's instructions for the answer (a request's answer_instructions): retrieval,
# grading and rewriting see the question as asked.
DECISION_INSTRUCTION = "Begin your answer with yes, no or maybe."
_LEADING_WORD = re.compile(r"[\W_]*([A-Za-z]+)")


@dataclass(frozen=True)
class Question:
    pubid: str
    text: str
    decision: str  # the experts' final_decision: yes | no | maybe


def load_pubmedqa(path: Path) -> tuple[list[SourceDocument], list[Question]]:
    rows = json.loads(path.read_text())
    corpus = [
        SourceDocument(source=pubid, text="\n\n".join(row["CONTEXTS"]))
        for pubid, row in rows.items()
    ]
    questions = [
        Question(pubid, row["QUESTION"], row["final_decision"]) for pubid, row in rows.items()
    ]
    return corpus, questions


def choose_questions(questions: list[Question], count: int, seed: int) -> list[Question]:
    return seeded_prefix(questions, count, seed, key=lambda q: q.pubid)


def leading_decision(answer: str) -> str | None:
    """yes / no / maybe when the answer starts with that word, else None."""
    match = _LEADING_WORD.match(answer)
    word = match.group(1).lower() if match else ""
    return word if word in DECISIONS else None


class DecisionGenerator:
    """Asks the generator to lead with the decision (``DECISION_INSTRUCTION`` as its instructions
    for the answer, the question unchanged), and counts answers lost to unparseable replies (a
    refusal after a reply that failed to parse; rarely, the repaired reply refused on its own)."""

    def __init__(self, inner: Generator, tally: Tally) -> None:
        self._inner = inner
        self._tally = tally

    async def generate(
        self,
        question: str,
        documents: list[Document],
        instructions: str = "",
        *,
        decision: Decision | None = None,
    ) -> Answer:
        """``instructions`` from the loop's policy come before the decision instruction; the
        generator reads the decision from them (the loop's ``decision`` knew no such line)."""
        before = self._tally.replies.count
        instructions = " ".join(filter(None, (instructions, DECISION_INSTRUCTION)))
        answer = await self._inner.generate(question, documents, instructions)
        if not answer.grounded and self._tally.replies.count > before:
            self._tally.failures += 1
        return answer


@dataclass(frozen=True)
class Outcome:
    question: Question
    answer: Answer | None  # None when a stage failed
    outcome: str  # the loop's outcome, or "failed" (a stage failed)
    rewrites: int
    usage: ModelUsage
    seconds: float

    @property
    def decision(self) -> str | None:
        return leading_decision(self.answer.text) if self.answer else None

    @property
    def correct(self) -> bool:
        return self.decision == self.question.decision

    @property
    def valid_citations(self) -> int:
        return len(self.answer.citations) if self.answer else 0

    @property
    def removed_citations(self) -> int:
        return len(self.answer.removed_citations) if self.answer else 0

    @property
    def cites_own_abstract(self) -> bool:
        """A citation points to a passage of the abstract the question was written from."""
        citations = self.answer.citations if self.answer else []
        return any(c.source == self.question.pubid for c in citations)


async def answer_questions(
    loop: CorrectiveLoop, policy: LoopPolicy, questions: list[Question], *, budget_s: float
) -> list[Outcome]:
    """Answer the questions in order; start no new one once ``budget_s`` is spent (0: no limit)."""
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    for question in questions:
        elapsed = time.perf_counter() - started
        if budget_s and elapsed >= budget_s:
            print(f"  … PubMedQA: time budget spent after {len(outcomes)} questions", flush=True)
            break
        outcome = await _answer(loop, policy, question)
        outcomes.append(outcome)
        answer = " ".join(outcome.answer.text.split())[:70] if outcome.answer else ""
        print(
            f"  … PubMedQA {len(outcomes)}/{len(questions)}: {outcome.decision or '-'} "
            f"(expected {question.decision}), {outcome.outcome}, {outcome.seconds:.0f}s, "
            f"{elapsed + outcome.seconds:.0f}s so far: {answer!r}",
            flush=True,
        )
    return outcomes


async def _answer(loop: CorrectiveLoop, policy: LoopPolicy, question: Question) -> Outcome:
    clock = time.perf_counter()
    answer: Answer | None
    try:
        result = await loop.run(question.text, policy)
        answer, outcome, trace = result.answer, result.outcome.value, result.trace
    except StageFailure as exc:
        print(f"    {question.pubid}: {exc}", flush=True)
        answer, outcome, trace = None, "failed", exc.trace
    seconds = time.perf_counter() - clock
    return Outcome(question, answer, outcome, len(trace.rewrite_history), trace.usage, seconds)


def citation_validity(outcomes: list[Outcome]) -> float:
    """Citations to a given passage ÷ all citations (distinct passage numbers per answer)."""
    valid = sum(o.valid_citations for o in outcomes)
    total = valid + sum(o.removed_citations for o in outcomes)
    return valid / total if total else float("nan")
