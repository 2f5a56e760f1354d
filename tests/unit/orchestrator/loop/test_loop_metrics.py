"""The loop's Prometheus series: created when a loop is built, one observation per finished
query, by outcome."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from ragloop.core.errors import DependencyUnavailable
from ragloop.core.metrics.catalog import LOOP_OUTCOMES
from ragloop.core.stages import LoopStages
from ragloop.orchestrator.loop.corrective import CorrectiveLoop, LoopPolicy, StageFailure
from tests.unit.fakes import (
    DictGrader,
    EchoGenerator,
    RaisingRetriever,
    ScriptedRetriever,
    ScriptedRewriter,
    StallingRetriever,
    doc,
)

PASS = (True, 0.9)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class Observed:
    """The loop series' values now, to compare with later."""

    def __init__(self) -> None:
        self.before = self.now()

    @staticmethod
    def now() -> dict[str, float]:
        values = {o: sample("ragloop_loop_requests_total", outcome=o) for o in LOOP_OUTCOMES}
        values["rewrites"] = sample("ragloop_loop_rewrites_sum")
        values["rewrites_count"] = sample("ragloop_loop_rewrites_count")
        values["pass_rate"] = sample("ragloop_loop_final_pass_rate_sum")
        values["pass_rate_count"] = sample("ragloop_loop_final_pass_rate_count")
        return values

    def changes(self) -> dict[str, float]:
        after = self.now()
        return {k: after[k] - v for k, v in self.before.items() if after[k] != v}


def test_every_outcome_has_a_series_once_a_loop_exists() -> None:
    CorrectiveLoop(
        LoopStages(ScriptedRetriever({}), DictGrader({}), ScriptedRewriter([]), EchoGenerator())
    )

    for outcome in LOOP_OUTCOMES:
        labels = {"outcome": outcome}
        assert REGISTRY.get_sample_value("ragloop_loop_requests_total", labels) is not None


async def test_an_answered_query_counts_its_outcome_rewrites_and_final_pass_rate() -> None:
    retriever = ScriptedRetriever({"q": [doc("a")], "q2": [doc("b"), doc("c")]})
    loop = CorrectiveLoop(
        LoopStages(
            retriever, DictGrader({"b": PASS, "c": PASS}), ScriptedRewriter(["q2"]), EchoGenerator()
        )
    )
    observed = Observed()

    await loop.run("q", LoopPolicy())

    # approx: the pass-rate sum holds every earlier test's observations, so the difference is a
    # float subtraction.
    assert observed.changes() == pytest.approx(
        {
            "passed": 1,
            "rewrites": 1,
            "rewrites_count": 1,
            "pass_rate": 1.0,
            "pass_rate_count": 1,
        }
    )


@pytest.mark.parametrize(
    ("retriever", "outcome", "observed_pass_rate"),
    [
        (ScriptedRetriever({}), "no_documents", False),  # nothing to grade: no pass rate
        (StallingRetriever({}, stall_on="q"), "budget_exhausted", False),
        (ScriptedRetriever({"q": [doc("a")]}), "max_attempts", True),
    ],
)
async def test_outcomes_without_a_passing_round(
    retriever: ScriptedRetriever, outcome: str, observed_pass_rate: bool
) -> None:
    loop = CorrectiveLoop(
        LoopStages(retriever, DictGrader({}), ScriptedRewriter([]), EchoGenerator())
    )
    observed = Observed()

    await loop.run("q", LoopPolicy(max_rewrite_attempts=0, time_budget_s=0.2))

    changes = observed.changes()
    assert changes[outcome] == 1
    assert ("pass_rate_count" in changes) is observed_pass_rate
    assert changes["rewrites_count"] == 1


async def test_a_stage_failure_counts_as_failed() -> None:
    loop = CorrectiveLoop(
        LoopStages(
            RaisingRetriever(DependencyUnavailable("down")),
            DictGrader({}),
            ScriptedRewriter([]),
            EchoGenerator(),
        )
    )
    observed = Observed()

    with pytest.raises(StageFailure):
        await loop.run("q", LoopPolicy())

    assert observed.changes() == {"failed": 1}
