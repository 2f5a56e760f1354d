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
    rewriter_resolve_descriptions: bool = Field(
        False,
        description="When passages passed grading but the generator could not answer from them, "
        "first name what the question describes by a fact from those passages, and ask the "
        "question with the name instead (two model calls). Off: with Qwen2.5-Coder-1.5B it "
        "answered no more two-hop questions (docs/decisions/0022).",
    )
