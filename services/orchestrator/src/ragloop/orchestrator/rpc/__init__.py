"""The gRPC face: RagService and its messages, mapped onto the REST schemas."""
