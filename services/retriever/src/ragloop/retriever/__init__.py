"""ragloop retriever: embeds queries and searches Milvus; chunks, embeds and stores documents."""
