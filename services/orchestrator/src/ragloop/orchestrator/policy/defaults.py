"""The defaults of the loop's policy that are not a request's to choose: the server's settings
(``RAGLOOP_ANSWER_MIN_CONFIDENCE`` …) start from them, and so does ``LoopPolicy``."""

from __future__ import annotations

# The generator is called only when the most confident passed passage reaches this confidence
# (0: whenever a passage passed). Off since the answer is refused on what was written (the
# support check): with plain-text answers a floor refused right two-hop bridges, whose passages
# the grader doubts one by one (docs/decisions/0027; it was 0.65, decisions 0003, 0025). Below it
# the round counts as unanswered (a rewrite may find better).
DEFAULT_ANSWER_MIN_CONFIDENCE = 0.0
# An answer written after a round's answer was refused stands only when the generator's
# answer-match check gives it at least this probability of answering the question; below it, the
# refusal stands. First answers keep the generator's own, lower bar, which two-hop answers need
# (decision 0021). 0: no bar of the loop's own.
DEFAULT_ANSWER_MATCH_AFTER_REFUSAL = 0.3
# The passages handed to the generator: as many passed ones, most confident first, as fit this
# many (estimated) tokens, and at most this many passages.
DEFAULT_GENERATION_CONTEXT_TOKENS = 1000
DEFAULT_MAX_GENERATION_DOCUMENTS = 5
# Fill what the passed passages leave of that budget with the others retrieved, most similar
# first: a two-hop question's bridge passage does not answer it alone and fails grading
# (decision 0013).
DEFAULT_FILL_GENERATION_CONTEXT = True
DEFAULT_GENERATION_RESERVE_S = 60.0
# A round passes when at least this share of its passages passed grading: with a grader that
# passes only passages holding the answer, one of the default five (docs/decisions/).
DEFAULT_GRADE_PASS_THRESHOLD = 0.2
