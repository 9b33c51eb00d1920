"""The guard (``server.lifecycle.guarded``): a server dies with its launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from support.simproc import group_pids


def test_the_guard_takes_the_server_down_with_its_launcher() -> None:
    from inferlab.server.lifecycle import guarded

    ok = subprocess.run(guarded(["sh", "-c", "exit 3"]), timeout=30)
    assert ok.returncode == 3  # an ordinary exit passes through
    # the server's environment may not reach inferlab (the H200 run: PYTHONPATH=/tmp/site)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": "/nonexistent", "X": "kept"}
    ok = subprocess.run(guarded(["sh", "-c", 'exit "${#X}"']), env=env, timeout=30)
    assert ok.returncode == 4
    launcher = (
        "import subprocess, sys, time; from inferlab.server.lifecycle import guarded; "
        "p = subprocess.Popen(guarded([sys.executable, '-c', 'import time; time.sleep(120)']), "
        "start_new_session=True); print(p.pid, flush=True); time.sleep(120)"
    )
    parent = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pgid = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 20
        while len(group_pids(pgid)) < 2 and time.monotonic() < deadline:  # guard + server
            time.sleep(0.1)
        assert len(group_pids(pgid)) == 2
        parent.kill()  # the launcher dies without a word (an actor killed or crashed)
        parent.wait()
        deadline = time.monotonic() + 10
        while group_pids(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_pids(pgid) == []
    finally:
        parent.stdout.close()
        if group_pids(pgid):
            os.killpg(pgid, 9)
