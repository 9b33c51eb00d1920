"""``run_bench`` without a server: an unreachable URL fails fast."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from inferlab.config.bench import BenchConfig, WorkloadSpec
from inferlab.errors import ConnectError
from inferlab.load.bench import run_bench
from inferlab.sim.tokenizer import WordTokenizer


@pytest.fixture(scope="module")
def tokdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return WordTokenizer().save_hf(tmp_path_factory.mktemp("tok"))


def cfg(url: str, tokdir: Path | None = None, **kw: object) -> BenchConfig:
    base: dict[str, object] = dict(
        url=url,
        engine="sim",
        concurrency=[2],
        requests=8,
        workload=WorkloadSpec(input_tokens=16, output_tokens=12),
        tokenizer=tokdir,
    )
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_unreachable_url_fails_fast() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.monotonic()
    with pytest.raises(ConnectError, match="cannot reach"):
        run_bench(cfg(f"http://127.0.0.1:{port}", None))
    assert time.monotonic() - t0 < 5
