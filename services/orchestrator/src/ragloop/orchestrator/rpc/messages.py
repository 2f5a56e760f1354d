"""RagService's messages (ragloop.v1.rag) ⇄ the query service's: a request becomes its
QueryRequest (so every way in validates with the same limits and messages), and the response is
built from its answer body (so every way in agrees on every number, rounding included)."""

from __future__ import annotations

from typing import Any

from google.protobuf import timestamp_pb2
from pydantic import ValidationError

from ragloop.core.domain import Document, Grade
from ragloop.core.errors import InvalidInput
from ragloop.core.grpc import convert
from ragloop.core.grpc.convert import proto_values
from ragloop.core.names import LoopNode, Outcome
from ragloop.orchestrator.application.answers import NodeExecutionOut, QueryResponse
from ragloop.orchestrator.application.requests import QueryRequest
from ragloop.orchestrator.loop import events
from ragloop.v1 import common_pb2, generator_pb2, rag_pb2

# Fields of QueryRequest that proto3 gives presence to (`optional` scalars): unset means the
# server's default. Read from the descriptor, so that a new one needs no entry here.
_OPTIONAL_FIELDS = tuple(
    field.name
    for field in rag_pb2.QueryRequest.DESCRIPTOR.fields
    if field.has_presence and field.message_type is None
)
# Built from the canonical names: a name the proto lacks fails here, when the module loads.
_NODES = proto_values(LoopNode, rag_pb2.LoopNode, "LOOP_NODE_")
_OUTCOMES = proto_values(Outcome, rag_pb2.LoopOutcome, "LOOP_OUTCOME_")
_STATUSES = {"ok": rag_pb2.NODE_STATUS_OK, "error": rag_pb2.NODE_STATUS_ERROR}


# --- request -----------------------------------------------------------------------------------


def query_request_from_proto(message: rag_pb2.QueryRequest) -> QueryRequest:
    """The QueryRequest of ``message``; InvalidInput saying what is wrong with it."""
    try:
        mode = convert.mode_from_proto(message.retrieval_mode)
    except InvalidInput as exc:
        raise InvalidInput(f"retrieval_mode: {exc}") from None
    fields: dict[str, Any] = {
        "query": message.query,
        "answer_instructions": message.answer_instructions or None,
        "collection": message.collection or None,
        "retrieval_mode": mode or None,
        "tenant": message.tenant or None,
        "similarity_thresholds": list(message.similarity_thresholds) or None,
        "history": [{"role": t.role, "content": t.content} for t in message.history],
    }
    fields |= {name: getattr(message, name) for name in _OPTIONAL_FIELDS if message.HasField(name)}
    if message.HasField("filters"):
        fields["filters"] = convert.dict_from_struct(message.filters, "filters")
    try:
        return QueryRequest.model_validate(fields)
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc)) from None


def validation_message(error: ValidationError) -> str:
    """Every problem, each as "field: what is wrong", e.g. "top_k: Input should be greater than
    or equal to 1" (the messages of the REST API's 422s)."""
    problems = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"])
        problems.append(f"{where}: {problem['msg']}" if where else problem["msg"])
    return "; ".join(problems)


# --- response ----------------------------------------------------------------------------------


def response_to_proto(response: QueryResponse) -> rag_pb2.QueryResponse:
    workflow, usage = response.workflow, response.workflow.usage
    return rag_pb2.QueryResponse(
        answer=response.answer,
        grounded=response.grounded,
        citations=[generator_pb2.Citation(**c.model_dump()) for c in response.citations],
        removed_citations=response.removed_citations,
        uncited_sentences=response.uncited_sentences,
        hallucination_risk=response.hallucination_risk,
        support=response.support,
        answer_match=response.answer_match,
        lead_probabilities=response.lead_probabilities,
        refused_by=response.refused_by,
        query=rag_pb2.QuerySummary(**response.query.model_dump()),
        rewrite_history=[
            common_pb2.RewriteAttempt(**r.model_dump()) for r in response.rewrite_history
        ],
        retrieval=rag_pb2.RetrievalSummary(
            total_documents=response.retrieval.total_documents,
            filtered_documents=response.retrieval.filtered_documents,
            documents=[
                convert.document_to_proto(Document(**d.model_dump()))
                for d in response.retrieval.documents
            ],
        ),
        grader_result=rag_pb2.GradingSummary(
            pass_rate=response.grader_result.pass_rate,
            pass_count=response.grader_result.pass_count,
            total_count=response.grader_result.total_count,
            should_rewrite=response.grader_result.should_rewrite,
            grades=[
                convert.grade_to_proto(Grade(**g.model_dump()))
                for g in response.grader_result.grades
            ],
        ),
        workflow=rag_pb2.Workflow(
            outcome=_OUTCOMES[workflow.outcome],
            decision_path=[_NODES[node] for node in workflow.decision_path],
            node_executions=[_node_execution(n) for n in workflow.node_executions],
            total_duration_ms=workflow.total_duration_ms,
            usage=common_pb2.ModelUsage(
                calls=usage.model_calls,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cached_prompt_tokens=usage.cached_prompt_tokens,
            ),
        ),
    )


def _node_execution(execution: NodeExecutionOut) -> rag_pb2.NodeExecution:
    started_at = timestamp_pb2.Timestamp()
    started_at.FromDatetime(execution.started_at)
    return rag_pb2.NodeExecution(
        node=_NODES[execution.node],
        round=execution.round,
        started_at=started_at,
        duration_ms=execution.duration_ms,
        status=_STATUSES[execution.status],
        details=convert.struct_from_dict(execution.details),
    )


# --- stream events -----------------------------------------------------------------------------


def event_to_proto(event: events.LoopEvent) -> rag_pb2.QueryEvent:
    """One event of the loop as QueryStream sends it (the REST stream's event, typed)."""
    if isinstance(event, events.NodeStarted):
        started = rag_pb2.NodeStarted(node=_NODES[event.node], round=event.round, query=event.query)
        return rag_pb2.QueryEvent(node_started=started)
    if isinstance(event, events.NodeFinished):
        finished = rag_pb2.NodeFinished(
            node=_NODES[event.node],
            round=event.round,
            duration_ms=round(event.duration_ms, 1),
            status=_STATUSES[event.status],
            details=convert.struct_from_dict(event.details),
        )
        return rag_pb2.QueryEvent(node_finished=finished)
    token = generator_pb2.AnswerDelta(text=event.text, restart=event.restart)
    return rag_pb2.QueryEvent(token=token)


def done_event(answer: QueryResponse) -> rag_pb2.QueryEvent:
    return rag_pb2.QueryEvent(done=response_to_proto(answer))
