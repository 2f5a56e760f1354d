"""ragloop rewriter: writes a new search query when the passages found failed grading, and makes
a follow-up question standalone from its conversation."""
