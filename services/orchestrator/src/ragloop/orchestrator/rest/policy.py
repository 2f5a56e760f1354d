"""Where bench.quality (issue 47's file) imports ``server_policy`` from; the resolution lives in
``application.policy``. Remove once that import points there."""

from ragloop.orchestrator.application.policy import resolve_policy, server_policy

__all__ = ["resolve_policy", "server_policy"]
