"""`make run`'s launcher as a supervisor. Its own entry point (``python -m ragloop.local.cli run``,
what `make run` runs) on free loopback ports, with the real llama-server and chat model and a small
corpus; each of its six processes is SIGKILLed once while two clients query without pause:

- the launcher starts it again by itself and it answers its readiness probe within a bound;
- the other five keep running (same pids) and serving: a query that does not need the killed
  process succeeds (every query needs the retriever, the grader and the generator; none of these
  needs the rewriter), one that needs it ends fast with 503 naming it, none hangs;
- after it is back, queries succeed again.

Then a stage that keeps crashing (its port taken, so each restart exits) is given up on with a
clear message while the rest keeps serving, and Ctrl-C during a restart's backoff stops
everything. The figures (time to come back, queries failed) are printed at the end (``-s``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bench.loadgen import NO_CONNECTION, Ended, Load
from ragloop.core.names import Stage, values
from ragloop.local.launcher import MODEL_SERVER, ORCHESTRATOR, StackConfig
from ragloop.local.processes import port_is_free
from ragloop.local.readiness import grpc_serving, http_ok
from tests.conftest import MODELS_DIR
from tests.reliability.conftest import CORPUS, QUESTION, wait_until
from tests.reliability.tally import Tally

pytestmark = pytest.mark.reliability

STAGES = values(Stage)
PROCESSES = (MODEL_SERVER, *STAGES, ORCHESTRATOR)
MODEL_STAGES = ("grader", "rewriter", "generator")
START_S = 300.0  # the launcher's start: the model's load and the corpus's ingest
WAIT_S = 120.0  # longest wait for anything else the test expects; reaching it fails the test
FAIL_FAST_S = 10.0  # the longest a query that fails may take (the stage connect timeout is 5 s)
STOP_S = 30.0  # Ctrl-C to the launcher's exit, every process stopped
# One round: the load's queries never call the rewriter, so every one is answered while it is down
# (with a rewrite allowed, a refused answer would be rewritten).
BODY = {"query": QUESTION, "time_budget_s": 60, "max_rewrite_attempts": 0}
LAUNCHER_ENV = {
    "RAGLOOP_METRICS_PORT": "0",  # no fixed stage metrics ports beside other stacks
    # Short answers, so that a query takes seconds with the 1.5B model on two cores.
    "RAGLOOP_GENERATOR_MAX_TOKENS": "48",
    "RAGLOOP_LOG_JSON": "true",
}


@dataclass(frozen=True)
class Recovery:
    name: str
    back_s: float  # SIGKILL to its readiness probe passing again
    first_answer_s: float  # SIGKILL to the end of the first answered query started after that
    failed: int  # queries that did not get an answer after the kill
    failed_in_flight: int  # of those, the ones that were in flight at the kill
    answered_during_gap: int  # queries answered that were in flight or started while it was down
    slowest_failure_s: float


class Launcher:
    """The launcher process, what it printed, and its children."""

    def __init__(self, work_dir: Path) -> None:
        self.config = StackConfig.on_free_ports(work_dir, models_dir=MODELS_DIR)
        self.output_path = work_dir / "launcher.out"
        corpus = work_dir / "corpus"
        for source, text in CORPUS.items():
            (corpus / source).parent.mkdir(parents=True, exist_ok=True)
            (corpus / source).write_text(text)
        c = self.config
        env = {
            **os.environ,
            **LAUNCHER_ENV,
            **{name: str(port) for name, port in c.port_variables().items()},
            "RAGLOOP_DATA_DIR": str(c.data_dir),
            "RAGLOOP_MODELS_DIR": str(MODELS_DIR.resolve()),
        }
        with self.output_path.open("wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ragloop.local.cli", "run", "--corpus", str(corpus)],
                cwd=work_dir,  # its logs: work_dir/.run/logs
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def output(self, since: int = 0) -> str:
        return self.output_path.read_bytes()[since:].decode(errors="replace")

    def output_size(self) -> int:
        return self.output_path.stat().st_size

    def wait_for_output(self, text: str, *, since: int = 0, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if text in self.output(since):
                return True
            if self.process.poll() is not None:
                return text in self.output(since)
            time.sleep(0.2)
        return False

    def children(self) -> dict[str, int]:
        """The launcher's child processes by name, from /proc."""
        return {
            name: pid
            for pid in child_pids(self.process.pid)
            if (name := process_name(pid)) is not None
        }

    def ready(self, name: str) -> bool:
        """The probe the launcher itself uses before it reports a process back."""
        c = self.config
        if name == MODEL_SERVER:
            return http_ok(f"http://{c.host}:{c.model_port}/health")
        if name == ORCHESTRATOR:
            return http_ok(f"{c.base_url}/healthz")
        return grpc_serving(c.stage_address(name))

    def stop(self) -> None:
        """Ctrl-C, then SIGKILL whatever is left (only when the test already failed)."""
        children = self.children()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pid in children.values():
            kill_if_alive(pid)


def child_pids(parent: int) -> list[int]:
    pids = []
    for children in Path(f"/proc/{parent}/task").glob("*/children"):
        try:
            pids += [int(pid) for pid in children.read_text().split()]
        except OSError:  # the thread or the process ended
            continue
    return pids


def process_name(pid: int) -> str | None:
    """Which of the six a process is, by its command line."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return None
    if Path(args[0]).name.startswith("llama-server"):
        return MODEL_SERVER
    if "-m" in args and args.index("-m") + 1 < len(args):
        module = args[args.index("-m") + 1]
        name = module.removeprefix("ragloop.")
        if name in (*STAGES, ORCHESTRATOR):
            return name
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def kill_if_alive(pid: int) -> None:
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    started = Launcher(tmp_path_factory.mktemp("supervised"))
    try:
        assert started.wait_for_output("ragloop is answering", timeout_s=START_S), started.output()
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def recoveries() -> Iterator[list[Recovery]]:
    measured: list[Recovery] = []
    yield measured
    if measured:
        print(
            "\n| process | back after | first answer after | failed (in flight) | answered "
            "during the gap | slowest failure |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for r in measured:
            print(
                f"| {r.name} | {r.back_s:.1f} s | {r.first_answer_s:.1f} s | {r.failed} "
                f"({r.failed_in_flight}) | {r.answered_during_gap} | {r.slowest_failure_s:.2f} s |"
            )


def test_the_launcher_runs_six_processes_with_milvus_lite_inside_the_retriever(
    launcher: Launcher,
) -> None:
    children = launcher.children()
    assert sorted(children) == sorted(PROCESSES), children
    # Milvus Lite runs in the retriever's own process (threads, no server process of its own).
    assert child_pids(children["retriever"]) == []


def test_the_query_of_the_load_is_answered_in_one_round(launcher: Launcher) -> None:
    """So every one is answered while the rewriter is down."""
    response = httpx.post(f"{launcher.base_url}/v1/query", json=BODY, timeout=WAIT_S)
    assert response.status_code == 200, response.text
    assert response.json()["workflow"]["decision_path"] == ["retrieve", "grade", "generate"]


def expected_failure(name: str, ended: Ended) -> bool:
    """How a query may fail while ``name`` is down: with the orchestrator gone, no connection;
    else 503 naming the stage that could not be reached — the model stages for the model."""
    if name == ORCHESTRATOR:
        return ended.status == NO_CONNECTION
    if name == MODEL_SERVER:
        named = ended.stage in MODEL_STAGES and "chat model at" in ended.message
    else:
        named = ended.stage == name and name in ended.message
    return ended.status == 503 and ended.code == "stage_unavailable" and named


@pytest.mark.parametrize("name", PROCESSES)
def test_a_killed_process_comes_back_by_itself_while_the_others_keep_serving(
    launcher: Launcher, recoveries: list[Recovery], tally: Tally, name: str
) -> None:
    before = launcher.children()
    with Load(launcher.base_url, [BODY], clients=2) as load:
        assert load.wait_for(lambda e: e.status == 200, timeout_s=WAIT_S), load.ended()
        since = launcher.output_size()
        killed_at = time.monotonic()
        os.kill(before[name], signal.SIGKILL)
        others = [other for other in PROCESSES if other != name]
        others_ready = {other: launcher.ready(other) for other in others}

        def restarted() -> bool:
            pid = launcher.children().get(name)
            return pid not in (None, before[name]) and launcher.ready(name)

        came_back = wait_until(restarted, WAIT_S)
        back_at = time.monotonic()
        answered = load.wait_for(
            lambda e: e.started > back_at and e.status == 200, timeout_s=WAIT_S
        )
    results = load.ended()
    tally.hung_requests += sum(e.hung for e in results)
    tally.fault_checks += 1
    output = launcher.output(since)

    assert came_back, f"{name} not back after {WAIT_S:.0f} s:\n{output}"
    assert f"{name} exited (killed by SIGKILL); starting it again in 0.5 s" in output, output
    assert launcher.wait_for_output(f"{name} is back", since=since, timeout_s=10), output
    assert all(others_ready.values()), f"not serving right after the kill: {others_ready}"
    after = launcher.children()
    assert {o: after.get(o) for o in others} == {o: before[o] for o in others}, "others restarted"
    assert not [e for e in results if e.hung], "requests hung"
    failed = [e for e in results if e.status != 200]
    assert not [e for e in failed if not expected_failure(name, e)], failed
    assert not [e for e in failed if e.seconds > FAIL_FAST_S], "a failure took long"
    assert answered, f"no answer after {name} came back: {results[-5:]}"
    during_gap = [e for e in results if e.ended > killed_at and e.started < back_at]
    answered_during_gap = [e for e in during_gap if e.status == 200]
    if name == "rewriter":  # no query needed it
        assert answered_during_gap and not failed, results
    first_answer = min(e.ended for e in results if e.started > killed_at and e.status == 200)
    recoveries.append(
        Recovery(
            name,
            back_s=back_at - killed_at,
            first_answer_s=first_answer - killed_at,
            failed=len(failed),
            failed_in_flight=sum(e.in_flight_at(killed_at) for e in failed),
            answered_during_gap=len(answered_during_gap),
            slowest_failure_s=max((e.seconds for e in failed), default=0.0),
        )
    )


def test_a_stage_that_keeps_crashing_is_given_up_on_and_the_rest_keeps_serving(
    launcher: Launcher,
) -> None:
    since = launcher.output_size()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        # Takes the rewriter's port once it is free: every restart then fails to listen.
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        os.kill(launcher.children()["rewriter"], signal.SIGKILL)

        def squat() -> bool:
            try:
                squatter.bind((launcher.config.host, launcher.config.stage_ports["rewriter"]))
            except OSError:
                return False
            squatter.listen()
            return True

        assert wait_until(squat, 5), "the rewriter's port never came free"
        gave_up = launcher.wait_for_output("rewriter keeps crashing", since=since, timeout_s=WAIT_S)
    output = launcher.output(since)
    assert gave_up, output
    assert "rewriter keeps crashing (7 exits within 120 s, the last: exit code 1" in output
    assert "error: the rewriter stays down; the other processes keep serving" in output
    assert launcher.process.poll() is None, "the launcher stopped"
    assert "rewriter" not in launcher.children()
    response = httpx.post(f"{launcher.base_url}/v1/query", json=BODY, timeout=WAIT_S)
    assert response.status_code == 200, response.text  # it did not need the rewriter
    ready = httpx.get(f"{launcher.base_url}/readyz", timeout=10)
    assert ready.status_code == 503 and ready.json()["stages"]["rewriter"] is False


def test_ctrl_c_during_a_restart_backoff_stops_everything(launcher: Launcher) -> None:
    children = launcher.children()
    since = launcher.output_size()
    os.kill(children["grader"], signal.SIGKILL)
    assert launcher.wait_for_output("grader exited", since=since, timeout_s=10)
    launcher.process.send_signal(signal.SIGINT)  # within the grader's 0.5 s backoff
    stopped_at = time.monotonic()
    launcher.process.wait(STOP_S)
    print(f"\nCtrl-C to every process stopped: {time.monotonic() - stopped_at:.1f} s")
    assert launcher.process.returncode == 0, launcher.output(since)
    assert not [n for n, pid in children.items() if alive(pid)], "a process survived Ctrl-C"
    c = launcher.config
    ports = c.port_variables().values()
    assert [p for p in ports if not port_is_free(c.host, p)] == [], "still listening"
    assert "grader is back" not in launcher.output(since)
    assert launcher.output(since).rstrip().endswith("stopped.")
