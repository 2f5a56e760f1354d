"""Draining on SIGTERM, with real processes: a stage, and the orchestrator in front of the four,
each with a call in flight that waits on the scripted model server (a slow model, held by the
test: no sleeps). On the first SIGTERM the process reports NOT_SERVING (gRPC health, and the
orchestrator's /readyz) while it keeps answering; a second signal ends the drain, after which it
accepts nothing new; the call in flight still completes successfully, and then the process
exits. The drain is set long here so that the second signal, not the clock, ends it."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import pytest

from ragloop.core.names import Stage
from ragloop.local.launcher import Stack
from ragloop.local.processes import ChildProcess
from ragloop.v1 import common_pb2, grader_pb2, grader_pb2_grpc
from tests.reliability.conftest import QUESTION, scripted_stack, wait_until
from tests.reliability.scripted_model import ScriptedModel
from tests.sse_events import parse_events, without_keep_alives
from tests.stage_process import (
    NOT_SERVING,
    SERVING,
    health,
    stage_process,
    wait_for_health,
)

pytestmark = pytest.mark.reliability

SHUTDOWN_ENV = {"RAGLOOP_SHUTDOWN_DRAIN_S": "600", "RAGLOOP_SHUTDOWN_GRACE_S": "120"}
WAIT_S = 60  # bound of every wait on a process
REFUSED = "UNAVAILABLE"  # what a health check gets once nothing new is accepted


def terminate(child: ChildProcess) -> None:
    assert child.process is not None
    child.process.send_signal(signal.SIGTERM)


def exits(child: ChildProcess) -> bool:
    return wait_until(lambda: not child.running, WAIT_S)


def grade(address: str) -> grader_pb2.GradeDocumentsResponse:
    document = common_pb2.Document(id="1", text="Cats sleep sixteen hours a day.", source="a.md")
    with grpc.insecure_channel(address) as channel:
        return grader_pb2_grpc.GraderServiceStub(channel).GradeDocuments(
            grader_pb2.GradeDocumentsRequest(question=QUESTION, documents=[document]),
            timeout=WAIT_S * 3,
        )


def test_a_stage_drains_then_finishes_its_call_in_flight_then_exits(
    scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    env = {
        **SHUTDOWN_ENV,
        "RAGLOOP_LLAMACPP_URL": scripted_model.url,
        "RAGLOOP_GRADER_CACHE_SIZE": "0",
        "RAGLOOP_MODEL_RETRIES": "0",
    }
    with (
        stage_process(Stage.GRADER, tmp_path, env) as (grader, address),
        ThreadPoolExecutor(1) as pool,
    ):
        wait_for_health(grader, address, lambda status: status == SERVING, WAIT_S)
        with scripted_model.hold("grader") as held:
            in_flight = pool.submit(grade, address)
            assert held.wait_for_arrivals(1, timeout_s=WAIT_S), "the grade never reached the model"

            terminate(grader)
            wait_for_health(grader, address, lambda status: status == NOT_SERVING, WAIT_S)
            assert not in_flight.done()

            terminate(grader)  # ends the drain: nothing new is accepted
            wait_for_health(grader, address, lambda status: status.startswith(REFUSED), WAIT_S)
            assert grader.running and not in_flight.done()
        # Released: the model answers the call in flight.
        reply = in_flight.result(timeout=WAIT_S)
        assert [g.document_id for g in reply.grades] == ["1"]
        assert reply.grades[0].verdict == common_pb2.VERDICT_RELEVANT
        assert exits(grader), grader.log_tail()
        assert grader.exit_status == "exit code 0", grader.log_tail()


def stream_query(base_url: str) -> tuple[int, str]:
    body = {"query": QUESTION, "time_budget_s": 240}
    with httpx.stream("POST", f"{base_url}/v1/query/stream", json=body, timeout=WAIT_S * 4) as r:
        return r.status_code, "".join(r.iter_text())


def readyz(base_url: str) -> tuple[int, str]:
    try:
        response = httpx.get(f"{base_url}/readyz", timeout=5)
    except httpx.TransportError as exc:
        return 0, type(exc).__name__
    return response.status_code, response.text


def test_the_orchestrator_drains_while_a_streamed_answer_runs_to_its_end(
    scripted_model: ScriptedModel, tmp_path: Path
) -> None:
    env = {**SHUTDOWN_ENV, "RAGLOOP_STAGE_TIMEOUT_S": str(WAIT_S * 2)}  # the held grade waits
    with scripted_stack(scripted_model, tmp_path, {}, env=env) as stack:
        try:
            drain_the_orchestrator(stack, scripted_model)
        finally:  # the stages drain on the first signal; the launcher's is their second
            for child in stack.children:
                child.signal_stop()


def drain_the_orchestrator(stack: Stack, scripted_model: ScriptedModel) -> None:
    url = stack.config.base_url
    orchestrator = stack.child("orchestrator")
    rag_service = f"127.0.0.1:{stack.config.orchestrator_grpc_port}"
    assert readyz(url)[0] == 200
    with ThreadPoolExecutor(1) as pool:  # outlives the hold: its thread waits on the held call
        with scripted_model.hold("grader") as held:
            streamed = pool.submit(stream_query, url)
            assert held.wait_for_arrivals(1, timeout_s=WAIT_S), "the query never reached grading"

            terminate(orchestrator)
            assert wait_until(lambda: readyz(url) == (503, '{"status":"draining"}'), WAIT_S)
            assert health(rag_service) == NOT_SERVING
            # Still answering meanwhile: the load balancer has not taken it out yet.
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
            assert not streamed.done()

            terminate(orchestrator)  # ends the drain: both ports stop accepting
            assert wait_until(lambda: readyz(url)[0] == 0, WAIT_S), readyz(url)
            assert wait_until(lambda: health(rag_service).startswith(REFUSED), WAIT_S)
            assert orchestrator.running and not streamed.done()
        # Released: the answer streams to its end.
        status, text = streamed.result(timeout=WAIT_S * 2)
        assert status == 200
        events = without_keep_alives(parse_events(text))
        assert events[-1].name == "done", events[-2:]
        assert exits(orchestrator), orchestrator.log_tail()
