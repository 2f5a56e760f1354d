"""A guard on the size of request bodies, before any of the app reads them: a body that declares
a length over the limit is refused at once, unread; one that does not (chunked) is counted as it
arrives and refused as soon as it passes the limit, so no body larger than the limit is ever
held. File uploads (multipart/form-data) may be as large as ``RAGLOOP_MAX_UPLOAD_BYTES`` plus
the form's own framing; every other body as large as ``RAGLOOP_MAX_REQUEST_BYTES``."""

from __future__ import annotations

import logging

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloop.orchestrator.access.auth import refusal
from ragloop.orchestrator.settings import OrchestratorSettings

log = logging.getLogger(__name__)

# Room for a multipart form's boundaries, part headers and small fields around the files.
MULTIPART_FRAMING_BYTES = 1024 * 1024


class BodyTooLarge(Exception):
    """Raised to the app from ``receive`` once the body passed the limit."""


class BodyLimit:
    def __init__(self, *, request_bytes: int, upload_bytes: int) -> None:
        self.request_bytes = request_bytes
        self.upload_bytes = upload_bytes

    @classmethod
    def from_settings(cls, settings: OrchestratorSettings) -> BodyLimit:
        return cls(request_bytes=settings.max_request_bytes, upload_bytes=settings.max_upload_bytes)

    def of(self, content_type: str) -> tuple[int, str]:
        """The most bytes a body of ``content_type`` may have, and what to tell a client that
        sent more."""
        if content_type.lower().startswith("multipart/form-data"):
            limit = self.upload_bytes + MULTIPART_FRAMING_BYTES
            return limit, (
                f"the upload is larger than {self.upload_bytes} bytes, the most this server "
                "accepts in one request (RAGLOOP_MAX_UPLOAD_BYTES): send the files in several "
                "requests"
            )
        return self.request_bytes, (
            f"the request body is larger than {self.request_bytes} bytes, the most this server "
            "accepts (RAGLOOP_MAX_REQUEST_BYTES): send fewer documents per request, or upload "
            "large files as multipart/form-data"
        )


class BodyLimitMiddleware:
    """Pure ASGI. When the body passes the limit mid-way, whatever the app makes of the broken
    body is dropped and the client gets 413 instead (unless the app had started answering)."""

    def __init__(self, app: ASGIApp, limit: BodyLimit) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        limit, advice = self.limit.of(headers.get("content-type", ""))
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, advice, declared=int(declared))
            return

        received = 0
        exceeded = False
        answering = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise BodyTooLarge
            return message

        async def send_unless_exceeded(message: Message) -> None:
            nonlocal answering
            if exceeded and not answering:
                return  # the app's answer to a body cut short: the 413 replaces it
            answering = answering or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, send_unless_exceeded)
        except Exception:
            if not exceeded or answering:
                raise
        if exceeded and not answering:
            await self._refuse(scope, receive, send, advice, declared=None)

    @staticmethod
    async def _refuse(
        scope: Scope, receive: Receive, send: Send, advice: str, *, declared: int | None
    ) -> None:
        log.info(
            "request body over the limit refused",
            extra={"path": scope.get("path", ""), "declared_bytes": declared},
        )
        # The rest of the body is never read: the server closes the connection after answering.
        response = refusal(scope, 413, "payload_too_large", advice, {"connection": "close"})
        await response(scope, receive, send)
