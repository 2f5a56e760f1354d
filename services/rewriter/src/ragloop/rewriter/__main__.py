"""``python -m ragloop.rewriter``: serve the rewriter over gRPC."""

from __future__ import annotations

from ragloop.core.grpc.server import ServiceSpec, run_service
from ragloop.core.models import ChatModel
from ragloop.core.models.metered import MeteredChatModel
from ragloop.core.names import Stage
from ragloop.rewriter.servicer import RewriterServicer
from ragloop.rewriter.settings import RewriterSettings
from ragloop.rewriter.stage import ModelRewriter
from ragloop.v1 import rewriter_pb2, rewriter_pb2_grpc


def build_rewriter(settings: RewriterSettings, model: ChatModel) -> ModelRewriter:
    return ModelRewriter(model, reasoning=settings.rewriter_reasoning)


def build_spec(settings: RewriterSettings) -> ServiceSpec:
    model = MeteredChatModel(settings.make_chat_model(), stage=Stage.REWRITER)
    stage = build_rewriter(settings, model)
    return ServiceSpec.for_servicer(
        Stage.REWRITER,
        RewriterServicer(stage),
        rewriter_pb2_grpc.add_RewriterServiceServicer_to_server,
        rewriter_pb2,
        on_shutdown=[model.aclose],
    )


def main() -> None:
    settings = RewriterSettings()
    run_service(
        lambda: build_spec(settings),
        service=Stage.REWRITER,
        settings=settings,
        port=settings.rewriter_port,
    )


if __name__ == "__main__":
    main()
