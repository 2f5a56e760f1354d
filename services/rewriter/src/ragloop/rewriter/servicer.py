"""gRPC face of the rewriter."""

from __future__ import annotations

import grpc

from ragloop.core.grpc import convert
from ragloop.core.grpc.errors import maps_errors
from ragloop.rewriter.stage import ModelRewriter
from ragloop.v1 import rewriter_pb2, rewriter_pb2_grpc


class RewriterServicer(rewriter_pb2_grpc.RewriterServiceServicer):
    def __init__(self, stage: ModelRewriter) -> None:
        self._stage = stage

    @maps_errors
    async def RewriteQuery(
        self, request: rewriter_pb2.RewriteQueryRequest, context: grpc.aio.ServicerContext
    ) -> rewriter_pb2.RewriteQueryResponse:
        rewrite = await self._stage.rewrite(
            request.original_query,
            request.current_query,
            [convert.graded_document_from_proto(d) for d in request.failed_documents],
            [convert.attempt_from_proto(a) for a in request.history],
        )
        return convert.rewrite_to_proto(rewrite)

    @maps_errors
    async def StandaloneQuery(
        self, request: rewriter_pb2.StandaloneQueryRequest, context: grpc.aio.ServicerContext
    ) -> rewriter_pb2.StandaloneQueryResponse:
        standalone = await self._stage.standalone(
            [convert.turn_from_proto(t) for t in request.history], request.question
        )
        return convert.standalone_to_proto(standalone)
