"""ragloop rewriter: writes a new search query when the passages found failed grading."""
