"""``python -m ragloop.generator``: serve the generator over gRPC."""

from __future__ import annotations

from ragloop.core.grpc.server import ServiceSpec, run_service
from ragloop.core.models import ChatModel
from ragloop.core.models.metered import MeteredChatModel
from ragloop.core.names import Stage
from ragloop.generator.servicer import GeneratorServicer
from ragloop.generator.settings import GeneratorSettings
from ragloop.generator.stage import ModelGenerator
from ragloop.v1 import generator_pb2, generator_pb2_grpc


def build_generator(settings: GeneratorSettings, model: ChatModel) -> ModelGenerator:
    return ModelGenerator(
        model,
        max_tokens=settings.generator_max_tokens,
        max_documents=settings.generator_max_documents,
        answer_format=settings.generator_answer_format,
        lead_yes_threshold=settings.generator_lead_yes_threshold,
        question_yes_threshold=settings.generator_question_yes_threshold,
        support_threshold=settings.generator_support_threshold,
        answer_match_threshold=settings.generator_answer_match_threshold,
    )


def build_spec(settings: GeneratorSettings) -> ServiceSpec:
    model = MeteredChatModel(settings.make_chat_model(), stage=Stage.GENERATOR)
    stage = build_generator(settings, model)
    return ServiceSpec.for_servicer(
        Stage.GENERATOR,
        GeneratorServicer(stage),
        generator_pb2_grpc.add_GeneratorServiceServicer_to_server,
        generator_pb2,
        on_shutdown=[model.aclose],
    )


def main() -> None:
    settings = GeneratorSettings()
    run_service(
        lambda: build_spec(settings),
        service=Stage.GENERATOR,
        settings=settings,
        port=settings.generator_port,
    )


if __name__ == "__main__":
    main()
