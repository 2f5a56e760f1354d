"""The table of stages: what each is called, where it listens and how a client reaches it. The
launcher, the stages' settings, the metrics exporter, the orchestrator's settings and clients,
the settings docs and the deployment files (``make deploy-files``) read it; adding a stage
starts with a row here (docs/architecture.md, "Adding a stage")."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from ragloop.core.names import Stage
from ragloop.v1 import (
    generator_pb2,
    generator_pb2_grpc,
    grader_pb2,
    grader_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
    rewriter_pb2,
    rewriter_pb2_grpc,
)

if TYPE_CHECKING:
    from ragloop.core.settings import CommonSettings


@dataclass(frozen=True)
class StageSpec:
    name: Stage
    port: int  # default gRPC port (RAGLOOP_<NAME>_PORT)
    metrics_port: int  # default /metrics port with RAGLOOP_METRICS_PORT=auto
    proto: ModuleType  # the generated ``*_pb2`` module of its service
    stub: type  # the generated gRPC client stub

    @property
    def module(self) -> str:
        """What ``python -m`` serves it with."""
        return f"ragloop.{self.name}"

    @property
    def port_setting(self) -> str:
        """Its settings' port field (environment: ``settings.setting_variable``)."""
        return f"{self.name}_port"

    @property
    def address_setting(self) -> str:
        """The orchestrator's setting of where it is (host:port)."""
        return f"{self.name}_address"

    @property
    def grpc_services(self) -> list[str]:
        """The full names of the gRPC services it serves (``ragloop.v1.GraderService``)."""
        return [s.full_name for s in self.proto.DESCRIPTOR.services_by_name.values()]

    @property
    def settings_class(self) -> type[CommonSettings]:
        """The settings class its service reads (``ragloop.grader.settings.GraderSettings``).
        Imported when asked for: only the workspace has every stage's package (tooling, tests)."""
        module = importlib.import_module(f"{self.module}.settings")
        return getattr(module, f"{self.name.capitalize()}Settings")


STAGE_SPECS = (
    StageSpec(Stage.RETRIEVER, 50051, 9101, retriever_pb2, retriever_pb2_grpc.RetrieverServiceStub),
    StageSpec(Stage.GRADER, 50052, 9102, grader_pb2, grader_pb2_grpc.GraderServiceStub),
    StageSpec(Stage.REWRITER, 50053, 9103, rewriter_pb2, rewriter_pb2_grpc.RewriterServiceStub),
    StageSpec(Stage.GENERATOR, 50054, 9104, generator_pb2, generator_pb2_grpc.GeneratorServiceStub),
)
_BY_NAME = {spec.name: spec for spec in STAGE_SPECS}


def stage_spec(name: Stage | str) -> StageSpec:
    return _BY_NAME[Stage(name)]
