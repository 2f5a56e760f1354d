"""The corrective loop: pure, no HTTP or gRPC; its policy, budget and events."""
