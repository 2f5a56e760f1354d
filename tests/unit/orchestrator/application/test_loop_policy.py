"""A request's policy: its own values, the settings for the rest, and threshold relaxation
across rounds."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from ragloop.core.stages import LoopStages
from ragloop.orchestrator.application.policy import resolve_policy
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, Outcome
from ragloop.orchestrator.policy.request import RequestPolicy
from ragloop.orchestrator.rpc.messages import _OPTIONAL_FIELDS
from ragloop.orchestrator.settings import OrchestratorSettings
from tests.unit.fakes import DictGrader, EchoGenerator, ScriptedRetriever, ScriptedRewriter, doc

SETTINGS = OrchestratorSettings(
    top_k=7,
    similarity_threshold=0.25,
    max_rewrite_attempts=2,
    grade_pass_threshold=0.5,
    time_budget_s=120,
    generation_reserve_s=30,
    max_generation_documents=4,
    relax_similarity=False,
    similarity_relaxation=[0.7, 0.4],
)


def test_an_empty_request_takes_every_value_from_the_settings() -> None:
    policy = resolve_policy(QueryRequest(query="q"), SETTINGS)

    assert policy == LoopPolicy(
        top_k=7,
        similarity_threshold=0.25,
        similarity_relaxation=(),
        max_rewrite_attempts=2,
        grade_pass_threshold=0.5,
        collection="",
        retrieval_mode="",
        filters=None,
        tenant="",
        time_budget_s=120,
        generation_reserve_s=30,
        max_generation_documents=4,
        answer_instructions="",
    )


def test_a_requests_own_values_win() -> None:
    request = QueryRequest(
        query="q",
        top_k=3,
        similarity_threshold=0.0,
        max_rewrite_attempts=0,
        grade_pass_threshold=1.0,
        collection="kb",
        retrieval_mode="sparse",
        filters={"lang": "en"},
        tenant="acme",
        time_budget_s=15,
        answer_instructions="  Answer in French.\n",
    )

    policy = resolve_policy(request, SETTINGS)

    assert (policy.top_k, policy.similarity_threshold) == (3, 0.0)  # zeros are values too
    assert (policy.max_rewrite_attempts, policy.grade_pass_threshold) == (0, 1.0)
    assert (policy.collection, policy.retrieval_mode, policy.tenant) == ("kb", "sparse", "acme")
    assert policy.filters == {"lang": "en"}
    assert policy.time_budget_s == 15
    assert policy.answer_instructions == "Answer in French."  # stripped


@pytest.mark.parametrize(
    ("instructions", "message"),
    [
        (" \n\t ", "answer_instructions\n  String should have at least 1 character"),
        ("x" * 501, "answer_instructions\n  String should have at most 500 characters"),
    ],
)
def test_answer_instructions_are_refused_saying_what_is_wrong(
    instructions: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        QueryRequest(query="q", answer_instructions=instructions)


def test_without_answer_instructions_the_policy_has_none() -> None:
    assert QueryRequest(query="q", answer_instructions=None).answer_instructions is None
    assert resolve_policy(QueryRequest(query="q"), SETTINGS).answer_instructions == ""


@pytest.mark.parametrize(
    ("server_relaxes", "request_fields", "relaxation"),
    [
        (False, {}, ()),
        (False, {"relax_similarity": True}, (0.7, 0.4)),
        (False, {"similarity_thresholds": [0.6, 0.5, 0.1]}, (0.6, 0.5, 0.1)),
        (True, {}, (0.7, 0.4)),
        (True, {"relax_similarity": False}, ()),
        (True, {"similarity_threshold": 0.3}, ()),  # a fixed threshold asked for: no relaxing
        (True, {"similarity_thresholds": [0.5]}, (0.5,)),
    ],
)
def test_relaxation_comes_from_the_request_else_the_settings(
    server_relaxes: bool, request_fields: dict, relaxation: tuple[float, ...]
) -> None:
    settings = SETTINGS.model_copy(update={"relax_similarity": server_relaxes})

    policy = resolve_policy(QueryRequest(query="q", **request_fields), settings)

    assert policy.similarity_relaxation == relaxation


async def test_each_round_searches_with_its_threshold_and_later_rounds_keep_the_last() -> None:
    retriever = ScriptedRetriever({q: [doc(q)] for q in ("q", "q2", "q3", "q4")})
    loop = CorrectiveLoop(
        LoopStages(retriever, DictGrader({}), ScriptedRewriter(["q2", "q3", "q4"]), EchoGenerator())
    )

    result = await loop.run(
        "q", LoopPolicy(similarity_relaxation=(0.65, 0.5, 0.35), max_rewrite_attempts=3)
    )

    assert result.outcome is Outcome.MAX_ATTEMPTS
    assert [(c.query, c.similarity_threshold) for c in retriever.calls] == [
        ("q", 0.65),
        ("q2", 0.5),
        ("q3", 0.35),
        ("q4", 0.35),
    ]


async def test_without_relaxation_every_round_uses_the_one_threshold() -> None:
    retriever = ScriptedRetriever({})
    loop = CorrectiveLoop(
        LoopStages(retriever, DictGrader({}), ScriptedRewriter(["q2"]), EchoGenerator())
    )

    await loop.run("q", LoopPolicy(similarity_threshold=0.42, max_rewrite_attempts=1))

    assert [c.similarity_threshold for c in retriever.calls] == [0.42, 0.42]


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("[]", "needs 1 to 6 thresholds"),
        ("[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]", "needs 1 to 6 thresholds"),
        ("[1.2, 0.5]", "between 0 and 1"),
        ("[0.3, 0.5]", "each value must be <= the one before"),
    ],
)
def test_a_relaxation_setting_that_cannot_work_stops_the_server(
    monkeypatch: pytest.MonkeyPatch, schedule: str, message: str
) -> None:
    monkeypatch.setenv("RAGLOOP_SIMILARITY_RELAXATION", schedule)

    with pytest.raises(ValueError, match=message) as caught:
        OrchestratorSettings()

    assert "RAGLOOP_SIMILARITY_RELAXATION" in str(caught.value)


def test_each_request_policy_field_is_declared_once_for_settings_rest_and_rag_service() -> None:
    request_fields = QueryRequest.model_fields
    for name, declared in RequestPolicy.model_fields.items():
        assert OrchestratorSettings.model_fields[name].default == declared.default
        assert request_fields[name].default is None  # omitted: the server's setting
        assert request_fields[name].metadata == declared.metadata  # the same range
        assert name in _OPTIONAL_FIELDS  # RagService can leave it unset too
        assert LoopPolicy.__dataclass_fields__[name].default == declared.default


@pytest.mark.parametrize("field", ["top_k", "time_budget_s"])
def test_the_range_holds_for_the_setting_and_the_request_alike(field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        OrchestratorSettings(**{field: 0})
    with pytest.raises(ValidationError, match=field):
        QueryRequest(query="q", **{field: 0})


def test_the_renamed_budget_variable_is_refused_not_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGLOOP_REQUEST_BUDGET_S", "30")
    with pytest.raises(ValidationError, match="now RAGLOOP_TIME_BUDGET_S"):
        OrchestratorSettings()
