"""gRPC face of the grader."""

from __future__ import annotations

import grpc

from ragloop.core.grpc import convert
from ragloop.core.grpc.errors import maps_errors
from ragloop.grader.stage import ModelGrader
from ragloop.v1 import grader_pb2, grader_pb2_grpc


class GraderServicer(grader_pb2_grpc.GraderServiceServicer):
    def __init__(self, stage: ModelGrader) -> None:
        self._stage = stage

    @maps_errors
    async def GradeDocuments(
        self, request: grader_pb2.GradeDocumentsRequest, context: grpc.aio.ServicerContext
    ) -> grader_pb2.GradeDocumentsResponse:
        documents = [convert.document_from_proto(d) for d in request.documents]
        return convert.grading_to_proto(await self._stage.grade(request.question, documents))
