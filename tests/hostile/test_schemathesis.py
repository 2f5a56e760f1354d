"""schemathesis against the orchestrator's OpenAPI schema: every operation, positive and
negative cases, over real HTTP on 127.0.0.1, with API keys on (every case carries a valid key).
Behind the REST API: the real retriever on Milvus Lite with the real embedding model, and the
real grader, rewriter and generator over a fake chat model, each on its real gRPC server.

Checks: no 5xx, and every status code, content type and body (each event of the event stream
included) as the schema documents it. Every case is recorded; the figures go to
$RAGLOOP_RELIABILITY_OUT (schemathesis_cases, schemathesis_server_errors)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import SecretStr

from tests.hostile.reliability import record_figures
from tests.hostile.schemathesis_run import run_schemathesis
from tests.hostile.stacks import rest_over_fake_model

API_KEY = "schemathesis-key-0123456789"
EXAMPLES_PER_OPERATION = 75  # per operation and generation mode: about 1,200 cases in all
MIN_CASES = 1000


async def test_generated_requests_get_no_server_error_and_fit_the_schema(tmp_path: Path) -> None:
    settings = {
        "api_keys": SecretStr(API_KEY),
        "time_budget_s": 30,  # a query's whole budget: bounds every case's time
        "generation_reserve_s": 10,
    }
    async with rest_over_fake_model(str(tmp_path / "milvus.db"), **settings) as url:
        headers = {"authorization": f"Bearer {API_KEY}"}
        tally = await asyncio.to_thread(run_schemathesis, url, headers, EXAMPLES_PER_OPERATION)

    record_figures(
        schemathesis_cases=tally.cases,
        schemathesis_server_errors=tally.server_errors,
        schemathesis_schema_violations=tally.schema_violations,
    )
    statuses = dict(sorted(tally.statuses.items()))
    print(
        f"\nschemathesis: {tally.cases} cases, {tally.server_errors} server errors, "
        f"{tally.schema_violations} schema violations; statuses {statuses}"
    )
    print("cases per operation:", dict(tally.cases_by_operation))
    assert tally.cases >= MIN_CASES, tally.cases_by_operation
    assert not tally.failures, tally.report()
