"""One query answered by one system, measured: wall time, time by node, model calls and tokens
(as the system reports them, and as the llama-server counted them), CPU time of the system's
processes, and the evidence its generator was given.

A system is measured while it runs alone, so the llama-server's counters and the processes' CPU
time between the start and the end belong to that query.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import httpx

from bench.comparison.cpu import cpu_snapshot, cpu_spent
from bench.comparison.evidence import evidence_precision, evidence_recall
from bench.comparison.llama_metrics import ServerCounts, read_counts
from bench.comparison.workload import WorkItem
from bench.pubmedqa import leading_decision
from ragloop.core.domain import ModelUsage


@dataclass(frozen=True)
class Answered:
    """What a system says about its own run."""

    answer: str
    evidence: list[str]  # sources of the passages handed to the generator, in order
    usage: ModelUsage  # from the llama-server's usage fields of every reply
    node_seconds: dict[str, float]  # retrieve, grade, rewrite, generate: summed over rounds
    decision_path: list[str]
    rewrites: int


@dataclass(frozen=True)
class QueryRun:
    system: str
    item: WorkItem
    seconds: float  # end to end, as its caller saw it
    answered: Answered | None  # None: the run failed
    server: ServerCounts = field(default_factory=ServerCounts)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # by process
    error: str = ""

    @property
    def precision(self) -> float | None:
        evidence = self.answered.evidence if self.answered else []
        return evidence_precision(evidence, self.item.relevant)

    @property
    def recall(self) -> float:
        evidence = self.answered.evidence if self.answered else []
        return evidence_recall(evidence, self.item.relevant)

    @property
    def decision(self) -> str | None:
        return leading_decision(self.answered.answer) if self.answered else None

    @property
    def correct(self) -> bool:
        return self.decision is not None and self.decision == self.item.decision

    def record(self) -> dict[str, Any]:
        """Everything about the run, for the runs file (one JSON object per line)."""
        return {
            "system": self.system,
            "dataset": self.item.dataset,
            "id": self.item.id,
            "relevant": sorted(self.item.relevant),
            "expected_decision": self.item.decision,
            "decision": self.decision,
            "seconds": round(self.seconds, 3),
            "answered": asdict(self.answered) if self.answered else None,
            "server": asdict(self.server),
            "cpu_seconds": self.cpu_seconds,
            "error": self.error,
        }

    @property
    def non_model_seconds(self) -> float:
        """Wall time the llama-server was not computing for this query."""
        return self.seconds - self.server.model_seconds


class System(Protocol):
    name: str

    @property
    def processes(self) -> Mapping[str, int]:
        """The processes (name → pid) whose CPU time is this system's."""
        ...

    async def answer(self, item: WorkItem) -> Answered: ...


@dataclass
class Meter:
    """Reads the llama-server's counters and the CPU time of a system's processes."""

    client: httpx.AsyncClient
    model_url: str
    clock: Callable[[], float] = time.perf_counter

    async def measure(self, system: System, item: WorkItem) -> QueryRun:
        """Run ``item`` through ``system`` alone; a failure is recorded, not raised."""
        server_before = await read_counts(self.client, self.model_url)
        cpu_before = cpu_snapshot(system.processes)
        started = self.clock()
        answered, error = None, ""
        try:
            answered = await system.answer(item)
        except Exception as exc:  # one failed query must not end a run of hours
            error = f"{type(exc).__name__}: {exc}"
        seconds = self.clock() - started
        cpu = cpu_spent(cpu_before, cpu_snapshot(system.processes))
        server = await read_counts(self.client, self.model_url) - server_before
        return QueryRun(system.name, item, seconds, answered, server, cpu, error)
