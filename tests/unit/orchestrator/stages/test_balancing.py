"""What a stage address setting names and how the orchestrator's channel balances over it; the
launcher's replicas of a stage: their ports, names, model servers and the address it gives the
orchestrator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragloop.core.grpc.tracing import peer_attributes
from ragloop.core.metrics.exporter import DEFAULT_METRICS_PORTS
from ragloop.local.cli import model_server_count, replica_counts
from ragloop.local.launcher import STAGES, Stack, StackConfig, essential, service_of
from ragloop.orchestrator.settings import OrchestratorSettings
from ragloop.orchestrator.stages.balancing import channel_options, grpc_target


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("127.0.0.1:50052", "127.0.0.1:50052"),
        ("grader:50052", "grader:50052"),
        ("dns:///grader.ragloop.svc:50052", "dns:///grader.ragloop.svc:50052"),
        ("127.0.0.1:50052,127.0.0.1:50062", "ipv4:127.0.0.1:50052,127.0.0.1:50062"),
        (" 10.0.0.1:1, 10.0.0.2:1 ", "ipv4:10.0.0.1:1,10.0.0.2:1"),
        ("[::1]:50052,[::1]:50062", "ipv6:[::1]:50052,[::1]:50062"),
        ("ipv4:127.0.0.1:1,127.0.0.1:2", "ipv4:127.0.0.1:1,127.0.0.1:2"),
    ],
)
def test_an_address_becomes_a_grpc_target(address: str, target: str) -> None:
    assert grpc_target(address) == target


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("grader-a:1,grader-b:1", "use dns:///NAME:PORT"),
        ("127.0.0.1,127.0.0.2", "IP:PORT"),
        ("127.0.0.1:1,[::1]:1", "mixes IPv4 and IPv6"),
    ],
)
def test_a_list_gRPC_cannot_balance_over_is_refused_at_startup(address: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says.replace("(", r"\(")):
        OrchestratorSettings(grader_address=address)
    assert OrchestratorSettings(grader_address="127.0.0.1:1,127.0.0.1:2").grader_address


def test_every_channel_is_round_robin_with_health_checking() -> None:
    options = dict(channel_options("grader:50052"))
    config = json.loads(options["grpc.service_config"])
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    assert config["healthCheckConfig"] == {"serviceName": ""}
    assert "grpc.default_authority" not in options
    # A list has no name of its own: TLS verifies its first backend's.
    listed = dict(channel_options("127.0.0.1:50052,127.0.0.1:50062"))
    assert listed["grpc.default_authority"] == "127.0.0.1:50052"


@pytest.mark.parametrize(
    ("address", "attributes"),
    [
        ("127.0.0.1:50052", {"server.address": "127.0.0.1", "server.port": 50052}),
        ("[::1]:50052", {"server.address": "::1", "server.port": 50052}),
        ("dns:///grader:50052", {"server.address": "grader", "server.port": 50052}),
        ("127.0.0.1:1,127.0.0.1:2", {"server.address": "127.0.0.1:1,127.0.0.1:2"}),
        ("dns://10.0.0.10/grader:50052", {"server.address": "dns://10.0.0.10/grader:50052"}),
    ],
)
def test_a_call_span_names_the_server_an_address_names(
    address: str, attributes: dict[str, object]
) -> None:
    assert peer_attributes(address) == attributes


def test_replicas_listen_ten_ports_apart_and_the_orchestrator_gets_them_all() -> None:
    config = StackConfig(replicas={"grader": 3}, model_servers=2)
    assert [(r.name, r.port) for r in config.stage_replicas("grader")] == [
        ("grader", 50052),
        ("grader-2", 50062),
        ("grader-3", 50072),
    ]
    assert config.stage_address("grader") == "127.0.0.1:50052,127.0.0.1:50062,127.0.0.1:50072"
    assert config.stage_address("generator") == "127.0.0.1:50054"
    assert [r.name for r in config.processes()] == [
        "model-server",
        "model-server-2",
        "retriever",
        "grader",
        "grader-2",
        "grader-3",
        "rewriter",
        "generator",
    ]
    # Replica i calls model server i mod 2.
    assert [config.model_url_for(r.index) for r in config.stage_replicas("grader")] == [
        "http://127.0.0.1:8090",
        "http://127.0.0.1:8091",
        "http://127.0.0.1:8090",
    ]
    assert config.listening_ports()["grader-3"] == 50072
    assert config.listening_ports()["model-server-2"] == 8091


def test_metrics_ports_of_later_replicas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGLOOP_METRICS_PORT", raising=False)
    config = StackConfig(replicas={"grader": 2, "generator": 2}, metrics_ports={"generator": 0})
    grader, grader_2 = config.stage_replicas("grader")
    assert (config.metrics_port(grader), config.metrics_port(grader_2)) == (None, 9112)
    assert config.metrics_port(config.stage_replicas("generator")[1]) == 0  # off like its stage
    monkeypatch.setenv("RAGLOOP_METRICS_PORT", "0")
    assert config.metrics_port(grader_2) == 0


def test_free_ports_for_every_replica(tmp_path: Path) -> None:
    config = StackConfig.on_free_ports(tmp_path, replicas={"grader": 2}, model_servers=2)
    ports = list(config.listening_ports().values())
    assert len(ports) == len(set(ports)) == 2 + 2 + 5  # REST and RagService, 2 models, 5 stages


def test_free_ports_give_every_stage_a_metrics_port_of_its_own(tmp_path: Path) -> None:
    """A test or benchmark stack runs beside ``make run``, whose stages hold the default
    metrics ports."""
    config = StackConfig.on_free_ports(tmp_path, metrics_ports={"generator": 0})
    assert config.metrics_ports["generator"] == 0
    chosen = [config.metrics_ports[stage] for stage in STAGES if stage != "generator"]
    assert len(set(chosen)) == len(chosen) == len(STAGES) - 1
    assert not set(chosen) & set(DEFAULT_METRICS_PORTS.values())


def test_retriever_replicas_need_a_milvus_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGLOOP_MILVUS_URI", raising=False)
    with pytest.raises(Exception, match="retriever replicas need a Milvus server"):
        Stack(StackConfig(replicas={"retriever": 2}))._check_replicas()
    served = StackConfig(replicas={"retriever": 2}, extra_env={"RAGLOOP_MILVUS_URI": "http://m:1"})
    Stack(served)._check_replicas()


def test_process_names() -> None:
    assert [service_of(n) for n in ("grader", "grader-2", "model-server", "model-server-3")] == [
        "grader",
        "grader",
        "model-server",
        "model-server",
    ]
    assert essential("model-server-2") and essential("orchestrator")
    assert not essential("grader") and not essential("grader-2")


def test_replicas_option() -> None:
    assert replica_counts("grader=2, generator=3") == {"grader": 2, "generator": 3}
    assert replica_counts("") == {}
    for wrong in ("grader", "grader=0", "grader=10", "milvus=2", "grader=two"):
        with pytest.raises(Exception, match="is not STAGE=N"):
            replica_counts(wrong)
    assert model_server_count("2") == 2
    with pytest.raises(Exception, match="from 1 to 4"):
        model_server_count("5")
