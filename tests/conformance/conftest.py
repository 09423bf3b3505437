"""Fixtures for the runner's tests; the helpers live in conformance_support (a name no other folder's conftest shares)."""

from conformance_support import basic_cases  # noqa: F401 - a fixture, found by pytest here
