"""One query answered by one system, measured: wall time, time by node, model calls and tokens
(as the system reports them, and as the llama-server counted them), CPU time of the system's
processes, and the evidence its generator was given.

A system is measured while it runs alone, so the llama-server's counters and the processes' CPU
time between the start and the end belong to that query.

Every run goes to a ``RunsFile`` as it ends, so a comparison of hours can be split over several
invocations (parts, or one part interrupted and started again): an invocation skips the runs the
file already holds and the figures are computed from every run in it.
"""

from __future__ import annotations

import json
import lzma
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
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
    node_usage: dict[str, ModelUsage] = field(default_factory=dict)  # grade, rewrite, generate


RunKey = tuple[str, str, str]  # system, dataset, query id


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
            "text": self.item.text,
            "instructions": self.item.instructions,
            "relevant": sorted(self.item.relevant),
            "expected_decision": self.item.decision,
            "decision": self.decision,
            "seconds": round(self.seconds, 3),
            "answered": asdict(self.answered) if self.answered else None,
            "server": asdict(self.server),
            "cpu_seconds": self.cpu_seconds,
            "error": self.error,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> QueryRun:
        """The run a ``record()`` describes (its derived fields are computed again). A record
        written before items had instructions has none."""
        item = WorkItem(
            record["dataset"],
            record["id"],
            record["text"],
            frozenset(record["relevant"]),
            record["expected_decision"],
            record.get("instructions", ""),
        )
        answered = record["answered"]
        if answered is not None:
            by_node = answered.get("node_usage", {})
            answered = Answered(
                **{
                    **answered,
                    "usage": ModelUsage(**answered["usage"]),
                    "node_usage": {node: ModelUsage(**u) for node, u in by_node.items()},
                }
            )
        return cls(
            record["system"],
            item,
            record["seconds"],
            answered,
            ServerCounts(**record["server"]),
            dict(record["cpu_seconds"]),
            record["error"],
        )

    @property
    def key(self) -> RunKey:
        return (self.system, self.item.dataset, self.item.id)

    @property
    def non_model_seconds(self) -> float:
        """Wall time the llama-server was not computing for this query."""
        return self.seconds - self.server.model_seconds


class System(Protocol):
    name: str
    model_url: str  # the llama-server it calls: that server's counters are this system's

    @property
    def processes(self) -> Mapping[str, int]:
        """The processes (name → pid) whose CPU time is this system's."""
        ...

    async def answer(self, item: WorkItem) -> Answered: ...


@dataclass
class Meter:
    """Reads the counters of a system's llama-server and the CPU time of its processes."""

    client: httpx.AsyncClient
    clock: Callable[[], float] = time.perf_counter

    async def measure(self, system: System, item: WorkItem) -> QueryRun:
        """Run ``item`` through ``system`` alone; a failure is recorded, not raised."""
        server_before = await read_counts(self.client, system.model_url)
        cpu_before = cpu_snapshot(system.processes)
        started = self.clock()
        answered, error = None, ""
        try:
            answered = await system.answer(item)
        except Exception as exc:  # one failed query must not end a run of hours
            error = f"{type(exc).__name__}: {exc}"
        seconds = self.clock() - started
        cpu = cpu_spent(cpu_before, cpu_snapshot(system.processes))
        server = await read_counts(self.client, system.model_url) - server_before
        return QueryRun(system.name, item, seconds, answered, server, cpu, error)


XZ_SUFFIX = ".xz"
_XZ_MAGIC = b"\xfd7zXZ\x00"  # how every xz stream begins
_COMPACT_PRESET = 9 | lzma.PRESET_EXTREME


def _xz_streams(data: bytes) -> Iterator[bytes]:
    """What each whole xz stream in ``data`` holds, in order. A stream cut short (by a kill while
    it was appended) or corrupt is passed over: reading goes on at the next stream's header, so
    the runs appended after it are kept."""
    while data:
        decompressor = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        try:
            content = decompressor.decompress(data)
        except lzma.LZMAError:
            content = b""
        if decompressor.eof:
            yield content
            data = decompressor.unused_data
            continue
        following = data.find(_XZ_MAGIC, 1)
        if following < 0:
            return
        data = data[following:]


@dataclass(frozen=True)
class RunsFile:
    """Every query run so far, one JSON object a line, appended as each run ends.

    A path ending in ``.xz`` (``NAME-runs.jsonl.xz``, the default) holds the lines xz-compressed:
    each line appended is an xz stream of its own (concatenated streams are one .xz file, which
    ``xz -dc`` reads whole), and ``compact`` rewrites the file as one stream, several times smaller
    than a stream a line. Any other path holds the lines as they are.
    """

    path: Path

    @property
    def compressed(self) -> bool:
        return self.path.suffix == XZ_SUFFIX

    def runs(self) -> list[QueryRun]:
        """The recorded runs, the last one of each key; a line cut short by a kill is ignored."""
        by_key: dict[RunKey, QueryRun] = {}
        for record in self._records():
            try:
                run = QueryRun.from_record(record)
            except (KeyError, TypeError):
                continue
            by_key[run.key] = run
        return list(by_key.values())

    def commits(self) -> list[str]:
        """The commits the runs were made at, in order of first use."""
        return self.recorded("commit")

    def recorded(self, field: str, default: str = "") -> list[str]:
        """The values of one provenance field (``commit``, ``model``) in the runs, in order of
        first use; a run recorded without it counts as ``default`` (none when empty)."""
        values = (record.get(field) or default for record in self._records())
        return list(dict.fromkeys(value for value in values if value))

    def _records(self) -> Iterator[dict[str, Any]]:
        if self.path.exists():
            for _, record in self._lines(self.path.read_bytes()):
                yield record

    def _lines(self, data: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each well-formed line of the file's ``data`` (a JSON object), with its record."""
        text = b"".join(_xz_streams(data)) if self.compressed else data
        for line in text.decode().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield line, record

    def _encoded(self, text: str, preset: int | None = None) -> bytes:
        return lzma.compress(text.encode(), preset=preset) if self.compressed else text.encode()

    def append(self, run: QueryRun, provenance: Mapping[str, str]) -> None:
        """Record ``run`` with where it came from (commit, changed settings)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+b") as records:
            records.seek(0, 2)
            if not self.compressed and records.tell():
                records.seek(-1, 2)
                if records.read(1) != b"\n":
                    records.write(b"\n")  # after a line cut short: keep the new record whole
            records.write(self._encoded(json.dumps(run.record() | dict(provenance)) + "\n"))

    def compact(self) -> None:
        """Rewrite the file with its well-formed lines only, compressed as one xz stream."""
        self._rewrite(lambda record: True)

    def forget(
        self,
        systems: Collection[str],
        datasets: Collection[str] | None = None,
        questions: Collection[str] | None = None,
    ) -> int:
        """Drop the runs of ``systems`` (only those of ``datasets`` and of the question ids
        ``questions``, when given) and compact; returns how many records went."""
        return self._rewrite(
            lambda record: (
                record.get("system") not in systems
                or (datasets is not None and record.get("dataset") not in datasets)
                or (questions is not None and record.get("id") not in questions)
            )
        )

    def _rewrite(self, keep: Callable[[dict[str, Any]], bool]) -> int:
        """Replace the file by one of its well-formed lines whose record ``keep`` accepts;
        returns how many such lines were left out."""
        if not self.path.exists():
            return 0
        temporary = self.path.with_name(f"{self.path.name}.tmp")
        while True:
            data = self.path.read_bytes()
            lines = list(self._lines(data))
            kept = [line for line, record in lines if keep(record)]
            with temporary.open("wb") as rewritten:
                rewritten.write(
                    self._encoded("".join(f"{line}\n" for line in kept), _COMPACT_PRESET)
                )
                rewritten.flush()
                os.fsync(rewritten.fileno())
            # A benchmark may append to the file meanwhile (a --summarise while it runs): read
            # it again rather than lose that run. os.replace: a kill leaves either whole file.
            if self.path.stat().st_size == len(data):
                os.replace(temporary, self.path)
                return len(lines) - len(kept)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
