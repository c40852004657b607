"""Batches of runs: suites, compare, upgrade-check, the report index."""
