"""Where does C=1 TTFT error come from? Nagle on the server × delayed ACK on the client.

A minimal asyncio SSE server (stdlib only) writes the response head at once and the first token
after ``--ttft-ms``, the way aiohttp's ``StreamResponse.prepare()`` + ``write()`` do. It records
its own write times (ground truth). A raw-socket client sends requests one after another on one
keep-alive connection, optionally setting TCP_QUICKACK before every send and after every read.
Run the four combinations and print the client's TTFT error against the server's truth.

    python benchmarks/ttft_anomaly.py [--requests 40] [--ttft-ms 20] [--itl-ms 5] [--tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import threading
import time

_truth: dict[int, tuple[int, int]] = {}  # request no → (recv_ns, first token write ns)


class _Server(asyncio.Protocol):
    def __init__(self, nodelay: bool, ttft: float, itl: float, n: int) -> None:
        self.nodelay, self.ttft, self.itl, self.n = nodelay, ttft, itl, n
        self.buf = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.t = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if self.nodelay else 0)

    def data_received(self, data: bytes) -> None:
        recv = time.perf_counter_ns()
        self.buf += data
        if b"\r\n\r\n" in self.buf:
            head, _, rest = self.buf.partition(b"\r\n\r\n")
            no = int(head.split(b"X-No: ")[1].split(b"\r\n")[0])
            self.buf = b""
            asyncio.ensure_future(self.respond(no, recv))

    async def respond(self, no: int, recv: int) -> None:
        t = self.t
        t.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"  # type: ignore[attr-defined]
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        await asyncio.sleep(self.ttft)
        for i in range(self.n):
            ev = b'data: {"choices":[{"text":" tok"}]}\n\n'
            if i == 0:
                _truth[no] = (recv, time.perf_counter_ns())
            t.write(b"%x\r\n%s\r\n" % (len(ev), ev))  # type: ignore[attr-defined]
            if i < self.n - 1:
                await asyncio.sleep(self.itl)
        t.write(b"e\r\ndata: [DONE]\n\n\r\n")  # type: ignore[attr-defined]
        t.write(b"0\r\n\r\n")  # type: ignore[attr-defined]


def _serve(
    nodelay: bool,
    args: argparse.Namespace,
    ready: threading.Event,
    port: list[int],
    stop: threading.Event,
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        srv = await loop.create_server(
            lambda: _Server(nodelay, args.ttft_ms / 1e3, args.itl_ms / 1e3, args.tokens),
            "127.0.0.1",
            0,
        )
        port.append(srv.sockets[0].getsockname()[1])
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        srv.close()

    asyncio.run(main())


def _client(port: int, n: int, quickack: bool) -> list[tuple[int, int]]:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    out = []
    for no in range(n):
        req = f"POST / HTTP/1.1\r\nHost: x\r\nX-No: {no}\r\nContent-Length: 0\r\n\r\n".encode()
        if quickack:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        send = time.perf_counter_ns()
        s.sendall(req)
        first = 0
        buf = b""
        while not buf.endswith(b"0\r\n\r\n"):
            chunk = s.recv(65536)
            if quickack:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            if not first and b'"text"' in chunk:
                first = time.perf_counter_ns()
            buf += chunk
        out.append((send, first))
    s.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    print("| server TCP_NODELAY | client TCP_QUICKACK | TTFT err mean | p50 | max (ms) |")
    print("|---|---|---:|---:|---:|")
    for nodelay in (False, True):
        for quick in (False, True):
            _truth.clear()
            ready, stop, port = threading.Event(), threading.Event(), []  # type: ignore[var-annotated]
            th = threading.Thread(target=_serve, args=(nodelay, args, ready, port, stop))
            th.start()
            ready.wait()
            res = _client(port[0], args.requests, quick)
            stop.set()
            th.join()
            errs = []
            for no, (send, first) in enumerate(res):
                recv, w = _truth[no]
                errs.append(((first - send) - (w - recv)) / 1e6)
            errs = errs[1:]  # the first request runs on a fresh connection (quick-ACK mode)
            print(
                f"| {'on' if nodelay else 'off'} | {'on' if quick else 'off'} | "
                f"{statistics.mean(errs):+.2f} | {statistics.median(errs):+.2f} | "
                f"{max(errs):+.2f} |"
            )


if __name__ == "__main__":
    main()
