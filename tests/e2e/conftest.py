"""End-to-end tests: what needs a real engine or a real cluster. Here ``sim_server`` starts the
reference engine as a real subprocess (the root conftest's serves it on a thread)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from support.simproc import SimFactory, start_sim


@pytest.fixture
def sim_server() -> Iterator[SimFactory]:
    """``sim_server(*args, env=None)``: ``inferlab sim serve --port 0 ARGS`` as a real
    subprocess, ready (its ready line read), stopped (SIGTERM) when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda *args, env=None: stack.enter_context(start_sim(*args, env=env))
