"""What a client is told of a failed query, whichever edge it came in by (REST or gRPC): the
code, message, stage and decision path of a failed stage call, and the message for a bug."""

from __future__ import annotations

from dataclasses import dataclass

from ragloop.core.errors import RagloopError
from ragloop.orchestrator.loop.corrective import StageFailure, Trace, classify_error

UNEXPECTED_ERROR = (
    "unexpected error; the orchestrator's log has it under this request's X-Request-ID"
)
# The error code of a failure's kind where it is not `stage_<kind>`.
CODE_OF_FAILURE = {
    "invalid": "invalid_input",
    "not_found": "not_found",
    "precondition": "failed_precondition",
}


@dataclass(frozen=True)
class Failure:
    """A failed stage call as a client sees it; ``kind`` is what the edge maps to its status."""

    kind: str
    code: str
    message: str
    stage: str | None
    decision_path: list[str]


def described_failure(exc: StageFailure | RagloopError, stage: str, trace: Trace | None) -> Failure:
    """``exc``, raised calling ``stage`` (a ``StageFailure`` names its own), for the client."""
    if isinstance(exc, StageFailure):
        kind, message, stage = exc.kind, exc.message, exc.stage
    else:
        kind, message = classify_error(exc, stage)
    return Failure(
        kind=kind,
        code=CODE_OF_FAILURE.get(kind, f"stage_{kind}"),
        message=message,
        stage=stage,
        decision_path=trace.decision_path if trace else [],
    )
