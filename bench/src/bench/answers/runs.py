"""One question answered by one system, scored, and the runs file that keeps every such run.

A run is ``bench.comparison.runs.QueryRun`` (measured by its ``Meter``: seconds, the system's own
token counts, the llama-server's counters, CPU time) with what scores the answer: the item's gold
answers (``QualityItem``), and the answer's citations and, for ragloop, what each round
retrieved and passed (``QualityAnswer``). Whether an answer refuses and whether it is right are
computed from the recorded answer each time the file is read, so every run is scored by the same
rules, whenever it was made.

The runs file is ``bench.comparison.runs.RunsFile``'s (a JSON line a run, xz-compressed, appended
as it ends; a run cut short by a kill is ignored; the last run of a key counts): an invocation
makes only the runs it lacks, or that failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from bench.answers.items import ANSWER_SPANS, SQUAD2, QualityItem
from bench.answers.scoring import holds_answer, is_refusal, squad_correct
from bench.comparison.runs import Answered, QueryRun, RunKey, RunsFile


@dataclass(frozen=True)
class RoundInfo:
    """One retrieval round of ragloop (or plain RAG's one search), as its events tell it."""

    number: int
    query: str  # what was searched
    retrieved: tuple[str, ...]  # passage ids, in rank order
    sources: tuple[str, ...]  # their documents, in the same order
    answer_bearing: tuple[str, ...]  # ids of those whose text holds a gold answer
    passed: tuple[str, ...] | None = None  # ids graded relevant; None: not graded (plain RAG)
    confidence: tuple[float, ...] | None = None  # the grader's, in the order of ``retrieved``

    @property
    def answer_bearing_passed(self) -> bool:
        return bool(set(self.answer_bearing) & set(self.passed or ()))

    @property
    def best_passed_confidence(self) -> float | None:
        """The highest confidence of a passed passage; None when nothing passed or the grades
        were not recorded."""
        if self.passed is None or self.confidence is None:
            return None
        passed = [
            c for c, i in zip(self.confidence, self.retrieved, strict=True) if i in self.passed
        ]
        return max(passed, default=None)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RoundInfo:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in record.items()})


def seen_round(
    number: int,
    query: str,
    documents: Sequence[Mapping[str, Any]],  # as the stream's retrieve details: id, source, text
    answers: Iterable[str],
    grades: Sequence[Mapping[str, Any]] | None = None,  # as its grade details
) -> RoundInfo:
    answers = tuple(answers)
    by_id = {grade["document_id"]: grade for grade in grades or ()}
    ids = tuple(d["id"] for d in documents)
    return RoundInfo(
        number,
        query,
        ids,
        tuple(d["source"] for d in documents),
        tuple(d["id"] for d in documents if answers and holds_answer(d["text"], answers)),
        None if grades is None else tuple(i for i in ids if by_id.get(i, {}).get("relevant")),
        None if grades is None else tuple(by_id.get(i, {}).get("confidence", 0.0) for i in ids),
    )


@dataclass(frozen=True)
class QualityAnswer(Answered):
    """``Answered`` with the citation check's counts (None: the system has no citations) and the
    rounds ragloop's events describe (none for the baseline)."""

    citations: int | None = None  # cited passages that were given
    removed_citations: int | None = None  # cited numbers of no given passage, removed
    rounds: tuple[RoundInfo, ...] = ()
    # The final answer's support figure (None: not checked, or a run from before it existed), so
    # that support thresholds can be tried on recorded runs without model calls.
    support: float | None = None
    # The answer-match check's figure, the same way (decision 0019).
    answer_match: float | None = None
    # The lead call's probability of each word a decision was asked among (empty: none asked,
    # or a run from before it was recorded), so that yes-thresholds can be tried the same way.
    lead_probabilities: dict[str, float] = field(default_factory=dict)


_EXTRA_ANSWER_FIELDS = (
    "citations",
    "removed_citations",
    "rounds",
    "support",
    "answer_match",
    "lead_probabilities",
)


def _values(instance: object) -> dict[str, Any]:
    return {f.name: getattr(instance, f.name) for f in fields(instance)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class QualityRun(QueryRun):
    """``QueryRun`` of a ``QualityItem`` answered with a ``QualityAnswer``, scored."""

    @classmethod
    def of(cls, run: QueryRun) -> QualityRun:
        return cls(**_values(run))

    @property
    def quality_item(self) -> QualityItem:
        assert isinstance(self.item, QualityItem)
        return self.item

    @property
    def quality_answer(self) -> QualityAnswer | None:
        assert self.answered is None or isinstance(self.answered, QualityAnswer)
        return self.answered

    @property
    def refused(self) -> bool | None:
        return None if self.answered is None else is_refusal(self.answered.answer)

    @property
    def rewrote(self) -> bool:
        """The system rewrote the query at least once."""
        return bool(self.answered and self.answered.rewrites)

    @property
    def correct(self) -> bool:
        """SQuAD and two-hop: ``squad_correct``; PubMedQA: the answer begins with the experts'
        decision."""
        item = self.quality_item
        if item.dataset not in ANSWER_SPANS or self.answered is None:
            return super().correct
        return squad_correct(self.answered.answer, item.answers, bool(item.answerable), item.wrong)

    @property
    def round1_answer_bearing_passed(self) -> bool | None:
        """Round 1 passed a passage holding a gold answer (None: no graded round, or no gold
        answer to look for)."""
        answered = self.quality_answer
        rounds = [r for r in (answered.rounds if answered else ()) if r.passed is not None]
        if not rounds or not self.quality_item.answerable or self.item.dataset != SQUAD2:
            return None
        return rounds[0].answer_bearing_passed

    @property
    def later_answer_bearing_passed(self) -> bool:
        """A round after the first passed a passage holding a gold answer."""
        answered = self.quality_answer
        return any(r.answer_bearing_passed for r in (answered.rounds if answered else ())[1:])

    @property
    def passed_sources(self) -> set[str]:
        """The documents of the passages graded relevant in any round."""
        answered = self.quality_answer
        return {
            source
            for r in (answered.rounds if answered else ())
            for id_, source in zip(r.retrieved, r.sources, strict=True)
            if id_ in (r.passed or ())
        }

    @property
    def retrieved_sources(self) -> set[str]:
        answered = self.quality_answer
        return {source for r in (answered.rounds if answered else ()) for source in r.sources}

    def record(self) -> dict[str, Any]:
        item = self.quality_item
        return super().record() | {
            "answers": list(item.answers),
            "answerable": item.answerable,
            "wrong": list(item.wrong),
            "split": item.split,
            "seed": item.seed,
            "refused": self.refused,
            "correct": self.correct if self.answered else None,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> QualityRun:
        answered = record["answered"]
        base_answered = answered and {
            k: v for k, v in answered.items() if k not in _EXTRA_ANSWER_FIELDS
        }
        base = QueryRun.from_record({**record, "answered": base_answered})
        item = QualityItem(
            **_values(base.item),
            answers=tuple(record["answers"]),
            answerable=record["answerable"],
            wrong=tuple(record.get("wrong", ())),
            split=record["split"],
            seed=record["seed"],
        )
        quality_answer = None
        if base.answered is not None:
            quality_answer = QualityAnswer(
                **_values(base.answered),
                citations=answered["citations"],
                removed_citations=answered["removed_citations"],
                rounds=tuple(RoundInfo.from_record(r) for r in answered["rounds"]),
                support=answered.get("support"),
                answer_match=answered.get("answer_match"),
                lead_probabilities=answered.get("lead_probabilities") or {},
            )
        return cls(**_values(base) | {"item": item, "answered": quality_answer})


def _parsed(record: Mapping[str, Any]) -> QualityRun | None:
    try:
        return QualityRun.from_record(record)
    except (KeyError, TypeError, ValueError):
        return None  # not a run of this benchmark


@dataclass(frozen=True)
class QualityRunsFile(RunsFile):
    def runs(self) -> list[QualityRun]:  # type: ignore[override]
        """The recorded runs, the last one of each key."""
        parsed = (_parsed(record) for record in self._records())
        return list({run.key: run for run in parsed if run is not None}.values())

    def made(self) -> dict[RunKey, str]:
        """The runs that did not fail, by key, each with the question it asked."""
        return {run.key: run.item.text for run in self.runs() if not run.error}


def pending(
    items: Iterable[QualityItem], systems: Sequence[str], made: Mapping[RunKey, str]
) -> list[tuple[QualityItem, str]]:
    """(item, system) of every run still to make, question by question, each question's
    systems in the order given. A run that asked an item's question in other words (the data
    file was edited since) is made again."""
    return [
        (item, system)
        for item in items
        for system in systems
        if made.get((system, item.dataset, item.id)) != item.text
    ]
