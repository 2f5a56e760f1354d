"""Run the whole service set on one machine: llama.cpp's server, the four stages and the
orchestrator, each its own process on 127.0.0.1, with Milvus Lite embedded in the retriever.

A stage may run as several replicas (``StackConfig.replicas``), each its own process on its own
port, supervised like the others; the orchestrator balances its calls over them (its address
setting lists them all). Several llama-servers may share the cores (``model_servers``): replica
i of a stage calls server i mod their number."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ragloop.core.grpc.tls import ClientTls, sync_channel
from ragloop.core.names import Stage, values
from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import STAGE_SPECS, stage_spec
from ragloop.local.model_server import MODEL_SLOTS, model_server_command
from ragloop.local.models import DEFAULT_MODEL, SplitModel, ensure_model
from ragloop.local.processes import ChildProcess, StartupError, free_port, port_is_free
from ragloop.local.readiness import grpc_serving, http_ok, stage_client_tls
from ragloop.local.supervisor import RestartPolicy, Supervisor
from ragloop.v1 import retriever_pb2, retriever_pb2_grpc

log = logging.getLogger(__name__)

CORPUS_SUFFIXES = {".md", ".txt"}
STAGES = values(Stage)
PORT_FIELDS = ("http_port", "orchestrator_grpc_port", "model_port")  # besides the stages' ports
MODEL_SERVER = "model-server"
ORCHESTRATOR = "orchestrator"
REPLICA_PORT_STEP = 10  # replica i of a stage listens on its port + 10·i (50052, 50062, …)


def corpus_files(corpus: Path) -> list[tuple[str, str]]:
    """Every .md/.txt file under ``corpus`` as (source, text), the source its path from the
    folder's parent (``docs/storage.md``): what ``make run`` ingests."""
    files = sorted(p for p in corpus.rglob("*") if p.suffix in CORPUS_SUFFIXES and p.is_file())
    return [(p.relative_to(corpus.parent).as_posix(), p.read_text(encoding="utf-8")) for p in files]


def default_stage_ports() -> dict[str, int]:
    return {spec.name.value: spec.port for spec in STAGE_SPECS}


def process_name(service: str, index: int) -> str:
    """The first process of a stage or model server is named after it, the others numbered:
    grader, grader-2, grader-3."""
    return service if index == 0 else f"{service}-{index + 1}"


def service_of(name: str) -> str:
    """What a process is a replica of: grader-2 → grader."""
    service, _, number = name.rpartition("-")
    return service if service and number.isdigit() else name


def essential(name: str) -> bool:
    """Without a model server or the orchestrator queries fail, so giving up on one ends the
    run; a stage given up on leaves the others serving (its other replicas take its calls, or
    the orchestrator answers 503 naming it)."""
    return service_of(name) in (MODEL_SERVER, ORCHESTRATOR)


@dataclass(frozen=True)
class Replica:
    """One process of a stage or of the model servers."""

    service: str
    index: int  # 0 for the first
    port: int

    @property
    def name(self) -> str:
        return process_name(self.service, self.index)


@dataclass
class StackConfig:
    host: str = "127.0.0.1"
    http_port: int = 8000
    orchestrator_grpc_port: int = 50050  # RagService, the orchestrator's gRPC face
    model_port: int = 8090
    # The gRPC port of each stage by name (stage_registry's defaults).
    stage_ports: dict[str, int] = field(default_factory=default_stage_ports)
    data_dir: Path = Path("data")
    models_dir: Path = Path(".models")
    log_dir: Path = Path(".run/logs")
    model_threads: int = field(default_factory=lambda: max(1, min(os.cpu_count() or 2, 8)))
    model_context: int = 8192
    startup_timeout_s: float = 180.0
    extra_env: dict[str, str] = field(default_factory=dict)
    # RAGLOOP_METRICS_PORT of each stage process by name (grader, grader-2); a stage not named
    # keeps its default (9101-9104), a later replica not named its stage's + 10·i.
    metrics_ports: dict[str, int] = field(default_factory=dict)
    # The GGUF chat model llama-server serves (and the stages name).
    chat_model: SplitModel = DEFAULT_MODEL
    # A chat model server that is already running (OpenAI-compatible, as llama-server): then no
    # llama-server is started and the stages use this one.
    model_url: str | None = None
    # Processes of each stage by name (default 1), and llama-servers (on model_port + k) sharing
    # model_threads between them.
    replicas: dict[str, int] = field(default_factory=dict)
    model_servers: int = 1
    # Requests each llama-server serves at once (--parallel); the grader asks as many at once
    # unless RAGLOOP_GRADER_CONCURRENCY says otherwise.
    model_slots: int = MODEL_SLOTS
    # The port of a later replica or model server by process name ("grader-2"); else as above.
    replica_ports: dict[str, int] = field(default_factory=dict)

    @classmethod
    def on_free_ports(cls, work_dir: Path, **settings: Any) -> StackConfig:
        """Every port a free loopback one, data and logs under ``work_dir`` (for tests and
        benchmarks that run beside other stacks, ``make run`` among them: the stages' metrics
        ports too, where ``settings`` name none); ``settings`` are the other fields."""
        ports = {name: free_port() for name in PORT_FIELDS}
        stage_ports = {name: free_port() for name in STAGES}
        metrics_ports = {name: free_port() for name in STAGES} | settings.pop("metrics_ports", {})
        config = cls(
            **ports,
            stage_ports=stage_ports,
            metrics_ports=metrics_ports,
            data_dir=work_dir / "data",
            log_dir=work_dir / "logs",
            **settings,
        )
        later = [r for r in config.processes() if r.index > 0]
        config.replica_ports = {r.name: free_port() for r in later} | config.replica_ports
        return config

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def stage_replicas(self, name: str) -> list[Replica]:
        return self._replicas(name, self.replicas.get(name, 1), self.stage_ports[name])

    def model_server_replicas(self) -> list[Replica]:
        return self._replicas(MODEL_SERVER, self.model_servers, self.model_port, step=1)

    def _replicas(
        self, service: str, count: int, port: int, step: int = REPLICA_PORT_STEP
    ) -> list[Replica]:
        def port_of(i: int) -> int:
            return self.replica_ports.get(process_name(service, i), port + step * i) if i else port

        return [Replica(service, i, port_of(i)) for i in range(count)]

    def processes(self) -> list[Replica]:
        """Every model server (none with ``model_url``) and stage process, in start order."""
        servers = [] if self.model_url else self.model_server_replicas()
        return servers + [r for name in STAGES for r in self.stage_replicas(name)]

    def stage_address(self, name: str) -> str:
        """The orchestrator's address of a stage: its replicas, comma-separated."""
        return ",".join(f"{self.host}:{r.port}" for r in self.stage_replicas(name))

    def model_url_for(self, index: int) -> str:
        """The chat model server replica ``index`` of a stage calls."""
        if self.model_url:
            return self.model_url
        servers = self.model_server_replicas()
        return f"http://{self.host}:{servers[index % len(servers)].port}"

    def metrics_port(self, replica: Replica) -> int | None:
        """RAGLOOP_METRICS_PORT of a stage process not named in ``metrics_ports`` (None: as the
        environment says). A later replica takes its stage's port + 10·i, none when that is off."""
        if replica.index == 0:
            return None
        base = self.metrics_ports.get(replica.service)
        if base is None:
            setting = {**os.environ, **self.extra_env}.get("RAGLOOP_METRICS_PORT", "auto")
            base = stage_spec(replica.service).metrics_port if setting == "auto" else int(setting)
        return 0 if base == 0 else base + REPLICA_PORT_STEP * replica.index

    def port_variables(self) -> dict[str, int]:
        """Each port by the environment variable that sets it (what ``make run`` reads)."""
        return {
            "RAGLOOP_HTTP_PORT": self.http_port,
            "RAGLOOP_ORCHESTRATOR_GRPC_PORT": self.orchestrator_grpc_port,
            "RAGLOOP_MODEL_PORT": self.model_port,
            **{setting_variable(s.port_setting): self.stage_ports[s.name] for s in STAGE_SPECS},
        }

    def listening_ports(self) -> dict[str, int]:
        """Every port the stack listens on, by what sets it (a variable, or a later replica)."""
        later = {r.name: r.port for r in self.processes() if r.index > 0}
        return {**self.port_variables(), **later}


class Stack:
    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.children: list[ChildProcess] = []
        self._ready: dict[str, Callable[[], bool]] = {}  # each child's readiness probe
        self._tls: ClientTls | None = None  # how the launcher reaches TLS stages

    @property
    def model_url(self) -> str:
        return self.config.model_url_for(0)

    # --- start -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start every process, wait until each is ready, then until the orchestrator reports
        all stages ready."""
        c = self.config
        self._check_ports()
        self._check_replicas()
        env = self._service_env()
        merged = {**os.environ, **env}
        self._tls = stage_client_tls(merged)
        python = sys.executable
        try:
            for server in [] if c.model_url else c.model_server_replicas():
                url = c.model_url_for(server.index)
                self._spawn(
                    server.name,
                    model_server_command(
                        ensure_model(c.chat_model, c.models_dir),
                        host=c.host,
                        port=server.port,
                        threads=max(1, c.model_threads // c.model_servers),
                        context=c.model_context,
                        slots=c.model_slots,
                    ),
                    env,
                    ready=lambda u=url: http_ok(f"{u}/health"),
                )
            for spec in STAGE_SPECS:
                for replica in c.stage_replicas(spec.name):
                    address = f"{c.host}:{replica.port}"
                    self._spawn(
                        replica.name,
                        [python, "-m", spec.module],
                        {**env, **self._replica_env(replica)},
                        ready=lambda a=address: grpc_serving(a, tls=self._tls),
                    )
            orchestrator = self._spawn(
                ORCHESTRATOR,
                [python, "-m", "ragloop.orchestrator"],
                env,
                # Its own readiness, not its stages' (/readyz): what a restart waits for.
                ready=lambda: http_ok(f"{c.base_url}/healthz"),
            )
            for child in list(self.children):
                child.wait_until(self._ready[child.name], timeout_s=c.startup_timeout_s)
            orchestrator.wait_until(
                lambda: http_ok(f"{c.base_url}/readyz"), timeout_s=c.startup_timeout_s
            )
        except BaseException:
            self.stop()
            raise

    def stage_address(self, name: str) -> str:
        return self.config.stage_address(name)

    def replica_address(self, name: str) -> str:
        """host:port of one stage process, by its name (grader, grader-2)."""
        c = self.config
        replicas = c.stage_replicas(service_of(name))
        return next(f"{c.host}:{r.port}" for r in replicas if r.name == name)

    def _check_ports(self) -> None:
        c = self.config
        ports = c.listening_ports()
        busy = [f"{port} ({var})" for var, port in ports.items() if not port_is_free(c.host, port)]
        if busy:
            raise StartupError(
                f"ports already in use on {c.host}: {', '.join(busy)}. Stop what holds them "
                "(another `make run`?) or choose other ports with those variables."
            )

    def _check_replicas(self) -> None:
        c = self.config
        if c.replicas.get(Stage.RETRIEVER, 1) > 1:
            uri = {**os.environ, **c.extra_env}.get("RAGLOOP_MILVUS_URI", "")
            if "://" not in uri:
                raise StartupError(
                    "retriever replicas need a Milvus server (RAGLOOP_MILVUS_URI=http://HOST:19530):"
                    " Milvus Lite's files belong to one retriever process"
                )

    def _replica_env(self, replica: Replica) -> dict[str, str]:
        """What one stage process is told besides the common environment."""
        env = {
            setting_variable(stage_spec(replica.service).port_setting): str(replica.port),
            "RAGLOOP_LLAMACPP_URL": self.config.model_url_for(replica.index),
        }
        metrics_port = self.config.metrics_port(replica)
        if metrics_port is not None:
            env["RAGLOOP_METRICS_PORT"] = str(metrics_port)
        return env

    def _service_env(self) -> dict[str, str]:
        c = self.config
        env = {
            "RAGLOOP_BIND_HOST": c.host,
            "RAGLOOP_HTTP_PORT": str(c.http_port),
            "RAGLOOP_ORCHESTRATOR_GRPC_PORT": str(c.orchestrator_grpc_port),
            "RAGLOOP_LLAMACPP_URL": self.model_url,
        }
        for spec in STAGE_SPECS:
            env[setting_variable(spec.port_setting)] = str(c.stage_ports[spec.name])
            env[setting_variable(spec.address_setting)] = c.stage_address(spec.name)
        # A user's own choice of Milvus, chat model or grader concurrency wins over the defaults.
        env.setdefault("RAGLOOP_MILVUS_URI", str((c.data_dir / "milvus.db").resolve()))
        env.setdefault("RAGLOOP_CHAT_MODEL", f"llamacpp:{c.chat_model.name}")
        env["RAGLOOP_GRADER_CONCURRENCY"] = str(c.model_slots)
        for name in ("RAGLOOP_MILVUS_URI", "RAGLOOP_CHAT_MODEL", "RAGLOOP_GRADER_CONCURRENCY"):
            env[name] = os.environ.get(name, env[name])
        env.update(c.extra_env)
        return env

    def _spawn(
        self, name: str, command: list[str], env: dict[str, str], *, ready: Callable[[], bool]
    ) -> ChildProcess:
        if name in self.config.metrics_ports:
            env = {**env, "RAGLOOP_METRICS_PORT": str(self.config.metrics_ports[name])}
        child = ChildProcess(name, command, self.config.log_dir / f"{name}.log", env)
        child.start()
        self.children.append(child)
        self._ready[name] = ready
        return child

    # --- faults ----------------------------------------------------------------------------

    def child(self, name: str) -> ChildProcess:
        for child in self.children:
            if child.name == name:
                return child
        raise KeyError(f"no process named {name!r}; there are {[c.name for c in self.children]}")

    def kill(self, name: str) -> None:
        """SIGKILL one process (a crash): no graceful shutdown, nothing flushed."""
        self.child(name).kill()

    def supervisor(self, policy: RestartPolicy | None = None) -> Supervisor:
        """A supervisor of every process, all of them running and ready (after :meth:`start`)."""
        if policy is None:
            policy = RestartPolicy(ready_timeout_s=self.config.startup_timeout_s)
        return Supervisor(self.children, self._ready, policy)

    def restart(self, name: str) -> None:
        """Start a process that stopped again, as it was started, and wait until it is ready;
        a stage, also until the orchestrator reaches it (it reconnects on its own schedule)."""
        child = self.child(name)
        if child.running:
            raise StartupError(f"{name} is still running")
        child.start()
        child.wait_until(self._ready[name], timeout_s=self.config.startup_timeout_s)
        stage = service_of(name)
        if stage in STAGES:
            timeout_s = self.config.startup_timeout_s
            child.wait_until(lambda: self._orchestrator_reaches(stage), timeout_s=timeout_s)

    def _orchestrator_reaches(self, stage: str) -> bool:
        try:
            response = httpx.get(f"{self.config.base_url}/readyz", timeout=5)
            return response.json()["stages"][stage] is True
        except (httpx.HTTPError, ValueError, KeyError):
            return False

    def served_calls(self, name: str) -> tuple[int, int]:
        """Calls of its own gRPC service (not health) a stage process has started and handled
        since it started, from its /metrics (on the port ``metrics_ports`` gives it)."""
        metrics = f"http://{self.config.host}:{self.config.metrics_ports[name]}/metrics"
        services = stage_spec(service_of(name)).grpc_services
        totals = dict.fromkeys(("grpc_server_started_total", "grpc_server_handled_total"), 0.0)
        for family in text_string_to_metric_families(httpx.get(metrics, timeout=5).text):
            for sample in family.samples:
                if sample.name in totals and sample.labels.get("grpc_service") in services:
                    totals[sample.name] += sample.value
        started, handled = totals.values()
        return int(started), int(handled)

    # --- sample corpus ---------------------------------------------------------------------

    def collection_chunk_count(self) -> int:
        with sync_channel(self.replica_address(Stage.RETRIEVER), self._tls) as channel:
            stub = retriever_pb2_grpc.RetrieverServiceStub(channel)
            reply = stub.DescribeCollection(retriever_pb2.DescribeCollectionRequest(), timeout=30)
        return reply.chunk_count if reply.exists else 0

    def ingest_directory(self, corpus: Path) -> int:
        """Ingest every .md/.txt file under ``corpus`` via the REST API; return chunks written."""
        documents = [{"source": s, "text": t} for s, t in corpus_files(corpus)]
        if not documents:
            raise StartupError(f"no .md or .txt files under {corpus}")
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
