"""Tenant binding: an API key bound to a tenant (``KEY tenant=NAME``, see ``access/auth.py``) acts
in that tenant only. A request naming no tenant acts in the key's tenant; a request naming another
tenant is refused (HTTP 403, gRPC PERMISSION_DENIED) rather than quietly narrowed, so a client
learns of its mistake. Keys bound to no tenant, and requests without keys, choose freely."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ragloop.core.validation import TENANT_PATTERN

Body = TypeVar("Body", bound=BaseModel)


class TenantRefused(Exception):
    """The caller's key may not act in the tenant it asked for; the message says why."""


def tenant_field() -> Any:
    """The ``tenant`` field of a request body."""
    return Field(
        None,
        pattern=TENANT_PATTERN,
        description="Tenant whose chunks are used; omitted means the default tenant.",
    )


def tenant_for(bound: str | None, requested: str | None) -> str | None:
    """The tenant a request acts in. ``requested`` None or "" means none was named (the default
    tenant for an unbound caller)."""
    if bound is None or requested in (None, "", bound):
        return bound if bound is not None else requested
    raise TenantRefused(
        f"this API key is bound to tenant {bound!r}: it cannot act in tenant {requested!r} "
        "(omit `tenant` to use the key's own)"
    )


def scoped_to(body: Body, bound: str | None) -> Body:
    """``body`` (a model with a ``tenant`` field) acting in the tenant a caller whose key is
    bound to ``bound`` may use."""
    if bound is None:
        return body
    requested = body.tenant  # type: ignore[attr-defined]
    return body.model_copy(update={"tenant": tenant_for(bound, requested)})
