"""The store's crash safety: a sweep SIGKILLed mid-point loses only the unfinished point."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.simproc import start_sim


def test_sigkill_mid_sweep_loses_only_the_unfinished_point(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    n = 6
    with start_sim("--ttft-ms", "5", "--itl-ms", "25") as sim:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "inferlab.cli.main",
                "bench",
                "--url",
                sim.url,
                "-c",
                "1,2,3,4,5,6",
                "--requests",
                str(n),
                "--input-tokens",
                "8",
                "--output-tokens",
                "12",
                "--engine",
                "sim",
                "--tokenizer",
                str(tok),
                "--db",
                str(db),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline and done < 2:
            time.sleep(0.2)
            if db.exists():
                try:
                    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
                    done = c.execute("SELECT count(*) FROM runs").fetchone()[0]
                    c.close()
                except sqlite3.Error:
                    pass
        time.sleep(0.3)  # well inside the next point
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert done >= 2
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = store.runs()
        assert 2 <= len(runs) < 6
        for r in runs:  # every stored point is whole
            assert r.n_requests == n and r.summary["ok"] == n
            assert len(store.requests(r.id)) == n
