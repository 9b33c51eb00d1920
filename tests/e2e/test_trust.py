"""An interrupted adaptive point (SIGINT to a real ``inferlab bench``) is kept and untrusted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from inferlab.sim.tokenizer import WordTokenizer
from inferlab.store import Store
from support.simproc import ctrl_c_default, start_sim


def test_an_interrupted_adaptive_point_is_kept_and_untrusted(tmp_path: Path) -> None:
    tok = WordTokenizer().save_hf(tmp_path / "tok")
    out = tmp_path / "int.jsonl"
    with start_sim("--ttft-ms", "5", "--itl-ms", "20") as sim:
        args = ["bench", "--url", sim.url, "-c", "2", "--requests", "auto"]
        args += ["--min-requests", "1000", "--max-requests", "2000", "--engine", "sim"]
        args += ["--input-tokens", "8", "--output-tokens", "10", "--tokenizer", str(tok)]
        args += ["--out", str(out), "--db", str(tmp_path / "i.db")]
        proc = subprocess.Popen(
            [sys.executable, "-m", "inferlab.cli.main", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=ctrl_c_default,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(sim.truth()) < 8:
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    point = [json.loads(x) for x in out.read_text().splitlines() if '"type":"point"' in x][0]
    assert point["interrupted"] is True and point["stop"]["reason"] == "interrupted"
    assert point["trust"] == "untrusted"
    assert "interrupted" in [x["reason"] for x in point["trust_reasons"]]
    with Store(tmp_path / "i.db") as store:
        (run,) = store.runs()
        assert run.interrupted and run.trust == "untrusted" and run.n_requests >= 4
