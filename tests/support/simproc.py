"""Test helper: the reference engine (``inferlab sim serve --port 0``), as a real subprocess
(``start_sim``) or on a thread of this process (``start_sim_thread``, ``inferlab.sim.inprocess``)
where the subject is not the process; both give a handle with the same HTTP helpers."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

READY = "inferlab sim (SIMULATED engine) listening on "

#: the ``sim_server`` fixture's type: ``sim_server(*args, env=None) -> SimClient``
SimFactory = Callable[..., "SimClient"]


class SimClient:
    """HTTP helpers against a running reference engine; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, bytes]:
        """One request on a fresh connection; ``body`` is JSON-encoded unless bytes/str."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            data: bytes | None
            if body is None:
                data = None
            elif isinstance(body, bytes):
                data = body
            elif isinstance(body, str):
                data = body.encode()
            else:
                data = json.dumps(body).encode()
            hdrs = {"Content-Type": "application/json", **(headers or {})}
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def truth(self) -> list[dict[str, Any]]:
        status, body = self.request("GET", "/truth")
        assert status == 200, body
        return [json.loads(line) for line in body.decode().splitlines() if line]

    def summary(self) -> dict[str, Any]:
        status, body = self.request("GET", "/truth/summary")
        assert status == 200, body
        out: dict[str, Any] = json.loads(body)
        return out

    def clear_truth(self) -> None:
        status, _ = self.request("DELETE", "/truth")
        assert status == 200


class SimProc(SimClient):
    """A running ``inferlab sim serve`` process."""

    def __init__(self, proc: subprocess.Popen[str], url: str, stderr_path: str) -> None:
        super().__init__(url)
        self.proc = proc
        self._stderr_path = stderr_path

    def stderr(self) -> str:
        with open(self._stderr_path, encoding="utf-8", errors="replace") as fh:
            return fh.read()

    def stop(self, timeout: float = 5.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout`` s; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@contextlib.contextmanager
def start_sim(
    *cli_args: str, env: Mapping[str, str] | None = None, ready_timeout: float = 30.0
) -> Iterator[SimProc]:
    """Start the engine, wait for its ready line, stop it on exit (SIGTERM, kill after 5 s)."""
    cmd = [sys.executable, "-m", "inferlab.cli.main", "sim", "serve", "--port", "0", *cli_args]
    fd, stderr_path = tempfile.mkstemp(prefix="inferlab-sim-", suffix=".stderr")
    os.close(fd)
    full_env = {**os.environ, **(env or {})}
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=full_env, bufsize=1
        )
    sim: SimProc | None = None
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + ready_timeout
        line = ""
        while not line.endswith("\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise RuntimeError(f"sim not ready after {ready_timeout} s: {line!r}")
            more = proc.stdout.readline()
            if not more:
                with open(stderr_path) as fh:
                    raise RuntimeError(f"sim exited ({proc.wait()}): {fh.read()}")
            line += more
        sel.close()
        assert line.startswith(READY), line
        sim = SimProc(proc, line[len(READY) :].strip(), stderr_path)
        yield sim
    finally:
        if sim is not None:
            sim.stop()
        elif proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        with contextlib.suppress(OSError):
            os.unlink(stderr_path)


def raw_connect(sim: SimClient, timeout: float = 5.0) -> socket.socket:
    """A plain TCP socket to the engine."""
    return socket.create_connection((sim.host, sim.port), timeout=timeout)


def raw_post(path: str, body: Any, headers: Mapping[str, str] | None = None) -> bytes:
    """The bytes of one HTTP/1.1 POST with a JSON body."""
    data = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", "Host: sim", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(data)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def recv_until(sock: socket.socket, marker: bytes, timeout: float = 5.0) -> bytes:
    """Read until ``marker`` is seen, EOF, or ``timeout`` (returns what was read)."""
    buf = b""
    deadline = time.monotonic() + timeout
    while marker not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        if not data:
            break
        buf += data
    return buf


def dechunk(body: bytes) -> tuple[bytes, bool]:
    """Decode a chunked body: (payload, complete), complete once the last chunk is seen."""
    out = b""
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return out, False
        size = int(body[pos:eol], 16)
        if size == 0:
            return out, body[eol + 2 : eol + 4] == b"\r\n"
        start = eol + 2
        if len(body) < start + size + 2:
            return out + body[start:], False
        out += body[start : start + size]
        pos = start + size + 2


def sse_events(payload: bytes) -> list[str]:
    """The ``data:`` values of an SSE payload, in order."""
    events = []
    for block in payload.decode().split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            events.append(block[len("data: ") :])
    return events


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, lower-cased headers, body bytes as sent) of one raw HTTP response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def post_stream(
    sim: SimClient, path: str, body: Any, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], list[str]]:
    """POST a streaming request on a raw socket; returns (status, headers, SSE data values)."""
    with raw_connect(sim) as sock:
        sock.sendall(raw_post(path, body, headers))
        raw = recv_until(sock, b"0\r\n\r\n", timeout=20.0)
    status, hdrs, rest = split_response(raw)
    payload, complete = dechunk(rest)
    assert complete, raw[-200:]
    return status, hdrs, sse_events(payload)


def group_pids(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid`` (Linux /proc)."""

    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[0] != "Z" and int(stat[2]) == pgid:
                out.append(int(d.name))
    return out


class SimInProcess(SimClient):
    """``inferlab sim serve`` on a thread of this process (``SimThread``); ``stderr()`` is its
    log (what the process would print), ``server`` the running ``SimServer``."""

    def __init__(self, thread: Any, url: str, lines: list[str]) -> None:
        super().__init__(url)
        self.thread = thread
        self.server = thread.server
        self._lines = lines

    def stderr(self) -> str:
        return "".join(line + "\n" for line in self._lines)

    def stop(self, timeout: float = 5.0) -> int:
        """Stop serving, as SIGTERM stops the process; returns the exit code."""
        self.thread.terminate()
        return int(self.thread.wait(timeout))


@contextlib.contextmanager
def start_sim_thread(
    *cli_args: str, env: Mapping[str, str] | None = None, ready_timeout: float = 30.0
) -> Iterator[SimInProcess]:
    """As ``start_sim``, on a thread of this process: the same argv (``sim serve --port 0
    ARGS``), the same environment (this process's, ``env`` over it); stopped on exit."""
    from inferlab.sim.inprocess import SimThread, serve_config

    full_env = {**os.environ, **(env or {})}
    config, command = serve_config(["sim", "serve", "--port", "0", *cli_args], full_env)
    lines: list[str] = []
    thread = SimThread(config, full_env, command, lines.append).start()
    try:
        deadline = time.monotonic() + ready_timeout
        while thread.url is None:
            if thread.poll() is not None:
                raise RuntimeError(f"sim exited ({thread.returncode}): " + "\n".join(lines))
            if time.monotonic() > deadline:
                raise RuntimeError(f"sim not ready after {ready_timeout} s: {lines[-3:]}")
            time.sleep(0.01)
        sim = SimInProcess(thread, thread.url, lines)
        yield sim
    finally:
        thread.terminate()
        thread.wait(10)


def signal_state(pid: int) -> str:
    """``pid``'s signal masks from /proc (hex: blocked, ignored, caught), for a failure message:
    a SIGINT that a child of a test does not act on is often blocked or ignored by inheritance."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return f"pid {pid}: gone"
    keep = [ln.replace("\t", " ") for ln in lines if ln.startswith(("SigBlk", "SigIgn", "SigCgt"))]
    return f"pid {pid}: " + ", ".join(keep)


def ctrl_c_default() -> None:
    """A ``preexec_fn`` for a child a test sends SIGINT to, as a terminal's Ctrl-C would: SIGINT
    back to its default, so that Python installs its KeyboardInterrupt handler. A pytest started
    in the background of a non-interactive shell (`make test &`, nohup) ignores SIGINT and
    SIGQUIT, every child inherits that, and a Python that starts with SIGINT ignored keeps it
    ignored (2026-12-07: the two Ctrl-C-during-launch tests read 'measured, exit 0')."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def running_records(out: Path) -> list[dict[str, object]]:
    """The launched-server records of the campaign output ``out`` (``out/.running/*.json``)."""
    return [json.loads(f.read_text()) for f in (out / ".running").glob("*.json")]


def ctrl_c_run(
    campaign: Path,
    env: Mapping[str, str],
    out: Path,
    ready: Callable[[Path], bool],
    what: str,
    wait_s: float = 90.0,
) -> tuple[int, str, float, list[int]]:
    """``inferlab run campaign``, SIGINT (as from a terminal: :func:`ctrl_c_default`) once
    ``ready(out)``: (exit code, the signal masks then + stderr, seconds from the signal to the
    exit, the process groups of the servers running when it was sent)."""
    argv = [sys.executable, "-m", "inferlab.cli.main", "run", str(campaign)]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=ctrl_c_default, env=dict(env),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + wait_s
        while not ready(out) and proc.poll() is None:
            assert time.monotonic() < deadline, f"not {what} after {wait_s:g} s"
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        groups = [int(str(r["pgid"])) for r in running_records(out)]
        masks = f"{signal_state(proc.pid)}; this worker: {signal_state(os.getpid())}"
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    return proc.returncode, f"{masks}\n{err}", took, groups
