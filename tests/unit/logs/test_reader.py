"""The log reader (``logs.reader``): small blocks lose no line; dense and sparse scans agree
at every block size."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import inferlab.logs.reader as reader
from inferlab.logs import (
    analyze_log,
)
from support import FIXTURES, ROOT

FIX = FIXTURES / "engine_logs"
CPU = FIXTURES / "vllm_cpu"
VLLM = FIX / "vllm_metrics_log"
START = FIX / "startup"


def test_small_blocks_lose_no_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = [
        START / "vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log",
        CPU / "spec_decode_ngram.log",
        VLLM / "tt-inference-server-246_vllm-v0-metrics-py-wrapped.log",
    ]
    big = [analyze_log(p).to_json() for p in logs]
    monkeypatch.setattr(reader, "BLOCK", 97)
    small = [analyze_log(p).to_json() for p in logs]
    for b, s in zip(big, small, strict=True):
        for key in ("lines", "findings", "series", "timeline", "flags"):
            assert b[key] == s[key], key
    assert big[0]["lines"] == len(
        (START / "vllm-0.10.1.1_gpt-oss-120b-ray-tp4_full-startup_ansi.log")
        .read_bytes()
        .splitlines()
    )


def _mixed_log(path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import log_throughput
    finally:
        sys.path.pop(0)
    log_throughput.build(path, 600_000, seed=3)
    noisy = (
        b"\xff\xfe broken utf-8 \xe2\x82 Decode batch, #running-req: 3, #token: 9, token usage:"
        b" 0.10, cuda graph: True, gen throughput (token/s): 12.50, #queue-req: 1\r\n"
        b"   \r\t\n"
        b"\x1b[31m[2026-04-05 20:02:51] Prefill batch, #new-seq: 1\x1b[0m\n"
        b"[2026-04-05 20:02:52] Decode batch, #running-req: 4, #token: 11179, token usage: 0.08"
    )
    with path.open("ab") as fh:
        fh.write(noisy)  # ends in a cut line, no newline


def test_dense_and_sparse_scans_and_block_sizes_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generated mixed log (batch and stats lines, tqdm bars, ANSI, compose prefixes, an OOM
    traceback, broken UTF-8, CRLF, a cut last line): the same analysis whichever scan path
    and block size reads it."""
    p = tmp_path / "mixed.log"
    _mixed_log(p)

    def run() -> dict[str, object]:
        d = analyze_log(p).to_json()
        d.pop("seconds")
        return d

    base = run()
    assert base["lines"] == p.read_bytes().count(b"\n") + 1
    assert base["series"]["total"] > 2000  # type: ignore[index]
    assert {f["kind"] for f in base["findings"]} >= {"oom-graph-capture", "untuned-fp8-gemm"}  # type: ignore[attr-defined]
    for block, dense in ((97, None), (4096, 0.0), (4096, 2.0), (1 << 16, 0.0), (1 << 20, 2.0)):
        monkeypatch.setattr(reader, "BLOCK", block)
        if dense is not None:
            monkeypatch.setattr(reader, "DENSE", dense)  # 0: always dense, 2: never
        assert run() == base, (block, dense)
