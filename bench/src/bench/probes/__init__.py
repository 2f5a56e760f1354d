"""Quick checks with the real chat model, minutes not hours, behind a default or a prompt's
wording; not benchmarks (those write bench/results/). Each module's docstring gives its command:
``python -m bench.probes.grader_modes``, ``bench.probes.generator_copying``,
``bench.probes.model_slots``."""
