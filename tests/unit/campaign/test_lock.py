"""The campaign lock (``campaign.parts.orphans.campaign_lock``): one runner per campaign on a host,
freed when the runner dies, even while a process it forked still runs.

A fresh-clone suite failed once with ``run --resume`` refused as "already running" right after
``kill -9`` of the runner: the ``flock`` it held was shared with the load workers it had forked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.campaign.parts.orphans import campaign_lock
from inferlab.errors import ConfigError

# takes the lock, forks a child that outlives it, prints both pids, waits to be killed
HOLDER = """
import os, sys, time
from pathlib import Path
from inferlab.campaign.parts.orphans import campaign_lock
with campaign_lock(Path(sys.argv[1]), "c"):
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    print(os.getpid(), child, flush=True)
    time.sleep(60)
"""


def _held_by_another(d: Path) -> bool:
    try:
        with campaign_lock(d, "c"):
            return False
    except ConfigError as e:
        assert "campaign 'c' is already running on this host" in str(e)
        return True


def test_a_second_runner_is_refused_and_a_killed_one_frees_the_lock_despite_its_fork(
    tmp_path: Path,
) -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    holder, child = (int(x) for x in p.stdout.readline().split())
    try:
        assert _held_by_another(tmp_path)  # another process: refused
        os.kill(holder, signal.SIGKILL)
        p.wait(timeout=10)
        os.kill(child, 0)  # the fork still runs, holding a copy of the lock file's descriptor
        deadline = time.monotonic() + 10
        while _held_by_another(tmp_path):  # freed by the runner's death alone
            assert time.monotonic() < deadline, "a forked child kept the campaign locked"
            time.sleep(0.05)
    finally:
        for pid in (holder, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait(timeout=10)
        p.stdout.close()


def test_the_same_process_cannot_take_its_own_campaign_twice(tmp_path: Path) -> None:
    held = campaign_lock(tmp_path, "c")
    again = campaign_lock(tmp_path / ".", "c")
    with held, pytest.raises(ConfigError, match="already running"), again:
        pass
    with campaign_lock(tmp_path, "c"):  # released on the way out
        pass
