"""``run_bench`` without a server: an unreachable URL fails fast."""

from __future__ import annotations

import time

import pytest

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.errors import ConnectError
from inferlab.load.bench import run_bench


def test_unreachable_url_fails_fast() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.monotonic()
    with pytest.raises(ConnectError, match="cannot reach"):
        workload = WorkloadSpec(input_tokens=16, output_tokens=12)
        url = f"http://127.0.0.1:{port}"
        run_bench(
            BenchConfig(url=url, engine="sim", concurrency=[2], requests=8, workload=workload)
        )
    assert time.monotonic() - t0 < 5
