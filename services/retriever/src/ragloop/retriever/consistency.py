"""A MilvusClient whose every read is Strong: read-your-writes across retriever replicas.

Several retrievers share one Milvus, and the orchestrator sends each call to the next replica:
an ingest or delete on one replica is followed by searches on another. Session consistency
covers only the writes of the reading client's own connection (and on Milvus 2.3 not even its
deletes, whose replies carry no timestamp), so another replica could miss new chunks or still
see deleted ones. A Strong read waits until the server has applied every write acknowledged
before it, whichever client made it (docs/decisions/0023-read-your-writes-across-replicas.md:
the rule, and what it costs). Milvus Lite is always strongly consistent.
"""

from __future__ import annotations

from typing import Any

from pymilvus import MilvusClient

STRONG = "Strong"


class StrongReadsClient(MilvusClient):
    def search(self, *args: Any, **kwargs: Any) -> Any:
        return super().search(*args, **{**kwargs, "consistency_level": STRONG})

    def hybrid_search(self, *args: Any, **kwargs: Any) -> Any:
        return super().hybrid_search(*args, **{**kwargs, "consistency_level": STRONG})

    def query(self, *args: Any, **kwargs: Any) -> Any:
        return super().query(*args, **{**kwargs, "consistency_level": STRONG})

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return super().get(*args, **{**kwargs, "consistency_level": STRONG})
