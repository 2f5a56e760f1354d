"""`ragloop eval`: a question file run against a running ragloop, each answer scored right, wrong
or missing (right +1, missing 0, wrong -1), with the answers' form checked (docs/evaluation.md)."""
