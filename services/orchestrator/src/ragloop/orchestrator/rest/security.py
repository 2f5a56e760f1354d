"""Who may call the REST API, and how much they may send: CORS, API keys and a rate limit, each
optional, and the request body size limit, installed by ``create_app`` with one call to
``install_security(app, settings)``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.middleware import Middleware

from ragloop.orchestrator.access.auth import ApiKeyMiddleware, ApiKeys, is_public, public_paths
from ragloop.orchestrator.rest.body_limit import BodyLimit, BodyLimitMiddleware
from ragloop.orchestrator.rest.cors import cors_middleware
from ragloop.orchestrator.rest.ratelimit import RateLimiter, RateLimitMiddleware
from ragloop.orchestrator.settings import OrchestratorSettings

SECURITY_SCHEME = "apiKey"
HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def install_security(app: FastAPI, settings: OrchestratorSettings) -> None:
    """Add the middleware the settings ask for. Raises ``auth.ApiKeyError`` (a ``ValueError``)
    when a configured key or the key file is unusable, so a misconfigured server never starts."""
    public = public_paths(app)
    keys = ApiKeys.from_settings(settings)
    layers: list[Middleware] = []
    if cors := cors_middleware(settings):
        layers.append(cors)  # outside auth: preflights carry no key, and 401s need CORS headers
    if keys is not None:
        layers.append(Middleware(ApiKeyMiddleware, keys=keys, public=public))
    rate_limited = settings.rate_limit_per_minute > 0
    if rate_limited:
        limiter = RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst)
        layers.append(Middleware(RateLimitMiddleware, limiter=limiter, public=public))
    # Innermost of these: a body is refused only once the caller is known and within its limit.
    layers.append(Middleware(BodyLimitMiddleware, limit=BodyLimit.from_settings(settings)))
    if keys or rate_limited:
        document_refusals(app, public, bearer=keys is not None, rate_limited=rate_limited)
    # Innermost (add_middleware would make them outermost): the request-id and metrics
    # middleware then see refused requests too, and a 401 or 429 carries the request id.
    app.user_middleware.extend(layers)


def document_refusals(
    app: FastAPI, public: frozenset[str], *, bearer: bool, rate_limited: bool
) -> None:
    """Show the bearer scheme (and so an "Authorize" button in /docs) and the 401 and 429
    answers in the OpenAPI schema."""
    build_schema = app.openapi

    def openapi_with_security() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = build_schema()
        add_refusals(schema, public, bearer=bearer, rate_limited=rate_limited)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi_with_security  # type: ignore[method-assign]


def add_refusals(
    schema: dict[str, Any], public: frozenset[str], *, bearer: bool, rate_limited: bool
) -> None:
    components = schema.setdefault("components", {})
    if bearer:
        components.setdefault("securitySchemes", {})[SECURITY_SCHEME] = {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key of RAGLOOP_API_KEYS or RAGLOOP_API_KEYS_FILE.",
        }
    has_error_model = "ErrorResponse" in components.get("schemas", {})
    error_content = (
        {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
        if has_error_model
        else {}
    )
    refusals = {}
    if bearer:
        refusals["401"] = "Missing or unknown API key"
    if rate_limited:
        refusals["429"] = "Over the rate limit; wait Retry-After seconds"
    for path, path_item in schema.get("paths", {}).items():
        if is_public(path, public):
            continue
        for method, operation in path_item.items():
            if method not in HTTP_METHODS:
                continue
            if bearer:
                operation["security"] = [{SECURITY_SCHEME: []}]
            responses = operation.setdefault("responses", {})
            for status, description in refusals.items():
                responses.setdefault(status, {"description": description, "content": error_content})
