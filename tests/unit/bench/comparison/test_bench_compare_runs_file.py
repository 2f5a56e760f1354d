"""bench.compare's runs file: every run is kept as it ends, so a comparison of hours can be split
over invocations and an interrupted one goes on where it stopped. It is xz-compressed (a stream a
run, compacted into one stream at the end of an invocation) or, named ``.jsonl``, plain lines."""

from __future__ import annotations

import argparse
import asyncio
import lzma
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.common import add_runs_file_arguments, prepare_runs_file, runs_kept_on_interrupt
from bench.compare import latency_runs, runs_file_beside, runs_summary
from bench.comparison.llama_metrics import ServerCounts
from bench.comparison.runs import Answered, Meter, QueryRun, RunsFile
from bench.comparison.systems import SYSTEMS, spent_by_node
from bench.comparison.workload import WorkItem
from ragloop.core.domain import ModelUsage

CLAIM = WorkItem("scifact", "7", "A claim.", frozenset({"d1", "d2"}))
OTHER_CLAIM = WorkItem("scifact", "8", "Another claim.", frozenset({"d3"}))
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


def xz_streams(path: Path) -> list[bytes]:
    """What each xz stream of the file holds, read without ``RunsFile`` (as ``xz -dc`` would)."""
    data, streams = path.read_bytes(), []
    while data:
        decompressor = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        streams.append(decompressor.decompress(data))
        assert decompressor.eof
        data = decompressor.unused_data
    return streams


def cut(path: Path, size: int) -> None:
    """What a kill while the last run was appended leaves: its first bytes only."""
    path.write_bytes(path.read_bytes()[:size])


@pytest.mark.parametrize("name", ["runs.jsonl.xz", "runs.jsonl"])
def test_a_run_comes_back_from_the_file_as_it_was_recorded(tmp_path: Path, name: str) -> None:
    runs_file = RunsFile(tmp_path / name)
    made = answered_run("ragloop", QUESTION)
    failed = QueryRun("baseline", CLAIM, 3.0, None, error="TimeoutError: slow")

    runs_file.append(made, {"commit": "abc123", "settings_changed": ""})
    runs_file.append(failed, {"commit": "def456", "settings_changed": ""})

    assert runs_file.runs() == [made, failed]
    assert runs_file.runs()[0].item.instructions == "Begin…"
    assert runs_file.runs()[0].decision == "no" and runs_file.runs()[0].correct
    assert runs_file.commits() == ["abc123", "def456"]


def test_each_run_appended_is_an_xz_stream_of_its_own_line(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    runs_file.append(answered_run("ragloop", CLAIM), {"commit": "abc123"})
    runs_file.append(answered_run("baseline", CLAIM), {"commit": "abc123"})

    first, second = xz_streams(runs_file.path)

    assert first.endswith(b"\n") and b'"system": "ragloop"' in first
    assert second.endswith(b"\n") and b'"system": "baseline"' in second
    assert lzma.decompress(runs_file.path.read_bytes()) == first + second


def test_a_run_recorded_before_items_had_instructions_has_none() -> None:
    record = answered_run("ragloop", QUESTION).record()
    del record["instructions"]

    run = QueryRun.from_record(record)

    assert run.item == WorkItem("pubmedqa", "p9", "Does it?", frozenset({"p9"}), "no")


def test_a_plain_line_cut_short_by_a_kill_loses_only_that_run(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl")
    runs_file.append(answered_run("ragloop", CLAIM), {})
    with runs_file.path.open("a") as records:
        records.write('{"system": "baseline", "dataset": "sci')  # killed mid-write

    runs_file.append(answered_run("baseline", CLAIM), {})

    assert [run.system for run in runs_file.runs()] == ["ragloop", "baseline"]


# The stream of the run cut short keeps: part of its header, its header, some of its data, all
# but its last byte.
@pytest.mark.parametrize("left", [3, 12, 100, -1])
def test_a_stream_cut_short_by_a_kill_loses_only_that_run(tmp_path: Path, left: int) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    runs_file.append(answered_run("ragloop", CLAIM), {})
    kept = runs_file.path.stat().st_size
    runs_file.append(answered_run("baseline", CLAIM), {})
    cut(runs_file.path, kept + left if left > 0 else left)

    assert [run.system for run in runs_file.runs()] == ["ragloop"]

    runs_file.append(answered_run("ragloop_inprocess", CLAIM), {})  # the next invocation's
    assert [run.system for run in runs_file.runs()] == ["ragloop", "ragloop_inprocess"]


def test_compact_makes_one_stream_of_the_well_formed_records(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    runs_file.append(answered_run("ragloop", CLAIM, seconds=10.0), {"commit": "old"})
    runs_file.append(answered_run("baseline", CLAIM), {"commit": "old"})
    runs_file.append(answered_run("ragloop", CLAIM, seconds=20.0), {"commit": "new"})
    runs_file.append(answered_run("ragloop", QUESTION), {"commit": "newer"})
    lines = b"".join(xz_streams(runs_file.path)[:3])
    cut(runs_file.path, -10)
    runs, size = runs_file.runs(), runs_file.path.stat().st_size

    runs_file.compact()

    assert xz_streams(runs_file.path) == [lines]  # the run replaced later is kept, as it was
    assert runs_file.runs() == runs and [run.seconds for run in runs] == [20.0, 12.5]
    assert runs_file.commits() == ["old", "new"]
    assert runs_file.path.stat().st_size < size
    assert list(tmp_path.iterdir()) == [runs_file.path]

    runs_file.append(answered_run("ragloop", QUESTION), {})  # appending goes on after it
    assert len(xz_streams(runs_file.path)) == 2 and len(runs_file.runs()) == 3


def test_a_run_appended_while_the_file_is_compacted_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    runs_file.append(answered_run("ragloop", CLAIM), {})
    encoded, late = RunsFile._encoded, [answered_run("baseline", CLAIM)]

    def encoded_as_a_run_ends(self: RunsFile, text: str, preset: int | None = None) -> bytes:
        if late:  # a benchmark appending to the file (a --summarise compacts it meanwhile)
            RunsFile(self.path).append(late.pop(), {})
        return encoded(self, text, preset)

    monkeypatch.setattr(RunsFile, "_encoded", encoded_as_a_run_ends)
    runs_file.compact()

    assert [run.system for run in runs_file.runs()] == ["ragloop", "baseline"]
    assert len(xz_streams(runs_file.path)) == 1


def test_a_plain_runs_file_is_compacted_into_plain_lines(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl")
    runs_file.append(answered_run("ragloop", CLAIM), {})
    with runs_file.path.open("a") as records:
        records.write('{"system": "baseline", "dataset": "sci')
    lines = runs_file.path.read_text().splitlines()

    runs_file.compact()

    assert runs_file.path.read_text() == lines[0] + "\n"
    assert [run.system for run in runs_file.runs()] == ["ragloop"]


def test_compacting_no_file_makes_none(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    runs_file.compact()
    assert not runs_file.path.exists() and runs_file.forget(["ragloop"]) == 0


def test_forget_drops_the_runs_of_the_systems_named(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    for system in ("ragloop", "baseline", "ragloop_inprocess", "ragloop"):
        runs_file.append(answered_run(system, CLAIM), {})

    assert runs_file.forget(["ragloop", "ragloop_inprocess"]) == 3

    assert [run.system for run in runs_file.runs()] == ["baseline"]
    assert len(xz_streams(runs_file.path)) == 1


def runs_file_options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_runs_file_arguments(parser, SYSTEMS)
    return parser.parse_args(list(argv))


def test_the_runs_file_options_forget_systems_or_start_over(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    for system in SYSTEMS:
        runs_file.append(answered_run(system, CLAIM), {})

    prepare_runs_file(runs_file, runs_file_options("--forget", "ragloop", "--forget", "baseline"))
    assert [run.system for run in runs_file.runs()] == ["ragloop_inprocess"]

    prepare_runs_file(runs_file, runs_file_options())
    assert len(runs_file.runs()) == 1

    prepare_runs_file(runs_file, runs_file_options("--fresh"))
    assert not runs_file.path.exists()

    with pytest.raises(SystemExit):  # not a system of the benchmark
        runs_file_options("--forget", "ragloop_lite")


def test_forget_question_limits_forget_to_the_questions_named(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
    for system in SYSTEMS:
        runs_file.append(answered_run(system, CLAIM), {})
        runs_file.append(answered_run(system, OTHER_CLAIM), {})

    options = ("--forget", "ragloop", "--forget", "baseline", "--forget-question", OTHER_CLAIM.id)
    prepare_runs_file(runs_file, runs_file_options(*options))

    kept = sorted((run.system, run.item.id) for run in runs_file.runs())
    assert kept == sorted(
        [(system, CLAIM.id) for system in SYSTEMS] + [("ragloop_inprocess", OTHER_CLAIM.id)]
    )
    with pytest.raises(SystemExit, match="--forget-question names the questions"):
        prepare_runs_file(runs_file, runs_file_options("--forget-question", CLAIM.id))
    assert len(runs_file.runs()) == len(kept)  # nothing dropped without --forget


def test_an_interrupted_invocation_compacts_the_runs_it_made(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")

    with pytest.raises(SystemExit, match="kept in"), runs_kept_on_interrupt(runs_file):
        runs_file.append(answered_run("ragloop", CLAIM), {})
        runs_file.append(answered_run("baseline", CLAIM), {})
        raise KeyboardInterrupt

    assert len(xz_streams(runs_file.path)) == 1 and len(runs_file.runs()) == 2


def test_the_last_run_of_a_query_counts_and_clear_starts_over(tmp_path: Path) -> None:
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
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
    runs_file = RunsFile(tmp_path / "runs.jsonl.xz")
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
        "bench/results/compare-runs.jsonl.xz"
    )
    assert runs_file_beside(Path("/tmp/smoke.json")) == Path("/tmp/smoke-runs.jsonl.xz")


def test_the_committed_runs_files_are_each_one_xz_stream() -> None:
    results = Path(__file__).resolve().parents[4] / "bench" / "results"
    for name in ("compare", "quality", "quality-dev"):
        runs_file = RunsFile(runs_file_beside(results / f"{name}.json"))
        (lines,) = xz_streams(runs_file.path)
        assert lines.count(b"\n") == len(list(runs_file._records())) > 0
