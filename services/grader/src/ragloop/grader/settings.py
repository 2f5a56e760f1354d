from __future__ import annotations

from pydantic import Field

from ragloop.core.settings import ChatModelSettings


class GraderSettings(ChatModelSettings):
    grader_port: int = Field(50052, ge=0, le=65535, description="gRPC port of the grader.")
    grader_concurrency: int = Field(
        1, ge=1, le=32, description="Documents graded at once (match the model server's slots)."
    )
    grader_max_documents: int = Field(50, ge=1, description="Most documents accepted per call.")
