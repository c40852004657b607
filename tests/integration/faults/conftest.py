"""Fixtures for the fault integration tests; helpers live in fault_helpers.py."""
from fault_helpers import run  # noqa: F401  (the per-test FaultContext fixture)
