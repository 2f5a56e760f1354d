"""Errors that stage logic raises. Servicers map them to gRPC status codes; this knows no gRPC."""


class RagloopError(Exception):
    """Base of ragloop's own errors."""


class InvalidInput(RagloopError, ValueError):
    """The caller sent something unusable (empty query, out-of-range number...)."""


class NotFound(RagloopError):
    """The caller named something that does not exist (a collection, a source)."""


class DependencyUnavailable(RagloopError):
    """A dependency (model server, Milvus) cannot be reached or refused the call."""


class DependencyTimeout(RagloopError):
    """A dependency did not answer in time."""


class ConfigurationError(RagloopError):
    """Settings that cannot work, e.g. an unknown model provider or a dimension mismatch."""
