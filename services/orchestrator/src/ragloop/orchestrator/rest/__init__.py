"""The REST face: the FastAPI app, its routes, schemas, middleware and the event stream."""
