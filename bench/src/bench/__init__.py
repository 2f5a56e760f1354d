"""Benchmarks (make bench-*): separate from the tests, they print tables and write results/."""
