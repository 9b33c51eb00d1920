"""CPU lists and pinning (``inferlab.cpus``): parse and format, and a launched server with its
children on their CPUs (real processes)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from inferlab.cpus import format_cpu_list, host_cpus, parse_cpu_list
from inferlab.errors import ConfigError
from inferlab.server import LaunchSpec, free_port, launch, stop


def test_cpu_lists() -> None:
    assert parse_cpu_list("0-2, 5,7-8") == (0, 1, 2, 5, 7, 8)
    assert format_cpu_list((5, 0, 1, 2, 8, 7)) == "0-2,5,7-8"
    with pytest.raises(ConfigError, match=r"--x: 'a-b' is not a CPU list"):
        parse_cpu_list("a-b", "--x")
    with pytest.raises(ConfigError, match="runs backwards"):
        parse_cpu_list("4-2")


@pytest.mark.skipif(len(host_cpus()) < 2, reason="needs 2 CPUs")
def test_a_launched_server_and_its_children_run_on_their_cpus(tmp_path: Path) -> None:
    """A real process group: the server and a child it starts both report CPU 0 only."""
    script = (
        "import os, subprocess, sys, time\n"
        "print('par' + 'ent', sorted(os.sched_getaffinity(0)), flush=True)\n"
        "subprocess.run([sys.executable, '-c', "
        '\'import os; print("chi" + "ld", sorted(os.sched_getaffinity(0)), flush=True)\'])\n'
        "time.sleep(30)\n"
    )
    log = tmp_path / "s.log"
    spec = LaunchSpec(
        "s", [sys.executable, "-c", script], {}, free_port(), log, "http://x", cpus=(0,)
    )
    server = launch(spec)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "child [" not in log.read_text():
            time.sleep(0.1)
    finally:
        stop(server, drain_timeout_s=1)
    text = log.read_text()
    assert "parent [0]" in text and "child [0]" in text
