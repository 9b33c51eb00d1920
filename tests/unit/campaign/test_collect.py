"""Collecting a capture's rank files (``campaign.parts.collect``): waited for and checked, locally
and from a remote server through ssh."""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from pathlib import Path

import pytest

from inferlab.campaign.parts.collect import CaptureFailed, LocalFiles, SshFiles, wait_complete


def _gz(path: Path, n: int = 20000) -> bytes:
    data = gzip.compress(json.dumps({"traceEvents": [{"i": i} for i in range(n)]}).encode())
    path.write_bytes(data)
    return data


def _wait(d: Path, ranks: int = 1, timeout: float = 1.0, max_bytes: int = 1 << 30) -> list[str]:
    end = time.monotonic() + timeout
    found = wait_complete(
        LocalFiles(), str(d), "p-*-TP-*.trace.json.gz", (), ranks,
        deadline=lambda: end, timeout_s=timeout, max_bytes=max_bytes, poll_s=0.05,
    )  # fmt: skip
    return [f.name for f in found]


def test_rank_files_are_waited_for_and_checked(tmp_path: Path) -> None:
    with pytest.raises(CaptureFailed, match="no trace matching") as e:
        _wait(tmp_path)
    assert e.value.reason == "no-files"
    data = _gz(tmp_path / "p-1-TP-0.trace.json.gz")
    (tmp_path / "p-1-TP-0.trace.json.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CaptureFailed) as e:
        _wait(tmp_path)
    assert e.value.reason == "truncated"
    _gz(tmp_path / "p-1-TP-0.trace.json.gz")
    with pytest.raises(CaptureFailed, match="over max_trace_mb") as e:
        _wait(tmp_path, max_bytes=100)
    assert e.value.reason == "too-large"
    # the second rank appears while we wait, written in two pieces
    part = tmp_path / "p-1-TP-1.trace.json.gz"

    def writer() -> None:
        blob = gzip.compress(b'{"traceEvents": []}' * 5000)
        part.write_bytes(blob[:100])
        time.sleep(0.3)
        part.write_bytes(blob)

    t = threading.Thread(target=writer)
    t.start()
    assert _wait(tmp_path, ranks=2, timeout=5.0) == [
        "p-1-TP-0.trace.json.gz",
        "p-1-TP-1.trace.json.gz",
    ]
    t.join()
    (tmp_path / "p-1-TP-1.trace.json.gz").unlink()
    with pytest.raises(CaptureFailed, match="1 of 2 rank traces") as e:
        _wait(tmp_path, ranks=2, timeout=0.3)
    assert e.value.reason == "timeout"


def test_rank_files_of_a_remote_server_go_through_ssh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ssh seam: a stand-in for the ssh client that runs the (quoted) remote command on this
    host, so the listing, the gzip check and the copy-back are the real commands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    (bin_dir / "ssh").write_text(
        f'#!/bin/sh\necho "ssh $*" >> {log}\nfor last; do :; done\nexec sh -c "$last"\n'
    )
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    remote = tmp_path / "remote dir"
    remote.mkdir()
    _gz(remote / "p-1-TP-0.trace.json.gz", 2000)
    (remote / "p-1-TP-1.trace.json.gz").write_bytes(b"\x1f\x8b truncated")
    (remote / "other.txt").write_text("x")
    files = SshFiles("user@gpu-host")
    found = files.list(str(remote), "p-*-TP-*.trace.json.gz", ())
    assert [f.name for f in found] == ["p-1-TP-0.trace.json.gz", "p-1-TP-1.trace.json.gz"]
    assert found[0].size == (remote / "p-1-TP-0.trace.json.gz").stat().st_size
    assert files.complete(found[0]) and not files.complete(found[1])
    got = files.fetch(found[0], tmp_path / "local")
    assert got.read_bytes() == (remote / "p-1-TP-0.trace.json.gz").read_bytes()
    calls = log.read_text()
    assert "-o BatchMode=yes -o ConnectTimeout=10 user@gpu-host" in calls
    assert "gzip -t" in calls and "cat -- '" in calls
