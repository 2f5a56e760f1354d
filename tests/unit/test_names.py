"""The names defined once in ``ragloop.core.names`` and everywhere else they must agree: the
proto enums, the REST schema, the metric label sets, and the two clients that cannot import the
core (the ``ragloop`` CLI and the web page), checked here against drift."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

import pytest

from ragloop.cli import render
from ragloop.cli.main import build_parser
from ragloop.core.grpc.convert import proto_values
from ragloop.core.metrics import catalog
from ragloop.core.names import LoopNode, Outcome, RetrievalMode, Stage, values
from ragloop.orchestrator.application.answers import WorkflowOut
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.v1 import rag_pb2, retriever_pb2

PAGE = Path(__file__).parents[2] / (
    "services/orchestrator/src/ragloop/orchestrator/web/static/page.js"
)


def test_every_stage_does_a_node_and_only_the_rewriter_two() -> None:
    stages = [node.stage for node in LoopNode]
    assert set(stages) == set(Stage)
    assert [stage for stage in Stage if stages.count(stage) > 1] == [Stage.REWRITER]


@pytest.mark.parametrize(
    ("names", "proto_enum", "prefix"),
    [
        (LoopNode, rag_pb2.LoopNode, "LOOP_NODE_"),
        (Outcome, rag_pb2.LoopOutcome, "LOOP_OUTCOME_"),
        (RetrievalMode, retriever_pb2.RetrievalMode, "RETRIEVAL_MODE_"),
    ],
)
def test_the_proto_enums_hold_exactly_the_canonical_names(
    names: type, proto_enum: object, prefix: str
) -> None:
    assert list(proto_values(names, proto_enum, prefix)) == list(values(names))


class _ThreeNodes(StrEnum):  # the loop's nodes with one lost
    RETRIEVE = "retrieve"
    GRADE = "grade"
    REWRITE = "rewrite"


def test_a_proto_value_without_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="LOOP_NODE_GENERATE"):
        proto_values(_ThreeNodes, rag_pb2.LoopNode, "LOOP_NODE_")


def test_the_metric_label_sets_are_the_canonical_names() -> None:
    assert values(Stage) == catalog.STAGES
    assert values(RetrievalMode) == catalog.RETRIEVAL_MODES
    assert catalog.LOOP_OUTCOMES[: len(Outcome)] == values(Outcome)


def test_the_rest_schema_offers_the_canonical_names() -> None:
    workflow = WorkflowOut.model_json_schema()
    assert workflow["$defs"]["Outcome"]["enum"] == list(values(Outcome))
    assert workflow["$defs"]["LoopNode"]["enum"] == list(values(LoopNode))
    request = QueryRequest.model_json_schema()
    assert request["$defs"]["RetrievalMode"]["enum"] == list(values(RetrievalMode))


def test_the_cli_knows_every_outcome_and_mode() -> None:
    assert set(render.OUTCOMES) == set(values(Outcome))
    ask = build_parser().parse_args(["ask", "q?", "--mode", "dense"])
    assert ask.mode == "dense"
    for mode in values(RetrievalMode):
        assert build_parser().parse_args(["ask", "q?", "--mode", mode]).mode == mode
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ask", "q?", "--mode", "fuzzy"])


def test_the_page_describes_every_node() -> None:
    block = re.search(r"const NODE_ACTIVITY = \{(.*?)\};", PAGE.read_text(), re.DOTALL)
    assert block is not None
    assert re.findall(r"^\s*(\w+):", block.group(1), re.MULTILINE) == list(values(LoopNode))
