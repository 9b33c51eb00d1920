"""Helpers shared by the tests (the in-process CLI runner, ...); fixtures in tests/conftest.py."""
