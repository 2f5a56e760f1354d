"""What reaches the generator through the real stack (REST, gRPC stage servers): with the context
filled, the passages that failed grading follow the passed ones; nothing passed is given nothing
(the real generator then refuses)."""

from __future__ import annotations

import httpx

from tests.service.loop_stack_helpers import (
    grader_spec,
    rest_over_stages,
    retriever_spec,
    simple_stages,
)
from tests.unit.fakes import DictGrader, ScriptedRetriever, doc

PASS = (True, 0.9)
FAIL = (False, 0.2)


async def ask(grades: dict[str, tuple[bool, float]], **settings: object) -> dict:
    retriever = ScriptedRetriever({"q": [doc("a", score=0.9), doc("b", score=0.8), doc("c")]})
    stages = simple_stages(
        retriever=retriever_spec(retriever), grader=grader_spec(DictGrader(grades))
    )
    async with (
        rest_over_stages(stages, grade_pass_threshold=0.2, **settings) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        response = await client.post("/v1/query", json={"query": "q", "max_rewrite_attempts": 0})
    assert response.status_code == 200, response.text
    return response.json()


def generated_from(body: dict) -> list[str]:
    """The passages the generator was given: the echo generator answers with their ids."""
    return [c["document_id"] for c in body["citations"]]


async def test_the_failed_passages_fill_the_context_after_the_passed_one() -> None:
    body = await ask({"a": FAIL, "b": PASS, "c": FAIL}, fill_generation_context=True)

    assert generated_from(body) == ["b", "a", "c"] and body["answer"] == "b a c"
    # The grades say which of the cited passages passed.
    assert {g["document_id"]: g["relevant"] for g in body["grader_result"]["grades"]} == {
        "a": False, "b": True, "c": False,
    }  # fmt: skip


async def test_without_the_fill_only_the_passed_passage_is_given() -> None:
    body = await ask({"a": FAIL, "b": PASS, "c": FAIL}, fill_generation_context=False)

    assert generated_from(body) == ["b"]


async def test_nothing_passed_is_refused_whatever_the_fill() -> None:
    body = await ask({"a": FAIL, "b": FAIL, "c": FAIL}, fill_generation_context=True)

    assert generated_from(body) == [] and not body["grounded"]
