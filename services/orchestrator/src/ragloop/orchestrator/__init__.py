"""ragloop orchestrator: runs the corrective loop over the four stages and serves the REST API."""
