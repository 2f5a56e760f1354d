"""The parts of ``python -m bench.compare``: ragloop against the LangGraph baseline."""
