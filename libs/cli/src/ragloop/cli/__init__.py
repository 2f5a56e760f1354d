"""The ``ragloop`` command line: a client of the orchestrator's REST API."""
