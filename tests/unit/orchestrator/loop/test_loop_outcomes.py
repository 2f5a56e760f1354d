"""Every way the loop can stop has its name in the gRPC API, the metrics and the CLI."""

from __future__ import annotations

import pytest

from ragloop.cli.render import OUTCOMES
from ragloop.core.metrics.catalog import LOOP_OUTCOMES
from ragloop.orchestrator.loop.corrective import Outcome
from ragloop.orchestrator.rpc.messages import _OUTCOMES
from ragloop.v1 import rag_pb2


@pytest.mark.parametrize("outcome", list(Outcome), ids=lambda o: o.value)
def test_every_outcome_is_named_everywhere(outcome: Outcome) -> None:
    assert _OUTCOMES[outcome.value] == rag_pb2.LoopOutcome.Value(f"LOOP_OUTCOME_{outcome.name}")
    assert outcome.value in LOOP_OUTCOMES
    assert OUTCOMES[outcome.value]
