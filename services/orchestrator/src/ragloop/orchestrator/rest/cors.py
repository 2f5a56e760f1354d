"""Optional CORS, for browser pages served from another origin than the API. Off unless
``RAGLOOP_CORS_ALLOW_ORIGINS`` names origins. No cookies: a page sends its API key in the
``Authorization`` header, so credentials stay disallowed (and ``*`` stays a valid origin list)."""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from ragloop.orchestrator.settings import OrchestratorSettings

# Headers a cross-origin page may read: the request id and how long to wait after a 429.
EXPOSED_HEADERS = ("x-request-id", "retry-after")
PREFLIGHT_MAX_AGE_S = 600


def comma_separated(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def cors_middleware(settings: OrchestratorSettings) -> Middleware | None:
    """Starlette's CORS middleware as the settings ask, or None when CORS is off."""
    origins = [origin.rstrip("/") for origin in comma_separated(settings.cors_allow_origins)]
    if not origins:
        return None
    return Middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=comma_separated(settings.cors_allow_methods),
        allow_headers=comma_separated(settings.cors_allow_headers),
        allow_credentials=False,
        expose_headers=EXPOSED_HEADERS,
        max_age=PREFLIGHT_MAX_AGE_S,
    )
