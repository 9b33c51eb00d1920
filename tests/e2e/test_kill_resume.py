"""Three SIGKILLs of ``inferlab run`` (during verify, at a point's end while it is scraped and
committed, and during stop), each followed by ``--resume``: the store ends equal to a clean
run's, loses nothing a killed runner had finished, passes ``integrity_check``, leaves no server
running, and the kernel-config files a config installed are restored.
``benchmarks/kill_resume.py`` is the 20-kill version (figures in benchmarks/RESULTS.md)."""

from __future__ import annotations

import sys

import pytest

from support import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from kill_resume import Kill, campaign_under_kills

pytestmark = pytest.mark.timeout(600)

Facts = tuple[dict[tuple[str, str, int], tuple[int, int]], dict[str, object], list[Kill]]


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Facts:
    work = tmp_path_factory.mktemp("kill")
    # c0 and c2 install kernel-config files (the files lever) into the engine's own inferlab copy
    return campaign_under_kills(
        work, 3, seed=1, requests=6, phases=["verify", "scrape", "stop"], files=True
    )


def test_store_after_kills_equals_a_clean_run(killed: Facts) -> None:
    reference, facts, kills = killed
    assert [k.killed for k in kills] == [True, True, True], [(k.phase, k.seen) for k in kills]
    assert facts["returncode"] == 0, facts["stderr"]
    assert len(reference) == 6 and all(v == (1, 6) for v in reference.values())
    assert facts["cells"] == reference  # every cell once, with every request
    assert facts["integrity"] == "ok"


def test_no_finished_point_is_lost(killed: Facts) -> None:
    _, _, kills = killed
    assert sum(len(k.finished) for k in kills) >= 1  # the kills came after finished points
    assert [k.lost for k in kills] == [[], [], []]


def test_no_server_is_left_running(killed: Facts) -> None:
    _, facts, kills = killed
    assert [k.orphans for k in kills] == [0, 0, 0]
    assert facts["orphans_after"] == 0


def test_kernel_config_files_are_restored_after_kills(killed: Facts) -> None:
    _, facts, kills = killed
    assert kills[0].files_left  # killed in c0's verify: its files were installed, not restored
    assert facts["files_restored"] is True  # the engine's package as it was before the campaign
    assert facts["files_pending"] == 0  # no install manifest left to recover
