"""``python -m ragloop.grader``: serve the grader over gRPC."""

from __future__ import annotations

from ragloop.core.grpc.server import ServiceSpec, run_service
from ragloop.core.metrics import init_grader_series
from ragloop.core.models import ChatModel
from ragloop.core.models.metered import MeteredChatModel
from ragloop.core.names import Stage
from ragloop.grader.cache import GradeCache
from ragloop.grader.servicer import GraderServicer
from ragloop.grader.settings import GraderSettings
from ragloop.grader.stage import ModelGrader
from ragloop.v1 import grader_pb2, grader_pb2_grpc


def build_grader(settings: GraderSettings, model: ChatModel) -> ModelGrader:
    return ModelGrader(
        model,
        concurrency=settings.grader_concurrency,
        max_documents=settings.grader_max_documents,
        mode=settings.grader_mode,
        batch_size=settings.grader_batch_size,
        cache=GradeCache(settings.grader_cache_size),
        min_score=settings.grader_min_score,
        reasoning=settings.grader_reasoning,
        relevance_threshold=settings.grader_relevance_threshold,
    )


def build_spec(settings: GraderSettings) -> ServiceSpec:
    init_grader_series()
    model = MeteredChatModel(settings.make_chat_model(), stage=Stage.GRADER)
    stage = build_grader(settings, model)
    return ServiceSpec.for_servicer(
        Stage.GRADER,
        GraderServicer(stage),
        grader_pb2_grpc.add_GraderServiceServicer_to_server,
        grader_pb2,
        on_shutdown=[model.aclose],
    )


def main() -> None:
    settings = GraderSettings()
    run_service(
        lambda: build_spec(settings),
        service=Stage.GRADER,
        settings=settings,
        port=settings.grader_port,
    )


if __name__ == "__main__":
    main()
