"""``python -m ragloop.orchestrator``: serve the REST API, and RagService over gRPC, over the four
gRPC stages. On SIGTERM it drains (``draining.py``), then stops accepting on both ports and gives
in-flight requests the grace; the app's shutdown then closes the stage clients."""

from __future__ import annotations

import math

import uvicorn

from ragloop.core.logging import configure_logging
from ragloop.core.tracing import setup_tracing
from ragloop.orchestrator.draining import DrainingServer
from ragloop.orchestrator.rest.app import begin_drain, create_app, stop_accepting
from ragloop.orchestrator.settings import OrchestratorSettings


def main() -> None:
    settings = OrchestratorSettings()
    configure_logging("orchestrator", settings.log_level, json_format=settings.log_json)
    setup_tracing("orchestrator", settings.otlp_endpoint)
    app = create_app(settings, serve_grpc=True)
    config = uvicorn.Config(
        app,
        host=settings.bind_host,
        port=settings.http_port,
        log_config=None,  # keep our JSON logging
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_s),
    )
    server = DrainingServer(
        config,
        drain_s=settings.shutdown_drain_s,
        on_drain=lambda: begin_drain(app),
        on_stop=lambda: stop_accepting(app),
    )
    server.run()


if __name__ == "__main__":
    main()
