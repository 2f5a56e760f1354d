"""``python -m ragloop.orchestrator``: serve the REST API, and RagService over gRPC, over the four
gRPC stages. uvicorn handles SIGTERM: the app's shutdown stops the gRPC server gracefully."""

from __future__ import annotations

import uvicorn

from ragloop.core.logging import configure_logging
from ragloop.core.tracing import setup_tracing
from ragloop.orchestrator.rest.app import create_app
from ragloop.orchestrator.settings import OrchestratorSettings


def main() -> None:
    settings = OrchestratorSettings()
    configure_logging("orchestrator", settings.log_level, json_format=settings.log_json)
    setup_tracing("orchestrator", settings.otlp_endpoint)
    uvicorn.run(
        create_app(settings, serve_grpc=True),
        host=settings.bind_host,
        port=settings.http_port,
        log_config=None,  # keep our JSON logging
        timeout_graceful_shutdown=int(settings.shutdown_grace_s),
    )


if __name__ == "__main__":
    main()
