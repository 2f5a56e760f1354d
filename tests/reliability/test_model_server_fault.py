"""The real model server (llama-server with the local chat model) SIGKILLed while it writes an
answer: the query ends at once with HTTP 503 naming the generator — an ``error`` event on the
stream, after the tokens already sent — and never hangs. The other stages are scripted so that
the generator is the only model call."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from ragloop.generator.__main__ import build_spec
from ragloop.generator.settings import GeneratorSettings
from ragloop.local.model_server import model_server_command
from ragloop.local.processes import ChildProcess, free_port
from ragloop.local.readiness import http_ok
from tests.reliability.tally import Tally
from tests.service.loop_stack_helpers import (
    grader_spec,
    rest_over_stages,
    retriever_spec,
    rewriter_spec,
)
from tests.sse_events import read_until
from tests.unit.fakes import DictGrader, ScriptedRetriever, ScriptedRewriter, doc

pytestmark = pytest.mark.reliability

QUESTION = "How many hours a day do cats sleep?"
PASSAGE = doc("cats", "Cats sleep up to sixteen hours a day, mostly in short naps.")
BUDGET_S = 240  # a 1.5B model on two busy cores; the answer is cut off long before
WAIT_S = 240.0
PROCESSING = re.compile(r"^llamacpp:requests_processing\s+([0-9.]+)", re.M)


@pytest.fixture
def model_server(model_path: Path, tmp_path: Path) -> Iterator[ChildProcess]:
    """A llama-server of this test's own (the session's shared one must not be killed)."""
    port = free_port()
    command = model_server_command(
        model_path, host="127.0.0.1", port=port, threads=os.cpu_count() or 2, context=4096
    )
    child = ChildProcess("model-server", command, tmp_path / "model-server.log")
    child.start()
    try:
        child.wait_until(lambda: http_ok(f"{url_of(child)}/health"), timeout_s=180)
        yield child
    finally:
        child.signal_stop()
        child.wait_stopped(10)


def url_of(server: ChildProcess) -> str:
    return f"http://127.0.0.1:{server.command[server.command.index('--port') + 1]}"


def generating(server: ChildProcess) -> bool:
    """Whether llama-server is working on a request now (its Prometheus metrics say)."""
    try:
        metrics = httpx.get(f"{url_of(server)}/metrics", timeout=5).text
    except httpx.HTTPError:
        return False
    match = PROCESSING.search(metrics)
    return bool(match) and float(match.group(1)) > 0


@pytest.fixture
async def api(model_server: ChildProcess) -> AsyncIterator[httpx.AsyncClient]:
    settings = GeneratorSettings(llamacpp_url=url_of(model_server), model_retries=0)
    stages = {
        "retriever": retriever_spec(ScriptedRetriever({QUESTION: [PASSAGE]})),
        "grader": grader_spec(DictGrader({"cats": (True, 0.9)})),
        "rewriter": rewriter_spec(ScriptedRewriter([])),
        "generator": build_spec(settings),
    }
    async with (
        rest_over_stages(stages) as url,
        httpx.AsyncClient(base_url=url, timeout=BUDGET_S + 30) as client,
    ):
        yield client


def assert_names_the_generator(error: dict[str, object]) -> None:
    assert (error["stage"], error["code"]) == ("generator", "stage_unavailable"), error
    assert error["decision_path"] == ["retrieve", "grade", "generate"]
    assert "generator" in str(error["message"])


async def test_the_model_server_dying_mid_answer_ends_the_stream_with_an_error(
    model_server: ChildProcess, api: httpx.AsyncClient, tally: Tally
) -> None:
    body = {"query": QUESTION, "time_budget_s": BUDGET_S}
    async with api.stream("POST", "/v1/query/stream", json=body) as response:
        chunks = response.aiter_text()
        before = await read_until(chunks, lambda event: event.name == "token")
        assert before[-1].name == "token", "the answer never started"
        model_server.kill()  # mid-answer: a token was sent, more were coming
        after = await read_until(chunks, lambda event: event.name in ("done", "error"))
    tally.fault_checks += 1

    assert after[-1].name == "error", [e.name for e in after]
    assert after[-1].data["status"] == 503
    assert_names_the_generator(after[-1].data)


async def test_the_model_server_dying_mid_answer_fails_the_query_with_503(
    model_server: ChildProcess, api: httpx.AsyncClient, tally: Tally
) -> None:
    body = {"query": QUESTION, "time_budget_s": BUDGET_S}
    answer = asyncio.create_task(api.post("/v1/query", json=body))
    deadline = time.monotonic() + WAIT_S
    while not await asyncio.to_thread(generating, model_server):
        assert not answer.done(), f"answered before the model server was killed: {answer}"
        assert time.monotonic() < deadline, "the generator's call never reached the model"
        await asyncio.sleep(0.2)
    model_server.kill()
    response = await answer
    tally.fault_checks += 1

    assert response.status_code == 503, response.text
    assert_names_the_generator(response.json()["error"])
