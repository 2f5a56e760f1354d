"""The loop settings a query may choose, each declared once: type, range, default and meaning.

The server's settings take these fields as they are (``RAGLOOP_TOP_K`` …, their defaults), the
``QueryRequest`` of REST and RagService takes them as optional overrides (``overrides_of``), and
``application.queries.resolve_policy`` puts a request's own value, or the setting, into the
``LoopPolicy``.
Adding one: a field here, its use in the loop, and a field in ``rag.proto``'s QueryRequest.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, Field, create_model

from ragloop.core.models.embedding_profiles import DEFAULT_EMBEDDING_MODEL, embedding_profile
from ragloop.core.settings import setting_variable
from ragloop.orchestrator.policy.defaults import DEFAULT_GRADE_PASS_THRESHOLD
from ragloop.orchestrator.policy.thresholds import MAX_REWRITE_ATTEMPTS

DEFAULT_PROFILE = embedding_profile(DEFAULT_EMBEDDING_MODEL)


class RequestPolicy(BaseModel):
    top_k: int = Field(5, ge=1, le=50, description="Passages retrieved per round.")
    similarity_threshold: float = Field(
        DEFAULT_PROFILE.similarity_threshold,
        ge=0,
        le=1,
        description="Minimum cosine similarity of a retrieved passage (server default: the "
        "embedding model's, see `RAGLOOP_EMBEDDING_MODEL`).",
    )
    max_rewrite_attempts: int = Field(
        3, ge=0, le=MAX_REWRITE_ATTEMPTS, description="Rewrites allowed per query."
    )
    grade_pass_threshold: float = Field(
        DEFAULT_GRADE_PASS_THRESHOLD,
        ge=0,
        le=1,
        description="Share of a round's passages that must pass grading, or the query is "
        "rewritten.",
    )
    time_budget_s: float = Field(
        300.0,
        ge=1,
        le=600,
        description="Seconds the whole query may take, every round and the answer included; "
        "when they run out the response says so (outcome budget_exhausted) and answers from "
        "what passed.",
    )


REQUEST_DEFAULTS = RequestPolicy()


def overrides_of(policy: type[BaseModel]) -> type[BaseModel]:
    """A model with ``policy``'s fields, each optional (omitted: the server's setting) with the
    same range and meaning: the base of a request that may choose them."""
    fields: dict[str, Any] = {}
    for name, declared in policy.model_fields.items():
        optional = copy.copy(declared)
        optional.default = None
        optional.description = (
            f"{declared.description} Omitted: the server's {setting_variable(name)}."
        )
        fields[name] = (declared.annotation | None, optional)
    return create_model(f"{policy.__name__}Overrides", **fields)
