"""``POST /v1/documents``: ingest JSON documents, or files uploaded as multipart/form-data.

JSON: ``{"collection": …, "tenant": …, "documents": [{"source", "text", "metadata"}]}``.
Multipart: one or more ``files`` parts (the types of ``ragloop.core.file_types``, converted to
Markdown; the file name becomes the source) and optional ``collection``, ``tenant`` and
``metadata`` (a JSON object given to every file) parts. Uploads larger than
``RAGLOOP_MAX_UPLOAD_BYTES`` get 413; other file types 415.

Either way the documents go to the retriever as one IngestDocumentStream, text in pieces: an
uploaded file's Markdown is written to a spooled temporary file first (every file is checked
before anything is ingested) and read back piece by piece, so no upload's text is whole in memory
(converting a binary format reads that one file whole).
"""

from __future__ import annotations

import asyncio
import json
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from ragloop.core import context
from ragloop.core.domain import SourceDocument, StreamedDocument, one_by_one
from ragloop.core.errors import InvalidInput, RagloopError
from ragloop.core.file_types import SUFFIX_LIST
from ragloop.core.names import Stage
from ragloop.orchestrator.file_to_markdown import UnsupportedFileType
from ragloop.orchestrator.rest.deps import CallerOf, Knowledge, Settings
from ragloop.orchestrator.rest.errors import (
    BODY_RESPONSES,
    ERROR_RESPONSES,
    error_response,
    failure_response,
    invalid_input,
)
from ragloop.orchestrator.rest.ingest_schemas import (
    IngestedSourceOut,
    IngestRequest,
    IngestResponse,
    UploadOptions,
)
from ragloop.orchestrator.rest.routes import ApiRoute
from ragloop.orchestrator.rest.schemas import ErrorDetail, ErrorResponse, inline_schema
from ragloop.orchestrator.rest.uploads import extract
from ragloop.orchestrator.settings import OrchestratorSettings

ingest_router = APIRouter(route_class=ApiRoute)


@dataclass(frozen=True)
class IngestBatch:
    documents: list[StreamedDocument]
    collection: str
    tenant: str


UPLOAD_SCHEMA = {
    "type": "object",
    "required": ["files"],
    "properties": {
        "files": {
            "type": "array",
            "items": {"type": "string", "format": "binary"},
            "description": f"Files to ingest, each converted to Markdown: {SUFFIX_LIST}.",
        },
        "collection": {"type": "string"},
        "tenant": {"type": "string"},
        "metadata": {"type": "string", "description": "A JSON object given to every file."},
    },
}
OPENAPI_EXTRA = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": inline_schema(IngestRequest)},
            "multipart/form-data": {"schema": UPLOAD_SCHEMA},
        },
    }
}
RESPONSES = {
    **ERROR_RESPONSES,
    **BODY_RESPONSES,
    413: {"model": ErrorResponse, "description": "The body or the upload is too large"},
    415: {"model": ErrorResponse, "description": "A file type ragloop cannot read"},
}


def _validation_error(exc: ValidationError) -> RequestValidationError:
    """The same 422 FastAPI gives for a declared body, locations under ``body``."""
    errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
    return RequestValidationError(errors)


async def read_json(request: Request, settings: OrchestratorSettings) -> IngestBatch:
    try:
        body = IngestRequest.model_validate_json(await request.body())
    except ValidationError as exc:
        raise _validation_error(exc) from None
    documents = [SourceDocument(d.source, d.text, d.metadata) for d in body.documents]
    _check_json_documents(documents, settings)
    streamed = [StreamedDocument.of(doc) for doc in documents]
    return IngestBatch(streamed, body.collection or "", body.tenant or "")


def _too_large(limit: int) -> JSONResponse:
    detail = ErrorDetail(
        code="payload_too_large", message=f"the upload is larger than {limit} bytes"
    )
    return error_response(413, detail, context.request_id.get())


def _options(form: Any) -> UploadOptions:
    fields = {k: form.get(k) for k in ("collection", "tenant") if form.get(k)}
    try:
        metadata = json.loads(form.get("metadata") or "{}")
        return UploadOptions(**fields, metadata=metadata)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"metadata is not valid JSON: {exc.msg}") from None
    except ValidationError as exc:
        raise _validation_error(exc) from None


async def read_upload(
    request: Request, settings: OrchestratorSettings, cleanup: ExitStack
) -> IngestBatch | JSONResponse:
    """The uploaded files, each file's text extracted into a temporary file that ``cleanup``
    removes. The multipart parser has spooled the files to disk; they are read in blocks."""
    limit = settings.max_upload_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return _too_large(limit)  # refused before reading the body
    async with request.form(max_files=settings.max_ingest_documents + 1) as form:
        options = _options(form)
        files = form.getlist("files")
        if not files:
            raise InvalidInput("no files uploaded: send each as a multipart part named 'files'")
        if any(not isinstance(f, UploadFile) or not f.filename for f in files):
            raise InvalidInput("every 'files' part must be a file with a file name")
        _check_count(len(files), settings)
        if sum(f.size or 0 for f in files) > limit:
            return _too_large(limit)
        documents: list[StreamedDocument] = []
        for upload in files:
            text = await asyncio.to_thread(extract, upload.filename, upload.file, max_chars=limit)
            cleanup.callback(text.close)
            documents.append(StreamedDocument(upload.filename, text.pieces(), options.metadata))
    return IngestBatch(documents, options.collection or "", options.tenant or "")


def _check_count(count: int, settings: OrchestratorSettings) -> None:
    if count > settings.max_ingest_documents:
        raise InvalidInput(
            f"{count} documents sent; at most {settings.max_ingest_documents} per request"
        )


def _check_json_documents(documents: list[SourceDocument], settings: OrchestratorSettings) -> None:
    _check_count(len(documents), settings)
    for position, doc in enumerate(documents):
        if len(doc.text) > settings.max_document_chars:
            raise InvalidInput(
                f"document {position} ({doc.source!r}) has {len(doc.text)} characters; "
                f"at most {settings.max_document_chars}"
            )
        if not doc.text.strip():
            raise InvalidInput(f"document {position} ({doc.source!r}): text must not be empty")


@ingest_router.post(
    "/v1/documents",
    response_model=IngestResponse,
    responses=RESPONSES,
    openapi_extra=OPENAPI_EXTRA,
)
async def ingest(
    request: Request, settings: Settings, knowledge: Knowledge, caller: CallerOf
) -> IngestResponse | JSONResponse:
    """Ingest documents: chunk, embed and store. Re-ingesting a source replaces it. Send JSON
    documents, or upload files as multipart/form-data (see the request body's two forms)."""
    with ExitStack() as cleanup:
        try:
            if request.headers.get("content-type", "").startswith("multipart/form-data"):
                batch = await read_upload(request, settings, cleanup)
                if isinstance(batch, JSONResponse):
                    return batch
            else:
                batch = await read_json(request, settings)
        except UnsupportedFileType as exc:
            detail = ErrorDetail(code="unsupported_media_type", message=str(exc))
            return error_response(415, detail, context.request_id.get())
        except InvalidInput as exc:
            return invalid_input(str(exc))
        tenant = caller.tenant(batch.tenant)
        try:
            result = await knowledge.ingest_stream(
                one_by_one(batch.documents), collection=batch.collection, tenant=tenant
            )
        except RagloopError as exc:
            return failure_response(exc, Stage.RETRIEVER, None)
    return IngestResponse(
        collection=result.collection,
        sources=[
            IngestedSourceOut(source=s.source, chunk_count=s.chunk_count) for s in result.sources
        ],
        chunks_written=result.chunks_written,
    )
