"""Suite-wide: a ``serial`` test (``make unit`` runs them after the parallel pass over the rest,
in lanes: xdist workers each pinned to CPUs of its own, tests/support/lanes.py) needs a
machine-wide resource, and says which: ``@pytest.mark.serial(reason=...)``;
collection refuses a ``serial`` marker without a reason. Every ``vllm`` test is ``serial`` with
its marker's reason (``ALONE``). The ``ray`` tests are not: each of their two modules starts a
local cluster of its own (its head's GCS on a free port), which ``--dist loadscope`` keeps in one
worker (and ``cluster.connect`` restores the process-reaping flag ``ray.init`` changes, so
nothing a cluster leaves behind reaches the worker's later tests). The slowest modules are collected first, so
the pass does not end waiting on one of them."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.campaign import CampaignToml, write_campaign
from support.cli import CliResult, run_cli
from support.lanes import pin_lane
from support.pkgcopy import isolated_inferlab, sim_configs
from support.simproc import SimFactory, start_sim_thread

#: markers whose tests are serial, and the machine-wide resource each needs
ALONE = {
    "vllm": "all CPUs of its lane: a vLLM CPU server's OpenMP threads take every CPU it may "
    "run on (and its first run builds the shared venv under ~/.cache/inferlab)",
}

#: the slowest modules of the parallel pass (30–60 s each on 2 CPUs, 2026-12-01), slowest first,
#: by their path under tests/. ``make unit`` passes ``--no-loadscope-reorder``: by default
#: xdist's loadscope reorders modules by their number of tests, so test_demo.py (one test, the
#: longest) started last and ended the pass alone (2026-12-02: 381.7 s → 259–303 s)
SLOW_FIRST = (
    "e2e/test_demo.py",  # the whole `inferlab demo --sim`, ~160 s: it starts first
    "e2e/test_cluster.py",  # run/bench --ray, ~250 s on 2 CPUs (2026-12-07), one worker
    "e2e/test_orphans.py",
    "e2e/test_fault_matrix.py",
    "e2e/test_up.py",
    "e2e/test_run.py",
    "e2e/test_levers.py",  # left the serial pass (model clock): ~60 s
    # optimize/tune --ray, ~270 s, its own head: after the first cluster is up (two bring-ups
    # at once, beside mypy and the vLLM lane, both missed Ray's 30 s registration limit)
    "e2e/test_cluster_search.py",
    "e2e/test_recheck.py",  # left the serial pass (model clock): ~50 s
    "e2e/test_bench.py",
    "unit/cli/test_tune.py",
    "unit/report/test_compare.py",
    "e2e/test_capture.py",
    "e2e/test_kill_resume.py",
    "e2e/test_secrets_planted.py",
    # the serial pass's two lanes (2026-12-07, s): 150 + 34 + 15 and 85 + 80 + 27
    "e2e/test_vllm_campaign.py",
    "e2e/test_cross_engine.py",
    "e2e/test_vllm_up.py",
    "e2e/test_recon_vllm.py",
    "e2e/test_vllm_interrupt.py",
)
TESTS = Path(__file__).resolve().parent


def _rank(item: pytest.Item) -> int:
    """Collection rank: the slow modules first (``--dist loadscope`` starts them first)."""
    path = item.path.resolve()
    name = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name
    return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)


def serial_reason(item: pytest.Item) -> str | None:
    """Why ``item`` is serial (None: it is not); ``pytest.UsageError`` for a ``serial``
    marker without a reason."""
    marks = list(item.iter_markers("serial"))
    if not marks:
        return None
    reasons = [str(m.kwargs.get("reason") or "").strip() for m in marks]
    if not all(reasons):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.serial needs reason=: the machine-wide resource the "
            "test needs (a fixed port range, all CPUs, the Ray head); a test that is serial "
            "only because it flips on timing should read the model clock instead "
            "(inferlab.campaign.parts.clock)"
        )
    return reasons[0]


def pytest_configure(config: pytest.Config) -> None:
    pin_lane()  # the serial pass's xdist workers, each on CPUs of its own (support/lanes.py)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name, reason in ALONE.items():
            if item.get_closest_marker(name) and not item.get_closest_marker("serial"):
                item.add_marker(pytest.mark.serial(reason=reason))
        serial_reason(item)
    items.sort(key=_rank)  # stable: every module keeps its own order


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """``cli(*args, input=None, env=None, cwd=None)``: ``inferlab ARGS...`` run in this process
    through its real entry point; ``.exit_code``, ``.stdout``, ``.stderr`` (tests/support/cli.py)."""
    return run_cli


@pytest.fixture
def campaign_toml(tmp_path: Path) -> CampaignToml:
    """``campaign_toml(file="c.toml", **overrides)``: the default campaign (one reference-engine
    config, ``baseline``, 4 requests at C=1; tests/support/campaign.py says which overrides
    update a section and which replace it) written to ``tmp_path / file``, its output in
    ``tmp_path / "out"``; returns the file's path."""

    def write(file: str = "c.toml", **overrides: Any) -> Path:
        return write_campaign(tmp_path / file, **overrides)

    return write


@pytest.fixture
def sim_server() -> Iterator[SimFactory]:
    """``sim_server(*args, env=None)``: the reference engine (``inferlab sim serve --port 0
    ARGS``) on a thread of this process, where the subject is not the process; stopped when
    the test ends. In tests/e2e/ the same call starts a real subprocess (tests/e2e/conftest.py).
    The handle: ``.url``, ``.request()``, ``.truth()``, ``.summary()``, ``.clear_truth()``,
    ``.stderr()``, ``.stop()`` (tests/support/simproc.py)."""
    with contextlib.ExitStack() as stack:
        yield lambda *args, env=None: stack.enter_context(start_sim_thread(*args, env=env))


@pytest.fixture(scope="module")
def engine_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with an inferlab of its own (tests/support/pkgcopy.py): an engine package
    directory a test may change (the files lever), one per module."""
    return isolated_inferlab(tmp_path_factory.mktemp("engine"))


@pytest.fixture
def configs_dir(engine_python: Path) -> Iterator[Path]:
    """That Python's reference-engine kernel-config directory, absent before the test (every
    test leaves the package as it was) and removed after it."""
    d = sim_configs(engine_python)
    assert not d.exists()
    yield d
    if d.is_file():
        d.unlink()
    shutil.rmtree(d, ignore_errors=True)
