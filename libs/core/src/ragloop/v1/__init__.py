"""Generated gRPC stubs of the ragloop.v1 protos (make protos). Do not edit by hand."""
