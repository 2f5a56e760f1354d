"""Optional API keys for the REST API: ``Authorization: Bearer KEY`` on every path but the public
ones (health, readiness, metrics, the API docs, the web page and its static files).

Keys come from ``RAGLOOP_API_KEYS`` (comma-separated) and ``RAGLOOP_API_KEYS_FILE`` (one key per
line, ``#`` starts a comment). Setting either turns authentication on; an empty key file then
refuses everyone rather than opening the API. An entry is ``KEY`` (any tenant) or
``KEY tenant=NAME``: a key bound to one tenant acts in that tenant only
(``application/tenants.py``).
The file is read at startup — a missing or malformed file stops the orchestrator — and read
again whenever its mtime, size or inode changes, so keys rotate without a restart; a change
that cannot be read keeps the previous keys and logs a warning.

Only sha256 digests of the keys are kept. A presented key is hashed and compared with every digest
by ``hmac.compare_digest`` (equal lengths, no early exit), so the time taken tells nothing about
which key nearly matched. Logs name a caller by the first 8 hex characters of its key's digest.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ragloop.core.validation import TENANT_PATTERN
from ragloop.orchestrator.rest.errors import error_response_at
from ragloop.orchestrator.rest.schemas import ErrorDetail
from ragloop.orchestrator.settings import OrchestratorSettings

log = logging.getLogger(__name__)

# RFC 6750 ``b64token``: what may follow ``Bearer `` in the header.
KEY_SYNTAX = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
KEY_ADVICE = (
    "use letters, digits and - . _ ~ + / only, e.g. a key made by "
    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
)
PUBLIC_PATHS = frozenset({"/", "/favicon.ico", "/healthz", "/readyz", "/metrics"})
PUBLIC_PREFIXES = ("/static/",)
CALLER = "caller"  # request.state.caller: "key:<fingerprint>" once a key matched
BOUND_TENANT = "bound_tenant"  # request.state.bound_tenant: the tenant the caller's key is bound to
TENANT_BINDING = re.compile(r"tenant=(?P<tenant>\S*)")


class ApiKeyError(ValueError):
    """A configured key or key file cannot be used; the message never contains a key."""


@dataclass(frozen=True)
class ApiKey:
    """A configured key; ``tenant`` None: the key may act in any tenant."""

    key: str
    tenant: str | None = None


@dataclass(frozen=True)
class KeyDigest:
    digest: bytes
    fingerprint: str
    tenant: str | None = None  # the tenant the key is bound to, if any


def digest_of(key: str | ApiKey) -> KeyDigest:
    api_key = key if isinstance(key, ApiKey) else ApiKey(key)
    digest = hashlib.sha256(api_key.key.encode()).digest()
    return KeyDigest(digest, digest.hex()[:8], api_key.tenant)


def parse_inline_keys(value: str) -> list[ApiKey]:
    """The keys of ``RAGLOOP_API_KEYS``: comma-separated entries, ``KEY`` or ``KEY tenant=NAME``,
    blanks around and between ignored."""
    keys = []
    for position, part in enumerate(value.split(","), 1):
        if entry := part.strip():
            keys.append(parse_entry(entry, f"RAGLOOP_API_KEYS entry {position}"))
    return keys


def parse_key_file(text: str, origin: str) -> list[ApiKey]:
    """The keys of a key file: one per line, ``KEY`` or ``KEY tenant=NAME``; ``#`` and what
    follows it on its line is a comment."""
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        if entry := line.split("#", 1)[0].strip():
            keys.append(parse_entry(entry, f"{origin} line {number}"))
    return keys


def parse_entry(entry: str, where: str) -> ApiKey:
    """``KEY`` or ``KEY tenant=NAME``. Errors say where, never what: the entry holds a key."""
    key, *options = entry.split()
    if not KEY_SYNTAX.fullmatch(key):
        raise ApiKeyError(f"{where} is not a valid API key: {KEY_ADVICE}")
    if not options:
        return ApiKey(key)
    binding = TENANT_BINDING.fullmatch(options[0])
    if len(options) > 1 or binding is None:
        raise ApiKeyError(
            f"{where}: after the key, only 'tenant=NAME' may follow (the tenant the key is "
            "bound to)"
        )
    tenant = binding["tenant"]
    if not re.fullmatch(TENANT_PATTERN, tenant):
        raise ApiKeyError(
            f"{where}: tenant {tenant!r} is invalid: use letters, digits and _ . : @ - "
            "(at most 128 characters, not starting with punctuation)"
        )
    return ApiKey(key, tenant)


class KeyFile:
    """A key file, read again when it changes. Reading it the first time raises on any problem."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._signature = self._stat_signature()
        self.keys = self._read()

    def current(self) -> tuple[KeyDigest, ...]:
        """The file's keys as of now: one ``stat`` per call, a read only after a change."""
        try:
            signature = self._stat_signature()
        except ApiKeyError as exc:
            signature = ("unreadable", str(exc))
        if signature == self._signature:
            return self.keys
        self._signature = signature  # also when unusable: warn once per change, not per request
        try:
            self.keys = self._read()
        except ApiKeyError as exc:
            log.warning("API key file not reloaded, keeping its previous keys: %s", exc)
        else:
            log.info(
                "API key file reloaded",
                extra={"path": str(self.path), "keys": [k.fingerprint for k in self.keys]},
            )
        return self.keys

    def _stat_signature(self) -> tuple[object, ...]:
        try:
            stat = os.stat(self.path)
        except OSError as exc:
            raise ApiKeyError(f"API key file {self.path}: {exc.strerror or exc}") from None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def _read(self) -> tuple[KeyDigest, ...]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ApiKeyError(f"API key file {self.path}: {exc}") from None
        return tuple(digest_of(key) for key in parse_key_file(text, str(self.path)))


class ApiKeys:
    """The configured keys: those of the settings and, if given, those of the key file now."""

    def __init__(self, inline: Iterable[str | ApiKey], key_file: KeyFile | None = None) -> None:
        self._inline = tuple(digest_of(key) for key in inline)
        self._file = key_file

    @classmethod
    def from_settings(cls, settings: OrchestratorSettings) -> ApiKeys | None:
        """None when authentication is off (no keys and no key file configured)."""
        inline = parse_inline_keys(settings.api_keys.get_secret_value())
        path = settings.api_keys_file.strip()
        if not inline and not path:
            return None
        key_file = KeyFile(Path(path)) if path else None
        keys = cls(inline, key_file)
        fingerprints = [k.fingerprint for k in keys.current()]
        bound = {k.fingerprint: k.tenant for k in keys.current() if k.tenant is not None}
        log.info(
            "API keys required",
            extra={"keys": fingerprints, "key_file": path, "tenant_bound_keys": bound},
        )
        if not fingerprints:
            log.warning("API keys are on but none is configured: every request will get 401")
        return keys

    def current(self) -> tuple[KeyDigest, ...]:
        return self._inline + (self._file.current() if self._file else ())

    def match(self, presented: str) -> KeyDigest | None:
        """The configured key ``presented`` is (its fingerprint and tenant), or None."""
        presented_digest = digest_of(presented).digest
        matched = None
        for key in self.current():  # every key, always: no early exit
            if hmac.compare_digest(presented_digest, key.digest):
                matched = key
        return matched

    def identify(self, presented: str) -> str | None:
        """The fingerprint of the key ``presented`` matches, or None."""
        matched = self.match(presented)
        return matched.fingerprint if matched else None


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header (scheme case-insensitive)."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def public_paths(app: FastAPI) -> frozenset[str]:
    """The paths that need no key: ``PUBLIC_PATHS`` and the app's API docs."""
    docs = (app.docs_url, app.redoc_url, app.openapi_url, app.swagger_ui_oauth2_redirect_url)
    return PUBLIC_PATHS | {url for url in docs if url}


def is_public(path: str, public: frozenset[str]) -> bool:
    return path in public or path.startswith(PUBLIC_PREFIXES)


def route_path(scope: Scope) -> str:
    """The request's path below the app's mount point (``root_path``)."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


def refusal(
    scope: Scope, status: int, code: str, message: str, headers: dict[str, str]
) -> JSONResponse:
    """An error response to the request of ``scope`` in its route's shape (``errors``), with
    extra headers."""
    response = error_response_at(route_path(scope), status, ErrorDetail(code=code, message=message))
    response.headers.update(headers)
    return response


class ApiKeyMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): responses, SSE streams included, pass through as sent."""

    def __init__(self, app: ASGIApp, keys: ApiKeys, public: frozenset[str]) -> None:
        self.app = app
        self.keys = keys
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The app serves no websockets; lifespan messages must pass.
        if scope["type"] != "http" or is_public(route_path(scope), self.public):
            await self.app(scope, receive, send)
            return
        token = bearer_token(Headers(scope=scope).get("authorization"))
        key = self.keys.match(token) if token is not None else None
        if key is None:
            await self._refuse(scope, token)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state[CALLER] = f"key:{key.fingerprint}"
        state[BOUND_TENANT] = key.tenant
        await self.app(scope, receive, send)

    def _refuse(self, scope: Scope, token: str | None) -> JSONResponse:
        client = (scope.get("client") or ("", 0))[0]
        if token is None:
            log.info("request without an API key refused", extra={"client": client})
            return refusal(
                scope,
                401,
                "unauthorized",
                "this API needs an API key: send the header 'Authorization: Bearer KEY'",
                {"www-authenticate": 'Bearer realm="ragloop"'},
            )
        log.warning(
            "request with an unknown API key refused",
            extra={"client": client, "presented": digest_of(token).fingerprint},
        )
        return refusal(
            scope,
            401,
            "unauthorized",
            "the API key is not valid",
            {"www-authenticate": 'Bearer realm="ragloop", error="invalid_token"'},
        )
