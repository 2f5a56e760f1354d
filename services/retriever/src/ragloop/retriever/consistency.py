"""A MilvusClient that reads its own deletes.

Collections are Session-consistent (see ``schema.py``): a read waits until the server has
applied this client's latest write, which pymilvus knows from each write's reply. Milvus 2.3
replies to a delete without its timestamp, so Session does not cover deletes there, and a read
right after one still saw the deleted rows. So the first read of a collection after a delete is
Strong (it waits for the server's next time tick, 200 ms on Milvus 2.3); later reads are Session
again. Milvus Lite ignores consistency levels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pymilvus import MilvusClient

STRONG = "Strong"


class ReadYourDeletesClient(MilvusClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deleted_since_read: set[str] = set()

    def delete(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        result = super().delete(collection_name, *args, **kwargs)
        self._deleted_since_read.add(collection_name)
        return result

    def search(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self._read(super().search, collection_name, args, kwargs)

    def hybrid_search(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self._read(super().hybrid_search, collection_name, args, kwargs)

    def query(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self._read(super().query, collection_name, args, kwargs)

    def get(self, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        return self._read(super().get, collection_name, args, kwargs)

    def _read(
        self, read: Callable[..., Any], collection_name: str, args: tuple, kwargs: dict[str, Any]
    ) -> Any:
        if collection_name in self._deleted_since_read:
            kwargs = {**kwargs, "consistency_level": STRONG}
        result = read(collection_name, *args, **kwargs)
        self._deleted_since_read.discard(collection_name)
        return result
