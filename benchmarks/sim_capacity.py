"""Capacity of the reference engine: how many concurrent streams it paces on schedule.

Starts ``inferlab sim serve`` (TTFT 50 ms, ITL 10 ms, 128 output tokens per request) and, per
level, holds C connections busy with a minimal raw-asyncio client: each connection sends its
next request as soon as the previous answer ends, and the first requests start evenly over one
request's duration, so arrivals come at the steady-state rate rather than in one burst. After
each level it reads the server's own lateness summary (``GET /truth/summary``: write time − due
time of every chunk).

    .venv/bin/python benchmarks/sim_capacity.py [--levels 256 1024 2048] [--no-write]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import http.client
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import uvloop

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
READY = "inferlab sim (SIMULATED engine) listening on "
HEADING = "## Reference engine capacity"
TTFT_MS = 50.0
ITL_MS = 10.0
OUTPUT_TOKENS = 128


class _Stream(asyncio.Protocol):
    """One keep-alive connection issuing ``left`` streaming requests back to back."""

    def __init__(self, request: bytes, left: int, done: asyncio.Future[None]) -> None:
        self.request = request
        self.left = left
        self.done = done
        self.tail = b""
        self.transport: asyncio.Transport | None = None
        self.completed = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self) -> None:
        assert self.transport is not None
        self.left -= 1
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        tail = self.tail + data[-5:]
        self.tail = tail[-5:]
        if self.tail == b"0\r\n\r\n":
            self.tail = b""
            self.completed += 1
            if self.left > 0:
                self.send()
            elif not self.done.done():
                self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"closed early: {exc}"))


async def _drive(host: str, port: int, conns: int, per_conn: int, spread_s: float) -> int:
    body = json.dumps(
        {
            "model": "inferlab-sim",
            "prompt": "baba bebe bibi bobo",
            "max_tokens": OUTPUT_TOKENS,
            "stream": True,
            "ignore_eos": True,
        }
    ).encode()
    request = (
        b"POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    loop = asyncio.get_running_loop()
    streams: list[_Stream] = []
    futures: list[asyncio.Future[None]] = []
    for _ in range(conns):
        fut: asyncio.Future[None] = loop.create_future()
        _, proto = await loop.create_connection(
            lambda f=fut: _Stream(request, per_conn, f),  # type: ignore[misc]
            host,
            port,
        )
        streams.append(proto)
        futures.append(fut)
    t0 = loop.time()
    for i, s in enumerate(streams):
        loop.call_at(t0 + spread_s * i / conns, s.send)
    await asyncio.wait_for(asyncio.gather(*futures), timeout=100)
    for s in streams:
        if s.transport is not None:
            s.transport.close()
    return sum(s.completed for s in streams)


def _get(host: str, port: int, method: str, path: str) -> Any:
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        data = resp.read()
        assert resp.status == 200, data
        return json.loads(data) if data else None
    finally:
        conn.close()


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_sim(extra: list[str]) -> tuple[subprocess.Popen[str], str, int]:
    cmd = [sys.executable, "-m", "inferlab.cli.main", "sim", "serve", "--port", "0"]
    cmd += ["--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(READY):
        proc.kill()
        raise SystemExit(f"sim did not start: {line!r}")
    url = line[len(READY) :].strip()
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return proc, host, int(port)


def run(
    levels: list[int], per_conn: int, extra: list[str], spread_s: float
) -> list[dict[str, Any]]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * max(levels) + 256
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    proc, host, port = _start_sim(extra)
    rows = []
    try:
        for conns in levels:
            _get(host, port, "DELETE", "/truth")
            load_before = os.getloadavg()[0]
            cpu0 = _cpu_s(proc.pid)
            t0 = time.perf_counter()
            done = uvloop.run(_drive(host, port, conns, per_conn, spread_s))
            wall = time.perf_counter() - t0
            cpu = _cpu_s(proc.pid) - cpu0
            load1 = os.getloadavg()[0]
            summary = _get(host, port, "GET", "/truth/summary")
            rows.append(
                {
                    "streams": conns,
                    "requests": done,
                    "wall_s": wall,
                    "server_cpu": cpu / wall,
                    "chunks_per_s": summary["chunks"] / wall,
                    "load1": load1,
                    "load1_before": load_before,
                    **summary,
                }
            )
            print(_line(rows[-1]), flush=True)
            time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return rows


def _line(r: dict[str, Any]) -> str:
    lat = r["lateness_ms"]
    late_pct = 100.0 * r["chunks_late_over_1ms"] / max(1, r["chunks"])
    return (
        f"| {r['streams']:>5} | {r['requests']:>5} | {r['chunks']:>7} | {r['chunks_per_s']:>9.0f} "
        f"| {lat['mean']:>6.3f} | {lat['p50']:>6.3f} | {lat['p99']:>7.3f} | {lat['max']:>7.2f} "
        f"| {late_pct:>6.2f} | {r['server_cpu'] * 100:>5.0f} "
        f"| {r['load1_before']:>5.2f} → {r['load1']:>5.2f} "
        f"| {r['wall_s']:>5.1f} |"
    )


HEADER = (
    "| streams | requests | chunks | chunks/s | mean ms | p50 ms | p99 ms | max ms "
    "| >1 ms % | server CPU % | load1 before → after | wall s |\n"
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def _markdown(rows: list[dict[str, Any]], label: str, extra: list[str]) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpus = os.cpu_count()
    opts = f" ({' '.join(extra)})" if extra else ""
    lines = [
        "",
        f"### {label} ({now})",
        "",
        f"`benchmarks/sim_capacity.py` — SIMULATED engine, TTFT {TTFT_MS:g} ms, ITL {ITL_MS:g} ms,"
        f" {OUTPUT_TOKENS} output tokens, K=1 unless noted{opts};"
        f" {cpus} CPUs, Python {platform.python_version()}, uvloop {metadata.version('uvloop')};"
        " client and server on the same machine. Lateness = chunk write time − due time,"
        " from the server's own ground truth (`GET /truth/summary`). Server CPU % is its user +"
        " system time over the level's wall time (loopback softirq time is not included).",
        "",
        HEADER,
        *(_line(r) for r in rows),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[256, 1024, 2048])
    parser.add_argument("--requests-per-stream", type=int, default=3)
    parser.add_argument(
        "--spread-s",
        type=float,
        default=(TTFT_MS + (OUTPUT_TOKENS - 1) * ITL_MS) / 1000,
        help="first requests start evenly over this many seconds (default: one request's "
        "duration, so arrivals run at the steady-state rate)",
    )
    parser.add_argument("--label", default="run")
    parser.add_argument("--no-write", action="store_true", help="do not append to RESULTS.md")
    parser.add_argument("sim_args", nargs="*", help="extra `inferlab sim serve` options")
    args = parser.parse_args()
    print(HEADER, flush=True)
    rows = run(args.levels, args.requests_per_stream, args.sim_args, args.spread_s)
    if not args.no_write:
        _append(_markdown(rows, args.label, args.sim_args))


def _append(section: str) -> None:
    """Add ``section`` at the end of this benchmark's part of RESULTS.md (others' parts kept)."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{HEADING}\n"
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    if end < 0:
        end = len(text)
    head, tail = text[:end].rstrip("\n"), text[end:]
    RESULTS.write_text(head + "\n" + section + tail)


if __name__ == "__main__":
    main()
