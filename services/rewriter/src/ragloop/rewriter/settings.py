from __future__ import annotations

from pydantic import Field

from ragloop.core.names import Stage
from ragloop.core.settings import ChatModelSettings
from ragloop.core.stage_registry import stage_spec


class RewriterSettings(ChatModelSettings):
    rewriter_port: int = Field(
        stage_spec(Stage.REWRITER).port, ge=0, le=65535, description="gRPC port of the rewriter."
    )
    rewriter_reasoning: bool = Field(
        False,
        description="Ask the model for a reason and keywords with each rewritten query (shown in "
        "the trace; the loop uses only the query). Costs ~35 more completion tokens a model call.",
    )
