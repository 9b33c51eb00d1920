"""Run the reference engine as a subprocess (for demos and benchmarks)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

from inferlab.errors import SimError

__all__ = ["SimProcess", "sim_process"]

_READY = "listening on "


@dataclass
class SimProcess:
    url: str
    proc: subprocess.Popen[str]


@contextlib.contextmanager
def sim_process(*args: str, ready_timeout_s: float = 30.0) -> Iterator[SimProcess]:
    """Start ``inferlab sim serve --port 0 ARGS...``; stop it (SIGTERM, then kill) on exit."""
    cmd = [sys.executable, "-m", "inferlab.cli.main", "sim", "serve", "--port", "0", *args]
    # stderr goes to a file: a pipe nobody reads could fill up and block the server
    errf = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115  (closed in the finally below)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=errf,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + ready_timeout_s
        assert proc.stdout is not None
        url = None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if _READY in line:
                url = line.split(_READY, 1)[1].strip()
                break
        if url is None:
            errf.seek(0)
            raise SimError(f"reference engine did not start: {errf.read().strip()[-500:]}")
        yield SimProcess(url, proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()
        errf.close()
