"""deploy/k8s as `kubectl kustomize` renders it: alone, or in an overlay listing components."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.helpers import K8S

Doc = dict[str, Any]
# The Components an overlay may list: no GPUs, the Prometheus Operator, mutual TLS.
COMPONENTS = (K8S / "components" / "ollama-cpu", K8S / "components" / "monitoring", K8S / "mtls")
# What kustomize appends to a generated object's name: a hash of its content.
HASH_SUFFIX = "-[a-z0-9]{10}"


def combinations() -> list[tuple[Path, ...]]:
    """Every set of the Components, the empty one (the base alone) first."""
    return [
        chosen
        for size in range(len(COMPONENTS) + 1)
        for chosen in itertools.combinations(COMPONENTS, size)
    ]


def combination_id(components: tuple[Path, ...]) -> str:
    return "+".join(c.name for c in components) or "base"


def kustomize(base: Path, components: tuple[Path, ...] = ()) -> tuple[Doc, ...]:
    """The documents of ``base``, with ``components`` listed in an overlay as a user lists them."""
    overlay = Path(tempfile.mkdtemp(prefix="ragloop-overlay-"))
    try:
        listed = ", ".join(os.path.relpath(c, overlay) for c in components)
        (overlay / "kustomization.yaml").write_text(
            f"resources: [{os.path.relpath(base, overlay)}]\ncomponents: [{listed}]\n"
        )
        return render(overlay)
    finally:
        shutil.rmtree(overlay)


def render(overlay: Path) -> tuple[Doc, ...]:
    """The documents of a kustomization directory as `kubectl kustomize` renders them."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with its built-in kustomize) is not installed")
    result = subprocess.run(
        [kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return tuple(d for d in yaml.safe_load_all(result.stdout) if d)


def named(document: Doc, name: str) -> bool:
    """Whether the document is ``name``, or the object generated as ``name`` (hash appended)."""
    return (
        re.fullmatch(re.escape(name) + f"({HASH_SUFFIX})?", document["metadata"]["name"])
        is not None
    )


def find(documents: tuple[Doc, ...], kind: str, name: str) -> Doc:
    (found,) = [d for d in documents if d["kind"] == kind and named(d, name)]
    return found
