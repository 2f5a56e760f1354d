from __future__ import annotations

from pydantic import Field

from ragloop.core.names import Stage
from ragloop.core.settings import ChatModelSettings
from ragloop.core.stage_registry import stage_spec
from ragloop.grader.scores import DEFAULT_RELEVANCE_THRESHOLD
from ragloop.grader.stage import GradingMode


class GraderSettings(ChatModelSettings):
    grader_port: int = Field(
        stage_spec(Stage.GRADER).port, ge=0, le=65535, description="gRPC port of the grader."
    )
    grader_concurrency: int = Field(
        1, ge=1, le=32, description="Model calls at once (match the model server's slots)."
    )
    grader_max_documents: int = Field(50, ge=1, description="Most documents accepted per call.")
    grader_mode: GradingMode = Field(
        GradingMode.SCORED,
        description='`scored` (one one-token call per passage; the probability of "yes" from '
        "the model's log-probabilities is the grade's confidence, passing at "
        "`RAGLOOP_GRADER_RELEVANCE_THRESHOLD`), `per_document` (a sampled JSON verdict per "
        "passage) or `batched` (one call grades up to `RAGLOOP_GRADER_BATCH_SIZE` passages).",
    )
    grader_relevance_threshold: float = Field(
        DEFAULT_RELEVANCE_THRESHOLD,
        ge=0,
        le=1,
        description="In `scored` mode, the probability of relevance at which a passage passes. "
        "Calibrated on a dev split with the default model (docs/decisions/); providers without "
        "log-probabilities (Ollama before 0.12.11) give 1 or 0 by the sampled word.",
    )
    grader_batch_size: int = Field(
        5, ge=1, le=20, description="Passages per model call in batched mode."
    )
    grader_cache_size: int = Field(
        4096, ge=0, description="Grades kept in the in-memory LRU cache (0: no cache)."
    )
    grader_min_score: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Passages whose retrieval similarity is below this are graded not relevant "
        "without a model call (0: off).",
    )
    grader_reasoning: bool = Field(
        False,
        description="In `per_document` and `batched` modes, ask the model for a short reason with "
        "each verdict (shown in the trace and to the rewriter). Costs ~17 more completion tokens "
        "a passage, ~0.6 s each with a 1.5B model on 2 CPU cores; the verdict is written before "
        "the reason either way.",
    )
