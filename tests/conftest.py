"""Suite-wide: every ``vllm`` or ``ray`` test is also ``serial`` (``make unit`` runs the
``serial`` ones alone, after the parallel pass over the rest); the slowest modules are
collected first, so xdist's ``--dist loadscope`` starts them first and the pass does not end
waiting on one of them; the ``ray`` ones last (see ``_rank``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from support.cli import CliResult, run_cli

ALONE = ("vllm", "ray")

#: the slowest modules of the parallel pass (30–60 s each on 2 CPUs, 2026-12-01), slowest first
SLOW_FIRST = (
    "test_orphans.py",
    "test_fault_matrix.py",
    "test_up.py",
    "test_run.py",
    "test_bench.py",
    "test_tune_cli.py",
    "test_compare.py",
    "test_capture.py",
    "test_kill_resume.py",
    "test_secrets_planted.py",
    "test_recon.py",
)


def _rank(item: pytest.Item) -> int:
    """Collection rank: the slow modules first, the ``ray`` ones last, so nothing a Ray
    cluster leaves behind can reach the tests after them (``ray.init`` made this process a
    child subreaper, which kept every later orphan a zombie child of pytest, until
    ``cluster.connect`` learned to undo it)."""
    name = item.path.name
    if item.get_closest_marker("ray"):
        return len(SLOW_FIRST) + 1
    return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(m) for m in ALONE):
            item.add_marker(pytest.mark.serial)
    items.sort(key=_rank)  # stable: every module keeps its own order


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """``cli(*args, input=None, env=None, cwd=None)``: ``inferlab ARGS...`` run in this process
    through its real entry point; ``.exit_code``, ``.stdout``, ``.stderr`` (tests/support/cli.py)."""
    return run_cli
