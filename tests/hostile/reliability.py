"""Figures the hostile-input tests measured, for bench/results/reliability.json: merged into the
flat JSON object at $RAGLOOP_RELIABILITY_OUT when that is set (nothing is written otherwise)."""

from __future__ import annotations

import json
import os
from pathlib import Path

OUT_VARIABLE = "RAGLOOP_RELIABILITY_OUT"


def record_figures(**figures: int | float | str) -> None:
    """Set ``figures`` in the file's object, keeping the keys other tests wrote."""
    target = os.environ.get(OUT_VARIABLE)
    if not target:
        return
    path = Path(target)
    current = json.loads(path.read_text()) if path.exists() and path.stat().st_size else {}
    current.update(figures)
    staged = path.with_name(path.name + ".tmp")
    staged.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    os.replace(staged, path)
