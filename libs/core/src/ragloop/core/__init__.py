"""ragloop's shared core: domain types, stage interfaces, settings, logging, gRPC, models."""
