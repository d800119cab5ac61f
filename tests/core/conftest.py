"""Fixtures for the core's tests: the rd tests' ``handles``, and a producer core on the mock
cluster."""
from tests.rd.conftest import handles  # noqa: F401  (a fixture)
