"""Runs each question of a file through an answerer and scores the answer. The answerer is
ragloop's REST API for `ragloop eval`; a benchmark may pass another system to compare."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ragloop.cli.client import Api
from ragloop.cli.evaluation.events import evidence_of
from ragloop.cli.evaluation.funnel import UNKNOWN, Loss, Reach, loss, reach
from ragloop.cli.evaluation.questions import EvalQuestion
from ragloop.cli.evaluation.scoring import Scored, Verdict, score
from ragloop.core.answers import is_refusal

CHECKS = ("support", "answer_match")


@dataclass(frozen=True)
class EvalAnswer:
    """What a system said, and what it took."""

    text: str
    seconds: float
    citations: int = 0
    rewrites: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    # Of prompt_tokens, those the model server took from its prompt cache (0 where it says none).
    cached_prompt_tokens: int = 0
    decision_path: tuple[str, ...] = ()
    outcome: str = ""  # why the loop stopped looking (workflow.outcome)
    # The answer's checks (support, answer_match) and the best passed grade (best_confidence):
    # why an answer was refused, or kept.
    checks: dict[str, float] = field(default_factory=dict)
    # A follow-up's question made standalone from its history: what was searched and answered
    # ("" when the question was answered as asked).
    standalone: str = ""
    # Whether the answer's text was in the passages retrieved, passed and read (funnel.reach);
    # empty when the system does not show its passages.
    reach: Reach = field(default_factory=dict)
    # The check that refused the answer (the response's refused_by; "" when not refused).
    refused_by: str = ""


class Answerer(Protocol):
    def answer(self, question: EvalQuestion) -> EvalAnswer: ...


@dataclass(frozen=True)
class EvalRecord:
    """One question's answer and its score; ``error`` when the system failed to answer (the
    question counts as missing: no answer was given)."""

    question: EvalQuestion
    answer: EvalAnswer
    scored: Scored
    error: str = ""

    @property
    def loss(self) -> Loss | None:
        """Where an answerable question's answer was lost (funnel.loss); None for an
        unanswerable question."""
        if self.error and self.question.answerable:
            return Loss.ERROR
        return loss(self.question, self.scored, self.answer.reach, self.answer.refused_by)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.question.id,
            "kind": self.question.kind,
            "question": self.question.question,
            "answerable": self.question.answerable,
            "verdict": self.scored.verdict.value,
            "refused": self.scored.refused,
            "unmatched": [list(group) for group in self.scored.unmatched],
            "spurious_lead": self.scored.spurious_lead,
            "repeated": list(self.scored.repeated),
            "cut_off": list(self.scored.cut_off),
            "loss": self.loss,
            "answer": asdict(self.answer),
            "error": self.error,
        }


@dataclass
class RestAnswerer:
    """ragloop over REST (``POST /v1/query/stream``): the question, its history, the collection,
    and ``options`` (any of the request's policy fields, e.g. ``max_rewrite_attempts``). The
    answer is the ``done`` event's body; the passages of the events before it give its reach."""

    api: Api
    collection: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def answer(self, question: EvalQuestion) -> EvalAnswer:
        body: dict[str, Any] = {"query": question.question, **self.options}
        if self.collection:
            body["collection"] = self.collection
        if question.history:
            body["history"] = [{"role": r, "content": c} for r, c in question.history]
        clock = time.perf_counter()
        finished: list[dict[str, Any]] = []
        response: dict[str, Any] = {}
        for name, data in self.api.query_stream(body):
            if name == "node_finished":
                finished.append(data)
            elif name == "done":
                response = data
        seconds = time.perf_counter() - clock
        workflow = response.get("workflow", {})
        usage = workflow.get("usage", {})
        standalone = response.get("query", {}).get("standalone", "")
        return EvalAnswer(
            text=response["answer"],
            seconds=round(seconds, 3),
            citations=len(response.get("citations", [])),
            rewrites=response.get("query", {}).get("rewrite_count", 0),
            model_calls=usage.get("model_calls", 0),
            prompt_tokens=usage.get("prompt_tokens", 0),
            cached_prompt_tokens=usage.get("cached_prompt_tokens", 0),
            decision_path=tuple(workflow.get("decision_path", [])),
            outcome=workflow.get("outcome", ""),
            checks=_checks(response),
            standalone=standalone if standalone != question.question else "",
            reach=reach(question, evidence_of(finished)),
            refused_by=_refused_by(response),
        )


def _refused_by(response: Mapping[str, Any]) -> str:
    """The check that refused the answer; ``unknown`` for a refusal by a server that does not
    say (older than ``refused_by``)."""
    if "refused_by" in response:
        return response["refused_by"]
    return UNKNOWN if is_refusal(response["answer"]) else ""


def _checks(response: Mapping[str, Any]) -> dict[str, float]:
    """The answer's checks, and the best passed grade the loop's answer floor weighed (from the
    last generate node): why an answer was refused, or kept."""
    checks = {k: response[k] for k in CHECKS if response.get(k) is not None}
    generated = [
        e
        for e in response.get("workflow", {}).get("node_executions", [])
        if e["node"] == "generate"
    ]
    if generated and "best_confidence" in generated[-1].get("details", {}):
        checks["best_confidence"] = generated[-1]["details"]["best_confidence"]
    return checks


def evaluate(
    questions: Iterable[EvalQuestion],
    answerer: Answerer,
    *,
    failure: Callable[[Exception], str | None] = lambda exc: None,
) -> Iterator[EvalRecord]:
    """Each question answered and scored, as it ends. An exception ``failure`` names (returns a
    message for) is recorded as that question's error and the run goes on; any other ends it."""
    for question in questions:
        clock = time.perf_counter()
        try:
            answer = answerer.answer(question)
            error = ""
        except Exception as exc:
            message = failure(exc)
            if message is None:
                raise
            answer = EvalAnswer("", round(time.perf_counter() - clock, 3))
            error = message
        scored = score(question, answer.text)
        if error:  # no answer is a missing one, never a right refusal
            scored = Scored(Verdict.MISSING, False, question.must_include, False, (), ())
        yield EvalRecord(question, answer, scored, error)
