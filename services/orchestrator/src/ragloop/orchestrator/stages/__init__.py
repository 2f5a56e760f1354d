"""The stage clients the loop drives: gRPC stubs, retries, circuit breakers."""
