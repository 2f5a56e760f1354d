"""The real model server (llama-server with the local chat model) SIGKILLed while it writes an
answer: the query ends at once with HTTP 503 naming the generator — an ``error`` event on the
stream, after the tokens already sent — and never hangs. The other stages are scripted so that
the generator is the only model call."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from ragloop.generator.__main__ import build_spec
from ragloop.generator.settings import GeneratorSettings
from ragloop.local.model_server import ServedModel, serving_model
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
def model_server(model_path: Path, tmp_path: Path) -> Iterator[ServedModel]:
    """A llama-server of this test's own (the session's shared one must not be killed)."""
    with serving_model(model_path, tmp_path / "model-server.log", context=4096) as served:
        yield served


def generating(server: ServedModel) -> bool:
    """Whether llama-server is working on a request now (its Prometheus metrics say)."""
    try:
        metrics = httpx.get(f"{server.url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return False
    match = PROCESSING.search(metrics)
    return bool(match) and float(match.group(1)) > 0


@pytest.fixture
async def api(model_server: ServedModel) -> AsyncIterator[httpx.AsyncClient]:
    settings = GeneratorSettings(llamacpp_url=model_server.url, model_retries=0)
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
    model_server: ServedModel, api: httpx.AsyncClient, tally: Tally
) -> None:
    body = {"query": QUESTION, "time_budget_s": BUDGET_S}
    async with api.stream("POST", "/v1/query/stream", json=body) as response:
        chunks = response.aiter_text()
        before = await read_until(chunks, lambda event: event.name == "token")
        assert before[-1].name == "token", "the answer never started"
        model_server.process.kill()  # mid-answer: a token was sent, more were coming
        after = await read_until(chunks, lambda event: event.name in ("done", "error"))
    tally.fault_checks += 1

    assert after[-1].name == "error", [e.name for e in after]
    assert after[-1].data["status"] == 503
    assert_names_the_generator(after[-1].data)


async def test_the_model_server_dying_mid_answer_fails_the_query_with_503(
    model_server: ServedModel, api: httpx.AsyncClient, tally: Tally
) -> None:
    body = {"query": QUESTION, "time_budget_s": BUDGET_S}
    answer = asyncio.create_task(api.post("/v1/query", json=body))
    deadline = time.monotonic() + WAIT_S
    while not await asyncio.to_thread(generating, model_server):
        assert not answer.done(), f"answered before the model server was killed: {answer}"
        assert time.monotonic() < deadline, "the generator's call never reached the model"
        await asyncio.sleep(0.2)
    model_server.process.kill()
    response = await answer
    tally.fault_checks += 1

    assert response.status_code == 503, response.text
    assert_names_the_generator(response.json()["error"])
