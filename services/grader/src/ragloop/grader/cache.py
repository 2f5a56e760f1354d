"""An in-memory LRU cache of grades, so a passage that comes back in a later rewrite round (or a
later request with the same question) is not graded again."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from ragloop.core.domain import Document, Grade
from ragloop.core.metrics import count_cache_lookup


@dataclass(frozen=True)
class GradeKey:
    """What a verdict depends on. The text digest guards against an id whose source was
    re-ingested with different text; the grader's version (its model, prompt and threshold)
    against a changed grader."""

    question: str
    document_id: str
    text_digest: str
    version: str

    @classmethod
    def of(cls, question: str, doc: Document, *, version: str) -> GradeKey:
        digest = hashlib.blake2b(doc.text.encode(), digest_size=12).hexdigest()
        return cls(" ".join(question.split()), doc.id, digest, version)


class GradeCache:
    """Least-recently-used grades, at most ``size`` of them (0 turns caching off).

    ``hits`` and ``misses`` count lookups since start, as does the grade cache metric; with the
    cache off nothing is looked up. Single event loop only (no locking).
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("cache size must be >= 0")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._grades: OrderedDict[GradeKey, Grade] = OrderedDict()

    def __len__(self) -> int:
        return len(self._grades)

    def get(self, key: GradeKey) -> Grade | None:
        if self.size == 0:
            return None
        grade = self._grades.get(key)
        count_cache_lookup(hit=grade is not None)
        if grade is None:
            self.misses += 1
            return None
        self.hits += 1
        self._grades.move_to_end(key)
        return grade

    def put(self, key: GradeKey, grade: Grade) -> None:
        if self.size == 0:
            return
        self._grades[key] = grade
        self._grades.move_to_end(key)
        while len(self._grades) > self.size:
            self._grades.popitem(last=False)
