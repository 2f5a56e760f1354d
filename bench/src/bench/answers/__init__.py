"""``python -m bench.quality``: answer-level accuracy of ragloop, single-shot ragloop, plain RAG and
the LangGraph baseline on SQuAD 2.0 and PubMedQA. One module a job: ``squad`` (the data),
``items`` (the questions of a split), ``scoring``, ``systems``, ``runs`` (the runs file),
``summary`` (the figures) and ``report`` (the tables)."""
