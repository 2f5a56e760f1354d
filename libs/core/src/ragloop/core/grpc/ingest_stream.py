"""``IngestDocumentStream`` messages ⇄ streamed documents, for the retriever's client and servicer.

On the wire a stream is an optional header, then per document a ``DocumentStart`` followed by
its text in pieces of at most ``TEXT_PIECE_CHARS`` characters (1 MiB of UTF-8 at most, well
under gRPC's default 4 MB message limit).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from ragloop.core.domain import StreamedDocument
from ragloop.core.errors import InvalidInput
from ragloop.core.grpc.convert import dict_from_struct, struct_from_dict
from ragloop.v1 import retriever_pb2

TEXT_PIECE_CHARS = 256 * 1024

Part = retriever_pb2.IngestDocumentStreamRequest


async def stream_to_proto(
    documents: AsyncIterable[StreamedDocument], *, collection: str, tenant: str
) -> AsyncIterator[Part]:
    """The messages of a stream carrying ``documents``; pieces are re-cut to fit a message."""
    yield Part(header=retriever_pb2.IngestStreamHeader(collection=collection, tenant=tenant))
    async for document in documents:
        start = retriever_pb2.DocumentStart(
            source=document.source, metadata=struct_from_dict(document.metadata)
        )
        yield Part(document=start)
        async for piece in document.pieces:
            for offset in range(0, len(piece), TEXT_PIECE_CHARS):
                yield Part(text=piece[offset : offset + TEXT_PIECE_CHARS])


class StreamReader:
    """Reads a stream of messages back: :meth:`header` first, then :meth:`documents`."""

    def __init__(self, parts: AsyncIterable[Part]) -> None:
        self._parts = aiter(parts)
        self._pushed_back: Part | None = None

    async def _next(self) -> Part | None:
        if self._pushed_back is not None:
            part, self._pushed_back = self._pushed_back, None
            return part
        return await anext(self._parts, None)

    async def header(self) -> retriever_pb2.IngestStreamHeader:
        """The stream's header; an empty one (defaults) when the stream starts without it."""
        part = await self._next()
        if part is not None and part.WhichOneof("part") == "header":
            return part.header
        self._pushed_back = part
        return retriever_pb2.IngestStreamHeader()

    async def documents(self) -> AsyncIterator[StreamedDocument]:
        """The documents, each with its pieces; pieces a consumer leaves unread are skipped."""
        position = 0
        while (part := await self._next()) is not None:
            kind = part.WhichOneof("part")
            if kind != "document":
                raise InvalidInput(
                    f"message {kind or 'without content'} where document {position} should "
                    "start: a stream is an optional header, then per document a document start "
                    "and its text"
                )
            pieces = self._pieces()
            yield StreamedDocument(
                part.document.source, pieces, dict_from_struct(part.document.metadata)
            )
            async for _ in pieces:
                pass
            position += 1

    async def _pieces(self) -> AsyncIterator[str]:
        while (part := await self._next()) is not None:
            if part.WhichOneof("part") != "text":
                self._pushed_back = part
                return
            yield part.text
