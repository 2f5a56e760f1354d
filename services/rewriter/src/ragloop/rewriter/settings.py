from __future__ import annotations

from pydantic import Field

from ragloop.core.settings import ChatModelSettings


class RewriterSettings(ChatModelSettings):
    rewriter_port: int = Field(50053, ge=0, le=65535, description="gRPC port of the rewriter.")
