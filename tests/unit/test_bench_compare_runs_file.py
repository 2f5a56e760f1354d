"""bench.compare's runs file: every run is kept as it ends, so a comparison of hours can be split
over invocations and an interrupted one goes on where it stopped."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from bench.compare import latency_runs, runs_file_beside, runs_summary
from bench.comparison.llama_metrics import ServerCounts
from bench.comparison.runs import Answered, Meter, QueryRun, RunsFile
from bench.comparison.systems import spent_by_node
from bench.comparison.workload import WorkItem
from ragloop.core.domain import ModelUsage

CLAIM = WorkItem("scifact", "7", "A claim.", frozenset({"d1", "d2"}))
QUESTION = WorkItem("pubmedqa", "p9", "Does it?", frozenset({"p9"}), "no", instructions="Begin…")


def answered_run(system: str, item: WorkItem, seconds: float = 12.5) -> QueryRun:
    answered = Answered(
        answer="No [1].",
        evidence=["p9", "x"],
        usage=ModelUsage("qwen", 4, 1200, 80),
        node_seconds={"grade": 6.0, "generate": 4.0},
        decision_path=["retrieve", "grade", "generate"],
        rewrites=1,
        node_usage={"grade": ModelUsage("", 3, 800, 60), "generate": ModelUsage("", 1, 400, 20)},
    )
    server = ServerCounts(prompt_tokens=900, cached_prompt_tokens=300, completion_tokens=80)
    return QueryRun(system, item, seconds, answered, server, {"orchestrator": 0.4})


def test_a_run_comes_back_from_the_file_as_it_was_recorded(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl")
    made = answered_run("ragloop", QUESTION)
    failed = QueryRun("baseline", CLAIM, 3.0, None, error="TimeoutError: slow")

    runs_file.append(made, {"commit": "abc123", "settings_changed": ""})
    runs_file.append(failed, {"commit": "def456", "settings_changed": ""})

    assert runs_file.runs() == [made, failed]
    assert runs_file.runs()[0].item.instructions == "Begin…"
    assert runs_file.runs()[0].decision == "no" and runs_file.runs()[0].correct
    assert runs_file.commits() == ["abc123", "def456"]


def test_a_run_recorded_before_items_had_instructions_has_none() -> None:
    record = answered_run("ragloop", QUESTION).record()
    del record["instructions"]

    run = QueryRun.from_record(record)

    assert run.item == WorkItem("pubmedqa", "p9", "Does it?", frozenset({"p9"}), "no")


def test_a_line_cut_short_by_a_kill_loses_only_that_run(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl")
    runs_file.append(answered_run("ragloop", CLAIM), {})
    with runs_file.path.open("a") as records:
        records.write('{"system": "baseline", "dataset": "sci')  # killed mid-write

    runs_file.append(answered_run("baseline", CLAIM), {})

    assert [run.system for run in runs_file.runs()] == ["ragloop", "baseline"]


def test_the_last_run_of_a_query_counts_and_clear_starts_over(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl")
    runs_file.append(answered_run("ragloop", CLAIM, seconds=10.0), {})
    runs_file.append(answered_run("ragloop", CLAIM, seconds=20.0), {})

    assert [run.seconds for run in runs_file.runs()] == [20.0]

    runs_file.clear()
    assert runs_file.runs() == [] and runs_file.commits() == []


class FakeSystem:
    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []

    @property
    def processes(self) -> Mapping[str, int]:
        return {}

    async def answer(self, item: WorkItem) -> Answered:
        raise NotImplementedError  # the fake meter answers


class FakeMeter:
    async def measure(self, system: FakeSystem, item: WorkItem) -> QueryRun:
        system.asked.append(item.id)
        return answered_run(system.name, item)


def test_runs_already_in_the_file_are_not_made_again(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl")
    runs_file.append(answered_run("ragloop", CLAIM), {"commit": "old"})
    ragloop, baseline = FakeSystem("ragloop"), FakeSystem("baseline")
    meter: Any = FakeMeter()

    asyncio.run(
        latency_runs(meter, [ragloop, baseline], [CLAIM, QUESTION], runs_file, {"commit": "new"})
    )

    assert ragloop.asked == ["p9"] and baseline.asked == ["7", "p9"]
    summary = runs_summary(runs_file)
    assert summary["runs_ragloop"] == 2 and summary["runs_baseline"] == 2
    assert (summary["scifact_queries"], summary["pubmedqa_questions"]) == (1, 1)
    assert summary["runs_commits"] == "old new"
    assert summary["grade_prompt_tokens_per_query_ragloop"] == 800
    assert summary["rewrite_model_calls_per_query_baseline"] == 0


def test_ragloops_node_costs_come_from_its_node_executions() -> None:
    usage = {"model_calls": 2, "prompt_tokens": 700, "completion_tokens": 50}
    executions = [
        ("retrieve", 40.0, {"documents": 2}),
        ("grade", 3000.0, {"passed": 0, "usage": usage}),
        ("retrieve", 60.0, {"documents": 2}),
        ("grade", 1000.0, {"passed": 1, "usage": usage}),
    ]

    seconds, by_node = spent_by_node(executions)

    assert seconds == {"retrieve": 0.1, "grade": 4.0}
    assert by_node == {"grade": ModelUsage("", 4, 1400, 100)}


class CountingModelServer:
    """A loopback HTTP server whose ``/metrics`` shows its ``prompt_tokens`` counter, which the
    systems of the test raise as a llama-server's own would."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = f"llamacpp:prompt_tokens_total {owner.prompt_tokens}\n".encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class SystemOnItsServer:
    name: str
    server: CountingModelServer
    tokens: int
    processes: Mapping[str, int] = field(default_factory=dict)

    @property
    def model_url(self) -> str:
        return self.server.url

    async def answer(self, item: WorkItem) -> Answered:
        self.server.prompt_tokens += self.tokens
        return answered_run(self.name, item).answered  # type: ignore[return-value]


def test_each_system_is_metered_on_its_own_model_server() -> None:
    # The in-process loop calls a second llama-server (a shared one would hand it the other
    # ragloop's cached prompts): its model work must be read there, not on the stack's server.
    shared, second = CountingModelServer(), CountingModelServer()
    shared.prompt_tokens = 5_000  # what earlier queries left on the counter
    ragloop = SystemOnItsServer("ragloop", shared, tokens=300)
    inprocess = SystemOnItsServer("ragloop_inprocess", second, tokens=200)

    async def measure_both() -> list[QueryRun]:
        async with httpx.AsyncClient() as client:
            meter = Meter(client)
            return [await meter.measure(system, CLAIM) for system in (ragloop, inprocess)]

    try:
        runs = asyncio.run(measure_both())
    finally:
        shared.close()
        second.close()

    assert [run.server.prompt_tokens for run in runs] == [300, 200]
    assert [run.error for run in runs] == ["", ""]


def test_the_runs_file_sits_beside_its_results() -> None:
    assert runs_file_beside(Path("bench/results/compare.json")) == Path(
        "bench/results/compare-runs.jsonl"
    )
    assert runs_file_beside(Path("/tmp/smoke.json")) == Path("/tmp/smoke-runs.jsonl")
