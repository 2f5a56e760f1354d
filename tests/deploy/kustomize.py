"""deploy/k8s as `kubectl kustomize` renders it: alone, or in an overlay listing components."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

Doc = dict[str, Any]


def kustomize(base: Path, components: tuple[Path, ...] = ()) -> tuple[Doc, ...]:
    """The documents of ``base``, with ``components`` listed in an overlay as a user lists them."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with its built-in kustomize) is not installed")
    overlay = Path(tempfile.mkdtemp(prefix="ragloop-overlay-"))
    try:
        listed = ", ".join(os.path.relpath(c, overlay) for c in components)
        (overlay / "kustomization.yaml").write_text(
            f"resources: [{os.path.relpath(base, overlay)}]\ncomponents: [{listed}]\n"
        )
        result = subprocess.run(
            [kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=120
        )
    finally:
        shutil.rmtree(overlay)
    assert result.returncode == 0, result.stderr
    return tuple(d for d in yaml.safe_load_all(result.stdout) if d)


def find(documents: tuple[Doc, ...], kind: str, name: str) -> Doc:
    (found,) = [d for d in documents if d["kind"] == kind and d["metadata"]["name"] == name]
    return found
