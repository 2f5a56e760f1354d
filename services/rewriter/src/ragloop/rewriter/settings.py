from __future__ import annotations

from pydantic import Field

from ragloop.core.settings import ChatModelSettings


class RewriterSettings(ChatModelSettings):
    rewriter_port: int = Field(50053, ge=0, le=65535, description="gRPC port of the rewriter.")
    rewriter_reasoning: bool = Field(
        False,
        description="Ask the model for a reason and keywords with each rewritten query (shown in "
        "the trace; the loop uses only the query). Costs ~35 more completion tokens a model call.",
    )
