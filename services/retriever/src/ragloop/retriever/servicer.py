"""gRPC face of the retriever: converts messages and maps errors, nothing more."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from ragloop.core.grpc import convert
from ragloop.core.grpc.errors import maps_errors
from ragloop.core.grpc.ingest_stream import StreamReader
from ragloop.retriever.stage import MilvusRetriever
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc


class RetrieverServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, stage: MilvusRetriever) -> None:
        self._stage = stage

    @maps_errors
    async def Retrieve(
        self, request: retriever_pb2.RetrieveRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.RetrieveResponse:
        result = await self._stage.retrieve(
            request.query,
            top_k=request.top_k,
            similarity_threshold=request.similarity_threshold,
            collection=request.collection,
            mode=convert.mode_from_proto(request.mode),
            filters=convert.dict_from_struct(request.filters, "filters"),
            tenant=request.tenant,
        )
        return convert.retrieval_to_proto(result)

    @maps_errors
    async def IngestDocuments(
        self, request: retriever_pb2.IngestDocumentsRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.IngestDocumentsResponse:
        documents = [convert.source_document_from_proto(d) for d in request.documents]
        result = await self._stage.ingest(
            documents, collection=request.collection, tenant=request.tenant
        )
        return convert.ingest_result_to_proto(result)

    @maps_errors
    async def IngestDocumentStream(
        self,
        request_iterator: AsyncIterator[retriever_pb2.IngestDocumentStreamRequest],
        context: grpc.aio.ServicerContext,
    ) -> retriever_pb2.IngestDocumentStreamResponse:
        reader = StreamReader(request_iterator)
        try:
            header = await reader.header()
            result = await self._stage.ingest_stream(
                reader.documents(), collection=header.collection, tenant=header.tenant
            )
        except Exception:
            await _read_to_the_end(request_iterator)
            raise
        return convert.ingest_result_to_proto(result, retriever_pb2.IngestDocumentStreamResponse)

    @maps_errors
    async def DescribeCollection(
        self, request: retriever_pb2.DescribeCollectionRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.DescribeCollectionResponse:
        return convert.collection_info_to_proto(await self._stage.describe(request.collection))

    @maps_errors
    async def DeleteSource(
        self, request: retriever_pb2.DeleteSourceRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.DeleteSourceResponse:
        deleted = await self._stage.delete_source(
            request.source, collection=request.collection, tenant=request.tenant
        )
        return convert.deleted_source_to_proto(deleted)

    @maps_errors
    async def ListCollections(
        self, request: retriever_pb2.ListCollectionsRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.ListCollectionsResponse:
        infos = await self._stage.list_collections()
        return retriever_pb2.ListCollectionsResponse(
            collections=[convert.collection_info_to_proto(i) for i in infos]
        )

    @maps_errors
    async def CreateCollection(
        self, request: retriever_pb2.CreateCollectionRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.CreateCollectionResponse:
        info = await self._stage.create_collection(request.collection)
        return retriever_pb2.CreateCollectionResponse(
            collection=convert.collection_info_to_proto(info)
        )

    @maps_errors
    async def DropCollection(
        self, request: retriever_pb2.DropCollectionRequest, context: grpc.aio.ServicerContext
    ) -> retriever_pb2.DropCollectionResponse:
        await self._stage.drop_collection(request.collection)
        return retriever_pb2.DropCollectionResponse()


async def _read_to_the_end(requests: AsyncIterator[object]) -> None:
    """Read what the client still sends before refusing its stream. grpcio's asyncio client,
    when still writing as the call ends, reports INTERNAL "Internal error from Core" instead of
    the call's status (grpc/grpc#36066): an INVALID_ARGUMENT for a bad document became a 503
    at the orchestrator. The client's deadline still bounds this."""
    async for _ in requests:
        pass
