"""Run the whole service set on one machine: llama.cpp's server, the four stages and the
orchestrator, each its own process on 127.0.0.1, with Milvus Lite embedded in the retriever."""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx

from ragloop.local.model_server import model_server_command
from ragloop.local.models import QWEN_CODER_1_5B, ensure_model
from ragloop.local.processes import ChildProcess, StartupError, port_is_free
from ragloop.local.readiness import grpc_serving, http_ok
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc

log = logging.getLogger(__name__)

CORPUS_SUFFIXES = {".md", ".txt"}


@dataclass
class StackConfig:
    host: str = "127.0.0.1"
    http_port: int = 8000
    orchestrator_grpc_port: int = 50050  # RagService, the orchestrator's gRPC face
    model_port: int = 8090
    retriever_port: int = 50051
    grader_port: int = 50052
    rewriter_port: int = 50053
    generator_port: int = 50054
    data_dir: Path = Path("data")
    models_dir: Path = Path(".models")
    log_dir: Path = Path(".run/logs")
    model_threads: int = field(default_factory=lambda: max(1, min(os.cpu_count() or 2, 8)))
    model_context: int = 8192
    startup_timeout_s: float = 180.0
    extra_env: dict[str, str] = field(default_factory=dict)
    # RAGLOOP_METRICS_PORT of each stage by name; a stage not named keeps its default (9101-9104).
    metrics_ports: dict[str, int] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def stage_address(self, port: int) -> str:
        return f"{self.host}:{port}"


class Stack:
    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.children: list[ChildProcess] = []

    # --- start -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start every process and wait until the orchestrator reports all stages ready."""
        c = self.config
        self._check_ports()
        model_path = ensure_model(QWEN_CODER_1_5B, c.models_dir)
        env = self._service_env()
        python = sys.executable
        try:
            model = self._spawn(
                "model-server",
                model_server_command(
                    model_path,
                    host=c.host,
                    port=c.model_port,
                    threads=c.model_threads,
                    context=c.model_context,
                ),
                env,
            )
            stages = {
                name: self._spawn(name, [python, "-m", f"ragloop.{name}"], env)
                for name in ("retriever", "grader", "rewriter", "generator")
            }
            orchestrator = self._spawn("orchestrator", [python, "-m", "ragloop.orchestrator"], env)
            model.wait_until(
                lambda: http_ok(f"http://{c.host}:{c.model_port}/health"),
                timeout_s=c.startup_timeout_s,
            )
            for name, child in stages.items():
                address = c.stage_address(getattr(c, f"{name}_port"))
                child.wait_until(lambda a=address: grpc_serving(a), timeout_s=c.startup_timeout_s)
            orchestrator.wait_until(
                lambda: http_ok(f"{c.base_url}/readyz"), timeout_s=c.startup_timeout_s
            )
        except BaseException:
            self.stop()
            raise

    def _check_ports(self) -> None:
        c = self.config
        ports = {
            "RAGLOOP_HTTP_PORT": c.http_port,
            "RAGLOOP_ORCHESTRATOR_GRPC_PORT": c.orchestrator_grpc_port,
            "RAGLOOP_MODEL_PORT": c.model_port,
            "RAGLOOP_RETRIEVER_PORT": c.retriever_port,
            "RAGLOOP_GRADER_PORT": c.grader_port,
            "RAGLOOP_REWRITER_PORT": c.rewriter_port,
            "RAGLOOP_GENERATOR_PORT": c.generator_port,
        }
        busy = [f"{port} ({var})" for var, port in ports.items() if not port_is_free(c.host, port)]
        if busy:
            raise StartupError(
                f"ports already in use on {c.host}: {', '.join(busy)}. Stop what holds them "
                "(another `make run`?) or choose other ports with those variables."
            )

    def _service_env(self) -> dict[str, str]:
        c = self.config
        env = {
            "RAGLOOP_BIND_HOST": c.host,
            "RAGLOOP_HTTP_PORT": str(c.http_port),
            "RAGLOOP_ORCHESTRATOR_GRPC_PORT": str(c.orchestrator_grpc_port),
            "RAGLOOP_RETRIEVER_PORT": str(c.retriever_port),
            "RAGLOOP_GRADER_PORT": str(c.grader_port),
            "RAGLOOP_REWRITER_PORT": str(c.rewriter_port),
            "RAGLOOP_GENERATOR_PORT": str(c.generator_port),
            "RAGLOOP_RETRIEVER_ADDRESS": c.stage_address(c.retriever_port),
            "RAGLOOP_GRADER_ADDRESS": c.stage_address(c.grader_port),
            "RAGLOOP_REWRITER_ADDRESS": c.stage_address(c.rewriter_port),
            "RAGLOOP_GENERATOR_ADDRESS": c.stage_address(c.generator_port),
            "RAGLOOP_LLAMACPP_URL": f"http://{c.host}:{c.model_port}",
        }
        # A user's own choice of Milvus or chat model wins over the embedded defaults.
        env.setdefault("RAGLOOP_MILVUS_URI", str((c.data_dir / "milvus.db").resolve()))
        env.setdefault("RAGLOOP_CHAT_MODEL", f"llamacpp:{QWEN_CODER_1_5B.name}")
        for name in ("RAGLOOP_MILVUS_URI", "RAGLOOP_CHAT_MODEL"):
            env[name] = os.environ.get(name, env[name])
        env.update(c.extra_env)
        return env

    def _spawn(self, name: str, command: list[str], env: dict[str, str]) -> ChildProcess:
        if name in self.config.metrics_ports:
            env = {**env, "RAGLOOP_METRICS_PORT": str(self.config.metrics_ports[name])}
        child = ChildProcess(name, command, self.config.log_dir / f"{name}.log", env)
        child.start()
        self.children.append(child)
        return child

    # --- sample corpus ---------------------------------------------------------------------

    def collection_chunk_count(self) -> int:
        address = self.config.stage_address(self.config.retriever_port)
        with grpc.insecure_channel(address) as channel:
            stub = retriever_pb2_grpc.RetrieverServiceStub(channel)
            reply = stub.DescribeCollection(retriever_pb2.DescribeCollectionRequest(), timeout=30)
        return reply.chunk_count if reply.exists else 0

    def ingest_directory(self, corpus: Path) -> int:
        """Ingest every .md/.txt file under ``corpus`` via the REST API; return chunks written."""
        files = sorted(p for p in corpus.rglob("*") if p.suffix in CORPUS_SUFFIXES and p.is_file())
        if not files:
            raise StartupError(f"no .md or .txt files under {corpus}")
        documents = [
            {
                "source": p.relative_to(corpus.parent).as_posix(),
                "text": p.read_text(encoding="utf-8"),
            }
            for p in files
        ]
        response = httpx.post(
            f"{self.config.base_url}/v1/documents", json={"documents": documents}, timeout=600
        )
        if response.status_code != 200:
            raise StartupError(f"ingesting {corpus} failed: {response.status_code} {response.text}")
        return int(response.json()["chunks_written"])

    # --- stop ------------------------------------------------------------------------------

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM every child (orchestrator first), then wait; SIGKILL what does not stop."""
        for child in reversed(self.children):
            child.signal_stop()
        deadline = time.monotonic() + timeout_s
        for child in reversed(self.children):
            child.wait_stopped(max(0.5, deadline - time.monotonic()))
        self.children.clear()

    def unexpected_exits(self) -> list[ChildProcess]:
        return [child for child in self.children if not child.running]
