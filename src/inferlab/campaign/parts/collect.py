"""A capture's rank files where the server wrote them: listed, watched until complete, bounded,
copied back (remote hosts: through ``ssh`` with the launch's options).

A rank file is complete when its size has not changed between two looks and its gzip stream
is whole (``.gz``: decompressed to the end; a plain ``.json`` must end with ``}``). Sizes are
checked before anything is copied or read: a file over the bound is reported, never analyzed.
"""

from __future__ import annotations

import fnmatch
import gzip
import shlex
import subprocess
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from inferlab.errors import InferlabError

__all__ = ["CaptureFailed", "FileStore", "LocalFiles", "RankFile", "SshFiles", "wait_complete"]

SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


class CaptureFailed(InferlabError):
    """A capture that produced no usable trace; ``reason`` names the failure kind."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # endpoint-absent | start-failed | timeout | no-files | truncated |
        # too-large | copy-failed | analysis-failed | server-died


@dataclass(frozen=True)
class RankFile:
    path: str  # on the server's host
    size: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class FileStore(Protocol):
    """Files on the host the server runs on."""

    def list(self, directory: str, pattern: str, exclude: Sequence[str]) -> list[RankFile]: ...

    def complete(self, f: RankFile) -> bool: ...

    def fetch(self, f: RankFile, dest: Path) -> Path: ...


def _matches(name: str, pattern: str, exclude: Sequence[str]) -> bool:
    return fnmatch.fnmatch(name, pattern) and not any(fnmatch.fnmatch(name, x) for x in exclude)


def _gzip_whole(path: Path) -> bool:
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(8 << 20):
                pass
    except (OSError, EOFError, zlib.error):
        return False
    return True


class LocalFiles:
    """The server runs on this host: its files are ours."""

    def list(self, directory: str, pattern: str, exclude: Sequence[str]) -> list[RankFile]:
        d = Path(directory)
        if not d.is_dir():
            return []
        out = []
        for p in sorted(d.iterdir()):
            if p.is_file() and _matches(p.name, pattern, exclude):
                try:
                    out.append(RankFile(str(p), p.stat().st_size))
                except OSError:
                    continue
        return out

    def complete(self, f: RankFile) -> bool:
        p = Path(f.path)
        if p.suffix == ".gz":
            return _gzip_whole(p)
        try:
            with p.open("rb") as fh:
                fh.seek(max(f.size - 64, 0))
                return fh.read().rstrip().endswith(b"}")
        except OSError:
            return False

    def fetch(self, f: RankFile, dest: Path) -> Path:
        """Already here (the trace directory is under the campaign's output): no copy."""
        return Path(f.path)


class SshFiles:
    """The server runs on ``host`` (an ssh target): list with ``find``, check with ``gzip -t``,
    copy with ``cat``; every remote command is one ``shlex.join``ed string."""

    def __init__(self, host: str, timeout_s: float = 120.0) -> None:
        self.host, self.timeout_s = host, timeout_s

    def _ssh(self, *argv: str) -> subprocess.CompletedProcess[str]:
        cmd = ["ssh", *SSH_OPTIONS, self.host, shlex.join(argv)]
        try:
            return subprocess.run(
                cmd, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise CaptureFailed(
                "copy-failed", f"ssh {self.host}: no answer in {self.timeout_s:.0f} s"
            ) from None

    def list(self, directory: str, pattern: str, exclude: Sequence[str]) -> list[RankFile]:
        r = self._ssh("find", directory, "-maxdepth", "1", "-type", "f", "-printf", "%s %p\\n")
        out = []
        for line in r.stdout.splitlines():
            size, _, path = line.partition(" ")
            if size.isdigit() and _matches(path.rsplit("/", 1)[-1], pattern, exclude):
                out.append(RankFile(path, int(size)))
        return sorted(out, key=lambda f: f.path)

    def complete(self, f: RankFile) -> bool:
        if f.path.endswith(".gz"):
            return self._ssh("gzip", "-t", f.path).returncode == 0
        return self._ssh("tail", "-c", "64", f.path).stdout.rstrip().endswith("}")

    def fetch(self, f: RankFile, dest: Path) -> Path:
        """``ssh HOST cat -- PATH`` into ``dest`` (the remote path quoted, so any name is
        safe), checked against the size listed."""
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / f.name
        cmd = ["ssh", *SSH_OPTIONS, self.host, shlex.join(["cat", "--", f.path])]
        try:
            with target.open("wb") as out:
                r = subprocess.run(
                    cmd,
                    stdout=out,
                    stderr=subprocess.PIPE,
                    timeout=self.timeout_s * 10,
                    check=False,
                )
        except subprocess.TimeoutExpired:
            raise CaptureFailed("copy-failed", f"copying {self.host}:{f.path}: timed out") from None
        got = target.stat().st_size
        if r.returncode != 0 or got != f.size:
            err = r.stderr.decode("utf-8", "replace").strip() or f"exit code {r.returncode}"
            raise CaptureFailed(
                "copy-failed", f"copying {self.host}:{f.path}: {err} ({got} of {f.size} bytes)"
            )
        return target


def wait_complete(
    files: FileStore,
    directory: str,
    pattern: str,
    exclude: Sequence[str],
    ranks: int,
    *,
    deadline: Callable[[], float],
    timeout_s: float,
    max_bytes: int,
    done: Callable[[], bool] = lambda: False,
    poll_s: float = 0.5,
    ignore: frozenset[str] = frozenset(),
) -> list[RankFile]:
    """Wait until ``ranks`` files match, each complete; ``done()`` True means no more will come
    (then what is there is taken); files whose path is in ``ignore`` never count.
    ``deadline()`` is the current time limit (``monotonic``; ``timeout_s`` is what it allows,
    for messages). Raises :class:`CaptureFailed` (timeout, no files, truncated, too large)."""
    last: dict[str, int] = {}
    while True:
        found = [f for f in files.list(directory, pattern, exclude) if f.path not in ignore]
        big = [f for f in found if f.size > max_bytes]
        if big:
            raise CaptureFailed(
                "too-large",
                f"{big[0].name}: {big[0].size / 2**20:.1f} MiB is over max_trace_mb "
                f"({max_bytes / 2**20:.0f} MiB): not copied nor analyzed (record fewer steps)",
            )
        stable = [f for f in found if f.size > 0 and last.get(f.path) == f.size]
        last = {f.path: f.size for f in found}
        finished = done()
        if stable and len(stable) == len(found) and (len(found) >= ranks or finished):
            bad = [f for f in stable if not files.complete(f)]
            if not bad:
                return stable
            if finished and time.monotonic() > deadline():
                raise CaptureFailed("truncated", f"{bad[0].name}: truncated gzip stream")
        if time.monotonic() > deadline():
            if not found:
                raise CaptureFailed(
                    "no-files",
                    f"no trace matching {pattern} appeared in {directory} in {timeout_s:.0f} s",
                )
            partial = [f for f in found if not files.complete(f)]
            if partial:
                raise CaptureFailed(
                    "truncated",
                    f"{partial[0].name}: still incomplete after {timeout_s:.0f} s "
                    "(truncated gzip stream)",
                )
            raise CaptureFailed(
                "timeout", f"{len(found)} of {ranks} rank traces after {timeout_s:.0f} s"
            )
        time.sleep(poll_s)
