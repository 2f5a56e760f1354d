"""ragloop grader: grades each retrieved passage's relevance to the question with a chat model."""
