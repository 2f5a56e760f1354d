"""The orchestrator's application layer: the one way in for a query (``queries``), with the
request it takes (``requests``), its tenant (``tenants``), its policy (``policy``) and the answer
body it returns (``answers``). The edges (rest/, rpc/) call it; it calls the loop and core."""
