"""gRPC edge code shared by every service: server bootstrap, error mapping, proto conversion."""
