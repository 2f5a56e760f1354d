"""Proto ⇄ domain conversion, written once for servicers and clients alike."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from google.protobuf import json_format, struct_pb2

from ragloop.core.domain import (
    Answer,
    AnswerDelta,
    Citation,
    CollectionInfo,
    DeletedSource,
    Document,
    Grade,
    GradedDocument,
    GradingResult,
    IngestedSource,
    IngestResult,
    ModelUsage,
    RetrievalResult,
    Rewrite,
    RewriteAttempt,
    SourceDocument,
    StandaloneQuery,
    Turn,
)
from ragloop.core.errors import InvalidInput
from ragloop.core.leads import MAX_LEADS, YES_NO, Decision
from ragloop.core.names import RetrievalMode
from ragloop.v1 import (
    common_pb2,
    generator_pb2,
    grader_pb2,
    retriever_pb2,
    rewriter_pb2,
)


def proto_values(names: type[StrEnum], proto_enum: Any, prefix: str) -> dict[str, int]:
    """Each canonical name (``ragloop.core.names``) with its value in ``proto_enum``, whose value
    names are ``prefix`` + the name in capitals. A name the proto lacks raises ValueError (when
    the module that builds the table loads), and a proto value no name covers, other than
    ``prefix``UNSPECIFIED, raises too: the two cannot drift apart."""
    table = {member.value: proto_enum.Value(prefix + member.name) for member in names}
    extra = set(proto_enum.keys()) - {prefix + member.name for member in names}
    if extra - {prefix + "UNSPECIFIED"}:
        raise ValueError(f"{sorted(extra)} of the proto have no name in {names.__name__}")
    return table


def struct_from_dict(data: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    if data:
        message.update(data)
    return message


def dict_from_struct(message: struct_pb2.Struct, field: str = "metadata") -> dict[str, Any]:
    """The Struct as JSON data; InvalidInput naming ``field`` when it holds a number JSON
    cannot (a Struct may carry NaN and infinities: a caller's mistake, not a server fault)."""
    try:
        return json_format.MessageToDict(message)
    except ValueError:
        raise InvalidInput(
            f"{field} holds a number that is not finite (NaN or an infinity), which JSON cannot "
            "carry: use finite numbers"
        ) from None


def decision_to_proto(decision: Decision) -> generator_pb2.AnswerDecision:
    return generator_pb2.AnswerDecision(
        choices=list(decision.choices), named=decision.named, yes_no=decision.yes_no
    )


def decision_from_proto(request: generator_pb2.GenerateAnswerRequest) -> Decision | None:
    """The request's decision; None when the caller left it to the generator. InvalidInput for
    a decision no question or instructions could ask for."""
    if not request.HasField("decision"):
        return None
    message = request.decision
    choices = tuple(message.choices)
    if choices and not 2 <= len(choices) <= MAX_LEADS:
        raise InvalidInput(f"decision.choices must hold 2 to {MAX_LEADS} choices, or none")
    if any(not choice.strip() for choice in choices):
        raise InvalidInput("decision.choices must not be empty strings")
    if message.yes_no and choices != YES_NO:
        raise InvalidInput('a yes_no decision\'s choices are "yes" and "no"')
    if (message.named or message.yes_no) and not choices:
        raise InvalidInput("decision.named and decision.yes_no need choices")
    return Decision(choices, named=message.named, yes_no=message.yes_no)


def generate_request_to_proto(
    question: str, documents: list[Document], instructions: str, decision: Decision | None
) -> generator_pb2.GenerateAnswerRequest:
    request = generator_pb2.GenerateAnswerRequest(
        question=question,
        documents=[document_to_proto(d) for d in documents],
        answer_instructions=instructions,
    )
    if decision is not None:
        request.decision.CopyFrom(decision_to_proto(decision))
    return request


def document_to_proto(doc: Document) -> common_pb2.Document:
    return common_pb2.Document(
        id=doc.id,
        text=doc.text,
        source=doc.source,
        score=doc.score,
        metadata=struct_from_dict(doc.metadata),
        chunk_index=doc.chunk_index,
        window=doc.window,
    )


def document_from_proto(message: common_pb2.Document) -> Document:
    return Document(
        id=message.id,
        text=message.text,
        source=message.source,
        score=message.score,
        metadata=dict_from_struct(message.metadata),
        chunk_index=message.chunk_index,
        window=message.window,
    )


def grade_to_proto(grade: Grade) -> common_pb2.Grade:
    verdict = common_pb2.VERDICT_RELEVANT if grade.relevant else common_pb2.VERDICT_NOT_RELEVANT
    return common_pb2.Grade(
        document_id=grade.document_id,
        verdict=verdict,
        confidence=grade.confidence,
        reasoning=grade.reasoning,
    )


def grade_from_proto(message: common_pb2.Grade) -> Grade:
    return Grade(
        document_id=message.document_id,
        relevant=message.verdict == common_pb2.VERDICT_RELEVANT,
        confidence=message.confidence,
        reasoning=message.reasoning,
    )


def usage_to_proto(usage: ModelUsage) -> common_pb2.ModelUsage:
    return common_pb2.ModelUsage(
        model=usage.model,
        calls=usage.calls,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_prompt_tokens=usage.cached_prompt_tokens,
    )


def usage_from_proto(message: common_pb2.ModelUsage) -> ModelUsage:
    return ModelUsage(
        model=message.model,
        calls=message.calls,
        prompt_tokens=message.prompt_tokens,
        completion_tokens=message.completion_tokens,
        cached_prompt_tokens=message.cached_prompt_tokens,
    )


# --- retriever -------------------------------------------------------------------------------

_PROTO_OF_MODE: dict[str, int] = {
    "": retriever_pb2.RETRIEVAL_MODE_UNSPECIFIED,
    **proto_values(RetrievalMode, retriever_pb2.RetrievalMode, "RETRIEVAL_MODE_"),
}
_MODE_OF_PROTO = {value: mode for mode, value in _PROTO_OF_MODE.items()}


def mode_to_proto(mode: str) -> retriever_pb2.RetrievalMode.ValueType:
    """A retrieval mode name ("" for the default) as the proto enum; unknown names are refused."""
    try:
        return _PROTO_OF_MODE[mode]
    except KeyError:
        raise InvalidInput(f"retrieval mode {mode!r} is unknown") from None


def mode_from_proto(value: int) -> str:
    """The proto enum as a mode name; "" for unspecified (unknown numbers are refused)."""
    try:
        return _MODE_OF_PROTO[value]  # type: ignore[index]
    except KeyError:
        raise InvalidInput(f"retrieval mode {value} is unknown") from None


def retrieval_to_proto(result: RetrievalResult) -> retriever_pb2.RetrieveResponse:
    return retriever_pb2.RetrieveResponse(
        documents=[document_to_proto(d) for d in result.documents],
        total_found=result.total_found,
        embedding_model=result.embedding_model,
        mode=mode_to_proto(result.mode),
    )


def retrieval_from_proto(message: retriever_pb2.RetrieveResponse) -> RetrievalResult:
    return RetrievalResult(
        documents=[document_from_proto(d) for d in message.documents],
        total_found=message.total_found,
        embedding_model=message.embedding_model,
        mode=mode_from_proto(message.mode),
    )


def source_document_to_proto(doc: SourceDocument) -> retriever_pb2.SourceDocument:
    return retriever_pb2.SourceDocument(
        source=doc.source, text=doc.text, metadata=struct_from_dict(doc.metadata)
    )


def source_document_from_proto(message: retriever_pb2.SourceDocument) -> SourceDocument:
    return SourceDocument(
        source=message.source, text=message.text, metadata=dict_from_struct(message.metadata)
    )


# IngestDocuments and IngestDocumentStream answer with messages of the same fields.
IngestResponse = TypeVar(
    "IngestResponse",
    retriever_pb2.IngestDocumentsResponse,
    retriever_pb2.IngestDocumentStreamResponse,
)


def ingest_result_to_proto(
    result: IngestResult,
    response_type: type[IngestResponse] = retriever_pb2.IngestDocumentsResponse,
) -> IngestResponse:
    return response_type(
        sources=[
            retriever_pb2.IngestedSource(source=s.source, chunk_count=s.chunk_count)
            for s in result.sources
        ],
        chunks_written=result.chunks_written,
        collection=result.collection,
    )


def ingest_result_from_proto(
    message: retriever_pb2.IngestDocumentsResponse | retriever_pb2.IngestDocumentStreamResponse,
) -> IngestResult:
    return IngestResult(
        collection=message.collection,
        sources=[IngestedSource(s.source, s.chunk_count) for s in message.sources],
    )


def deleted_source_to_proto(deleted: DeletedSource) -> retriever_pb2.DeleteSourceResponse:
    return retriever_pb2.DeleteSourceResponse(
        collection=deleted.collection,
        source=deleted.source,
        chunks_deleted=deleted.chunks_deleted,
    )


def deleted_source_from_proto(message: retriever_pb2.DeleteSourceResponse) -> DeletedSource:
    return DeletedSource(message.collection, message.source, message.chunks_deleted)


def collection_info_to_proto(info: CollectionInfo) -> retriever_pb2.DescribeCollectionResponse:
    return retriever_pb2.DescribeCollectionResponse(
        collection=info.name,
        exists=info.exists,
        chunk_count=info.chunk_count,
        embedding_model=info.embedding_model,
        dimension=info.dimension,
        full_text=info.full_text,
        tenants=info.tenants,
    )


def collection_info_from_proto(message: retriever_pb2.DescribeCollectionResponse) -> CollectionInfo:
    return CollectionInfo(
        name=message.collection,
        exists=message.exists,
        chunk_count=message.chunk_count,
        embedding_model=message.embedding_model,
        dimension=message.dimension,
        full_text=message.full_text,
        tenants=message.tenants,
    )


# --- grader ----------------------------------------------------------------------------------


def grading_to_proto(result: GradingResult) -> grader_pb2.GradeDocumentsResponse:
    return grader_pb2.GradeDocumentsResponse(
        grades=[grade_to_proto(g) for g in result.grades], usage=usage_to_proto(result.usage)
    )


def grading_from_proto(message: grader_pb2.GradeDocumentsResponse) -> GradingResult:
    return GradingResult(
        grades=[grade_from_proto(g) for g in message.grades],
        usage=usage_from_proto(message.usage),
    )


# --- rewriter --------------------------------------------------------------------------------


def graded_document_to_proto(graded: GradedDocument) -> common_pb2.GradedDocument:
    return common_pb2.GradedDocument(
        document=document_to_proto(graded.document), grade=grade_to_proto(graded.grade)
    )


def graded_document_from_proto(message: common_pb2.GradedDocument) -> GradedDocument:
    return GradedDocument(
        document=document_from_proto(message.document), grade=grade_from_proto(message.grade)
    )


def attempt_to_proto(attempt: RewriteAttempt) -> common_pb2.RewriteAttempt:
    return common_pb2.RewriteAttempt(query=attempt.query, reason=attempt.reason)


def attempt_from_proto(message: common_pb2.RewriteAttempt) -> RewriteAttempt:
    return RewriteAttempt(query=message.query, reason=message.reason)


def turn_to_proto(turn: Turn) -> common_pb2.ConversationTurn:
    return common_pb2.ConversationTurn(role=turn.role, content=turn.content)


def turn_from_proto(message: common_pb2.ConversationTurn) -> Turn:
    return Turn(role=message.role, content=message.content)


def standalone_to_proto(standalone: StandaloneQuery) -> rewriter_pb2.StandaloneQueryResponse:
    return rewriter_pb2.StandaloneQueryResponse(
        standalone_query=standalone.query, usage=usage_to_proto(standalone.usage)
    )


def standalone_from_proto(message: rewriter_pb2.StandaloneQueryResponse) -> StandaloneQuery:
    return StandaloneQuery(query=message.standalone_query, usage=usage_from_proto(message.usage))


def rewrite_to_proto(rewrite: Rewrite) -> rewriter_pb2.RewriteQueryResponse:
    return rewriter_pb2.RewriteQueryResponse(
        rewritten_query=rewrite.query,
        reason=rewrite.reason,
        keywords=rewrite.keywords,
        usage=usage_to_proto(rewrite.usage),
    )


def rewrite_from_proto(message: rewriter_pb2.RewriteQueryResponse) -> Rewrite:
    return Rewrite(
        query=message.rewritten_query,
        reason=message.reason,
        keywords=list(message.keywords),
        usage=usage_from_proto(message.usage),
    )


# --- generator -------------------------------------------------------------------------------


def answer_to_proto(answer: Answer) -> generator_pb2.GenerateAnswerResponse:
    return generator_pb2.GenerateAnswerResponse(
        answer=answer.text,
        citations=[
            generator_pb2.Citation(
                number=c.number, document_id=c.document_id, source=c.source, quote=c.quote
            )
            for c in answer.citations
        ],
        grounded=answer.grounded,
        usage=usage_to_proto(answer.usage),
        removed_citations=answer.removed_citations,
        uncited_sentences=answer.uncited_sentences,
        hallucination_risk=answer.hallucination_risk,
        support=answer.support,
        answer_match=answer.answer_match,
        lead_probabilities=answer.lead_probabilities,
        refused_by=answer.refused_by,
    )


def answer_from_proto(message: generator_pb2.GenerateAnswerResponse) -> Answer:
    return Answer(
        text=message.answer,
        citations=[Citation(c.number, c.document_id, c.source, c.quote) for c in message.citations],
        grounded=message.grounded,
        usage=usage_from_proto(message.usage),
        removed_citations=list(message.removed_citations),
        uncited_sentences=message.uncited_sentences,
        hallucination_risk=round(message.hallucination_risk, 4),  # float32 on the wire
        support=round(message.support, 4) if message.HasField("support") else None,
        answer_match=round(message.answer_match, 4) if message.HasField("answer_match") else None,
        lead_probabilities={w: round(p, 4) for w, p in message.lead_probabilities.items()},
        refused_by=message.refused_by,
    )


def answer_event_to_proto(event: AnswerDelta | Answer) -> generator_pb2.GenerateAnswerEvent:
    if isinstance(event, Answer):
        return generator_pb2.GenerateAnswerEvent(answer=answer_to_proto(event))
    delta = generator_pb2.AnswerDelta(text=event.text, restart=event.restart)
    return generator_pb2.GenerateAnswerEvent(delta=delta)


def answer_event_from_proto(message: generator_pb2.GenerateAnswerEvent) -> AnswerDelta | Answer:
    if message.HasField("answer"):
        return answer_from_proto(message.answer)
    return AnswerDelta(message.delta.text, message.delta.restart)
