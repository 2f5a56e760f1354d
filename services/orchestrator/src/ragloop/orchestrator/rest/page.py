"""The web page at ``/``: static files shipped inside this package, served as they are (no build
step). The page asks ``POST /v1/query/stream`` and shows the loop as its events arrive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

WEB_DIR = Path(__file__).parents[1] / "web"

# The page loads only its own files and talks only to this server; model and document text is
# never run as markup, and this policy stops anything that would slip through from loading.
PAGE_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",  # revalidate, so a new version of the page shows at once
}
STATIC_HEADERS = {"x-content-type-options": "nosniff", "cache-control": "no-cache"}


class _PageFiles(StaticFiles):
    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(STATIC_HEADERS)
        return response


def install_page(app: FastAPI) -> None:
    """Serve the page at ``/`` and its script and style sheet under ``/static/``."""
    app.mount("/static", _PageFiles(directory=WEB_DIR / "static"), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", media_type="text/html", headers=PAGE_HEADERS)
