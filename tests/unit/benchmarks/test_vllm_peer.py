"""``benchmarks/vllm_peer.py --summarize`` on the peer run of the H200 (tests/fixtures/vllm_gpu/)."""

from __future__ import annotations

import subprocess
import sys

from support import FIXTURES, ROOT

GPU = FIXTURES / "vllm_gpu"


def test_the_peer_table_from_the_h200_run() -> None:
    r = subprocess.run([sys.executable, "benchmarks/vllm_peer.py", "--summarize", str(GPU)],
                       cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [x for x in r.stdout.splitlines() if x.startswith("| 1 ") or x.startswith("| 256 ")]
    assert "| 1 | vllm | 19.58 | 3.023 | 303 | 6.173 |" in rows
    assert "| 1 | inferlab | 16.94 | 3.023 | 308 | 1.649 |" in rows
    assert "| 256 | inferlab | 616.92 | 20.897 | 9,032 | 0.173 |" in rows
