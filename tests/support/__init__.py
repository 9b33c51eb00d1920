"""Helpers shared by the tests (the in-process CLI runner, the reference engine as a
subprocess, the campaign-file factory, ...); fixtures in tests/conftest.py. ``ROOT`` is the
repository's root, ``FIXTURES`` the recorded inputs the tests read (tests/fixtures/)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
