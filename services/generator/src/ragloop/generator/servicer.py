"""gRPC face of the generator."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import grpc

from ragloop.core.grpc import convert
from ragloop.core.grpc.errors import maps_errors, maps_stream_errors
from ragloop.generator.stage import ModelGenerator
from ragloop.v1 import generator_pb2, generator_pb2_grpc


class GeneratorServicer(generator_pb2_grpc.GeneratorServiceServicer):
    def __init__(self, stage: ModelGenerator) -> None:
        self._stage = stage

    @maps_errors
    async def GenerateAnswer(
        self, request: generator_pb2.GenerateAnswerRequest, context: grpc.aio.ServicerContext
    ) -> generator_pb2.GenerateAnswerResponse:
        documents = [convert.document_from_proto(d) for d in request.documents]
        answer = await self._stage.generate(
            request.question,
            documents,
            request.answer_instructions,
            decision=convert.decision_from_proto(request),
        )
        return convert.answer_to_proto(answer)

    @maps_stream_errors
    async def GenerateAnswerStream(
        self, request: generator_pb2.GenerateAnswerRequest, context: grpc.aio.ServicerContext
    ) -> AsyncGenerator[generator_pb2.GenerateAnswerEvent, None]:
        documents = [convert.document_from_proto(d) for d in request.documents]
        events = self._stage.generate_stream(
            request.question,
            documents,
            request.answer_instructions,
            decision=convert.decision_from_proto(request),
        )
        async with aclosing(events):
            async for event in events:
                yield convert.answer_event_to_proto(event)
