"""What a route uses, as FastAPI dependencies: the query service, the settings, the ingestor and
the caller (with the tenant its API key is bound to), so that each route's signature shows what it
uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from ragloop.core.stages import Ingestor
from ragloop.orchestrator.access.auth import BOUND_TENANT
from ragloop.orchestrator.application.queries import QueryService
from ragloop.orchestrator.application.tenants import TenantRefused, tenant_for
from ragloop.orchestrator.settings import OrchestratorSettings


@dataclass(frozen=True)
class Caller:
    """Who sent the request, as far as tenants go: ``bound_tenant`` is the tenant its API key is
    bound to (None: unbound, or no keys)."""

    bound_tenant: str | None

    def tenant(self, requested: str | None) -> str:
        """The tenant the request acts in ("" for the default); TenantRefused (403) when the
        caller's key may not act in ``requested``."""
        return tenant_for(self.bound_tenant, requested) or ""

    def refuse_if_bound(self, action: str) -> None:
        """Refuse ``action`` (which touches every tenant's chunks) to a key bound to a tenant."""
        if self.bound_tenant is not None:
            raise TenantRefused(
                f"this API key is bound to tenant {self.bound_tenant!r}: it cannot {action}, "
                "which touches every tenant's chunks"
            )


def _settings(request: Request) -> OrchestratorSettings:
    return request.app.state.settings


def _queries(request: Request) -> QueryService:
    return request.app.state.queries


def _ingestor(request: Request) -> Ingestor:
    return request.app.state.stages.ingestor


def _caller(request: Request) -> Caller:
    # The tenant the request's API key is bound to; None for unbound keys and without keys.
    return Caller(getattr(request.state, BOUND_TENANT, None))


Settings = Annotated[OrchestratorSettings, Depends(_settings)]
Queries = Annotated[QueryService, Depends(_queries)]
Knowledge = Annotated[Ingestor, Depends(_ingestor)]
CallerOf = Annotated[Caller, Depends(_caller)]
