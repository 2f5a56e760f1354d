"""``python -m ragloop.retriever``: serve the retriever over gRPC."""

from __future__ import annotations

import asyncio

from ragloop.core.grpc.server import ServiceSpec, run_service
from ragloop.core.metrics import init_model_series, init_retriever_series
from ragloop.core.models import make_embedder
from ragloop.core.names import Stage
from ragloop.retriever.search import Fusion
from ragloop.retriever.servicer import RetrieverServicer
from ragloop.retriever.settings import RetrieverSettings
from ragloop.retriever.stage import MilvusRetriever
from ragloop.retriever.store import MilvusStore
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc


def build_retriever(settings: RetrieverSettings) -> MilvusRetriever:
    embedder = make_embedder(
        settings.embedding_model,
        ollama_url=settings.ollama_url,
        ollama_keep_alive_s=settings.ollama_keep_alive_s,
        query_prefix=settings.embedding_query_prefix,
        document_prefix=settings.embedding_document_prefix,
    )
    store = MilvusStore(
        settings.milvus_uri,
        token=settings.milvus_token,
        model_name=embedder.name,
        dimension=lambda: embedder.dimension,  # asked once the model answers (stage.connect)
        prefixes=embedder.prefixes,
        fusion=Fusion(
            ranker=settings.hybrid_ranker,
            rrf_k=settings.rrf_k,
            dense_weight=settings.hybrid_dense_weight,
            sparse_weight=settings.hybrid_sparse_weight,
        ),
    )
    return MilvusRetriever(
        store,
        embedder,
        default_collection=settings.default_collection,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        embedding_batch_size=settings.embedding_batch_size,
        default_mode=settings.retrieval_mode,
        chunk_unit=settings.chunk_unit,
        ingest_batch_chunks=settings.ingest_batch_chunks,
        passage_window_chunks=settings.passage_window_chunks,
    )


def build_spec(settings: RetrieverSettings) -> ServiceSpec:
    stage = build_retriever(settings)
    init_retriever_series()
    init_model_series(Stage.RETRIEVER, stage.embedding_model)

    async def close() -> None:
        await asyncio.to_thread(stage.close)

    return ServiceSpec.for_servicer(
        Stage.RETRIEVER,
        RetrieverServicer(stage),
        retriever_pb2_grpc.add_RetrieverServiceServicer_to_server,
        retriever_pb2,
        on_shutdown=[close],
        on_startup=[stage.warm_up],
        dependencies=stage.connect,
    )


def main() -> None:
    settings = RetrieverSettings()
    run_service(
        lambda: build_spec(settings),
        service=Stage.RETRIEVER,
        settings=settings,
        port=settings.retriever_port,
    )


if __name__ == "__main__":
    main()
