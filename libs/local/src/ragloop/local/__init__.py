"""ragloop on one machine with no Docker and no Ollama: a llama.cpp model server, its model, and a
launcher that runs the four stages and the orchestrator as separate processes."""
