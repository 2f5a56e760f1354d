"""Who may call, in which tenant, and how many at once: shared by REST and gRPC."""
