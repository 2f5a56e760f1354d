"""What the fault tests count — chunks lost or duplicated, requests that hung — added up over a
session and, when ``RAGLOOP_RELIABILITY_OUT`` names a file, merged into that JSON object (for
``bench/src/bench/reliability.py``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.reliability.chunks import Damage

OUT_VARIABLE = "RAGLOOP_RELIABILITY_OUT"


@dataclass
class Tally:
    lost_chunks: int = 0
    duplicated_chunks: int = 0
    hung_requests: int = 0
    fault_checks: int = 0  # faults injected and checked

    def count_chunks(self, result: Damage) -> None:
        """One fault checked by counting the chunks Milvus holds afterwards."""
        self.lost_chunks += result.lost
        self.duplicated_chunks += result.duplicated
        self.fault_checks += 1

    def write(self) -> None:
        target = os.environ.get(OUT_VARIABLE)
        if not target:
            return
        path = Path(target)
        merged = json.loads(path.read_text()) if path.exists() else {}
        for key, value in asdict(self).items():
            merged[key] = merged.get(key, 0) + value
        path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
